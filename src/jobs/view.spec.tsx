/**
 * @jest-environment jsdom
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { JobsList } from './view';
import { JobsModel } from './model';
import { FakeStream, trans } from '../testing/fakes';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

describe('JobsList', () => {
  it('shows name, phase, pods ready and a health mark; a click opens the run', () => {
    const stream = new FakeStream();
    const jobs = new JobsModel(stream as any);
    const opened: string[] = [];
    const host = document.createElement('div');
    document.body.appendChild(host);
    const root = createRoot(host);
    act(() => {
      root.render(
        <JobsList
          jobs={jobs}
          trans={trans}
          onOpen={run => opened.push(run.uid)}
        />
      );
    });
    act(() => {
      stream.last().handlers.onData({
        event: 'snapshot',
        jobs: [
          {
            name: 'crashing-job-with-a-long-name',
            namespace: 'default',
            uid: 'u-crash',
            phase: 'Running',
            nodes: 4,
            health: {
              restarts: 5,
              reasons: ['CrashLoopBackOff'],
              exit_code: 1,
              ready: 0,
              total: 4
            }
          },
          {
            name: 'fine',
            namespace: 'default',
            uid: 'u-fine',
            phase: 'Running',
            nodes: 2,
            health: {
              restarts: 0,
              reasons: [],
              exit_code: null,
              ready: 2,
              total: 2
            }
          }
        ]
      });
    });
    const rows = host.querySelectorAll('.jp-Ranktable-jobRow');
    expect(rows.length).toBe(2);
    const crash = rows[0] as HTMLElement;
    expect(crash.querySelector('.jp-Ranktable-jobName')!.textContent).toBe(
      'crashing-job-with-a-long-name'
    );
    expect(crash.title).toContain('CrashLoopBackOff');
    expect(crash.querySelector('.jp-Ranktable-ready')!.textContent).toBe('0/4');
    expect(
      crash
        .querySelector('.jp-Ranktable-health')!
        .classList.contains('jp-mod-bad')
    ).toBe(true);
    expect(
      rows[1]
        .querySelector('.jp-Ranktable-health')!
        .classList.contains('jp-mod-bad')
    ).toBe(false);
    act(() => crash.click());
    expect(opened).toEqual(['u-crash']);

    // the pool goes away: a banner with the reason replaces "No jobs."
    act(() => {
      stream.last().handlers.onError({
        message: 'connection refused',
        reason: 'unreachable'
      });
    });
    expect(host.querySelector('[role="alert"]')!.textContent).toContain(
      'connection refused'
    );
    act(() => root.unmount());
    jobs.dispose();
  });

  it('says the Jupyter server is lost and reconnecting, keeps the rows as stale, and goes live again once', async () => {
    const { requestAPI } = jest.requireMock('../api/request');
    (requestAPI as jest.Mock).mockRejectedValue(
      new TypeError('Failed to fetch')
    );
    const stream = new FakeStream();
    const jobs = new JobsModel(stream as any);
    const host = document.createElement('div');
    document.body.appendChild(host);
    const root = createRoot(host);
    act(() =>
      root.render(
        <JobsList jobs={jobs} trans={trans} onOpen={() => undefined} />
      )
    );
    const row = (name: string) => ({
      name,
      namespace: 'default',
      uid: `u-${name}`,
      phase: 'Running',
      nodes: 1
    });
    const watch = stream.last();
    act(() => watch.handlers.onData({ event: 'snapshot', jobs: [row('a')] }));
    const notice = () => host.querySelector('[data-notice="disconnected"]');
    const list = () => host.querySelector('.jp-Ranktable-jobList')!;
    expect(notice()).toBeNull();
    expect(list().classList.contains('jp-mod-stale')).toBe(false);

    // the server is killed: the socket is lost, and a REST call made meanwhile fails too
    stream.retryAt = Date.now() + 4000;
    act(() => stream.stateChanged.emit('lost'));
    await act(() => jobs.refresh());
    expect(notice()!.textContent).toContain(
      'Disconnected from the Jupyter server'
    );
    expect(notice()!.textContent).toContain('next try in 4 s');
    // one notice, not a second "Cluster unavailable" alert for the failed request
    expect(host.querySelector('[role="alert"]')).toBeNull();
    expect(list().classList.contains('jp-mod-stale')).toBe(true);
    expect(host.textContent).toContain('Last known state, not live:');
    act(() => (notice()!.querySelector('button') as HTMLButtonElement).click());
    expect(stream.reconnects).toBe(1);

    // back: the socket opens, the watch is renewed and its snapshot replaces the rows (no doubles)
    act(() => {
      stream.stateChanged.emit('open');
      watch.handlers.onReconnect();
    });
    expect(notice()).not.toBeNull(); // stale until the new snapshot
    act(() =>
      watch.handlers.onData({ event: 'snapshot', jobs: [row('a'), row('b')] })
    );
    expect(notice()).toBeNull();
    expect(list().classList.contains('jp-mod-stale')).toBe(false);
    expect(
      [...host.querySelectorAll('.jp-Ranktable-jobRow')].map(r =>
        r.getAttribute('data-job')
      )
    ).toEqual(['a', 'b']);
    act(() => root.unmount());
    jobs.dispose();
  });
});
