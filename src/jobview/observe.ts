/**
 * Observability model: a job run's metrics and diagnosis from the server (`/ranktable/jobs/{ns}/{name}/
 * metrics|diagnosis|runs`), plus the pure chart geometry and CSV rows the views render.
 */
import { get, post, put } from '../api/client';
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

/** POST /ranktable/logs (`components/schemas/LogsResult`): log files read as one run. */
export type ILogsRun = Schemas['LogsResult'];

/** Diagnosis and metrics of log files and folders of the Jupyter root (each file a rank's or pod's log). */
export function fetchLogsRun(paths: string[]): Promise<ILogsRun> {
  return post('/ranktable/logs', {}, { paths });
}

/** GET /ranktable/jobs/{ns}/{name}/compare (`components/schemas/RunComparison`). */
export type IRunComparison = Schemas['RunComparison'];
/** One run of a comparison (`components/schemas/RunSummary`). */
export type IRunSummary = Schemas['RunSummary'];
/** An archived run's record (`components/schemas/Run`). */
export type IArchivedRun = Schemas['Run'];

/** Two runs of the job side by side: `a` and `b` (uids or prefixes), or the two newest runs. */
export function fetchComparison(
  ref: IJobRunRef,
  a?: string,
  b?: string
): Promise<IRunComparison> {
  return get('/ranktable/jobs/{namespace}/{name}/compare', {
    path: { namespace: ref.namespace, name: ref.name },
    query: a && b ? { a, b } : {}
  });
}

/** The job's archived runs, newest first. */
export async function fetchRuns(ref: IJobRunRef): Promise<IArchivedRun[]> {
  const { runs } = await get('/ranktable/jobs/{namespace}/{name}/runs', {
    path: { namespace: ref.namespace, name: ref.name }
  });
  return runs;
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

/** JSON with sorted keys: two settings objects compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v).sort(([a], [b]) => a.localeCompare(b))
        )
      : v
  );
}

/**
 * At page load, send the settings only when the server holds other ones: loading the page writes
 * nothing (a read-only viewer would get a refusal on every load). A change the user makes is sent.
 */
export async function loadObserveSettings(
  settings: IObserveSettings
): Promise<IObserveSettingsState | null> {
  const state = await get('/ranktable/observe/settings');
  if (canonical(state.user ?? {}) === canonical(settings ?? {})) {
    return null;
  }
  return putObserveSettings(settings);
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

/**
 * Every rank's points in at most `bins` equal bins by step, each bin's points in the ranks' order, with
 * where the bins start (`low`) and their `width` (ranks may keep different steps after thinning).
 */
function stepBins(
  perRank: Point[][],
  bins: number
): { low: number; width: number; binned: Point[][] } {
  const all = perRank.flat();
  if (!all.length) {
    return { low: 0, width: 1, binned: [] };
  }
  const low = Math.min(...all.map(p => p[0]));
  const high = Math.max(...all.map(p => p[0]));
  const n = Math.max(1, Math.min(bins, Math.floor(high - low) + 1));
  const width = (high - low) / n || 1;
  const binned: Point[][] = Array.from({ length: n }, () => []);
  for (const point of all) {
    binned[Math.min(n - 1, Math.floor((point[0] - low) / width))].push(point);
  }
  return { low, width, binned };
}

/** The mean over ranks, binned by step (ranks may keep different steps after thinning). */
export function meanPoints(perRank: Point[][], bins = 200): Point[] {
  const { low, width, binned } = stepBins(perRank, bins);
  const out: Point[] = [];
  binned.forEach((points, i) => {
    if (points.length) {
      const sum = points.reduce((total, [, y]) => total + y, 0);
      out.push([low + (i + 0.5) * width, sum / points.length]);
    }
  });
  return out;
}

/** The job's spread at one step: the median rank and the p10-p90 band around it. */
export interface IBandPoint {
  x: number;
  p10: number;
  p50: number;
  p90: number;
  /** ranks with a value in this bin */
  n: number;
}

/** The `q` quantile of sorted values (linear between neighbours). */
export function quantile(sorted: number[], q: number): number {
  if (!sorted.length) {
    return NaN;
  }
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo);
}

/**
 * Per-rank series as the job's median and p10-p90 band, binned by step as `meanPoints` is: 32 lines on
 * top of each other become one line and a band, so a rank outside the band stands out.
 */
export function bandPoints(perRank: Point[][], bins = 200): IBandPoint[] {
  const out: IBandPoint[] = [];
  for (const points of stepBins(perRank, bins).binned) {
    if (points.length) {
      const v = points.map(p => p[1]).sort((a, b) => a - b);
      const xs = points.reduce((total, [x]) => total + x, 0);
      out.push({
        x: xs / v.length, // where the steps of the bin are (a whole step when bins are steps)
        p10: quantile(v, 0.1),
        p50: quantile(v, 0.5),
        p90: quantile(v, 0.9),
        n: v.length
      });
    }
  }
  return out;
}

/** The point of `points` whose x is nearest `x` (null when there is none). */
export function nearest<T>(
  points: T[],
  x: number,
  xOf: (p: T) => number
): T | null {
  let best: T | null = null;
  for (const p of points) {
    if (best === null || Math.abs(xOf(p) - x) < Math.abs(xOf(best) - x)) {
      best = p;
    }
  }
  return best;
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
