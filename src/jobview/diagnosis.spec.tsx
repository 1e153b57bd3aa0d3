/**
 * @jest-environment jsdom
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { DiagnosisView } from './diagnosis';

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

const at = (rank: number) => ({
  rank,
  node_rank: rank,
  pod: `w-${rank}`,
  node: 'n',
  leaf: 'leaf-0'
});

/** The diagnosis view of `diagnosis` (stragglers, hung ranks and pending filled in by the test). */
function show(diagnosis: object): HTMLElement {
  const host = document.createElement('div');
  act(() =>
    createRoot(host).render(<DiagnosisView diagnosis={diagnosis as any} />)
  );
  return host;
}

describe('DiagnosisView', () => {
  it('shows the first failure with why and the fix, and marks its row among the errors per rank', () => {
    const diagnosis = {
      summary: 'rank 5 failed first',
      first_failure: {
        ...at(5),
        time: '10:00:01',
        code: 'E_INDEX',
        title: 'IndexError',
        line: 'IndexError: list index out of range',
        explanation: 'the script indexed past a list',
        fix: 'check the data loader'
      },
      errors: [
        { ...at(5), time: '10:00:01', code: 'E_INDEX', line: 'IndexError' },
        { ...at(6), time: '10:00:03', code: 'E_TEARDOWN', line: 'killed' }
      ],
      stragglers: [],
      hung: [],
      pending: null
    };
    const host = show(diagnosis);
    const alert = host.querySelector('[role=alert]')!;
    expect(alert.textContent).toContain('First failure: rank 5');
    expect(alert.textContent).toContain('Why: the script indexed past a list');
    expect(alert.textContent).toContain('Fix: check the data loader');
    const rows = [
      ...host.querySelectorAll('table.jp-ranktable-errors tbody tr')
    ];
    expect(rows.map(r => r.querySelector('td')!.textContent)).toEqual([
      '5',
      '6'
    ]);
    expect(rows.map(r => r.className)).toEqual(['jp-mod-first', '']);
  });

  it('marks no row without a first failure', () => {
    const diagnosis = {
      summary: 'no error',
      first_failure: null,
      errors: [{ ...at(2), time: null, code: 'W', line: 'x' }],
      stragglers: [],
      hung: [],
      pending: null
    };
    const host = show(diagnosis);
    expect(host.querySelector('[role=alert]')).toBeNull();
    expect(host.querySelector('tbody tr')!.className).toBe('');
  });
});
