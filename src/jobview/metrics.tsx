import * as React from 'react';

import {
  IBandPoint,
  IJobRunRef,
  IMetrics,
  IScale,
  IRankSeries,
  Point,
  bandPoints,
  fetchMetrics,
  metricsCsv,
  nearest,
  rankPoints,
  scaleFor
} from './observe';
import { downloadText } from '../ui/common';
import { usePolled } from '../ui/polled';

const MAX_LINES = 256;
/** Up to this many ranks each get their own line; above, the median and its p10-p90 band. */
export const LINES_UP_TO = 2;

/** A rank the diagnosis names (a straggler), drawn on its own and named in the legend. */
export interface IOutlier {
  rank: string;
  server?: string | null;
}

interface IChartProps {
  title: string;
  yLabel: string;
  lines: Record<string, Point[]>;
  outliers?: IOutlier[];
}

/** Theme colours (JupyterLab's CSS variables): the chart follows the light and dark themes. */
const COLOR = {
  band: 'var(--jp-brand-color2)',
  median: 'var(--jp-brand-color1)',
  outlier: ['var(--jp-error-color1)', 'var(--jp-warn-color1)'],
  line: ['var(--jp-brand-color1)', 'var(--jp-accent-color1)'],
  grid: 'var(--jp-border-color2)',
  text: 'var(--jp-ui-font-color2)'
};

const fmt = (v: number): string => String(Number(v.toPrecision(4)));

/** A drawn line: the rank, its server when the diagnosis names it, its colour. */
interface IDrawn {
  rank: string;
  server?: string | null;
  color: string;
}

const WIDTH = 560;
const HEIGHT = 170;
const LEFT = 56;
const TOP = 8;

/** Where a chart's data lands: the scale, the median band, the lines drawn and the SVG coordinates. */
interface IGeometry {
  ranks: string[];
  series: Point[][];
  banded: boolean;
  band: IBandPoint[];
  outliers: IOutlier[];
  scale: IScale | null;
  drawn: IDrawn[];
  px: (x: number) => number;
  py: (y: number) => number;
  path: (points: Point[]) => string;
}

function chartGeometry(props: IChartProps): IGeometry {
  const ranks = Object.keys(props.lines).slice(0, MAX_LINES);
  const series = ranks.map(r => props.lines[r]);
  const banded = ranks.length > LINES_UP_TO;
  const band = banded ? bandPoints(series) : [];
  const outliers = (props.outliers ?? []).filter(o => props.lines[o.rank]);
  const scale = scaleFor(
    banded
      ? [
          band.map(b => [b.x, b.p10] as Point),
          band.map(b => [b.x, b.p90] as Point),
          ...outliers.map(o => props.lines[o.rank])
        ]
      : series,
    WIDTH - LEFT - 8,
    HEIGHT - TOP - 24
  );
  const px = (x: number) => LEFT + (scale ? scale.x(x) : 0);
  const py = (y: number) => TOP + (scale ? scale.y(y) : 0);
  const path = (points: Point[]) =>
    points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ');
  const drawn: IDrawn[] = banded
    ? outliers.map((o, i) => ({
        ...o,
        color: COLOR.outlier[i % COLOR.outlier.length]
      }))
    : ranks.map((rank, i) => ({
        rank,
        server: outliers.find(o => o.rank === rank)?.server,
        color: outliers.some(o => o.rank === rank)
          ? COLOR.outlier[0]
          : COLOR.line[i % COLOR.line.length]
      }));
  return { ranks, series, banded, band, outliers, scale, drawn, px, py, path };
}

/** A rank's value at step `x`, only where its line is (a rank that stopped early has none later). */
function valueAt(points: Point[], x: number): number | undefined {
  if (!points.length || x < points[0][0] || x > points[points.length - 1][0]) {
    return undefined;
  }
  return nearest(points, x, p => p[0])?.[1];
}

/**
 * One SVG chart of a per-rank series: the job's median with its p10-p90 band (a line per rank only when
 * there are at most LINES_UP_TO), the outlier ranks drawn and named; hovering shows the step's median and
 * band and each outlier's rank, server and value.
 */
export function LineChart(props: IChartProps): JSX.Element {
  const [hover, setHover] = React.useState<{ x: number; px: number } | null>(
    null
  );
  const g = chartGeometry(props);
  const { banded, band, scale, px } = g;
  const onMove = (e: React.MouseEvent<SVGSVGElement>) => {
    if (!scale) {
      return;
    }
    const box = e.currentTarget.getBoundingClientRect();
    const vx = ((e.clientX - box.left) * WIDTH) / box.width;
    const xs = banded ? band.map(b => b.x) : g.series.flat().map(p => p[0]);
    const x = nearest(xs, vx, v => px(v));
    if (x !== null) {
      setHover({ x, px: px(x) });
    }
  };
  return (
    <figure className="jp-ranktable-chart">
      <ChartCaption title={props.title} g={g} />
      <div className="jp-ranktable-chartBox">
        <svg
          width="100%"
          viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
          role="img"
          aria-label={props.title}
          onMouseMove={onMove}
          onMouseLeave={() => setHover(null)}
        >
          <ChartAxes g={g} yLabel={props.yLabel} />
          {scale && <ChartLines g={g} lines={props.lines} />}
          {hover && scale && (
            <line
              x1={hover.px}
              x2={hover.px}
              y1={TOP}
              y2={HEIGHT - 24}
              stroke={COLOR.text}
              strokeDasharray="2 2"
            />
          )}
        </svg>
        {hover && scale && <ChartTip g={g} hover={hover} lines={props.lines} />}
      </div>
    </figure>
  );
}

/** The title, and in a legend the band's meaning and the outliers named (rank, server). */
function ChartCaption(props: { title: string; g: IGeometry }): JSX.Element {
  const { banded, ranks, outliers, drawn } = props.g;
  return (
    <figcaption>
      {props.title}
      {banded && (
        <span className="jp-ranktable-legend">
          {' '}
          — median of {ranks.length} ranks, p10–p90 band
        </span>
      )}
      {outliers.length > 0 && (
        <span className="jp-ranktable-legend">
          {' · outliers: '}
          {drawn
            .filter(d => outliers.some(o => o.rank === d.rank))
            .map((d, i) => (
              <span
                key={d.rank}
                className="jp-ranktable-outlier"
                style={{ color: d.color }}
              >
                {i > 0 ? ', ' : ''}rank {d.rank}
                {d.server ? ` (${d.server})` : ''}
              </span>
            ))}
        </span>
      )}
    </figcaption>
  );
}

/** The grid, the ticks on both axes and the y label ("no data yet" without a scale). */
function ChartAxes(props: { g: IGeometry; yLabel: string }): JSX.Element {
  const { scale, px, py } = props.g;
  return (
    <>
      {!scale && (
        <text x={LEFT} y={HEIGHT / 2} fill={COLOR.text}>
          no data yet
        </text>
      )}
      {scale &&
        scale.yTicks.map(t => (
          <g key={`y${t}`}>
            <line
              x1={LEFT}
              x2={WIDTH - 8}
              y1={py(t)}
              y2={py(t)}
              stroke={COLOR.grid}
            />
            <text
              x={LEFT - 4}
              y={py(t) + 4}
              textAnchor="end"
              fontSize="10"
              fill={COLOR.text}
            >
              {fmt(t)}
            </text>
          </g>
        ))}
      {scale &&
        scale.xTicks.map(t => (
          <text
            key={`x${t}`}
            x={px(t)}
            y={HEIGHT - 8}
            textAnchor="middle"
            fontSize="10"
            fill={COLOR.text}
          >
            {t}
          </text>
        ))}
      <text
        transform={`translate(10 ${HEIGHT / 2}) rotate(-90)`}
        textAnchor="middle"
        fontSize="10"
        fill={COLOR.text}
      >
        {props.yLabel}
      </text>
    </>
  );
}

/** The median and its band (when banded) and a line per drawn rank. */
function ChartLines(props: {
  g: IGeometry;
  lines: Record<string, Point[]>;
}): JSX.Element {
  const { banded, band, outliers, drawn, px, py, path } = props.g;
  const area =
    band.map(b => `${px(b.x).toFixed(1)},${py(b.p90).toFixed(1)}`).join(' ') +
    ' ' +
    [...band]
      .reverse()
      .map(b => `${px(b.x).toFixed(1)},${py(b.p10).toFixed(1)}`)
      .join(' ');
  return (
    <>
      {banded && (
        <>
          <polygon
            className="jp-ranktable-band"
            points={area}
            fill={COLOR.band}
            fillOpacity={0.35}
            stroke="none"
          />
          <polyline
            className="jp-ranktable-median"
            fill="none"
            stroke={COLOR.median}
            strokeWidth={2}
            points={path(band.map(b => [b.x, b.p50] as Point))}
          />
        </>
      )}
      {drawn.map(d => (
        <polyline
          key={d.rank}
          data-rank={d.rank}
          className={
            outliers.some(o => o.rank === d.rank)
              ? 'jp-ranktable-outlierLine'
              : 'jp-ranktable-rankLine'
          }
          fill="none"
          stroke={d.color}
          strokeWidth={1.6}
          points={path(props.lines[d.rank])}
        >
          <title>{`rank ${d.rank}${d.server ? ` on ${d.server}` : ''}`}</title>
        </polyline>
      ))}
    </>
  );
}

/** The hover readout: the step, the median and band there, each drawn rank's value and server. */
function ChartTip(props: {
  g: IGeometry;
  hover: { x: number; px: number };
  lines: Record<string, Point[]>;
}): JSX.Element {
  const { hover, lines } = props;
  const { banded, band, drawn } = props.g;
  const at = banded ? nearest(band, hover.x, b => b.x) : null;
  return (
    <div
      className="jp-ranktable-chartTip"
      role="status"
      style={{
        left: `${(100 * hover.px) / WIDTH}%`,
        // past the middle, the readout opens to the left of the cursor line
        transform:
          hover.px > WIDTH / 2 ? 'translateX(calc(-100% - 8px))' : undefined
      }}
    >
      <div>step {Math.round(at?.x ?? hover.x)}</div>
      {at && (
        <div>
          median {fmt(at.p50)} (p10 {fmt(at.p10)} – p90 {fmt(at.p90)})
        </div>
      )}
      {drawn.map(d => {
        const v = valueAt(lines[d.rank], hover.x);
        return v === undefined ? null : (
          <div key={d.rank} style={{ color: d.color }}>
            rank {d.rank}
            {d.server ? ` · ${d.server}` : ''}: {fmt(v)}
          </div>
        );
      })}
    </div>
  );
}

function byRank(
  metrics: IMetrics,
  field: keyof IRankSeries
): Record<string, Point[]> {
  const out: Record<string, Point[]> = {};
  for (const [rank, series] of Object.entries(metrics.ranks)) {
    const points = rankPoints(series, field);
    if (points.length) {
      out[rank] = points;
    }
  }
  return out;
}

export interface IMetricsPanelProps {
  job: IJobRunRef;
  /** Ranks drawn and named apart from the band (the diagnosis' stragglers, with their servers). */
  stragglers?: { rank: number; server?: string | null }[];
  /** Whether the run is still running (its metrics are "live" only then); unknown: as the server says. */
  live?: boolean;
  refreshMs?: number;
}

/** Live plots of a run: loss vs step (mean + per rank), step time per rank, throughput; CSV export. */
export function MetricsPanel(props: IMetricsPanelProps): JSX.Element {
  const { namespace, name, run } = props.job;
  const [metrics, error] = usePolled(
    () => fetchMetrics({ namespace, name, run }),
    [namespace, name, run],
    props.refreshMs
  );
  if (!metrics) {
    return (
      <div className="jp-ranktable-metrics">{error ?? 'Loading metrics…'}</div>
    );
  }
  return (
    <MetricsView
      metrics={metrics}
      name={name}
      stragglers={props.stragglers}
      live={props.live}
      error={error}
    />
  );
}

/** The plots of metrics already read (a live run's, or log files' read as a run). */
export function MetricsView(props: {
  metrics: IMetrics;
  name: string;
  stragglers?: { rank: number; server?: string | null }[];
  live?: boolean;
  error?: string | null;
}): JSX.Element {
  const { metrics, name, error } = props;
  const outliers: IOutlier[] = (props.stragglers ?? []).map(s => ({
    rank: String(s.rank),
    server: s.server
  }));
  const throughput = byRank(metrics, 'throughput');
  const unit = Object.values(metrics.ranks).find(
    s => s.throughput_unit
  )?.throughput_unit;
  return (
    <div className="jp-ranktable-metrics">
      <div className="jp-ranktable-metrics-bar">
        <span>
          {Object.keys(metrics.ranks).length} rank(s) ·{' '}
          {metrics.run ? `run ${metrics.run.slice(0, 8)}` : 'log files'}
          {metrics.source === 'live' && props.live !== false
            ? ' (live)'
            : metrics.source === 'archive'
              ? ' (archived)'
              : ''}
        </span>
        <button
          className="jp-mod-styled"
          onClick={() =>
            downloadText(metricsCsv(metrics), `${name}-metrics.csv`, 'text/csv')
          }
        >
          Export CSV
        </button>
      </div>
      {error && <div className="jp-ranktable-error">{error}</div>}
      {metrics.alerts.map(a => (
        <div key={`${a.rank}-${a.kind}`} className="jp-ranktable-alert">
          ⚠ {a.message}
          {a.count > 1 ? ` (x${a.count})` : ''}
        </div>
      ))}
      <LineChart
        title="Loss vs step"
        yLabel="loss"
        lines={byRank(metrics, 'loss')}
        outliers={outliers}
      />
      <LineChart
        title="Step time per rank"
        yLabel="seconds"
        lines={byRank(metrics, 'step_time_s')}
        outliers={outliers}
      />
      {Object.keys(throughput).length > 0 && (
        <LineChart
          title="Throughput"
          yLabel={unit ?? 'throughput'}
          lines={throughput}
          outliers={outliers}
        />
      )}
    </div>
  );
}
