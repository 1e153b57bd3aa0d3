import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import { toCsv } from '../ui/csv';
import { ILogLine, highlight, isErrorLine, parseRanks } from './lines';
import { LogsModel } from './model';
import { ErrorLine, TextInput, downloadText } from '../ui/common';
import { useSignal } from '../ui/usesignal';

const ROW_HEIGHT = 18;
const OVERSCAN = 30;
/** Monospace cell width estimate for wrapped rows (the theme's code font at 13 px). */
const CHAR_WIDTH = 7.8;
const META_CHARS = 24;

/** Row tops for wrapped lines: each line takes as many rows as its text needs at this width. */
function wrappedTops(
  lines: (i: number) => ILogLine,
  count: number,
  width: number
): Float64Array {
  const perRow = Math.max(20, Math.floor(width / CHAR_WIDTH));
  const tops = new Float64Array(count + 1);
  for (let i = 0; i < count; i++) {
    const chars = lines(i).text.length + META_CHARS;
    tops[i + 1] = tops[i] + Math.max(1, Math.ceil(chars / perRow)) * ROW_HEIGHT;
  }
  return tops;
}

function firstAtOrAfter(tops: Float64Array, y: number): number {
  let lo = 0;
  let hi = tops.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (tops[mid + 1] <= y) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/**
 * One run's logs at full width: a virtualised list (only the rows in view are in the DOM), wrap toggle,
 * search, filters by rank id and by node rank, errors only, follow and pause. The model owns the stream.
 */
export function LogView(props: {
  model: LogsModel;
  trans: TranslationBundle;
}): JSX.Element {
  const { model, trans } = props;
  const [scrollTop, setScrollTop] = React.useState(0);
  const [size, setSize] = React.useState({ width: 800, height: 400 });
  const viewport = React.useRef<HTMLDivElement>(null);

  useSignal(model.changed);

  React.useEffect(() => {
    const el = viewport.current;
    if (!el || typeof ResizeObserver === 'undefined') {
      return;
    }
    const ro = new ResizeObserver(() =>
      setSize({ width: el.clientWidth || 800, height: el.clientHeight || 400 })
    );
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  const lines = model.view;
  const count = lines.size;
  const at = (i: number) => lines.at(i)!;
  const tops = model.wrap ? wrappedTops(at, count, size.width - 16) : null;
  const total = tops ? tops[count] : count * ROW_HEIGHT;

  React.useLayoutEffect(() => {
    if (model.follow && !model.paused && viewport.current) {
      viewport.current.scrollTop = viewport.current.scrollHeight;
    }
  });

  const [first, last] = visibleRange(tops, count, scrollTop, size.height);
  const rows: JSX.Element[] = [];
  for (let i = first; i < last; i++) {
    const top = tops ? tops[i] : i * ROW_HEIGHT;
    const height = tops ? tops[i + 1] - tops[i] : ROW_HEIGHT;
    rows.push(
      <LogLineRow
        key={i}
        line={at(i)}
        search={model.filter.search ?? ''}
        top={top}
        height={height}
        trans={trans}
      />
    );
  }

  return (
    <div className="jp-Ranktable-logPane">
      <LogToolbar model={model} trans={trans} shown={count} />
      <ErrorLine error={model.error} />
      <div
        ref={viewport}
        className={'jp-Ranktable-logView' + (model.wrap ? ' jp-mod-wrap' : '')}
        role="log"
        aria-label={trans.__('Log lines')}
        tabIndex={0}
        onScroll={e => {
          const el = e.currentTarget;
          setScrollTop(el.scrollTop);
          const atBottom =
            el.scrollHeight - el.scrollTop - el.clientHeight < ROW_HEIGHT * 2;
          if (!atBottom && model.follow) {
            model.setFollow(false);
          }
        }}
      >
        <div style={{ height: total, position: 'relative' }}>{rows}</div>
      </div>
    </div>
  );
}

/** The lines to render, [first, last), for the viewport at `scrollTop`, with OVERSCAN lines either side. */
function visibleRange(
  tops: Float64Array | null,
  count: number,
  scrollTop: number,
  height: number
): [number, number] {
  if (tops) {
    return [
      Math.max(0, firstAtOrAfter(tops, scrollTop) - OVERSCAN),
      Math.min(count, firstAtOrAfter(tops, scrollTop + height) + OVERSCAN)
    ];
  }
  return [
    Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN),
    Math.min(count, Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN)
  ];
}

/** One log line at its place: the node rank and pod, then the text with the search matches marked. */
function LogLineRow(props: {
  line: ILogLine;
  search: string;
  top: number;
  height: number;
  trans: TranslationBundle;
}): JSX.Element {
  const { line: l, trans } = props;
  return (
    <div
      className={
        'jp-Ranktable-logLine' +
        (isErrorLine(l.text) ? ' jp-Ranktable-logError' : '')
      }
      data-pod={l.pod}
      style={{ top: props.top, height: props.height }}
    >
      <span
        className="jp-Ranktable-logMeta"
        title={trans.__('node rank %1 · pod %2', l.rank ?? '–', l.pod)}
      >
        [{l.rank ?? '-'} {l.pod}]
      </span>{' '}
      {highlight(l.text, props.search).map((s, j) =>
        s.match ? (
          <mark key={j}>{s.text}</mark>
        ) : (
          <React.Fragment key={j}>{s.text}</React.Fragment>
        )
      )}
    </div>
  );
}

/** Every line the model holds, as text or CSV, named after the run. */
function downloadLogs(model: LogsModel, kind: 'txt' | 'csv'): void {
  const all = model.view.toArray();
  const name = `${model.run.name}-${model.run.uid.slice(0, 8)}-logs.${kind}`;
  if (kind === 'txt') {
    downloadText(
      name,
      all.map(l => `${l.ts} [${l.rank ?? '-'} ${l.pod}] ${l.text}`).join('\n') +
        '\n'
    );
  } else {
    downloadText(
      name,
      toCsv(
        ['timestamp', 'pod', 'node_rank', 'text'],
        all.map(l => [l.ts, l.pod, l.rank, l.text])
      ),
      'text/csv'
    );
  }
}

/** A ranks field (ids or node ranks): numbers and ranges, marked invalid otherwise. */
function RanksInput(props: {
  label: string;
  placeholder: string;
  title: string;
  value: string;
  invalid: boolean;
  onChange: (text: string) => void;
}): JSX.Element {
  return (
    <label className="jp-Ranktable-inline">
      {props.label}
      <TextInput
        className="jp-mod-styled jp-Ranktable-ranks"
        aria-invalid={props.invalid}
        placeholder={props.placeholder}
        title={props.title}
        value={props.value}
        onChange={props.onChange}
      />
    </label>
  );
}

/** A checkbox with its label after it. */
function Toggle(props: {
  label: string;
  checked: boolean;
  onChange: (checked: boolean) => void;
}): JSX.Element {
  return (
    <label className="jp-Ranktable-inline">
      <input
        type="checkbox"
        checked={props.checked}
        onChange={e => props.onChange(e.target.checked)}
      />
      {props.label}
    </label>
  );
}

/** Pause, the downloads, and how many pods and lines are shown of how many. */
function LogActions(props: {
  model: LogsModel;
  trans: TranslationBundle;
  shown: number;
}): JSX.Element {
  const { model, trans } = props;
  return (
    <>
      <button
        className="jp-mod-styled"
        aria-pressed={model.paused}
        onClick={() => model.setPaused(!model.paused)}
      >
        {model.paused ? trans.__('Resume') : trans.__('Pause')}
      </button>
      <button
        className="jp-mod-styled"
        onClick={() => downloadLogs(model, 'txt')}
      >
        {trans.__('Download text')}
      </button>
      <button
        className="jp-mod-styled"
        onClick={() => downloadLogs(model, 'csv')}
      >
        {trans.__('Download CSV')}
      </button>
      <span className="jp-Ranktable-muted jp-Ranktable-logStatus">
        {trans.__(
          '%1 pods · %2 of %3 lines · %4',
          model.pods.size,
          props.shown,
          model.buffer.size,
          model.status
        )}
      </span>
    </>
  );
}

/** Search, rank filters, errors only, wrap, follow, pause, the downloads and the line counts. */
function LogToolbar(props: {
  model: LogsModel;
  trans: TranslationBundle;
  shown: number;
}): JSX.Element {
  const { model, trans } = props;
  const filter = model.filter;
  const rankIds = parseRanks(model.rankIdsText);
  const nodeRanks = parseRanks(model.nodeRanksText);
  return (
    <>
      <div className="jp-Ranktable-toolbar jp-Ranktable-logToolbar">
        <label className="jp-Ranktable-inline">
          {trans.__('Search')}
          <input
            type="search"
            className="jp-mod-styled"
            value={filter.search ?? ''}
            onChange={e => model.setFilter({ search: e.target.value })}
          />
        </label>
        <RanksInput
          label={trans.__('Rank id')}
          placeholder={trans.__('e.g. 0,8-15')}
          title={trans.__(
            'Rank ids (one per NPU process) as the log lines name them'
          )}
          value={model.rankIdsText}
          invalid={rankIds === null}
          onChange={text => model.setRankIds(text)}
        />
        <RanksInput
          label={trans.__('Node rank')}
          placeholder={trans.__('e.g. 0-1')}
          title={trans.__('Node ranks (one per pod / server)')}
          value={model.nodeRanksText}
          invalid={nodeRanks === null}
          onChange={text => model.setNodeRanks(text)}
        />
        <Toggle
          label={trans.__('Errors only')}
          checked={!!filter.errorsOnly}
          onChange={checked => model.setFilter({ errorsOnly: checked })}
        />
        <Toggle
          label={trans.__('Wrap')}
          checked={model.wrap}
          onChange={checked => model.setWrap(checked)}
        />
        <Toggle
          label={trans.__('Follow')}
          checked={model.follow}
          onChange={checked => model.setFollow(checked)}
        />
        <LogActions model={model} trans={trans} shown={props.shown} />
      </div>
      {(rankIds === null || nodeRanks === null) && (
        <div className="jp-Ranktable-fieldError">
          {trans.__('ranks: use numbers and ranges like 0,2-3')}
        </div>
      )}
    </>
  );
}
