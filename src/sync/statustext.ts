import type { TranslationBundle } from '@jupyterlab/translation';

import { SyncStatusModel, formatSyncTime } from './model';

/** The status bar item's text and tooltip for the model's current summary. */
export function syncStatusText(
  model: SyncStatusModel,
  trans: TranslationBundle
): { text: string; title: string } {
  const s = model.summary;
  if (model.channelError) {
    return {
      text: trans.__('Sync: error'),
      title: trans.__('Sync status unavailable: %1', model.channelError)
    };
  }
  const last = s.lastSync
    ? trans.__('last sync %1', formatSyncTime(s.lastSync))
    : trans.__('not synced yet');
  const where = s.profiles.join(', ');
  switch (s.state) {
    case 'uploading':
      return {
        text: trans._n(
          'Sync: uploading %1 file',
          'Sync: uploading %1 files',
          s.files
        ),
        title: trans.__('Uploading to %1 (%2)', where, last)
      };
    case 'error':
      return {
        text: trans.__('Sync: error'),
        title: trans.__('%1 (retried; %2)', s.error, last)
      };
    case 'conflict':
      return {
        text: trans._n(
          'Sync: %1 conflict',
          'Sync: %1 conflicts',
          s.conflicts.length
        ),
        title: trans.__(
          'Changed on the instance since the last upload, not overwritten: %1',
          s.conflicts.join(', ')
        )
      };
    case 'idle':
      return {
        text: s.lastSync
          ? trans.__('Synced %1', formatSyncTime(s.lastSync))
          : trans.__('Sync: on'), // not "idle": that word is the kernel's status, next to this item
        title: trans.__('Saves are uploaded to %1 (%2)', where, last)
      };
    default:
      return {
        text: trans.__('Sync: off'),
        title: trans.__('No folder is uploaded automatically')
      };
  }
}
