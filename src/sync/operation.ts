import { StreamClient, post, subscribe } from '../api/client';
import type { components, paths } from '../api/openapi';
import { Model } from '../ui/model';

type OperationEvent = components['schemas']['OperationEvent'];
/** A transfer's progress on the `operation` channel. */
export type IProgress = Extract<OperationEvent, { type: 'progress' }>;
/** A file changed on the instance since the last upload (not overwritten). */
export type IConflict = Extract<OperationEvent, { type: 'conflict' }>;

type JsonBody<P extends '/ranktable/sync' | '/ranktable/download'> =
  paths[P]['post']['requestBody']['content']['application/json'];
export type ISyncRequest = JsonBody<'/ranktable/sync'>;
export type IDownloadRequest = JsonBody<'/ranktable/download'>;
/** A finished upload's result (the `done` event of a /ranktable/sync operation). */
export type ISyncResult = components['schemas']['SyncResult'];
/** A finished download's result (the `done` event of a /ranktable/download operation). */
export type IDownloadResult = components['schemas']['DownloadResult'];

/**
 * The Sync section's transfers: an upload or download started on the server (POST /ranktable/sync or
 * /download), then followed on the stream's `operation` channel: progress, conflicts, the result.
 */
export class SyncOperations extends Model {
  progress: IProgress | null = null;
  conflicts: IConflict[] = [];
  error = '';
  running = false;

  constructor(private _stream: StreamClient) {
    super();
  }

  /** Upload the folder (`force`: the conflicting files to overwrite); `onDone` gets the result. A refusal rejects. */
  upload(
    body: ISyncRequest,
    onDone: (result: ISyncResult) => void
  ): Promise<void> {
    this.error = '';
    this.progress = null;
    if (!Array.isArray(body.force) || !body.force.length) {
      this.conflicts = [];
    }
    this.emit();
    return post('/ranktable/sync', {}, body).then(op =>
      this._follow(op.operation, onDone)
    );
  }

  download(
    body: IDownloadRequest,
    onDone: (result: IDownloadResult) => void
  ): Promise<void> {
    this.error = '';
    this.emit();
    return post('/ranktable/download', {}, body).then(op =>
      this._follow(op.operation, onDone)
    );
  }

  /** Forget the conflicts `resolved` says were settled (downloaded or overwritten). */
  dropConflicts(resolved: (path: string) => boolean): void {
    this.conflicts = this.conflicts.filter(c => !resolved(c.path));
    this.emit();
  }

  fail(message: string): void {
    this.error = message;
    this.emit();
  }

  /** Follow the started operation; a refusal (a bad folder, an unknown profile) rejected before this. */
  private _follow<R>(operation: string, onDone: (result: R) => void): void {
    this.running = true;
    this.emit();
    const stop = (error = ''): void => {
      this.running = false;
      this.error = error || this.error;
      this.emit();
    };
    subscribe(
      this._stream,
      'operation',
      { operation },
      {
        onData: event => {
          if (event.type === 'progress') {
            this.progress = event;
            this.emit();
          } else if (event.type === 'conflict') {
            this.conflicts = [
              ...this.conflicts.filter(x => x.path !== event.path),
              event
            ];
            this.emit();
          } else if (event.type === 'done') {
            stop(event.error?.message);
            if (!event.error) {
              // the path's operation is a sync or a download: its result has that schema
              onDone(event.result as R);
            }
          }
        },
        onError: e => stop(e.message),
        onEnd: () => stop()
      }
    );
  }
}
