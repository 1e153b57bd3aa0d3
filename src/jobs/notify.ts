import { Notification } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import { IRunRef, JobsModel } from './model';

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
