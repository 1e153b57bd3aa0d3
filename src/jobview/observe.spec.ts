import {
  IDiagnosis,
  IMetrics,
  bandPoints,
  meanPoints,
  nearest,
  quantile,
  metricsCsv,
  niceTicks,
  noticeText,
  putObserveSettings,
  rankPoints,
  scaleFor
} from './observe';
import { requestAPI } from '../api/request';

jest.mock('../api/request', () => ({ requestAPI: jest.fn() }));

const metrics: IMetrics = {
  job: 'llm',
  run: 'uid-1',
  source: 'live',
  alerts: [],
  ranks: {
    '0': {
      step: [1, 2, 3],
      time: [10, 11, 12],
      loss: [2.5, 'nan', 2.1],
      lr: [1e-4, 1e-4, null]
    },
    '1': { step: [1, 2, 3], time: [10, 11, 12], loss: [2.7, 2.4, 2.3] }
  }
};

describe('per-rank series as a band (#31.4)', () => {
  it('is the median and p10-p90 of the ranks at each step', () => {
    // 10 ranks at steps 1 and 2: ranks 0..8 near 1 s, rank 9 the straggler at 5 s
    const ranks = Array.from({ length: 10 }, (_, r) => [
      [1, r === 9 ? 5 : 1 + r / 100],
      [2, r === 9 ? 5 : 1 + r / 100]
    ]) as [number, number][][];
    const band = bandPoints(ranks);
    expect(band.map(b => b.x)).toEqual([1, 2]);
    expect(band[0].n).toBe(10);
    expect(band[0].p50).toBeCloseTo(1.045);
    expect(band[0].p10).toBeCloseTo(1.009);
    // the straggler lies above the band: it does not drag the band up to it
    expect(band[0].p90).toBeLessThan(1.5);
    expect(band[0].p90).toBeGreaterThan(band[0].p50);
    expect(bandPoints([])).toEqual([]);
  });

  it('quantiles interpolate; the nearest point is found by x', () => {
    expect(quantile([1, 2, 3, 4, 5], 0.5)).toBe(3);
    expect(quantile([1, 2], 0.5)).toBe(1.5);
    expect(quantile([7], 0.9)).toBe(7);
    expect(quantile([], 0.5)).toBeNaN();
    expect(nearest([1, 5, 9], 6.2, v => v)).toBe(5);
    expect(nearest([], 1, (v: number) => v)).toBeNull();
  });
});

describe('chart geometry', () => {
  it('ticks are round and cover the range', () => {
    const ticks = niceTicks(1.83, 2.71);
    expect(ticks[0]).toBeLessThanOrEqual(1.83);
    expect(ticks[ticks.length - 1]).toBeGreaterThanOrEqual(2.71);
    expect(ticks).toEqual([1.8, 2, 2.2, 2.4, 2.6, 2.8]);
    expect(niceTicks(5, 5).length).toBeGreaterThan(1);
  });

  it('points skip NaN and missing values; the mean bins by step', () => {
    expect(rankPoints(metrics.ranks['0'], 'loss')).toEqual([
      [1, 2.5],
      [3, 2.1]
    ]);
    const mean = meanPoints([
      rankPoints(metrics.ranks['0'], 'loss'),
      rankPoints(metrics.ranks['1'], 'loss')
    ]);
    expect(mean.map(p => Number(p[1].toFixed(3)))).toEqual([2.6, 2.4, 2.2]);
  });

  it('scales map the extremes to the box edges', () => {
    const scale = scaleFor(
      [
        [
          [0, 0],
          [10, 1]
        ]
      ],
      100,
      50
    )!;
    expect(scale.x(0)).toBe(0);
    expect(scale.x(10)).toBe(100);
    expect(scale.y(0)).toBe(50);
    expect(scale.y(1)).toBe(0);
    expect(scaleFor([], 10, 10)).toBeNull();
  });
});

describe('export and notices', () => {
  it('CSV has a row per rank and step, quoted', () => {
    const lines = metricsCsv(metrics).trim().split('\r\n');
    expect(lines[0]).toBe(
      '"rank","step","time","loss","step_time_s","throughput","lr","grad_norm"'
    );
    expect(lines.length).toBe(7);
    expect(lines[2]).toBe('"0","2","11","nan","","","0.0001",""');
  });

  it('the notice carries the one-line diagnosis', () => {
    const diagnosis = {
      summary:
        'Failed: rank 5 (llm-worker-2, server 10.0.2.21, leaf leaf-b) failed first: EI0006'
    } as IDiagnosis;
    expect(noticeText('llm', 'Failed', diagnosis)).toBe(
      'Job llm: Failed: rank 5 (llm-worker-2, server 10.0.2.21, leaf leaf-b) failed first: EI0006'
    );
    expect(noticeText('llm', 'Completed', null)).toBe('Job llm: Completed');
  });
});

describe('observability settings', () => {
  it('sends the Settings Editor part to the server as {settings}', async () => {
    const request = requestAPI as jest.Mock;
    request.mockResolvedValueOnce({ settings: {}, user: {}, server: {} });
    await putObserveSettings({
      straggler_factor: 2,
      patterns: ['x=(?P<loss>.+)']
    });
    expect(request).toHaveBeenCalledWith('observe/settings', {
      method: 'PUT',
      body: JSON.stringify({
        settings: { straggler_factor: 2, patterns: ['x=(?P<loss>.+)'] }
      })
    });
  });
});
