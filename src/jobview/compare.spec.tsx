/**
 * @jest-environment jsdom
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { ComparePanel } from './compare';
import { IRunComparison, IRunSummary } from './observe';
import { requestAPI } from '../api/request';
import { trans } from '../testing/fakes';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

function summary(run: string, extra: Partial<IRunSummary>): IRunSummary {
  return {
    run,
    outcome: 'Completed',
    created: 100,
    ended: 112,
    duration_s: 12,
    ranks: 2,
    last_step: 30,
    least_step: 30,
    loss: 0.5,
    step_time_s: 0.3,
    throughput: null,
    throughput_unit: null,
    diagnosis: 'Completed: no errors found',
    first_failure: null,
    errors: 0,
    ...extra
  };
}

const COMPARED: IRunComparison = {
  job: 'bert',
  namespace: 'default',
  a: summary('aaaaaaaa-1', { outcome: 'Stopped', least_step: 4, loss: 1 }),
  b: summary('bbbbbbbb-2', {}),
  changes: {
    loss: { a: 1, b: 0.5, delta: -0.5, ratio: 0.5 },
    step_time_s: { a: 0.3, b: 0.3, delta: 0, ratio: 1 },
    throughput: { a: null, b: null, delta: null, ratio: null },
    duration_s: { a: 12, b: 12, delta: 0, ratio: 1 },
    last_step: { a: 30, b: 30, delta: 0, ratio: 1 }
  },
  notes: ['outcome: Stopped -> Completed']
};
const RUNS = {
  runs: ['cccccccc-3', 'bbbbbbbb-2', 'aaaaaaaa-1'].map((uid, i) => ({
    namespace: 'default',
    job: 'bert',
    uid,
    created: 300 - i * 100,
    bytes: 1,
    pods: {},
    phase: 'Completed',
    rotated: false
  }))
};

async function rendered(run?: string): Promise<HTMLElement> {
  const host = document.createElement('div');
  document.body.appendChild(host);
  const root = createRoot(host);
  await act(async () => {
    root.render(
      <ComparePanel
        job={{ namespace: 'default', name: 'bert', run }}
        trans={trans}
      />
    );
  });
  await act(async () => undefined);
  return host;
}

describe('the Compare tab', () => {
  beforeEach(() => {
    (requestAPI as jest.Mock).mockReset();
    (requestAPI as jest.Mock).mockImplementation((url: string) =>
      Promise.resolve(url.includes('/runs') ? RUNS : COMPARED)
    );
  });

  it('compares the two newest runs from the newest run’s view: figures, B/A and notes', async () => {
    const host = await rendered('cccccccc-3');
    expect(requestAPI).toHaveBeenCalledWith('jobs/default/bert/compare');
    const rows = host.querySelectorAll('tr[data-figure]');
    expect(rows.length).toBe(7); // outcome, duration, last step, loss, step time, throughput, diagnosis
    const loss = host.querySelector('tr[data-figure="loss"]')!.textContent;
    expect(loss).toContain('Final loss');
    expect(loss).toContain('0.50×');
    expect(host.querySelector('thead')!.textContent).toContain(
      'A: run aaaaaaaa'
    );
    expect(host.textContent).toContain('outcome: Stopped -> Completed');
  });

  it('compares an earlier run’s view with the newest run', async () => {
    await rendered('aaaaaaaa-1');
    expect(requestAPI).toHaveBeenCalledWith(
      'jobs/default/bert/compare?a=aaaaaaaa-1&b=cccccccc-3'
    );
  });
});
