import {
  IUploadStatus,
  SYNC_RETRY_MS,
  SyncStatusModel,
  formatSyncTime,
  summarize,
  uploadTargets
} from './model';
import { syncStatusText } from './statustext';
import { FakeStream, trans } from '../testing/fakes';

const status = (extra: Partial<IUploadStatus> = {}): IUploadStatus => ({
  profile: 'sim-notebook',
  local_root: '/home/u/work',
  mode: 'explicit',
  pending: 0,
  uploading: 0,
  syncs: 0,
  last_sync: null,
  last_summary: null,
  conflicts: [],
  last_error: null,
  watching: false,
  ...extra
});

describe('uploadTargets', () => {
  it('changes when a profile syncs another folder or mode, not when files move', () => {
    const a = uploadTargets({ a: status() });
    expect(uploadTargets({ a: status({ pending: 3, syncs: 9 }) })).toBe(a);
    expect(
      uploadTargets({ a: status({ local_root: '/home/u/other' }) })
    ).not.toBe(a);
    expect(uploadTargets({ a: status({ mode: 'always' }) })).not.toBe(a);
    expect(uploadTargets({})).not.toBe(a);
  });
});

describe('summarize', () => {
  it('is off without automatic uploads, idle when nothing waits', () => {
    expect(summarize({}).state).toBe('off');
    const s = summarize({ a: status({ syncs: 2, last_sync: 100 }) });
    expect(s).toMatchObject({ state: 'idle', files: 0, lastSync: 100_000 });
  });
  it('counts queued and in-flight files over profiles; uploading wins', () => {
    const s = summarize({
      a: status({ pending: 1 }),
      b: status({ profile: 'b', uploading: 2, last_error: 'down' })
    });
    expect(s).toMatchObject({ state: 'uploading', files: 3 });
    expect(s.profiles).toEqual(['a', 'b']);
  });
  it('shows an error before conflicts, and conflicts before idle', () => {
    expect(
      summarize({
        a: status({ last_error: 'connection refused', conflicts: ['x.py'] })
      })
    ).toMatchObject({
      state: 'error',
      error: 'sim-notebook: connection refused'
    });
    expect(
      summarize({ a: status({ conflicts: ['x.py', 'y.py'] }) })
    ).toMatchObject({ state: 'conflict', conflicts: ['x.py', 'y.py'] });
  });
});

describe('SyncStatusModel', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('follows the uploads channel: uploading, then synced with the time', () => {
    const stream = new FakeStream();
    const model = new SyncStatusModel(stream as any);
    let changes = 0;
    model.changed.connect(() => changes++);
    model.start();
    model.start(); // one subscription
    expect(stream.subs.map(s => s.channel)).toEqual(['uploads']);
    const sub = stream.last();
    sub.handlers.onData({ profiles: { 'sim-notebook': status() } });
    expect(syncStatusText(model, trans).text).toBe('Sync: on');
    sub.handlers.onData({
      profiles: { 'sim-notebook': status({ pending: 1 }) }
    });
    expect(model.summary.state).toBe('uploading');
    expect(syncStatusText(model, trans).text).toBe('Sync: uploading 1 file');
    sub.handlers.onData({
      profiles: { 'sim-notebook': status({ uploading: 3 }) }
    });
    expect(syncStatusText(model, trans).text).toBe('Sync: uploading 3 files');
    // today at 12:03 (a fixed date would print 'Dec 1 12:03' on any other day)
    const now = new Date();
    const at = new Date(
      now.getFullYear(),
      now.getMonth(),
      now.getDate(),
      12,
      3
    ).getTime();
    sub.handlers.onData({
      profiles: { 'sim-notebook': status({ syncs: 1, last_sync: at / 1000 }) }
    });
    expect(model.summary).toMatchObject({ state: 'idle', lastSync: at });
    expect(syncStatusText(model, trans).text).toMatch(/^Synced 12:03/);
    expect(changes).toBe(4);
    model.dispose();
    expect(sub.disposed).toBe(true);
  });

  it('shows a failed channel as an error and subscribes again', () => {
    const stream = new FakeStream();
    const model = new SyncStatusModel(stream as any);
    model.start();
    stream.last().handlers.onError({ message: 'unknown channel', reason: '' });
    expect(syncStatusText(model, trans)).toMatchObject({
      text: 'Sync: error',
      title: 'Sync status unavailable: unknown channel'
    });
    jest.advanceTimersByTime(SYNC_RETRY_MS);
    expect(stream.subs).toHaveLength(2);
    stream.last().handlers.onData({ profiles: { a: status() } });
    expect(model.channelError).toBe('');
    expect(syncStatusText(model, trans).text).toBe('Sync: on');
    model.dispose();
  });
});

describe('formatSyncTime', () => {
  it('prints only the time today and adds the date on another day', () => {
    const now = new Date(2026, 11, 2, 18, 0).getTime();
    const today = new Date(2026, 11, 2, 12, 3).getTime();
    const yesterday = new Date(2026, 11, 1, 12, 3).getTime();
    expect(formatSyncTime(today, now)).toMatch(/^12:03/);
    expect(formatSyncTime(yesterday, now)).toMatch(/^Dec 1,? 12:03/);
  });
});
