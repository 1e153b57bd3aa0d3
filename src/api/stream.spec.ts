/**
 * The one websocket: after it drops and comes back, every active subscription (the jobs watch, each log
 * stream, a followed operation) is sent again — logs from where they stopped — and data flows again.
 */
import { ServerConnection } from '@jupyterlab/services';

import { JobsModel } from '../jobs/model';
import { LogsModel, REPAINT_MS } from '../logs/model';
import { StreamClient } from './stream';
import { logMessage } from '../testing/fakes';

jest.mock('./request', () => ({
  requestAPI: jest.fn(),
  postJSON: jest.fn()
}));

/** A websocket the test plays the server of: it records what the client sends. */
class FakeSocket {
  static all: FakeSocket[] = [];
  readyState = 0;
  sent: any[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((event: { data: string }) => void) | null = null;
  onclose: (() => void) | null = null;

  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }

  static last(): FakeSocket {
    return FakeSocket.all[FakeSocket.all.length - 1];
  }

  send(text: string): void {
    if (this.readyState !== 1) {
      throw new Error('send on a socket that is not open');
    }
    this.sent.push(JSON.parse(text));
  }

  close(): void {
    this.drop();
  }

  // -- the server's side --
  open(): void {
    this.readyState = 1;
    this.onopen?.();
  }

  drop(): void {
    if (this.readyState === 3) {
      return;
    }
    this.readyState = 3;
    this.onclose?.();
  }

  push(id: string, data: unknown): void {
    this.onmessage?.({ data: JSON.stringify({ id, type: 'data', data }) });
  }

  subscriptions(): Record<string, any> {
    const out: Record<string, any> = {};
    for (const m of this.sent) {
      if (m.op === 'subscribe') {
        out[m.channel] = m;
      }
    }
    return out;
  }
}

const settings = ServerConnection.makeSettings({
  baseUrl: 'http://localhost/',
  wsUrl: 'ws://localhost/',
  WebSocket: FakeSocket as any
});

const run = { name: 'train', namespace: 'default', uid: 'uid-1' };
const job = (phase: string) => ({ ...run, phase, nodes: 2 });
const line = (pod: string, ts: string, text: string) => ({
  pod,
  ts,
  text,
  rank: 0
});

/** Each test of the block starts with no socket made yet, on fake timers. */
function onFreshSocketsAndFakeTimers(): void {
  beforeEach(() => {
    FakeSocket.all = [];
    jest.useFakeTimers();
  });
  afterEach(() => jest.useRealTimers());
}

describe('StreamClient reconnect', () => {
  onFreshSocketsAndFakeTimers();

  it('re-sends every active subscription after the socket drops, and data flows again', () => {
    const stream = new StreamClient(settings);
    const jobs = new JobsModel(stream);
    const logs = new LogsModel(run, stream);
    const ops: string[] = [];
    jobs.watch();
    logs.start();
    stream.subscribe(
      'operation',
      { operation: 'op-1' },
      { onData: (e: any) => ops.push(e.type) }
    );
    expect(FakeSocket.all).toHaveLength(1);
    const first = FakeSocket.last();
    expect(first.url).toBe('ws://localhost/ranktable/stream');
    first.open();
    const before = first.subscriptions();
    expect(Object.keys(before).sort()).toEqual(['jobs', 'logs', 'operation']);
    expect(before.logs).toMatchObject({
      job: 'train',
      namespace: 'default',
      uid: 'uid-1',
      follow: true,
      since: {}
    });

    first.push(before.jobs.id, { event: 'snapshot', jobs: [job('Pending')] });
    first.push(before.logs.id, logMessage([line('train-w-0', 't1', 'step 1')]));
    first.push(before.operation.id, { type: 'progress' });
    jest.advanceTimersByTime(REPAINT_MS);
    expect(jobs.jobs.map(j => j.phase)).toEqual(['Pending']);
    expect(logs.buffer.toArray()).toHaveLength(1);

    // the socket drops (server restart, network): nothing is lost, a new one is opened after a back-off
    first.drop();
    expect(stream.connected).toBe(false);
    expect(jobs.banner?.reason).toBeUndefined();
    jest.advanceTimersByTime(500);
    expect(FakeSocket.all).toHaveLength(2);
    const second = FakeSocket.last();
    second.open();
    expect(jobs.disconnected).toBe(true); // the rows are the last known state until data flows again
    expect(logs.status).toBe('reconnecting…');

    const after = second.subscriptions();
    expect(Object.keys(after).sort()).toEqual(['jobs', 'logs', 'operation']);
    expect(after.jobs).toMatchObject({ channel: 'jobs' });
    expect(after.operation).toMatchObject({ operation: 'op-1' });
    // the log stream resumes from the last line it had, per pod
    expect(after.logs).toMatchObject({
      job: 'train',
      uid: 'uid-1',
      follow: true,
      since: { 'train-w-0': 't1' }
    });

    second.push(after.jobs.id, { event: 'snapshot', jobs: [job('Running')] });
    second.push(
      after.logs.id,
      logMessage([
        line('train-w-0', 't1', 'step 1'), // the boundary line, replayed: not shown twice
        line('train-w-0', 't2', 'step 2')
      ])
    );
    second.push(after.operation.id, { type: 'done' });
    jest.advanceTimersByTime(REPAINT_MS);
    expect(jobs.jobs.map(j => j.phase)).toEqual(['Running']);
    expect(jobs.banner).toBeNull();
    expect(logs.buffer.toArray().map(l => l.text)).toEqual([
      'step 1',
      'step 2'
    ]);
    expect(logs.status).toBe('live');
    expect(ops).toEqual(['progress', 'done']);

    logs.dispose();
    jobs.dispose();
    stream.dispose();
  });

  it('keeps retrying with back-off while the server is away, then restores every subscription', () => {
    const stream = new StreamClient(settings);
    const jobs = new JobsModel(stream);
    jobs.watch();
    FakeSocket.last().open();
    FakeSocket.last().drop();
    // two failed attempts: the socket closes before it opens
    jest.advanceTimersByTime(500);
    FakeSocket.last().drop();
    jest.advanceTimersByTime(999);
    expect(FakeSocket.all).toHaveLength(2); // the second wait is longer
    jest.advanceTimersByTime(1);
    expect(FakeSocket.all).toHaveLength(3);
    const socket = FakeSocket.last();
    socket.open();
    const sub = socket.subscriptions().jobs;
    expect(sub).toBeDefined();
    socket.push(sub.id, { event: 'snapshot', jobs: [job('Running')] });
    expect(jobs.jobs).toHaveLength(1);
    expect(jobs.banner).toBeNull();
    jobs.dispose();
    stream.dispose();
  });

  it('does not renew a subscription that was disposed or ended before the drop', () => {
    const stream = new StreamClient(settings);
    const kept = stream.subscribe('jobs', {}, { onData: () => undefined });
    const gone = stream.subscribe(
      'logs',
      { job: 'a' },
      { onData: () => undefined }
    );
    stream.subscribe(
      'operation',
      { operation: 'op-2' },
      { onData: () => undefined }
    );
    const first = FakeSocket.last();
    first.open();
    const ids = first.subscriptions();
    gone.dispose();
    first.onmessage?.({
      data: JSON.stringify({ id: ids.operation.id, type: 'end' })
    });
    first.drop();
    jest.advanceTimersByTime(500);
    const second = FakeSocket.last();
    second.open();
    expect(Object.keys(second.subscriptions())).toEqual(['jobs']);
    kept.dispose();
    stream.dispose();
  });
});

describe('StreamClient state', () => {
  onFreshSocketsAndFakeTimers();

  it('is blocked when the socket closes without ever opening (a proxy refusing upgrades), open once it does', () => {
    const stream = new StreamClient(settings);
    const states: string[] = [];
    stream.stateChanged.connect((_, s) => states.push(s));
    stream.subscribe('jobs', {}, { onData: () => undefined });
    FakeSocket.last().drop(); // refused before opening
    expect(stream.state).toBe('blocked');
    jest.advanceTimersByTime(500);
    FakeSocket.last().drop(); // still refused: no second signal
    jest.advanceTimersByTime(1000);
    FakeSocket.last().open(); // the proxy lets it through now
    expect(states).toEqual(['blocked', 'open']);
    expect(FakeSocket.last().subscriptions().jobs).toBeDefined();
    FakeSocket.last().drop(); // an open socket that drops is a reconnect, not a block
    expect(stream.state).toBe('lost');
    stream.dispose();
  });

  it('stays lost while the server is gone (retries refused), says when it tries next, and opens again', () => {
    const stream = new StreamClient(settings);
    const states: string[] = [];
    stream.stateChanged.connect((_, s) => states.push(s));
    let reconnected = 0;
    stream.reconnected.connect(() => reconnected++);
    stream.subscribe('jobs', {}, { onData: () => undefined });
    FakeSocket.last().open();
    expect(reconnected).toBe(0); // the first socket is no reconnect
    FakeSocket.last().drop(); // the Jupyter server killed
    expect(stream.state).toBe('lost');
    expect(stream.retryAt).toBe(Date.now() + 500);
    jest.advanceTimersByTime(500);
    FakeSocket.last().drop(); // refused while it is down: still lost, not "a proxy blocks websockets"
    expect(stream.state).toBe('lost');
    expect(stream.retryAt).toBe(Date.now() + 1000);
    // "Reconnect now" does not wait for the back-off
    const tries = FakeSocket.all.length;
    stream.reconnect();
    expect(FakeSocket.all).toHaveLength(tries + 1);
    expect(stream.retryAt).toBe(0);
    stream.reconnect(); // one socket at a time
    expect(FakeSocket.all).toHaveLength(tries + 1);
    FakeSocket.last().open(); // the server is back
    expect(states).toEqual(['open', 'lost', 'open']);
    expect(reconnected).toBe(1);
    expect(FakeSocket.last().subscriptions().jobs).toBeDefined();
    jest.advanceTimersByTime(10_000); // the cancelled back-off opens no second socket
    expect(FakeSocket.all).toHaveLength(tries + 1);
    stream.dispose();
  });
});
