import { Notification } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import { IJobRow, IRunRef, JobsModel, failing } from './model';

const TERMINAL = ['Completed', 'Failed', 'Aborted', 'Terminated'];

const PHASE_KIND: Record<string, 'success' | 'error' | 'warning' | 'info'> = {
  Completed: 'success',
  Running: 'info',
  Failed: 'error',
  Aborted: 'warning',
  Terminated: 'warning',
  Restarting: 'warning'
};

/** A notification whenever a job moves to another phase (one watch for the whole UI). */
export function notifyPhaseChanges(
  jobs: JobsModel,
  trans: TranslationBundle,
  openRun: (run: IRunRef) => void,
  enabled: () => boolean
): void {
  jobs.phaseChanged.connect((_, { job, previous }) => {
    // finished and failed jobs are announced by the insights notification, with the diagnosis
    if (!enabled() || !previous || TERMINAL.includes(job.phase)) {
      return;
    }
    const kind = PHASE_KIND[job.phase] ?? 'info';
    Notification.emit(
      trans.__('Job %1: %2 → %3', job.name, previous, job.phase),
      kind,
      {
        autoClose: kind === 'error' ? false : 6000,
        actions: job.uid
          ? [
              {
                label: trans.__('Open'),
                callback: () =>
                  openRun({
                    namespace: job.namespace,
                    name: job.name,
                    uid: job.uid!
                  })
              }
            ]
          : []
      }
    );
  });
}

/** The notification of a failing run (a crash loop hides behind "Running"): once per run. */
export function failingText(trans: TranslationBundle, job: IJobRow): string {
  return trans.__('Job %1 is failing: %2', job.name, failing(job));
}

/** One error notification when a run starts failing (`JobsModel.failingChanged` fires once per run). */
export function notifyFailing(
  jobs: JobsModel,
  trans: TranslationBundle,
  openRun: (run: IRunRef) => void,
  enabled: () => boolean
): void {
  jobs.failingChanged.connect((_, job) => {
    if (!enabled() || !job.uid) {
      return;
    }
    const run = { namespace: job.namespace, name: job.name, uid: job.uid };
    Notification.emit(failingText(trans, job), 'error', {
      autoClose: false,
      actions: [{ label: trans.__('Open'), callback: () => openRun(run) }]
    });
  });
}
