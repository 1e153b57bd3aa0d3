/**
 * Observability model: a job run's metrics and diagnosis from the server (`/ranktable/jobs/{ns}/{name}/
 * metrics|diagnosis|runs`), plus the pure chart geometry and CSV rows the views render.
 */
import { get, put } from '../api/client';
import type { components } from '../api/openapi';
import { toCsv } from '../ui/csv';

export interface IJobRunRef {
  namespace: string;
  name: string;
  run?: string;
}

type Schemas = components['schemas'];

/** One rank's aligned metric series (`components/schemas/RankSeries` in openapi.yaml). */
export type IRankSeries = Schemas['RankSeries'];
/** A NaN/Inf/spike alert on a rank's loss (`components/schemas/Alert`). */
export type IAlert = Schemas['Alert'];
/** GET /ranktable/jobs/{ns}/{name}/metrics (`components/schemas/Metrics`). */
export type IMetrics = Schemas['Metrics'];
/** A rank's error line with its explanation (`components/schemas/RankError`). */
export type IRankError = Schemas['RankError'];
/** Where a straggling or hung rank runs (`components/schemas/RankWhere`). */
export type IRankWhere = Schemas['RankWhere'];
/** GET /ranktable/jobs/{ns}/{name}/diagnosis (`components/schemas/Diagnosis`). */
export type IDiagnosis = Schemas['Diagnosis'];

/** The path and query of a run's metrics or diagnosis (no run: the job's current run). */
function runParams(ref: IJobRunRef) {
  return {
    path: { namespace: ref.namespace, name: ref.name },
    query: { run: ref.run }
  };
}

export function fetchMetrics(ref: IJobRunRef): Promise<IMetrics> {
  return get('/ranktable/jobs/{namespace}/{name}/metrics', runParams(ref));
}

export function fetchDiagnosis(ref: IJobRunRef): Promise<IDiagnosis> {
  return get('/ranktable/jobs/{namespace}/{name}/diagnosis', runParams(ref));
}

/** The user's metrics and triage settings (`components/schemas/ObserveSettings`). */
export type IObserveSettings = Schemas['ObserveSettings'];
/** GET/PUT /ranktable/observe/settings (`components/schemas/ObserveSettingsState`). */
export type IObserveSettingsState = Schemas['ObserveSettingsState'];

/** Send the JupyterLab settings' "observability" part; the server checks it and applies it to every run. */
export function putObserveSettings(
  settings: IObserveSettings
): Promise<IObserveSettingsState> {
  return put('/ranktable/observe/settings', {}, { settings });
}

export const TERMINAL_PHASES = ['Completed', 'Failed', 'Aborted', 'Terminated'];

// -- chart geometry ----------------------------------------------------------------------------------

export type Point = [number, number];

/** Round tick values (1, 2, 5 x 10^n) covering [low, high]. */
export function niceTicks(low: number, high: number, count = 5): number[] {
  if (!(high > low)) {
    high = low + (Math.abs(low) || 1);
  }
  const raw = (high - low) / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * power).find(s => s >= raw) ?? raw;
  const ticks = [Math.floor(low / step) * step];
  while (ticks[ticks.length - 1] < high - step * 1e-9) {
    ticks.push(ticks[ticks.length - 1] + step);
  }
  if (ticks.length === 1) {
    ticks.push(ticks[0] + step);
  }
  return ticks.map(t => Number(t.toPrecision(12)));
}

/** (step, value) points of one metric of one rank, finite values only. */
export function rankPoints(
  series: IRankSeries,
  field: keyof IRankSeries
): Point[] {
  const values = (series[field] ?? []) as unknown[];
  const out: Point[] = [];
  series.step.forEach((step, i) => {
    const value = values[i];
    if (
      typeof step === 'number' &&
      typeof value === 'number' &&
      isFinite(value)
    ) {
      out.push([step, value]);
    }
  });
  return out;
}

/** The mean over ranks, binned by step (ranks may keep different steps after thinning). */
export function meanPoints(perRank: Point[][], bins = 200): Point[] {
  const all = perRank.flat();
  if (!all.length) {
    return [];
  }
  const low = Math.min(...all.map(p => p[0]));
  const high = Math.max(...all.map(p => p[0]));
  const n = Math.max(1, Math.min(bins, Math.floor(high - low) + 1));
  const width = (high - low) / n || 1;
  const sums = new Array<number>(n).fill(0);
  const counts = new Array<number>(n).fill(0);
  for (const [x, y] of all) {
    const i = Math.min(n - 1, Math.floor((x - low) / width));
    sums[i] += y;
    counts[i] += 1;
  }
  const out: Point[] = [];
  for (let i = 0; i < n; i++) {
    if (counts[i]) {
      out.push([low + (i + 0.5) * width, sums[i] / counts[i]]);
    }
  }
  return out;
}

export interface IScale {
  xTicks: number[];
  yTicks: number[];
  x(value: number): number;
  y(value: number): number;
}

/** Pixel scales for a plot box of `width` x `height` holding every point. */
export function scaleFor(
  lines: Point[][],
  width: number,
  height: number
): IScale | null {
  const all = lines.flat();
  if (!all.length) {
    return null;
  }
  const xTicks = niceTicks(
    Math.min(...all.map(p => p[0])),
    Math.max(...all.map(p => p[0]))
  );
  const yTicks = niceTicks(
    Math.min(...all.map(p => p[1])),
    Math.max(...all.map(p => p[1]))
  );
  const [x0, x1] = [xTicks[0], xTicks[xTicks.length - 1]];
  const [y0, y1] = [yTicks[0], yTicks[yTicks.length - 1]];
  return {
    xTicks,
    yTicks,
    x: v => ((v - x0) / (x1 - x0 || 1)) * width,
    y: v => height - ((v - y0) / (y1 - y0 || 1)) * height
  };
}

/** Metrics as CSV rows: rank, step, time, loss, step time, throughput, lr, grad norm. */
export function metricsCsv(metrics: IMetrics): string {
  const fields: (keyof IRankSeries)[] = [
    'step',
    'time',
    'loss',
    'step_time_s',
    'throughput',
    'lr',
    'grad_norm'
  ];
  const rows: unknown[][] = [];
  for (const [rank, series] of Object.entries(metrics.ranks)) {
    series.step.forEach((_, i) => {
      rows.push([
        rank,
        ...fields.map(f => ((series[f] ?? []) as unknown[])[i] ?? '')
      ]);
    });
  }
  return toCsv(['rank', ...fields], rows);
}

/** The notification text for a finished or failed run. */
export function noticeText(
  job: string,
  phase: string,
  diagnosis: IDiagnosis | null
): string {
  if (!diagnosis) {
    return `Job ${job}: ${phase}`;
  }
  return `Job ${job}: ${diagnosis.summary}`;
}
