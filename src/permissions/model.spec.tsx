/**
 * @jest-environment jsdom
 */
/**
 * The UI follows the user's rights (#30): what may not be done is disabled with the reason, a user
 * without read gets one message, and a websocket that cannot open falls back to polling, said so.
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { PermissionsModel } from './model';
import { JobsModel, POLL_MS } from '../jobs/model';
import { JobsList } from '../jobs/view';
import { BLOCKED_MESSAGE, LogsModel } from '../logs/model';
import { loadObserveSettings } from '../jobview/observe';
import { RanktableAPIError } from '../api/errors';
import { requestAPI } from '../api/request';
import { FakeStream, trans } from '../testing/fakes';
import { followedLogs } from '../testing/logs';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

const mocked = requestAPI as jest.Mock;

function answer(routes: Record<string, unknown>): void {
  mocked.mockImplementation(async (endPoint: string, init?: RequestInit) => {
    const key = `${init?.method ?? 'GET'} ${endPoint}`;
    const value = routes[key];
    if (value instanceof Error) {
      throw value;
    }
    return value;
  });
}

const alice = {
  user: 'alice',
  owner: 'alice',
  namespace: 'u-alice',
  allowed: {
    list: true,
    submit: true,
    stop: true,
    stop_others: false,
    logs: true,
    exec: true
  },
  jupyter: { read: true, write: true, execute: true }
};

afterEach(() => mocked.mockReset());

describe('PermissionsModel', () => {
  it('allows the owner, refuses another user’s job with whose it is, and what RBAC refuses', async () => {
    answer({ 'GET permissions': alice });
    const rights = new PermissionsModel();
    expect(rights.whyNot('stop', { namespace: 'u-alice' })).toBe(''); // unknown yet: nothing disabled
    await rights.load();
    expect(rights.whyNot('submit')).toBe('');
    expect(
      rights.whyNot('stop', { namespace: 'u-alice', owner: 'alice' })
    ).toBe('');
    expect(rights.whyNot('stop', { namespace: 'team', owner: 'bob' })).toBe(
      'This job belongs to bob: only they (or someone granted stop-others) may stop it.'
    );
    rights.permissions = {
      ...alice,
      allowed: { ...alice.allowed, submit: false, stop_others: true }
    };
    expect(rights.whyNot('submit')).toContain(
      'does not allow creating Volcano jobs in namespace u-alice'
    );
    expect(
      rights.whyNot('resubmit', { namespace: 'u-alice', owner: 'bob' })
    ).toBe('');
  });

  it('a viewer (Jupyter read only) is told write is not theirs', async () => {
    answer({
      'GET permissions': {
        ...alice,
        jupyter: { read: true, write: false, execute: false }
      }
    });
    const rights = new PermissionsModel();
    await rights.load();
    expect(rights.whyNot('submit')).toMatch(/^Read-only: /);
    expect(
      rights.whyNot('stop', { namespace: 'u-alice', owner: 'alice' })
    ).toMatch(/^Read-only: /);
  });
});

describe('a user without read', () => {
  it('gets one clear message instead of "No jobs." and no subscription', async () => {
    answer({
      'GET permissions': new RanktableAPIError('not authorized', 403, '', null)
    });
    const stream = new FakeStream();
    const jobs = new JobsModel(stream as any);
    const host = document.createElement('div');
    document.body.appendChild(host);
    const root = createRoot(host);
    await act(async () => {
      root.render(<JobsList jobs={jobs} trans={trans} onOpen={() => {}} />);
    });
    const notice = host.querySelector('[data-notice="no-read"]');
    expect(notice?.textContent).toContain('You may not read Ranktable');
    expect(host.textContent).not.toContain('No jobs.');
    expect(stream.subs.every(s => s.disposed)).toBe(true);
    act(() => root.unmount());
  });
});

describe('a websocket that cannot open', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('polls the list over REST, says so, and stops polling once the socket opens', async () => {
    answer({
      'GET permissions': alice,
      'GET jobs': {
        jobs: [{ name: 'bert', namespace: 'u-alice', phase: 'Running' }]
      }
    });
    const stream = new FakeStream();
    const jobs = new JobsModel(stream as any);
    jobs.watch();
    const calls = () => mocked.mock.calls.filter(c => c[0] === 'jobs').length;
    expect(jobs.polling).toBe(false);
    stream.stateChanged.emit('blocked');
    await Promise.resolve();
    expect(jobs.polling).toBe(true);
    expect(calls()).toBe(1);
    await jest.advanceTimersByTimeAsync(POLL_MS);
    expect(calls()).toBe(2);
    expect(jobs.jobs.map(j => j.name)).toEqual(['bert']);
    stream.stateChanged.emit('open');
    expect(jobs.polling).toBe(false);
    await jest.advanceTimersByTimeAsync(3 * POLL_MS);
    expect(calls()).toBe(2);
  });
});

describe('page load', () => {
  it('writes no settings when the server already has them; a difference is sent', async () => {
    const state = { settings: {}, user: { hang_factor: 5 }, server: {} };
    answer({ 'GET observe/settings': state, 'PUT observe/settings': state });
    expect(await loadObserveSettings({ hang_factor: 5 } as any)).toBeNull();
    expect(mocked.mock.calls.map(c => c[1]?.method ?? 'GET')).toEqual(['GET']);
    await loadObserveSettings({ hang_factor: 6 } as any);
    expect(mocked.mock.calls.map(c => c[1]?.method ?? 'GET')).toEqual([
      'GET',
      'GET',
      'PUT'
    ]);
  });
});

describe('a live log behind a proxy without websockets', () => {
  it('says why no line comes, and clears once the socket opens', () => {
    const { stream, logs } = followedLogs({
      namespace: 'u-alice',
      name: 'bert',
      uid: 'uid-1'
    });
    expect(logs.status).toBe('connecting…');
    stream.stateChanged.emit('blocked');
    expect(logs.error).toBe(BLOCKED_MESSAGE);
    stream.stateChanged.emit('open');
    expect(logs.error).toBe('');
    logs.dispose();
    stream.stateChanged.emit('blocked'); // released with the model
    expect(logs.error).toBe('');
  });

  it('says so at once when the socket was already known blocked', () => {
    const stream = Object.assign(new FakeStream(), { state: 'blocked' });
    const logs = new LogsModel(
      { namespace: 'u-alice', name: 'bert', uid: 'uid-2' },
      stream as any
    );
    logs.start();
    expect(logs.error).toBe(BLOCKED_MESSAGE);
    logs.dispose();
  });
});
