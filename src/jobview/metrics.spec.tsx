/**
 * @jest-environment jsdom
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { LineChart } from './metrics';

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

function render(element: JSX.Element): HTMLElement {
  const host = document.createElement('div');
  document.body.appendChild(host);
  act(() => createRoot(host).render(element));
  return host;
}

/** 32 ranks of step times near 1 s, rank 5 at 3 s (the straggler the diagnosis names). */
const lines: Record<string, [number, number][]> = {};
for (let r = 0; r < 32; r++) {
  lines[String(r)] = [1, 2, 3, 4].map(s => [s, r === 5 ? 3 : 1 + r / 1000]);
}

/** The step-time chart of `ranks`, rank 5 (on node-3) its outlier. */
function stepTimeChart(ranks: Record<string, [number, number][]>): HTMLElement {
  return render(
    <LineChart
      title="Step time per rank"
      yLabel="seconds"
      lines={ranks}
      outliers={[{ rank: '5', server: 'node-3' }]}
    />
  );
}

/** Hover the chart's right edge (the last step); the tooltip it shows. */
function hoverAtTheLastStep(host: HTMLElement): Element {
  const svg = host.querySelector('svg')!;
  svg.getBoundingClientRect = () =>
    ({ left: 0, top: 0, width: 560, height: 170 }) as DOMRect;
  act(() => {
    svg.dispatchEvent(
      new MouseEvent('mousemove', { bubbles: true, clientX: 550 })
    );
  });
  return host.querySelector('.jp-ranktable-chartTip')!;
}

describe('per-rank charts (#31.4)', () => {
  it('draw the median and its band, and the straggler apart, named with its server', () => {
    const host = stepTimeChart(lines);
    // one band and one median instead of 32 lines; the outlier is its own line
    expect(host.querySelectorAll('polygon.jp-ranktable-band')).toHaveLength(1);
    expect(host.querySelectorAll('polyline.jp-ranktable-median')).toHaveLength(
      1
    );
    expect(host.querySelectorAll('polyline[data-rank]')).toHaveLength(1);
    expect(
      host.querySelector('polyline[data-rank="5"]')?.getAttribute('stroke')
    ).toBe('var(--jp-error-color1)');
    expect(host.querySelector('figcaption')?.textContent).toContain(
      'median of 32 ranks, p10–p90 band'
    );
    expect(host.querySelector('.jp-ranktable-outlier')?.textContent).toBe(
      'rank 5 (node-3)'
    );
    // colours are JupyterLab's theme variables, never fixed hex values
    expect(host.innerHTML).not.toMatch(/#[0-9a-f]{6}/i);
  });

  it('hover shows the step, the band and the outlier with its server and value', () => {
    const host = stepTimeChart(lines);
    const tip = hoverAtTheLastStep(host);
    expect(tip.textContent).toContain('step 4');
    expect(tip.textContent).toContain('median 1.0');
    expect(tip.textContent).toContain('rank 5 · node-3: 3');
  });

  it('hover past where a rank stopped shows no value for it', () => {
    const stopped = { ...lines, '5': lines['5'].slice(0, 2) };
    const host = stepTimeChart(stopped);
    const tip = hoverAtTheLastStep(host);
    expect(tip.textContent).toContain('step 4');
    expect(tip.textContent).not.toContain('rank 5');
  });

  it('two ranks keep a line each', () => {
    const host = render(
      <LineChart
        title="Loss"
        yLabel="loss"
        lines={{ '0': lines['0'], '1': lines['1'] }}
      />
    );
    expect(host.querySelectorAll('polyline[data-rank]')).toHaveLength(2);
    expect(host.querySelector('polygon')).toBeNull();
  });
});
