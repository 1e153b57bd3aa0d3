import { Notification } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import { IJobRow, IRunRef, JobsModel, failing } from './model';
import { PhaseSettler } from './settle';
import { RecoveryModel } from './recovery';

const TERMINAL = ['Completed', 'Failed', 'Aborted', 'Terminated'];

const PHASE_KIND: Record<string, 'success' | 'error' | 'warning' | 'info'> = {
  Completed: 'success',
  Running: 'info',
  Failed: 'error',
  Aborted: 'warning',
  Terminated: 'warning',
  Restarting: 'warning'
};

/**
 * A notification when a job settles in another phase (one watch for the whole UI): a phase must hold
 * PHASE_SETTLE_MS first, so a flap (Running -> Pending -> Running) is no toast and a change is one toast.
 */
export function notifyPhaseChanges(
  jobs: JobsModel,
  trans: TranslationBundle,
  openRun: (run: IRunRef) => void,
  enabled: () => boolean
): PhaseSettler<IJobRow> {
  const settler = new PhaseSettler<IJobRow>(({ job, from, to }) => {
    if (!enabled()) {
      return;
    }
    const kind = PHASE_KIND[to] ?? 'info';
    Notification.emit(trans.__('Job %1: %2 → %3', job.name, from, to), kind, {
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
    });
  });
  jobs.phaseChanged.connect((_, { job, previous }) => {
    if (previous) {
      // finished and failed jobs are announced by the insights notification, with the diagnosis
      settler.change(
        `${job.namespace}/${job.name}/${job.uid ?? ''}`,
        previous,
        job,
        TERMINAL.includes(job.phase)
      );
    }
  });
  return settler;
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

/**
 * One notification per auto-resume: resumed (Open shows the new run), or not, over the retry budget. A
 * failure the policy leaves alone (not the hardware's) is already announced with its diagnosis.
 */
export function notifyRecovery(
  recovery: RecoveryModel,
  trans: TranslationBundle,
  openRun: (run: IRunRef) => void
): void {
  recovery.decided.connect((_, event) => {
    if (event.action === 'skipped') {
      return;
    }
    const resumed = event.action === 'resumed' && !!event.new_run;
    // short enough for a toast (long ones are cut); the whole decision is in the server log and the lineage
    const avoided = (event.avoided ?? []).join(', ');
    const text = resumed
      ? trans.__(
          'Job %1 resumed by itself from %2%3',
          event.job,
          event.checkpoint
            ? trans.__('checkpoint %1', event.checkpoint.step)
            : trans.__('scratch'),
          avoided ? trans.__(', without %1', avoided) : ''
        )
      : trans.__(
          'Job %1 failed again: not resumed, its auto-resume budget is spent',
          event.job
        );
    Notification.emit(text, resumed ? 'success' : 'warning', {
      autoClose: resumed ? 15000 : false,
      actions: [
        {
          label: trans.__('Open'),
          callback: () =>
            openRun({
              namespace: event.namespace,
              name: event.job,
              uid: resumed ? event.new_run! : event.run
            })
        }
      ]
    });
  });
  recovery.start();
}
