import * as React from 'react';

import { postJSON, requestAPI } from '../request';
import {
  ErrorLine,
  ISectionProps,
  Section,
  TextField,
  errorText,
  useModel
} from './common';

function formatDuration(s: number): string {
  return s < 1 ? `${(s * 1000).toFixed(1)} ms` : `${s.toFixed(2)} s`;
}

interface ISide {
  crossings_per_tier: number[];
  max_uplink_flows: number | number[];
  allreduce_seconds: number;
}

export interface ILayoutResult {
  report: {
    given: ISide;
    planned: ISide;
    speedup: number;
    [k: string]: unknown;
  };
  svg: string;
  warnings?: string[];
  source?: string;
}

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

function describe(el: Element | null): string {
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

export function LayoutSection(props: ISectionProps): JSX.Element {
  const { model, trans } = props;
  useModel(model);
  const [result, setResult] = React.useState<ILayoutResult | null>(null);
  const [error, setError] = React.useState('');
  const [loading, setLoading] = React.useState(false);
  const [topologyPath, setTopologyPath] = React.useState('');
  const [ranktablePath, setRanktablePath] = React.useState('');
  const [hover, setHover] = React.useState('');
  const [zoom, setZoom] = React.useState(1);
  const host = React.useRef<HTMLDivElement>(null);
  const job = model.layoutJob;
  const spec = model.layoutSpec;

  const load = async (): Promise<void> => {
    setError('');
    setLoading(true);
    try {
      const topology = topologyPath.trim()
        ? { topology_path: topologyPath.trim() }
        : {};
      let r: ILayoutResult;
      if (ranktablePath.trim()) {
        r = await postJSON<ILayoutResult>('plan', {
          ranktable_path: ranktablePath.trim(),
          ...topology
        });
      } else if (job) {
        const q = topologyPath.trim()
          ? `?topology_path=${encodeURIComponent(topologyPath.trim())}`
          : '';
        r = await requestAPI<ILayoutResult>(
          `jobs/${encodeURIComponent(job.namespace)}/${encodeURIComponent(job.name)}/layout${q}`
        );
      } else if (spec) {
        r = await postJSON<ILayoutResult>('layout/preview', {
          spec,
          ...topology
        });
      } else {
        setLoading(false);
        return;
      }
      setResult(r);
    } catch (e) {
      setResult(null);
      setError(errorText(e));
    } finally {
      setLoading(false);
    }
  };

  React.useEffect(() => {
    if (model.open.layout) {
      void load();
    }
  }, [job?.name, job?.namespace, spec, model.open.layout]);

  React.useEffect(() => {
    const el = host.current;
    if (!el) {
      return;
    }
    el.replaceChildren();
    if (result?.svg) {
      const svg = sanitizeSvg(result.svg);
      if (svg) {
        svg.setAttribute('role', 'img');
        svg.setAttribute(
          'aria-label',
          trans.__('Rank layout: given and planned')
        );
        el.appendChild(svg);
      } else {
        setError(
          trans.__('The server sent a layout picture that is not valid SVG.')
        );
      }
    }
  }, [result]);

  const r = result?.report;
  const tiers = r
    ? Math.max(
        r.given.crossings_per_tier.length,
        r.planned.crossings_per_tier.length
      )
    : 0;
  const flows = (v: number | number[]) =>
    Array.isArray(v) ? v.join(' / ') : String(v);
  return (
    <Section id="layout" title={trans.__('Layout')} model={model}>
      <div className="jp-Ranktable-muted">
        {job
          ? trans.__('Running job %1/%2', job.namespace, job.name)
          : spec
            ? trans.__(
                'Composed job %1 (%2 nodes), placed on the cluster topology',
                String(spec.name),
                String(spec.nodes)
              )
            : trans.__(
                'Pick a job (Jobs → Layout), “Show layout” in Compose, or plan a rank-table file.'
              )}
      </div>
      <TextField
        name="layout-topology"
        label={trans.__('Topology file (empty: the cluster’s)')}
        value={topologyPath}
        onChange={setTopologyPath}
      />
      <TextField
        name="layout-ranktable"
        label={trans.__('Rank-table file (optional)')}
        value={ranktablePath}
        onChange={setRanktablePath}
      />
      <div className="jp-Ranktable-actions">
        <button
          className="jp-mod-styled jp-mod-accept"
          onClick={() => void load()}
          disabled={loading}
        >
          {loading ? trans.__('Planning…') : trans.__('Plan')}
        </button>
        <button
          className="jp-mod-styled"
          aria-label={trans.__('Zoom in')}
          onClick={() => setZoom(z => Math.min(z * 1.5, 20))}
        >
          +
        </button>
        <button
          className="jp-mod-styled"
          aria-label={trans.__('Zoom out')}
          onClick={() => setZoom(z => Math.max(z / 1.5, 0.2))}
        >
          −
        </button>
      </div>
      <ErrorLine error={error} />
      {r && (
        <table
          className="jp-Ranktable-figures"
          aria-label={trans.__('Key figures')}
        >
          <thead>
            <tr>
              <th />
              <th>{trans.__('given')}</th>
              <th>{trans.__('planned')}</th>
            </tr>
          </thead>
          <tbody>
            {Array.from({ length: tiers }, (_, t) => (
              <tr key={t}>
                <th>{trans.__('tier-%1 crossings', t + 1)}</th>
                <td>{r.given.crossings_per_tier[t] ?? 0}</td>
                <td>{r.planned.crossings_per_tier[t] ?? 0}</td>
              </tr>
            ))}
            <tr>
              <th>{trans.__('most flows on an uplink')}</th>
              <td>{flows(r.given.max_uplink_flows)}</td>
              <td>{flows(r.planned.max_uplink_flows)}</td>
            </tr>
            <tr>
              <th>{trans.__('all-reduce (est.)')}</th>
              <td>{formatDuration(r.given.allreduce_seconds)}</td>
              <td>{formatDuration(r.planned.allreduce_seconds)}</td>
            </tr>
            <tr>
              <th>{trans.__('speed-up')}</th>
              <td colSpan={2} className="jp-Ranktable-speedup">
                ×{r.speedup.toFixed(2)}
              </td>
            </tr>
          </tbody>
        </table>
      )}
      {(result?.warnings ?? []).map((w, i) => (
        <div key={i} className="jp-Ranktable-fieldWarning">
          {w}
        </div>
      ))}
      <div className="jp-Ranktable-hover" aria-live="polite">
        {hover}
      </div>
      <div
        className="jp-Ranktable-svgHost"
        style={{ ['--jp-ranktable-zoom' as any]: zoom }}
        onMouseOver={e => setHover(describe(e.target as Element))}
        onFocus={e => setHover(describe(e.target as Element))}
      >
        <div
          ref={host}
          className="jp-Ranktable-svg"
          style={{ width: `${zoom * 100}%` }}
        />
      </div>
    </Section>
  );
}
