/**
 * The Job view's Compare tab, the journey's last step: two runs of the job side by side (outcome,
 * duration, steps, final loss, step time, throughput, diagnosis) and what changed from A to B. By default
 * the run before the newest (A) and the newest (B); either can be picked from the job's runs.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import {
  IArchivedRun,
  IJobRunRef,
  IRunComparison,
  IRunSummary,
  fetchComparison,
  fetchRuns
} from './observe';
import { ErrorLine, errorText, formatSeconds } from '../ui/common';

type Figure =
  'duration_s' | 'last_step' | 'loss' | 'step_time_s' | 'throughput';

function num(value: number | null | undefined): string {
  if (value === null || value === undefined) {
    return '–';
  }
  return Number.isInteger(value) ? String(value) : value.toPrecision(4);
}

function runLabel(run: IArchivedRun): string {
  const when = new Date(run.created * 1000).toLocaleTimeString();
  return `${run.uid.slice(0, 8)} · ${run.phase ?? '?'} · ${when}`;
}

/** The comparison table: one row per figure, A and B side by side, B / A last; then the notes. */
export function CompareView(props: {
  result: IRunComparison;
  trans: TranslationBundle;
}): JSX.Element {
  const { result, trans } = props;
  const { a, b, changes } = result;
  const figure = (key: Figure, label: string, show = num) => {
    const ratio = changes[key]?.ratio;
    return (
      <tr key={key} data-figure={key}>
        <th scope="row">{label}</th>
        <td>{show(a[key])}</td>
        <td>{show(b[key])}</td>
        <td>
          {ratio === null || ratio === undefined ? '–' : `${ratio.toFixed(2)}×`}
        </td>
      </tr>
    );
  };
  const seconds = (v: number | null | undefined) =>
    v === null || v === undefined ? '–' : formatSeconds(v);
  const unit = a.throughput_unit ?? b.throughput_unit;
  const outcome = (s: IRunSummary) => (
    <td className={`jp-Ranktable-phase-${s.outcome ?? ''}`}>
      {s.outcome ?? '?'}
    </td>
  );
  return (
    <div className="jp-Ranktable-compare">
      <table className="jp-Ranktable-table jp-Ranktable-compareTable">
        <thead>
          <tr>
            <th />
            <th title={a.run}>{trans.__('A: run %1', a.run.slice(0, 8))}</th>
            <th title={b.run}>{trans.__('B: run %1', b.run.slice(0, 8))}</th>
            <th>{trans.__('B vs A')}</th>
          </tr>
        </thead>
        <tbody>
          <tr data-figure="outcome">
            <th scope="row">{trans.__('Outcome')}</th>
            {outcome(a)}
            {outcome(b)}
            <td />
          </tr>
          {figure('duration_s', trans.__('Duration'), seconds)}
          {figure('last_step', trans.__('Last step'))}
          {figure('loss', trans.__('Final loss'))}
          {figure('step_time_s', trans.__('Step time (s)'))}
          {figure(
            'throughput',
            unit ? trans.__('Throughput (%1)', unit) : trans.__('Throughput')
          )}
          <tr data-figure="diagnosis">
            <th scope="row">{trans.__('Diagnosis')}</th>
            <td>{a.diagnosis ?? '–'}</td>
            <td>{b.diagnosis ?? '–'}</td>
            <td />
          </tr>
        </tbody>
      </table>
      {result.notes.length > 0 && (
        <ul className="jp-Ranktable-compareNotes">
          {result.notes.map(note => (
            <li key={note}>{note}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The job's archived runs and the comparison of a pair: the view's run and the newest at first (else the
 * two newest); `load` compares another pair. */
function useComparison(job: IJobRunRef) {
  const { namespace, name } = job;
  const [runs, setRuns] = React.useState<IArchivedRun[]>([]);
  const [pair, setPair] = React.useState<[string, string] | null>(null);
  const [result, setResult] = React.useState<IRunComparison | null>(null);
  const [error, setError] = React.useState('');
  const [busy, setBusy] = React.useState(false);

  const load = React.useCallback(
    async (chosen: [string, string] | null) => {
      setBusy(true);
      try {
        const got = await fetchComparison(
          { namespace, name },
          chosen?.[0],
          chosen?.[1]
        );
        setResult(got);
        setPair([got.a.run, got.b.run]);
        setError('');
        setRuns(await fetchRuns({ namespace, name }));
      } catch (e) {
        setError(errorText(e));
      } finally {
        setBusy(false);
      }
    },
    [namespace, name]
  );
  React.useEffect(() => {
    // an earlier run's view compares that run (A) with the newest (B); the newest run's view, the run
    // before it with it
    const first = async () => {
      const known = await fetchRuns({ namespace, name }).catch(() => []);
      const newest = known[0]?.uid;
      const mine = job.run && known.some(r => r.uid === job.run);
      void load(
        mine && newest && newest !== job.run ? [job.run!, newest] : null
      );
    };
    void first();
  }, [load, job.run]);

  return { runs, pair, setPair, result, error, busy, load };
}

/** A picker of one of the job's archived runs. */
function RunSelect(props: {
  label: string;
  value: string;
  runs: IArchivedRun[];
  disabled: boolean;
  onPick: (uid: string) => void;
}): JSX.Element {
  const { label, runs } = props;
  return (
    <label>
      {label}{' '}
      <select
        aria-label={label}
        value={props.value}
        disabled={props.disabled}
        onChange={e => props.onPick(e.target.value)}
      >
        {runs.map(r => (
          <option key={r.uid} value={r.uid}>
            {runLabel(r)}
          </option>
        ))}
      </select>
    </label>
  );
}

/** Loads the job's runs and the comparison of the picked pair (default: this run's view and the newest, or
 * the two newest). */
export function ComparePanel(props: {
  job: IJobRunRef;
  trans: TranslationBundle;
}): JSX.Element {
  const { job, trans } = props;
  const { runs, pair, setPair, result, error, busy, load } = useComparison(job);
  const pick = (which: 0 | 1, uid: string) => {
    const next: [string, string] = pair ? [...pair] : ['', ''];
    next[which] = uid;
    setPair(next);
    if (next[0] && next[1] && next[0] !== next[1]) {
      void load(next);
    }
  };
  return (
    <div className="jp-Ranktable-compareTab">
      <div className="jp-Ranktable-toolbar">
        {([0, 1] as const).map(which => (
          <RunSelect
            key={which}
            label={which ? trans.__('Run B') : trans.__('Run A')}
            value={pair?.[which] ?? ''}
            runs={runs}
            disabled={busy || runs.length < 2}
            onPick={uid => pick(which, uid)}
          />
        ))}
        <button
          className="jp-mod-styled"
          disabled={busy}
          onClick={() => void load(pair)}
        >
          {trans.__('Refresh')}
        </button>
      </div>
      <ErrorLine error={error} />
      {result ? (
        <CompareView result={result} trans={trans} />
      ) : (
        !error && (
          <div className="jp-Ranktable-muted">{trans.__('Comparing…')}</div>
        )
      )}
    </div>
  );
}
