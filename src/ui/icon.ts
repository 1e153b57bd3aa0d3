import { LabIcon } from '@jupyterlab/ui-components';

const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="9" y="2" width="6" height="4" rx="1"/>
    <rect x="2" y="10" width="6" height="4" rx="1"/>
    <rect x="16" y="10" width="6" height="4" rx="1"/>
    <rect x="2" y="18" width="4" height="4" rx="1"/>
    <rect x="7" y="18" width="4" height="4" rx="1"/>
    <rect x="13" y="18" width="4" height="4" rx="1"/>
    <rect x="18" y="18" width="4" height="4" rx="1"/>
    <path d="M11.5 6h1v2H19v2h-1V9H6v1H5V8h6.5z M4.5 14h1v4h-1z M8.5 14h1v4h-1z M14.5 14h1v4h-1z M18.5 14h1v4h-1z"/>
  </g>
</svg>`;

export const ranktableIcon = new LabIcon({
  name: 'jupyter-ranktable:icon',
  svgstr: svg
});
