import { TranslationBundle } from '@jupyterlab/translation';

import { IJobRow, IRunRef, isLive } from './model';

/** What Stop does, said before it does it (the same words on every surface). */
export function stopQuestion(trans: TranslationBundle, run: IRunRef): string {
  return trans.__(
    'Stop %1 (run %2)? Its logs are archived first, then its pods and rank-table ConfigMap are deleted.',
    run.name,
    run.uid.slice(0, 8)
  );
}

/**
 * What Resubmit does when a run of the name is live (it is stopped first), or '' when nothing is stopped
 * (a stopped or finished run's spec is only submitted again: no question).
 */
export function resubmitQuestion(
  trans: TranslationBundle,
  run: IRunRef,
  current: IJobRow | undefined
): string {
  if (!isLive(current)) {
    return '';
  }
  const live = (current.uid ?? '').slice(0, 8);
  const spec =
    current.uid === run.uid
      ? trans.__('its spec is submitted again as a new run')
      : trans.__(
          'the spec of run %1 is submitted as a new run',
          run.uid.slice(0, 8)
        );
  return trans.__(
    'Resubmit %1? The running run %2 is stopped first (its logs archived, its pods deleted), then %3.',
    run.name,
    live,
    spec
  );
}
