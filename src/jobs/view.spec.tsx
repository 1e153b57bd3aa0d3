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
});
