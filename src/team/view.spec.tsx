/**
 * @jest-environment jsdom
 */
/** The team's jobs on a shared pool (#30.1): nothing read at page load; unfolded, who owns what. */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { TeamModel, TEAM_REFRESH_MS } from './model';
import { TeamView } from './view';
import { requestAPI } from '../api/request';
import { trans } from '../testing/fakes';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

const team = {
  user: 'carol',
  scope: 'cluster',
  jobs: [
    {
      name: 'bert',
      namespace: 'u-alice',
      phase: 'Running',
      nodes: 1,
      owner: 'alice',
      npus: 8,
      mine: false
    },
    {
      name: 'gpt',
      namespace: 'u-bob',
      phase: 'Pending',
      nodes: 2,
      owner: 'bob',
      npus: 0,
      mine: false
    }
  ],
  free_per_leaf: { 'leaf-0': 8, 'leaf-1': 16 },
  free_npus: 24,
  queues: [
    {
      name: 'default',
      state: 'Open',
      used_npus: 8,
      queued_jobs: 1,
      capability_npus: null,
      free_npus: 24
    }
  ]
};

describe('TeamView', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => {
    jest.useRealTimers();
    (requestAPI as jest.Mock).mockReset();
  });

  it('reads nothing until unfolded, then shows owners, queued jobs and free NPUs, and stops when folded', async () => {
    (requestAPI as jest.Mock).mockResolvedValue(team);
    const model = new TeamModel();
    const host = document.createElement('div');
    document.body.appendChild(host);
    const root = createRoot(host);
    const rights = {
      user: 'carol',
      namespace: 'default',
      allowed: {
        list: true,
        submit: false,
        stop: false,
        stop_others: false,
        logs: true,
        exec: false
      },
      jupyter: { read: true, write: false, execute: false }
    };
    act(() =>
      root.render(
        <TeamView team={model} me="carol" rights={rights} trans={trans} />
      )
    );
    expect(requestAPI).not.toHaveBeenCalled();
    const details = host.querySelector('details')!;
    await act(async () => {
      details.open = true;
      details.dispatchEvent(new Event('toggle'));
    });
    expect(requestAPI).toHaveBeenCalledWith('team');
    expect(host.querySelector('[data-team="rights"]')!.textContent).toBe(
      'You (carol) in namespace default: may list, read logs; may not submit, stop, stop others’ jobs, exec in pods.'
    );
    const rows = Array.from(host.querySelectorAll('tbody tr')).map(r =>
      Array.from(r.querySelectorAll('td')).map(td => td.textContent)
    );
    expect(rows).toEqual([
      ['bert', 'alice', 'Running', '8'],
      ['gpt', 'bob', 'Pending', '0']
    ]);
    expect(host.querySelector('[data-team="free"]')!.textContent).toBe(
      'Free NPUs: 24 (per leaf: leaf-0 8, leaf-1 16)'
    );
    expect(host.querySelector('[data-queue="default"]')!.textContent).toBe(
      'Queue default: 1 queued, 8 NPUs in use, 24 free'
    );
    await act(async () => jest.advanceTimersByTimeAsync(TEAM_REFRESH_MS));
    expect(requestAPI).toHaveBeenCalledTimes(2);
    await act(async () => {
      details.open = false;
      details.dispatchEvent(new Event('toggle'));
    });
    await act(async () => jest.advanceTimersByTimeAsync(3 * TEAM_REFRESH_MS));
    expect(requestAPI).toHaveBeenCalledTimes(2);
    act(() => root.unmount());
  });
});
