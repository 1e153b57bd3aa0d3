/** Stand-ins shared by the jest tests (this file is not a test: jest runs only *.spec.ts(x)). */
import { Signal } from '@lumino/signaling';
import { act } from 'react';

/** A stand-in for the websocket client: the test drives each subscription's handlers. */
export class FakeStream {
  subs: { channel: string; params: any; handlers: any; disposed: boolean }[] =
    [];
  /** The websocket's state (`StreamClient.stateChanged`): the test emits 'blocked' or 'open'. */
  readonly stateChanged = new Signal<this, string>(this);
  /** When the next reconnect is tried (`StreamClient.retryAt`), and how often "Reconnect now" was asked. */
  retryAt = 0;
  reconnects = 0;
  reconnect(): void {
    this.reconnects++;
  }
  subscribe(channel: string, params: any, handlers: any) {
    const sub = { channel, params, handlers, disposed: false };
    this.subs.push(sub);
    return {
      isDisposed: false,
      dispose: () => {
        sub.disposed = true;
      }
    };
  }
  last() {
    return this.subs[this.subs.length - 1];
  }
}

/** JupyterLab's translation bundle shape: `%1`… replaced by the arguments; `_n` picks one or many. */
export const trans = {
  __: (text: string, ...args: unknown[]) =>
    text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1])),
  _n: (one: string, many: string, n: number, ...args: unknown[]) =>
    (n === 1 ? one : many).replace(/%(\d)/g, (_, i) =>
      String([n, ...args][Number(i) - 1])
    )
} as any;

/** Type into a React-controlled input (React listens to the native value setter + input event). */
export function type(input: HTMLInputElement, text: string): void {
  const setter = Object.getOwnPropertyDescriptor(
    HTMLInputElement.prototype,
    'value'
  )!.set!;
  act(() => {
    setter.call(input, text);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

/** A `logs` stream message's data for `lines` as the server sends them: a group per run of one pod's lines. */
export function logMessage(
  lines: { pod: string; rank: number | null; ts: string; text: string }[]
) {
  const pods: {
    pod: string;
    rank: number | null;
    n: number;
    ts: string;
    text: string;
  }[] = [];
  for (const l of lines) {
    const last = pods[pods.length - 1];
    if (last && last.pod === l.pod) {
      last.n += 1;
      last.ts += `\n${l.ts}`;
      last.text += `\n${l.text}`;
    } else {
      pods.push({ pod: l.pod, rank: l.rank, n: 1, ts: l.ts, text: l.text });
    }
  }
  return { pods };
}
