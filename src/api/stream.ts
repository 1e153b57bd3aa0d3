import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import type { components } from './openapi';

/** A subscription's error (`components/schemas/Error` in openapi.yaml). */
export type IStreamError = components['schemas']['Error'];

/** What a subscriber does with a channel's messages (`T`: the channel's data, typed by client.ts). */
export interface ISubscriptionHandlers<T = unknown> {
  onData: (data: T) => void;
  onEnd?: () => void;
  onError?: (error: IStreamError) => void;
  /** Called on (re)connection; may return new params (e.g. a resume point). */
  params?: () => Record<string, unknown>;
  /** Called when the connection dropped and the subscription is about to be renewed. */
  onReconnect?: () => void;
}

/**
 * The websocket's state: `open`; `blocked` when it could not be opened at all (a proxy that does not
 * pass WebSocket upgrades, while REST works); `lost` once a socket that was open closed, until one opens
 * again (the Jupyter server restarted or unreachable: the views say so rather than show stale data as
 * live); `idle` before the first try.
 */
export type StreamState = 'idle' | 'open' | 'blocked' | 'lost';

/** `WebSocket.OPEN`, without needing the global (the socket class comes from the settings). */
const OPEN = 1;

interface ISubscription {
  channel: string;
  handlers: ISubscriptionHandlers;
  params: object;
}

/**
 * One websocket to `/ranktable/stream` carrying every live feed, re-opened with back-off when it
 * drops; live subscriptions are renewed (with their resume point) so views reconnect without gaps.
 */
export class StreamClient implements IDisposable {
  private _socket: WebSocket | null = null;
  private _subs = new Map<string, ISubscription>();
  private _next = 1;
  private _delay = 500;
  private _disposed = false;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _opened = false;
  private _state: StreamState = 'idle';
  private _stateChanged = new Signal<this, StreamState>(this);
  private _retryAt = 0;
  private _reconnected = new Signal<this, void>(this);

  constructor(
    private _settings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {}

  get isDisposed(): boolean {
    return this._disposed;
  }

  get state(): StreamState {
    return this._state;
  }

  /** A socket opened after one was lost: what was read over REST meanwhile may be stale. */
  get reconnected(): ISignal<this, void> {
    return this._reconnected;
  }

  /** When the next reconnect is tried (ms since the epoch; 0 while none is planned). */
  get retryAt(): number {
    return this._retryAt;
  }

  /** The websocket opened, was lost, or could not be opened (then the models poll REST instead). */
  get stateChanged(): ISignal<this, StreamState> {
    return this._stateChanged;
  }

  get connected(): boolean {
    return this._socket?.readyState === OPEN;
  }

  subscribe<T>(
    channel: string,
    params: object,
    handlers: ISubscriptionHandlers<T>
  ): IDisposable {
    const id = `s${this._next++}`;
    // the client checked the data's type against the channel: stored untyped
    this._subs.set(id, {
      channel,
      params,
      handlers: handlers as ISubscriptionHandlers
    });
    this._ensure();
    if (this.connected) {
      this._sendSubscribe(id);
    }
    return {
      isDisposed: false,
      dispose: () => {
        if (this._subs.delete(id) && this.connected) {
          this._socket!.send(JSON.stringify({ op: 'unsubscribe', id }));
        }
      }
    };
  }

  /** Open a lost socket now, without waiting for the back-off (a user's "Reconnect now"). */
  reconnect(): void {
    if (this._socket || this._disposed || this._subs.size === 0) {
      return;
    }
    if (this._timer) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    this._retryAt = 0;
    this._ensure();
  }

  dispose(): void {
    this._disposed = true;
    if (this._timer) {
      clearTimeout(this._timer);
    }
    this._subs.clear();
    this._socket?.close();
  }

  private _ensure(): void {
    if (this._socket || this._disposed) {
      return;
    }
    let url = URLExt.join(this._settings.wsUrl, 'ranktable', 'stream');
    const token = this._settings.token;
    if (token && this._settings.appendToken) {
      url += `?token=${encodeURIComponent(token)}`;
    }
    const socket = new this._settings.WebSocket(url);
    this._socket = socket;
    socket.onopen = () => {
      this._retryAt = 0;
      this._setState('open');
      this._delay = 500;
      const reopened = this._opened;
      this._opened = true;
      for (const [id, sub] of this._subs) {
        if (reopened) {
          sub.handlers.onReconnect?.();
        }
        this._sendSubscribe(id);
      }
      if (reopened) {
        this._reconnected.emit();
      }
    };
    socket.onmessage = event => this._onMessage(String(event.data));
    socket.onclose = () => {
      this._socket = null;
      // a socket this page had open is lost (whatever the retries meet) until one opens again
      const live = this._subs.size > 0 ? 'lost' : 'idle';
      this._setState(this._opened ? live : 'blocked');
      if (this._disposed || this._subs.size === 0) {
        this._retryAt = 0;
        return;
      }
      this._retryAt = Date.now() + this._delay;
      this._timer = setTimeout(() => this._ensure(), this._delay);
      this._delay = Math.min(this._delay * 2, 10_000);
    };
  }

  private _setState(state: StreamState): void {
    if (state !== this._state && !this._disposed) {
      this._state = state;
      this._stateChanged.emit(state);
    }
  }

  private _sendSubscribe(id: string): void {
    const sub = this._subs.get(id);
    if (!sub || !this._socket) {
      return;
    }
    const params = { ...sub.params, ...(sub.handlers.params?.() ?? {}) };
    this._socket.send(
      JSON.stringify({ op: 'subscribe', id, channel: sub.channel, ...params })
    );
  }

  private _onMessage(raw: string): void {
    let msg: any;
    try {
      msg = JSON.parse(raw);
    } catch {
      return;
    }
    const sub = this._subs.get(msg.id);
    if (!sub) {
      return;
    }
    if (msg.type === 'data') {
      sub.handlers.onData(msg.data);
    } else if (msg.type === 'end') {
      this._subs.delete(msg.id);
      sub.handlers.onEnd?.();
    } else if (msg.type === 'error') {
      this._subs.delete(msg.id);
      sub.handlers.onError?.(msg.error);
    }
  }
}
