import {
  ILogFilter,
  ILogLine,
  linesOfGroups,
  LogMerger,
  matchesFilter,
  parseRanks,
  rankIdOf
} from './lines';
import { StreamClient, get, subscribe } from '../api/client';
import type { paths } from '../api/openapi';
import { RingBuffer } from '../ui/ringbuffer';
import { Model } from '../ui/model';
import { IRunRef } from '../jobs/model';

/** `GET /ranktable/jobs/{ns}/{name}/runs/{run}/logs`: an archived run's lines (generated from openapi.yaml). */
export type IArchivedLines =
  paths['/ranktable/jobs/{namespace}/{name}/runs/{run}/logs']['get']['responses']['200']['content']['application/json'];

export const LOG_CAPACITY = 50_000;
/** At most this often the view repaints, however fast lines arrive. */
export const REPAINT_MS = 100;

/**
 * One run's log stream: a bounded buffer, an incrementally maintained filtered view, gap-free resume
 * after a reconnect, and throttled change notifications. Views render it and call its setters.
 */
/** What a live log says while the websocket cannot be opened. */
export const BLOCKED_MESSAGE =
  'Live logs need the websocket to this server, which could not be opened (a proxy in front of Jupyter ' +
  'must pass WebSocket upgrades: Upgrade and Connection headers). The lines appear once it opens.';

export class LogsModel extends Model {
  readonly buffer = new RingBuffer<ILogLine>(LOG_CAPACITY);
  readonly pods = new Set<string>();
  filter: ILogFilter = {};
  rankIdsText = '';
  nodeRanksText = '';
  wrap = false;
  follow = true;
  paused = false;
  status = '';
  error = '';
  private _filtered: RingBuffer<ILogLine> | null = null;
  private _merger = new LogMerger();

  constructor(
    readonly run: IRunRef,
    private _stream: StreamClient
  ) {
    super();
  }

  /** The lines the view shows: the buffer itself, or the filtered copy while a filter is set. */
  get view(): RingBuffer<ILogLine> {
    return this._filtered ?? this.buffer;
  }

  start(): void {
    if (this.holds('logs') || this.isDisposed) {
      return;
    }
    this.status = 'connecting…';
    const sub = subscribe(
      this._stream,
      'logs',
      {
        job: this.run.name,
        namespace: this.run.namespace,
        uid: this.run.uid,
        follow: true
      },
      {
        params: () => ({ since: this._merger.since() }),
        onReconnect: () => {
          this._merger.beginReplay();
          this.status = 'reconnecting…';
          this._emitSoon();
        },
        onData: data => this.accept(linesOfGroups(data.pods)),
        onEnd: () => {
          this.forget('logs');
          this.status = 'ended';
          this._emitSoon();
          if (!this.buffer.size) {
            // an earlier run (replaced by a same-name resubmit, or stopped): its lines from the archive
            void this.loadArchive();
          }
        },
        onError: e => {
          this.forget('logs');
          this.status = '';
          this.error = e.message;
          this._emitSoon();
        }
      }
    );
    this.hold('logs', sub);
    this._watchTransport(); // after the hold: a socket already known blocked is said at once
  }

  /**
   * A websocket that cannot be opened (a proxy refusing upgrades) leaves a live log nothing to read: the
   * view says so and why, instead of "connecting…" for ever; the lines come once the socket opens.
   */
  private _watchTransport(): void {
    if (this.holds('transport')) {
      return;
    }
    const onState = (_: unknown, state: string) => {
      if (state === 'blocked' && this.holds('logs')) {
        this.error = BLOCKED_MESSAGE;
      } else if (state === 'open' && this.error === BLOCKED_MESSAGE) {
        this.error = '';
      } else {
        return;
      }
      this._emitSoon();
    };
    this._stream.stateChanged.connect(onState);
    this.hold('transport', {
      isDisposed: false,
      dispose: () => void this._stream.stateChanged.disconnect(onState)
    });
    if ((this._stream as { state?: string }).state === 'blocked') {
      onState(null, 'blocked');
    }
  }

  /** An ended run's lines from the server's run archive (none archived: the status stays `ended`). */
  async loadArchive(): Promise<void> {
    let data: IArchivedLines;
    try {
      data = await get('/ranktable/jobs/{namespace}/{name}/runs/{run}/logs', {
        path: { ...this.run, run: this.run.uid }
      });
    } catch (e) {
      const err = e as { status?: number; message?: string };
      if (err.status !== 404) {
        this.error = err.message ?? String(e);
        this._emitSoon();
      }
      return;
    }
    if (this.isDisposed || !data.lines.length) {
      return;
    }
    this.accept(
      data.lines.map(l => ({
        pod: l.pod,
        rank: l.node_rank,
        ts: l.timestamp,
        text: l.text
      }))
    );
    this.status = data.truncated ? 'archived (truncated)' : 'archived';
    this._emitSoon();
  }

  /** New lines from the stream (also called by tests and the benchmark). */
  accept(lines: ILogLine[]): void {
    const first = this.buffer.size === 0;
    const fresh = this._merger.accept(lines);
    for (const l of fresh) {
      l.rankId = rankIdOf(l.text);
      this.pods.add(l.pod);
    }
    this.buffer.push(...fresh);
    if (this._filtered) {
      for (const l of fresh) {
        if (matchesFilter(l, this.filter)) {
          this._filtered.push(l);
        }
      }
    }
    this.status = 'live';
    if (first && fresh.length && !this.paused) {
      this.emit(); // the first lines show at once; the repaints after them are throttled
    } else {
      this._emitSoon();
    }
  }

  setFilter(change: Partial<ILogFilter>): void {
    this.filter = { ...this.filter, ...change };
    this._refilter();
  }

  setRankIds(text: string): void {
    this.rankIdsText = text;
    this.filter = { ...this.filter, rankIds: parseRanks(text) ?? [] };
    this._refilter();
  }

  setNodeRanks(text: string): void {
    this.nodeRanksText = text;
    this.filter = { ...this.filter, nodeRanks: parseRanks(text) ?? [] };
    this._refilter();
  }

  setWrap(wrap: boolean): void {
    this.wrap = wrap;
    this.emit();
  }

  setFollow(follow: boolean): void {
    this.follow = follow;
    this.emit();
  }

  setPaused(paused: boolean): void {
    this.paused = paused;
    this.emit();
  }

  private _refilter(): void {
    const f = this.filter;
    const active = Boolean(
      f.search ||
      f.errorsOnly ||
      f.pods?.length ||
      f.rankIds?.length ||
      f.nodeRanks?.length
    );
    if (!active) {
      this._filtered = null;
    } else {
      const rows = new RingBuffer<ILogLine>(LOG_CAPACITY);
      rows.push(...this.buffer.toArray().filter(l => matchesFilter(l, f)));
      this._filtered = rows;
    }
    this.emit();
  }

  private _emitSoon(): void {
    this.later(
      'repaint',
      () => {
        if (!this.paused) {
          this.emit();
        }
      },
      REPAINT_MS
    );
  }
}
