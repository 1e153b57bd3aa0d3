import { StreamClient, subscribe } from '../api/client';
import type { components } from '../api/openapi';
import { Model } from '../ui/model';

/** One profile's automatic upload (`components/schemas/UploadStatus` in openapi.yaml). */
export type IUploadStatus = components['schemas']['UploadStatus'];
/** The `uploads` stream channel's data (`components/schemas/UploadsEvent`). */
export type IUploadsEvent = components['schemas']['UploadsEvent'];

/** off: no folder is synced automatically; the others in the order they win when profiles differ. */
export type SyncState = 'off' | 'idle' | 'uploading' | 'conflict' | 'error';

export interface ISyncSummary {
  state: SyncState;
  /** Files saved and waiting, plus those of the uploads under way. */
  files: number;
  /** When the last upload of any profile finished (ms since the epoch), or null. */
  lastSync: number | null;
  conflicts: string[];
  error: string;
  /** The profiles whose uploads the summary covers. */
  profiles: string[];
}

/** The status bar's view of all profiles' automatic uploads: uploading > error > conflict > idle. */
export function summarize(
  profiles: Record<string, IUploadStatus>
): ISyncSummary {
  const all = Object.values(profiles);
  const files = all.reduce((n, p) => n + p.pending + p.uploading, 0);
  const times = all
    .map(p => p.last_sync)
    .filter((t): t is number => typeof t === 'number');
  const errors = all.filter(p => p.last_error);
  const conflicts = all.flatMap(p => p.conflicts);
  let state: SyncState = 'idle';
  if (!all.length) {
    state = 'off';
  } else if (files > 0) {
    state = 'uploading';
  } else if (errors.length) {
    state = 'error';
  } else if (conflicts.length) {
    state = 'conflict';
  }
  return {
    state,
    files,
    lastSync: times.length ? Math.max(...times) * 1000 : null,
    conflicts,
    error: errors.map(p => `${p.profile}: ${p.last_error}`).join('\n'),
    profiles: Object.keys(profiles).sort()
  };
}

/** Which folder each profile uploads automatically, and how: a key that changes when any of them does. */
export function uploadTargets(profiles: Record<string, IUploadStatus>): string {
  return JSON.stringify(
    Object.values(profiles)
      .map(p => [p.profile, p.local_root, p.mode])
      .sort()
  );
}

const OFF: ISyncSummary = summarize({});
/** After the `uploads` channel fails, subscribe again after this long. */
export const SYNC_RETRY_MS = 5000;

/**
 * The Notebook-instance sync state for the status bar: follows the server's automatic uploads (a save in
 * a synced folder is queued, uploaded, then synced; or a conflict or an error) on the `uploads` channel.
 */
export class SyncStatusModel extends Model {
  summary: ISyncSummary = OFF;
  profiles: Record<string, IUploadStatus> = {};
  /** The channel itself failed (e.g. an older server): shown as an error, retried. */
  channelError = '';

  constructor(private _stream: StreamClient) {
    super();
  }

  start(): void {
    if (this.holds('uploads') || this.isDisposed) {
      return;
    }
    const sub = subscribe(
      this._stream,
      'uploads',
      {},
      {
        onData: data => this.accept(data),
        onError: error => {
          this.forget('uploads');
          this.channelError = error.message;
          this.emit();
          this._retry();
        },
        onEnd: () => {
          this.forget('uploads');
          this._retry();
        }
      }
    );
    this.hold('uploads', sub);
  }

  /** A status from the server (also called by tests). */
  accept(data: IUploadsEvent): void {
    this.profiles = data.profiles;
    this.summary = summarize(data.profiles);
    this.channelError = '';
    this.emit();
  }

  private _retry(): void {
    this.later('retry', () => this.start(), SYNC_RETRY_MS);
  }
}

/** "12:03" today, else a short date and time. */
export function formatSyncTime(ms: number, now = Date.now()): string {
  const at = new Date(ms);
  const sameDay = new Date(now).toDateString() === at.toDateString();
  const time = at.toLocaleTimeString([], {
    hour: '2-digit',
    minute: '2-digit'
  });
  return sameDay
    ? time
    : `${at.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${time}`;
}
