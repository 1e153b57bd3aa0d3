/**
 * @jest-environment jsdom
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { ILayoutResult, LayoutFigures, PlacementLine } from './figure';

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

const trans = {
  __: (text: string, ...args: unknown[]) =>
    text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]))
} as any;

function side(seconds: number, extra: object = {}) {
  return {
    crossings_per_tier: [4, 1],
    max_uplink_flows: 2,
    allreduce_seconds: seconds,
    ...extra
  };
}

/** A layout answer with only what a test sets (the server's other required fields filled in). */
type IDraft = Omit<Partial<ILayoutResult>, 'report'> & {
  report: Omit<ILayoutResult['report'], 'servers' | 'ranks'>;
};

function layout(draft: IDraft): ILayoutResult {
  return {
    svg: '',
    algorithm: draft.report.algorithm ?? '',
    algorithm_reason: draft.report.algorithm_reason ?? '',
    groups: draft.report.groups ?? [],
    ...draft,
    report: { servers: 2, ranks: 16, ...draft.report }
  };
}

function rows(draft: IDraft): string[][] {
  const host = document.createElement('div');
  const root = createRoot(host);
  act(() =>
    root.render(<LayoutFigures result={layout(draft)} trans={trans} />)
  );
  const out = Array.from(host.querySelectorAll('tbody tr')).map(tr =>
    Array.from(tr.children).map(c => c.textContent ?? '')
  );
  act(() => root.unmount());
  return out;
}

describe('LayoutFigures', () => {
  it('names the algorithm, the operation and each parallel group with its given and planned cost', () => {
    const table = rows({
      svg: '',
      report: {
        given: side(0.132),
        planned: side(0.031),
        speedup: 4.26,
        operation: 'allgather',
        algorithm: 'NHR',
        algorithm_reason: 'A2 selector: NHR',
        groups: [
          {
            kind: 'tp',
            size: 8,
            count: 8,
            operation: 'allreduce',
            algorithm: 'mesh',
            given_seconds: 0.0148,
            planned_seconds: 0.0148
          },
          {
            kind: 'dp',
            size: 8,
            count: 8,
            operation: 'allreduce',
            algorithm: 'allreduce',
            given_seconds: 0.2,
            planned_seconds: 0.1
          }
        ]
      }
    });
    expect(table[0]).toEqual(['HCCL algorithm', 'NHR']);
    expect(table).toContainEqual(['all-gather (est.)', '132.0 ms', '31.0 ms']);
    expect(table).toContainEqual([
      'tp groups (8 × 8, allreduce, mesh)',
      '14.8 ms',
      '14.8 ms'
    ]);
    expect(table).toContainEqual([
      'dp groups (8 × 8, allreduce)',
      '200.0 ms',
      '100.0 ms'
    ]);
    expect(table.some(r => r[0].startsWith('SuperPoD'))).toBe(false);
  });

  it('shows the SuperPoD crossings of an A3 pool and stays as before without the new fields', () => {
    const a3 = rows({
      svg: '',
      report: {
        given: side(0.03, { superpods: 2, crossings_superpods: 4 }),
        planned: side(0.03, { superpods: 2, crossings_superpods: 2 }),
        speedup: 1
      }
    });
    expect(a3).toContainEqual(['SuperPoD crossings (2)', '4', '2']);
    expect(a3).toContainEqual(['all-reduce (est.)', '30.0 ms', '30.0 ms']);
    expect(a3.some(r => r[0] === 'HCCL algorithm')).toBe(false);
  });
});

describe('PlacementLine', () => {
  function text(draft: IDraft): string {
    const host = document.createElement('div');
    const root = createRoot(host);
    act(() => root.render(<PlacementLine result={layout(draft)} />));
    const out = host.textContent ?? '';
    act(() => root.unmount());
    return out;
  }
  const report = { given: side(0.0243), planned: side(0.0151), speedup: 1.6 };

  it('shows the actual placement beside the forecast', () => {
    const summary =
      'placement: as predicted: actual leaf crossings 4, 24.3 ms -> 15.1 ms with routing (1.60x)';
    expect(
      text({ svg: '', report, placement: { summary, verdict: 'as predicted' } })
    ).toBe(summary);
  });

  it('shows nothing when the job has no forecast', () => {
    expect(text({ svg: '', report, placement: null })).toBe('');
  });
});
