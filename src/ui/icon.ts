import { LabIcon } from '@jupyterlab/ui-components';

/** A 24-unit icon of the extension drawn in the theme's icon colour (`jp-icon3`) from its `shapes`. */
function ranktableLabIcon(name: string, shapes: string): LabIcon {
  return new LabIcon({
    name: `jupyter-ranktable:${name}`,
    svgstr: `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
${shapes}
  </g>
</svg>`
  });
}

export const ranktableIcon = ranktableLabIcon(
  'icon',
  `    <rect x="9" y="2" width="6" height="4" rx="1"/>
    <rect x="2" y="10" width="6" height="4" rx="1"/>
    <rect x="16" y="10" width="6" height="4" rx="1"/>
    <rect x="2" y="18" width="4" height="4" rx="1"/>
    <rect x="7" y="18" width="4" height="4" rx="1"/>
    <rect x="13" y="18" width="4" height="4" rx="1"/>
    <rect x="18" y="18" width="4" height="4" rx="1"/>
    <path d="M11.5 6h1v2H19v2h-1V9H6v1H5V8h6.5z M4.5 14h1v4h-1z M8.5 14h1v4h-1z M14.5 14h1v4h-1z M18.5 14h1v4h-1z"/>`
);

/** A job spec file (`*.rtjob.yaml`) and "New Ranktable job": a page with the rank tree on it. */
export const jobSpecIcon = ranktableLabIcon(
  'job-spec',
  `    <path d="M5 2h10l5 5v15H5zm2 2v16h11V8h-4V4z"/>
    <rect x="10.5" y="9" width="4" height="3" rx=".5"/>
    <rect x="8" y="15" width="3" height="3" rx=".5"/>
    <rect x="14" y="15" width="3" height="3" rx=".5"/>
    <path d="M12 12h1v1.5h3V15h-1v-.5h-5v.5H9v-1.5h3z"/>`
);

/** The Job view: a run's logs and per-rank charts. */
export const jobViewIcon = ranktableLabIcon(
  'job-view',
  `    <path d="M2 4h20v16H2zm2 4v10h16V8z"/>
    <rect x="6" y="13" width="2" height="3"/>
    <rect x="10" y="10" width="2" height="6"/>
    <rect x="14" y="12" width="2" height="4"/>
    <rect x="18" y="9" width="1" height="7"/>`
);

/** The Rank layout viewer: NPUs in their servers. */
export const rankLayoutIcon = ranktableLabIcon(
  'rank-layout',
  `    <path d="M2 3h20v8H2zm2 2v4h16V5zM2 13h20v8H2zm2 2v4h16v-4z"/>
    <rect x="5" y="6" width="3" height="2"/>
    <rect x="9" y="6" width="3" height="2"/>
    <rect x="13" y="6" width="3" height="2"/>
    <rect x="5" y="16" width="3" height="2"/>
    <rect x="9" y="16" width="3" height="2"/>
    <rect x="17" y="16" width="2" height="2"/>`
);
