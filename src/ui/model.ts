import { ISignal, Signal } from '@lumino/signaling';
import { IDisposable } from '@lumino/disposable';

import { messageOf } from '../api/errors';

type Handle = ReturnType<typeof setTimeout>;

/**
 * What every per-domain model shares: a `changed` signal that is quiet once disposed, named timers
 * (at most one per name) and subscriptions that are all released by `dispose()`.
 */
export abstract class Model implements IDisposable {
  private _changed = new Signal<this, void>(this);
  private _timers = new Map<string, { handle: Handle; every: boolean }>();
  private _subs = new Map<string, IDisposable>();
  private _disposed = false;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Tell the views (not after dispose). */
  protected emit(): void {
    if (!this._disposed) {
      this._changed.emit();
    }
  }

  /**
   * Call `fn` once after `ms` under `name`; while a timer of that name is pending nothing new starts,
   * unless `restart` (then the pending one is dropped). Returns whether a timer was started.
   */
  protected later(
    name: string,
    fn: () => void,
    ms: number,
    restart = false
  ): boolean {
    if (this._disposed || (this._timers.has(name) && !restart)) {
      return false;
    }
    this.cancel(name);
    const handle = setTimeout(() => {
      this._timers.delete(name);
      fn();
    }, ms);
    this._timers.set(name, { handle, every: false });
    return true;
  }

  /** Call `fn` every `ms` under `name` until cancelled or disposed (no second one while it runs). */
  protected every(name: string, fn: () => void, ms: number): boolean {
    if (this._disposed || this._timers.has(name)) {
      return false;
    }
    this._timers.set(name, { handle: setInterval(fn, ms), every: true });
    return true;
  }

  protected pending(name: string): boolean {
    return this._timers.has(name);
  }

  protected cancel(name: string): void {
    const timer = this._timers.get(name);
    if (timer) {
      (timer.every ? clearInterval : clearTimeout)(timer.handle);
      this._timers.delete(name);
    }
  }

  /** Keep `sub` under `name` (the previous one of that name is disposed); released on dispose. */
  protected hold(name: string, sub: IDisposable): void {
    this.release(name);
    this._subs.set(name, sub);
  }

  /** Whether a subscription of that name is held. */
  protected holds(name: string): boolean {
    return this._subs.has(name);
  }

  /** Dispose the subscription of that name, if any. */
  protected release(name: string): void {
    this._subs.get(name)?.dispose();
    this._subs.delete(name);
  }

  /** Forget a subscription that ended by itself (not disposed again). */
  protected forget(name: string): void {
    this._subs.delete(name);
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    for (const name of [...this._timers.keys()]) {
      this.cancel(name);
    }
    for (const name of [...this._subs.keys()]) {
      this.release(name);
    }
    Signal.clearData(this);
  }
}

/** Shared by the small remote models: a list fetched from one endpoint, a changed signal, the last error. */
export abstract class ListModel<T> extends Model {
  items: T[] = [];
  error = '';
  /** The action in flight (a forward or kernel id, or "open"), for disabling its buttons. */
  busy = '';

  protected abstract fetch(): Promise<T[]>;

  /** Reload the list; an error is kept in `error` (the last good list stays). */
  async refresh(): Promise<void> {
    try {
      this.items = await this.fetch();
      this.error = '';
    } catch (e) {
      this.error = messageOf(e);
    }
    this.emit();
  }

  /** Run one server action marked busy under `key`, then reload; errors are rethrown to the view. */
  protected async act<R>(key: string, action: () => Promise<R>): Promise<R> {
    this.busy = key;
    this.emit();
    try {
      return await action();
    } finally {
      this.busy = '';
      await this.refresh();
    }
  }
}
