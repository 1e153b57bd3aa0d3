import * as React from 'react';
import { IDisposable } from '@lumino/disposable';

import { toCsv } from '../csv';
import {
  ILogFilter,
  ILogLine,
  LogMerger,
  highlight,
  isErrorLine,
  matchesFilter,
  parseRanks
} from '../logs';
import { RingBuffer } from '../ringbuffer';
import {
  ErrorLine,
  ISectionProps,
  Section,
  downloadText,
  useModel
} from './common';

export const LOG_CAPACITY = 50_000;
const ROW_HEIGHT = 18;
const OVERSCAN = 20;
const REPAINT_MS = 200;

/** The live log view: bounded buffer, filters, search highlight, follow/pause, virtualised rows. */
export function LogsSection(props: ISectionProps): JSX.Element {
  const { model, trans } = props;
  useModel(model);
  const job = model.logsJob;
  const buffer = React.useRef(new RingBuffer<ILogLine>(LOG_CAPACITY));
  const merger = React.useRef(new LogMerger());
  const pods = React.useRef(new Set<string>());
  const [version, setVersion] = React.useState(0);
  const [paused, setPaused] = React.useState(false);
  const [follow, setFollow] = React.useState(true);
  const [search, setSearch] = React.useState('');
  const [pod, setPod] = React.useState('');
  const [ranksText, setRanksText] = React.useState('');
  const [errorsOnly, setErrorsOnly] = React.useState(false);
  const [status, setStatus] = React.useState('');
  const [error, setError] = React.useState('');
  const [scrollTop, setScrollTop] = React.useState(0);
  const [height, setHeight] = React.useState(300);
  const viewport = React.useRef<HTMLDivElement>(null);
  const frame = React.useRef(0);
  const filtered = React.useRef<{
    key: string;
    filter: ILogFilter;
    rows: RingBuffer<ILogLine>;
  } | null>(null);
  const pausedRef = React.useRef(paused);
  pausedRef.current = paused;

  // one subscription per job; batches go to the ring buffer, the view repaints at most once a frame
  React.useEffect(() => {
    buffer.current.clear();
    filtered.current = null;
    merger.current = new LogMerger();
    pods.current = new Set();
    setVersion(v => v + 1);
    setError('');
    if (!job) {
      return;
    }
    setStatus(trans.__('connecting…'));
    const sub: IDisposable = model.stream.subscribe(
      'logs',
      { job: job.name, namespace: job.namespace, follow: true },
      {
        params: () => ({ since: merger.current.since() }),
        onReconnect: () => {
          merger.current.beginReplay();
          setStatus(trans.__('reconnecting…'));
        },
        onData: (data: { lines: ILogLine[] }) => {
          const fresh = merger.current.accept(data.lines);
          for (const l of fresh) {
            pods.current.add(l.pod);
          }
          buffer.current.push(...fresh);
          const view = filtered.current;
          if (view) {
            view.rows.push(...fresh.filter(l => matchesFilter(l, view.filter)));
          }
          // repaint at most REPAINT_MS apart, however fast lines arrive
          if (!frame.current) {
            frame.current = window.setTimeout(() => {
              frame.current = 0;
              if (!pausedRef.current) {
                setVersion(v => v + 1);
              }
            }, REPAINT_MS);
          }
          setStatus(trans.__('live'));
        },
        onEnd: () => setStatus(trans.__('ended')),
        onError: e => {
          setStatus('');
          setError(e.message);
        }
      }
    );
    return () => {
      sub.dispose();
      if (frame.current) {
        clearTimeout(frame.current);
        frame.current = 0;
      }
    };
  }, [job?.name, job?.namespace]);

  React.useEffect(() => {
    const el = viewport.current;
    if (!el || typeof ResizeObserver === 'undefined') {
      return;
    }
    const ro = new ResizeObserver(() => setHeight(el.clientHeight || 300));
    ro.observe(el);
    return () => ro.disconnect();
  }, [job]);

  const ranks = parseRanks(ranksText);
  const filter = {
    pods: pod ? [pod] : [],
    ranks: ranks ?? [],
    search,
    errorsOnly
  };
  const filterKey = JSON.stringify(filter);
  const active = Boolean(
    filter.pods.length || filter.ranks.length || filter.search || errorsOnly
  );
  // with a filter: an incrementally maintained, equally bounded view; without: the buffer itself
  if (!active) {
    filtered.current = null;
  } else if (filtered.current?.key !== filterKey) {
    const rows = new RingBuffer<ILogLine>(LOG_CAPACITY);
    rows.push(
      ...buffer.current.toArray().filter(l => matchesFilter(l, filter))
    );
    filtered.current = { key: filterKey, filter, rows };
  }
  const lines: RingBuffer<ILogLine> = filtered.current?.rows ?? buffer.current;
  const count = lines.size;
  void version;

  React.useLayoutEffect(() => {
    if (follow && !paused && viewport.current) {
      viewport.current.scrollTop = viewport.current.scrollHeight;
    }
  }, [version, filterKey, follow, paused]);

  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(
    count,
    Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN
  );
  const visible: ILogLine[] = [];
  for (let i = first; i < last; i++) {
    visible.push(lines.at(i)!);
  }
  const download = (kind: 'txt' | 'csv') => {
    const name = `${job?.name ?? 'job'}-logs.${kind}`;
    if (kind === 'txt') {
      downloadText(
        name,
        lines
          .toArray()
          .map(l => `${l.ts} [${l.rank ?? '-'} ${l.pod}] ${l.text}`)
          .join('\n') + '\n'
      );
    } else {
      downloadText(
        name,
        toCsv(
          ['timestamp', 'pod', 'rank', 'text'],
          lines.toArray().map(l => [l.ts, l.pod, l.rank, l.text])
        ),
        'text/csv'
      );
    }
  };

  return (
    <Section id="logs" title={trans.__('Logs')} model={model}>
      {!job ? (
        <div className="jp-Ranktable-empty">
          {trans.__('Pick a job in Jobs → Logs.')}
        </div>
      ) : (
        <>
          <div className="jp-Ranktable-muted">
            {trans.__(
              '%1/%2 · %3 pods · %4 lines kept',
              job.namespace,
              job.name,
              pods.current.size,
              buffer.current.size
            )}{' '}
            <span className="jp-Ranktable-streamStatus">{status}</span>
          </div>
          <div className="jp-Ranktable-toolbar">
            <input
              type="search"
              className="jp-mod-styled"
              aria-label={trans.__('Search logs')}
              placeholder={trans.__('Search')}
              value={search}
              onChange={e => setSearch(e.target.value)}
            />
            <select
              className="jp-mod-styled"
              aria-label={trans.__('Pod')}
              value={pod}
              onChange={e => setPod(e.target.value)}
            >
              <option value="">{trans.__('All pods')}</option>
              {Array.from(pods.current)
                .sort()
                .map(p => (
                  <option key={p} value={p}>
                    {p}
                  </option>
                ))}
            </select>
            <input
              className="jp-mod-styled jp-Ranktable-ranks"
              aria-label={trans.__('Ranks')}
              aria-invalid={ranks === null}
              placeholder={trans.__('ranks e.g. 0,2-3')}
              value={ranksText}
              onChange={e => setRanksText(e.target.value)}
            />
          </div>
          <div className="jp-Ranktable-toolbar">
            <label>
              <input
                type="checkbox"
                checked={follow}
                onChange={e => setFollow(e.target.checked)}
              />{' '}
              {trans.__('Follow')}
            </label>
            <label>
              <input
                type="checkbox"
                checked={errorsOnly}
                onChange={e => setErrorsOnly(e.target.checked)}
              />{' '}
              {trans.__('Errors only')}
            </label>
            <button
              className="jp-mod-styled"
              aria-pressed={paused}
              onClick={() => {
                setPaused(!paused);
                setVersion(v => v + 1);
              }}
            >
              {paused ? trans.__('Resume') : trans.__('Pause')}
            </button>
            <button className="jp-mod-styled" onClick={() => download('txt')}>
              {trans.__('Download text')}
            </button>
            <button className="jp-mod-styled" onClick={() => download('csv')}>
              {trans.__('Download CSV')}
            </button>
          </div>
          {ranks === null && (
            <div className="jp-Ranktable-fieldError">
              {trans.__('ranks: use numbers and ranges like 0,2-3')}
            </div>
          )}
          <ErrorLine error={error} />
          <div
            ref={viewport}
            className="jp-Ranktable-logView"
            role="log"
            aria-label={trans.__('Log lines')}
            tabIndex={0}
            onScroll={e => {
              const el = e.currentTarget;
              setScrollTop(el.scrollTop);
              const atBottom =
                el.scrollHeight - el.scrollTop - el.clientHeight <
                ROW_HEIGHT * 2;
              if (!atBottom && follow) {
                setFollow(false);
              }
            }}
          >
            <div
              style={{
                height: count * ROW_HEIGHT,
                position: 'relative'
              }}
            >
              {visible.map((l, i) => (
                <div
                  key={first + i}
                  className={
                    'jp-Ranktable-logLine' +
                    (isErrorLine(l.text) ? ' jp-Ranktable-logError' : '')
                  }
                  data-pod={l.pod}
                  style={{ top: (first + i) * ROW_HEIGHT, height: ROW_HEIGHT }}
                >
                  <span className="jp-Ranktable-logMeta">
                    [{l.rank ?? '-'} {l.pod}]
                  </span>{' '}
                  {highlight(l.text, search).map((s, j) =>
                    s.match ? (
                      <mark key={j}>{s.text}</mark>
                    ) : (
                      <React.Fragment key={j}>{s.text}</React.Fragment>
                    )
                  )}
                </div>
              ))}
            </div>
          </div>
        </>
      )}
    </Section>
  );
}
