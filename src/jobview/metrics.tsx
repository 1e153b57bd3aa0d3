import * as React from 'react';

import {
  IJobRunRef,
  IMetrics,
  IRankSeries,
  Point,
  fetchMetrics,
  meanPoints,
  metricsCsv,
  rankPoints,
  scaleFor
} from './observe';
import { downloadText } from '../ui/common';
import { usePolled } from '../ui/polled';

const PALETTE = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#bcbd22',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf'
];
const MAX_LINES = 256;

interface IChartProps {
  title: string;
  yLabel: string;
  lines: Record<string, Point[]>;
  mean?: boolean;
  highlight?: Set<string>;
}

/** One SVG line chart: ranks thin (stragglers red), the mean bold, axes with round ticks. */
export function LineChart(props: IChartProps): JSX.Element {
  const width = 560;
  const height = 170;
  const left = 56;
  const top = 8;
  const ranks = Object.keys(props.lines).slice(0, MAX_LINES);
  const series = ranks.map(r => props.lines[r]);
  const average = props.mean && ranks.length > 1 ? meanPoints(series) : [];
  const scale = scaleFor(
    [...series, average],
    width - left - 8,
    height - top - 24
  );
  const opacity = ranks.length <= 8 ? 0.9 : Math.max(0.15, 4 / ranks.length);
  const path = (points: Point[]) =>
    scale
      ? points
          .map(
            ([x, y]) =>
              `${(left + scale.x(x)).toFixed(1)},${(top + scale.y(y)).toFixed(1)}`
          )
          .join(' ')
      : '';
  return (
    <figure className="jp-ranktable-chart">
      <figcaption>
        {props.title}
        {average.length > 0 && (
          <span className="jp-ranktable-legend-mean"> — mean (bold)</span>
        )}
        {ranks.length > 8 && <span> — {ranks.length} ranks</span>}
      </figcaption>
      <svg
        width="100%"
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label={props.title}
      >
        {!scale && (
          <text x={left} y={height / 2} fill="var(--jp-ui-font-color2)">
            no data yet
          </text>
        )}
        {scale &&
          scale.yTicks.map(t => (
            <g key={`y${t}`}>
              <line
                x1={left}
                x2={width - 8}
                y1={top + scale.y(t)}
                y2={top + scale.y(t)}
                stroke="var(--jp-border-color2)"
              />
              <text
                x={left - 4}
                y={top + scale.y(t) + 4}
                textAnchor="end"
                fontSize="10"
                fill="var(--jp-ui-font-color2)"
              >
                {Number(t.toPrecision(4))}
              </text>
            </g>
          ))}
        {scale &&
          scale.xTicks.map(t => (
            <text
              key={`x${t}`}
              x={left + scale.x(t)}
              y={height - 8}
              textAnchor="middle"
              fontSize="10"
              fill="var(--jp-ui-font-color2)"
            >
              {t}
            </text>
          ))}
        <text
          transform={`translate(10 ${height / 2}) rotate(-90)`}
          textAnchor="middle"
          fontSize="10"
          fill="var(--jp-ui-font-color2)"
        >
          {props.yLabel}
        </text>
        {ranks.map((rank, i) => {
          const slow = props.highlight?.has(rank) ?? false;
          return (
            <polyline
              key={rank}
              fill="none"
              stroke={slow ? '#d62728' : PALETTE[i % PALETTE.length]}
              strokeWidth={slow ? 1.6 : 1}
              strokeOpacity={slow ? 1 : opacity}
              points={path(props.lines[rank])}
            >
              <title>{`rank ${rank}${slow ? ' (straggler)' : ''}`}</title>
            </polyline>
          );
        })}
        {average.length > 0 && (
          <polyline
            fill="none"
            stroke="var(--jp-ui-font-color0)"
            strokeWidth={2.4}
            points={path(average)}
          >
            <title>mean</title>
          </polyline>
        )}
      </svg>
    </figure>
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
  /** Ranks to draw in red (the diagnosis' stragglers). */
  stragglers?: number[];
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
  const highlight = new Set((props.stragglers ?? []).map(String));
  if (!metrics) {
    return (
      <div className="jp-ranktable-metrics">{error ?? 'Loading metrics…'}</div>
    );
  }
  const throughput = byRank(metrics, 'throughput');
  const unit = Object.values(metrics.ranks).find(
    s => s.throughput_unit
  )?.throughput_unit;
  return (
    <div className="jp-ranktable-metrics">
      <div className="jp-ranktable-metrics-bar">
        <span>
          {Object.keys(metrics.ranks).length} rank(s) · run{' '}
          {metrics.run.slice(0, 8)} ({metrics.source})
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
        mean
        highlight={highlight}
      />
      <LineChart
        title="Step time per rank"
        yLabel="seconds"
        lines={byRank(metrics, 'step_time_s')}
        highlight={highlight}
      />
      {Object.keys(throughput).length > 0 && (
        <LineChart
          title="Throughput"
          yLabel={unit ?? 'throughput'}
          lines={throughput}
          mean
          highlight={highlight}
        />
      )}
    </div>
  );
}
