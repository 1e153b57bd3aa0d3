import * as React from 'react';

import { IDiagnosis, IJobRunRef, IRankWhere, fetchDiagnosis } from './observe';
import { usePolled } from '../ui/polled';
import { TableHead } from '../ui/common';

function where(entry: {
  node_rank: number | null;
  pod?: string | null;
  server: string | null;
  leaf: string | null;
  device?: number | null;
}): string {
  const parts: string[] = [];
  if (entry.node_rank !== null) {
    parts.push(`node rank ${entry.node_rank}`);
  }
  if (entry.pod) {
    parts.push(`pod ${entry.pod}`);
  }
  if (entry.server) {
    parts.push(`server ${entry.server}`);
  }
  if (entry.device !== undefined && entry.device !== null) {
    parts.push(`NPU ${entry.device}`);
  }
  if (entry.leaf) {
    parts.push(`leaf ${entry.leaf}`);
  }
  return parts.join(', ');
}

/** The diagnosis, failing rank first: code, line, why, fix; then advice, stragglers, hangs, the timeline. */
/** The first failure: its rank and place, time, code, line, why and the fix. */
function FirstFailure(props: {
  first: NonNullable<IDiagnosis['first_failure']>;
}): JSX.Element {
  const { first } = props;
  return (
    <div className="jp-ranktable-first-failure" role="alert">
      <div>
        <b>First failure: rank {first.rank ?? '?'}</b> ({where(first)}) at{' '}
        {first.time ?? '?'}
      </div>
      <div>
        <code>{first.code}</code> {first.title}
      </div>
      <pre>{first.line}</pre>
      <div>
        <b>Why:</b> {first.explanation}
      </div>
      <div>
        <b>Fix:</b> {first.fix}
      </div>
    </div>
  );
}

/** Each rank's first error (the first 200), the first failure's row marked. */
function ErrorsPerRank(props: {
  errors: IDiagnosis['errors'];
  firstRank?: number | null;
}): JSX.Element {
  return (
    <details>
      <summary>First error per rank ({props.errors.length})</summary>
      <table className="jp-ranktable-errors">
        <TableHead columns={['Rank', 'Node rank', 'Leaf', 'Time', 'Code']} />
        <tbody>
          {props.errors.slice(0, 200).map(e => (
            <tr
              key={`${e.rank}-${e.node_rank}`}
              className={
                props.firstRank !== undefined && e.rank === props.firstRank
                  ? 'jp-mod-first'
                  : ''
              }
            >
              <td>{e.rank ?? '-'}</td>
              <td>{e.node_rank}</td>
              <td>{e.leaf ?? '-'}</td>
              <td>{e.time ?? '-'}</td>
              <td title={e.line}>{e.code}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}

export function DiagnosisView(props: { diagnosis: IDiagnosis }): JSX.Element {
  const d = props.diagnosis;
  const first = d.first_failure;
  const row = (w: IRankWhere, text: string) => (
    <li key={`${w.rank}-${text}`}>
      rank {w.rank} ({where(w)}) {text}
    </li>
  );
  return (
    <div className="jp-ranktable-diagnosis">
      <div className="jp-ranktable-diagnosis-summary">{d.summary}</div>
      {first && <FirstFailure first={first} />}
      {(d.advice ?? []).map(a => (
        <div key={a} className="jp-ranktable-advice">
          ► {a}
        </div>
      ))}
      {(d.stragglers.length > 0 || d.hung.length > 0) && (
        <ul className="jp-ranktable-slow">
          {d.stragglers.map(s =>
            row(
              s,
              `straggler: ${(s.ratio ?? 0).toFixed(2)}x the job's median step time`
            )
          )}
          {d.hung.map(h =>
            row(
              h,
              `hung: silent ${Math.round(h.silent_s ?? 0)} s after step ${h.last_step ?? '?'}`
            )
          )}
        </ul>
      )}
      {d.pending && (
        <div className="jp-ranktable-pending">Pending: {d.pending.reason}</div>
      )}
      {d.errors.length > 0 && (
        <ErrorsPerRank errors={d.errors} firstRank={first?.rank} />
      )}
    </div>
  );
}

/** Fetches the diagnosis every few seconds while shown; `onLoad` hands it to siblings (e.g. the plots). */
export function DiagnosisPanel(props: {
  job: IJobRunRef;
  refreshMs?: number;
  onLoad?: (d: IDiagnosis) => void;
}): JSX.Element {
  const { namespace, name, run } = props.job;
  const [diagnosis, error] = usePolled(
    () => fetchDiagnosis({ namespace, name, run }),
    [namespace, name, run],
    props.refreshMs,
    props.onLoad
  );
  if (!diagnosis) {
    return (
      <div className="jp-ranktable-diagnosis">{error ?? 'Diagnosing…'}</div>
    );
  }
  return <DiagnosisView diagnosis={diagnosis} />;
}
