import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import type { components } from '../api/openapi';
import { TableHead, TextInput } from '../ui/common';

function formatDuration(s: number): string {
  return s < 1 ? `${(s * 1000).toFixed(1)} ms` : `${s.toFixed(2)} s`;
}

const OPERATIONS: Record<string, string> = {
  allreduce: 'all-reduce',
  allgather: 'all-gather',
  reducescatter: 'reduce-scatter',
  broadcast: 'broadcast',
  alltoall: 'all-to-all'
};

/** A layout (given vs planned) as the server answers the plan, the preview and a job's layout. */
export type ILayoutResult = components['schemas']['Layout'];

/** Parse the server's SVG and drop anything active (scripts, event handlers, external links). */
export function sanitizeSvg(text: string): SVGSVGElement | null {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const svg = doc.documentElement;
  if (
    !svg ||
    svg.nodeName.toLowerCase() !== 'svg' ||
    doc.querySelector('parsererror')
  ) {
    return null;
  }
  svg.querySelectorAll('script, foreignObject').forEach(n => n.remove());
  svg.querySelectorAll('*').forEach(el => {
    for (const attr of Array.from(el.attributes)) {
      if (
        /^on/i.test(attr.name) ||
        (/href$/i.test(attr.name) && !attr.value.startsWith('#'))
      ) {
        el.removeAttribute(attr.name);
      }
    }
  });
  return document.importNode(svg, true) as unknown as SVGSVGElement;
}

export function describeTarget(el: Element | null): string {
  const server = el?.closest('[data-server]');
  if (!server) {
    return '';
  }
  const d = (server as HTMLElement).dataset;
  const parts = [`server ${d.server}`];
  if (d.ranks) {
    parts.push(`ranks ${d.ranks}`);
  }
  if (d.pod) {
    parts.push(`pod ${d.pod}`);
  }
  if (d.node) {
    parts.push(`node ${d.node}`);
  }
  if (d.leaf) {
    parts.push(`leaf ${d.leaf}`);
  }
  return parts.join(' · ');
}

/** Given-vs-planned key figures of a layout report. */
/** The placement in one line, above the figures (nothing without one): where the scheduler is expected
 * to place a job (the preview), or a running job's placement beside that forecast. */
export function PlacementLine(props: {
  result: ILayoutResult;
}): JSX.Element | null {
  const summary = props.result.placement?.summary;
  if (!summary) {
    return null;
  }
  return <p className="jp-Ranktable-placement">{summary}</p>;
}

/** One figure of the given order beside the planned one's (`group`: a parallel group's row). */
interface IFigure {
  label: string;
  given: React.ReactNode;
  planned: React.ReactNode;
  group?: string;
}

type Report = NonNullable<ILayoutResult['report']>;

/** The comparison's rows: crossings per tier and of SuperPoDs, the busiest uplink, the collective's
 * estimate and each parallel group's. */
function figures(
  r: Report,
  given: NonNullable<Report['given']>,
  planned: NonNullable<Report['planned']>,
  trans: TranslationBundle
): IFigure[] {
  const tiers = Math.max(
    given.crossings_per_tier.length,
    planned.crossings_per_tier.length
  );
  const flows = (v: number | number[]) =>
    Array.isArray(v) ? v.join(' / ') : String(v);
  const operation = OPERATIONS[r.operation ?? 'allreduce'] ?? r.operation;
  const superpods = planned.superpods ?? 0;
  const rows: IFigure[] = Array.from({ length: tiers }, (_, t) => ({
    label: trans.__('tier-%1 crossings', t + 1),
    given: given.crossings_per_tier[t] ?? 0,
    planned: planned.crossings_per_tier[t] ?? 0
  }));
  if (superpods > 0) {
    rows.push({
      label: trans.__('SuperPoD crossings (%1)', superpods),
      given: given.crossings_superpods ?? 0,
      planned: planned.crossings_superpods ?? 0
    });
  }
  rows.push(
    {
      label: trans.__('most flows on an uplink'),
      given: flows(given.max_uplink_flows),
      planned: flows(planned.max_uplink_flows)
    },
    {
      label: trans.__('%1 (est.)', operation),
      given: formatDuration(given.allreduce_seconds),
      planned: formatDuration(planned.allreduce_seconds)
    }
  );
  for (const g of r.groups ?? []) {
    const how =
      g.operation === g.algorithm
        ? g.operation
        : `${g.operation}, ${g.algorithm}`;
    rows.push({
      label: trans.__('%1 groups (%2 × %3, %4)', g.kind, g.count, g.size, how),
      given: formatDuration(g.given_seconds),
      planned: formatDuration(g.planned_seconds),
      group: g.kind
    });
  }
  return rows;
}

export function LayoutFigures(props: {
  result: ILayoutResult;
  trans: TranslationBundle;
}): JSX.Element | null {
  const { result, trans } = props;
  const r = result.report;
  if (!r?.given || !r?.planned) {
    return null;
  }
  return (
    <>
      <table
        className="jp-Ranktable-figures"
        aria-label={trans.__('Key figures')}
      >
        <TableHead columns={['', trans.__('given'), trans.__('planned')]} />
        <tbody>
          {r.algorithm && (
            <tr>
              <th>{trans.__('HCCL algorithm')}</th>
              <td
                colSpan={2}
                className="jp-Ranktable-algorithm"
                title={r.algorithm_reason ?? ''}
              >
                {r.algorithm}
              </td>
            </tr>
          )}
          {figures(r, r.given, r.planned, trans).map(f => (
            <tr key={f.label} data-group={f.group}>
              <th>{f.label}</th>
              <td>{f.given}</td>
              <td>{f.planned}</td>
            </tr>
          ))}
          <tr>
            <th>{trans.__('speed-up')}</th>
            <td colSpan={2} className="jp-Ranktable-speedup">
              ×{r.speedup.toFixed(2)}
            </td>
          </tr>
        </tbody>
      </table>
    </>
  );
}

interface IView {
  x: number;
  y: number;
  zoom: number;
}

/** Pan (drag) and zoom (wheel, or by a factor about the corner) of what is inside `frame`. */
function usePanZoom(frame: React.RefObject<HTMLDivElement>) {
  const [view, setView] = React.useState<IView>({ x: 0, y: 0, zoom: 1 });
  const drag = React.useRef<{ x: number; y: number; view: IView } | null>(null);
  const zoomAt = (factor: number, cx: number, cy: number) =>
    setView(v => {
      const zoom = Math.min(20, Math.max(0.2, v.zoom * factor));
      const k = zoom / v.zoom;
      return { zoom, x: cx - (cx - v.x) * k, y: cy - (cy - v.y) * k };
    });
  /** The pointer's place inside the frame. */
  const local = (e: React.MouseEvent | React.WheelEvent) => {
    const box = frame.current!.getBoundingClientRect();
    return { x: e.clientX - box.left, y: e.clientY - box.top };
  };
  return {
    view,
    local,
    fit: () => setView({ x: 0, y: 0, zoom: 1 }),
    zoomBy: (factor: number) => zoomAt(factor, 0, 0),
    onWheel: (e: React.WheelEvent) => {
      const p = local(e);
      zoomAt(e.deltaY < 0 ? 1.15 : 1 / 1.15, p.x, p.y);
    },
    onMouseDown: (e: React.MouseEvent) => {
      drag.current = { x: e.clientX, y: e.clientY, view };
    },
    endDrag: () => {
      drag.current = null;
    },
    /** Pans while the button is held. */
    onMouseMove: (e: React.MouseEvent) => {
      const d = drag.current;
      if (d) {
        setView({
          ...d.view,
          x: d.view.x + e.clientX - d.x,
          y: d.view.y + e.clientY - d.y
        });
      }
    }
  };
}

/** The sanitized SVG shown inside `host`; the error when the server's picture is not valid SVG. */
function useSvgIn(
  host: React.RefObject<HTMLDivElement>,
  text: string,
  trans: TranslationBundle,
  onShown: () => void
): string {
  const [error, setError] = React.useState('');
  React.useEffect(() => {
    const el = host.current;
    if (!el) {
      return;
    }
    el.replaceChildren();
    setError('');
    const svg = sanitizeSvg(text);
    if (!svg) {
      setError(
        trans.__('The server sent a layout picture that is not valid SVG.')
      );
      return;
    }
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', trans.__('Rank layout: given and planned'));
    svg.removeAttribute('height');
    svg.setAttribute('width', '100%');
    el.appendChild(svg);
    onShown();
  }, [text]);
  return error;
}

/** Zoom in, out and fit, with how to pan and the zoom level. */
function ZoomBar(props: {
  trans: TranslationBundle;
  zoom: number;
  zoomBy: (factor: number) => void;
  fit: () => void;
}): JSX.Element {
  const { trans } = props;
  return (
    <div className="jp-Ranktable-toolbar">
      <button
        className="jp-mod-styled"
        aria-label={trans.__('Zoom in')}
        onClick={() => props.zoomBy(1.25)}
      >
        +
      </button>
      <button
        className="jp-mod-styled"
        aria-label={trans.__('Zoom out')}
        onClick={() => props.zoomBy(0.8)}
      >
        −
      </button>
      <button className="jp-mod-styled" onClick={props.fit}>
        {trans.__('Fit')}
      </button>
      <span className="jp-Ranktable-muted">
        {trans.__(
          'Drag to pan, wheel to zoom (%1%)',
          Math.round(props.zoom * 100)
        )}
      </span>
    </div>
  );
}

/**
 * The layout picture at full width with pan (drag) and zoom (wheel, +/−, fit), and a tooltip that
 * follows the cursor naming the server, ranks, pod, node and leaf under it.
 */
export function LayoutFigure(props: {
  result: ILayoutResult;
  trans: TranslationBundle;
}): JSX.Element {
  const { result, trans } = props;
  const host = React.useRef<HTMLDivElement>(null);
  const frame = React.useRef<HTMLDivElement>(null);
  const pan = usePanZoom(frame);
  const error = useSvgIn(host, result.svg, trans, pan.fit);
  const [tip, setTip] = React.useState<{ x: number; y: number; text: string }>({
    x: 0,
    y: 0,
    text: ''
  });
  const { view } = pan;

  return (
    <div className="jp-Ranktable-layoutFigure">
      <ZoomBar
        trans={trans}
        zoom={view.zoom}
        zoomBy={pan.zoomBy}
        fit={pan.fit}
      />
      {error && (
        <div className="jp-Ranktable-error" role="alert">
          {error}
        </div>
      )}
      <div
        ref={frame}
        className="jp-Ranktable-panZoom"
        onWheel={pan.onWheel}
        onMouseDown={pan.onMouseDown}
        onMouseUp={pan.endDrag}
        onMouseLeave={() => {
          pan.endDrag();
          setTip(t => ({ ...t, text: '' }));
        }}
        onMouseMove={e => {
          pan.onMouseMove(e);
          const p = pan.local(e);
          setTip({ x: p.x, y: p.y, text: describeTarget(e.target as Element) });
        }}
      >
        <div
          ref={host}
          className="jp-Ranktable-svg"
          style={{
            transform: `translate(${view.x}px, ${view.y}px) scale(${view.zoom})`
          }}
        />
        {tip.text && (
          <div
            className="jp-Ranktable-tooltip"
            role="tooltip"
            style={{ left: tip.x + 14, top: tip.y + 14 }}
          >
            {tip.text}
          </div>
        )}
      </div>
      {(result.warnings ?? [])
        .filter(w => w !== result.placement?.summary) // shown above, by PlacementLine
        .map((w, i) => (
          <div key={i} className="jp-Ranktable-fieldWarning">
            {w}
          </div>
        ))}
    </div>
  );
}

/** The topology file field of the layout viewer and the Job view's Layout tab. */
export function TopologyInput(props: {
  trans: TranslationBundle;
  value: string;
  placeholder?: string;
  onChange: (value: string) => void;
}): JSX.Element {
  return (
    <label className="jp-Ranktable-inline">
      {props.trans.__('Topology file (empty: the cluster’s)')}
      <TextInput
        value={props.value}
        placeholder={props.placeholder}
        onChange={props.onChange}
      />
    </label>
  );
}

/** A planned layout: its figures (cost per collective), then the layout itself. */
export function LayoutResult(props: {
  result: ILayoutResult | null;
  trans: TranslationBundle;
}): JSX.Element | null {
  const { result, trans } = props;
  return result ? (
    <>
      <LayoutFigures result={result} trans={trans} />
      <LayoutFigure result={result} trans={trans} />
    </>
  ) : null;
}
