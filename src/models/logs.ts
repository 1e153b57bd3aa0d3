import { ISignal, Signal } from '@lumino/signaling';
import { IDisposable } from '@lumino/disposable';

import {
  ILogFilter,
  ILogLine,
  LogMerger,
  matchesFilter,
  parseRanks,
  rankIdOf
} from '../logs';
import { RingBuffer } from '../ringbuffer';
import { StreamClient } from '../stream';
import { IRunRef } from './jobs';

export const LOG_CAPACITY = 50_000;
/** At most this often the view repaints, however fast lines arrive. */
export const REPAINT_MS = 100;

/**
 * One run's log stream: a bounded buffer, an incrementally maintained filtered view, gap-free resume
 * after a reconnect, and throttled change notifications. Views render it and call its setters.
 */
export class LogsModel implements IDisposable {
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
  private _sub: IDisposable | null = null;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _changed = new Signal<this, void>(this);
  private _disposed = false;

  constructor(
    readonly run: IRunRef,
    private _stream: StreamClient
  ) {}

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The lines the view shows: the buffer itself, or the filtered copy while a filter is set. */
  get view(): RingBuffer<ILogLine> {
    return this._filtered ?? this.buffer;
  }

  start(): void {
    if (this._sub || this._disposed) {
      return;
    }
    this.status = 'connecting…';
    this._sub = this._stream.subscribe(
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
        onData: (data: { lines: ILogLine[] }) => this.accept(data.lines),
        onEnd: () => {
          this._sub = null;
          this.status = 'ended';
          this._emitSoon();
        },
        onError: e => {
          this._sub = null;
          this.status = '';
          this.error = e.message;
          this._emitSoon();
        }
      }
    );
  }

  /** New lines from the stream (also called by tests and the benchmark). */
  accept(lines: ILogLine[]): void {
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
    this._emitSoon();
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
    this._changed.emit();
  }

  setFollow(follow: boolean): void {
    this.follow = follow;
    this._changed.emit();
  }

  setPaused(paused: boolean): void {
    this.paused = paused;
    this._changed.emit();
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._sub?.dispose();
    if (this._timer) {
      clearTimeout(this._timer);
    }
    Signal.clearData(this);
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
    this._changed.emit();
  }

  private _emitSoon(): void {
    if (this._timer || this._disposed) {
      return;
    }
    this._timer = setTimeout(() => {
      this._timer = null;
      if (!this.paused) {
        this._changed.emit();
      }
    }, REPAINT_MS);
  }
}
