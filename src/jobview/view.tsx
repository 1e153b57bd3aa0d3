import * as React from 'react';
import { MainAreaWidget, Notification } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';

import { ErrorLine, errorText, formatSeconds } from '../ui/common';
import { useSignal } from '../ui/usesignal';
import { DiagnosisPanel } from './diagnosis';
import { JobInsights } from './insights';
import { LayoutResult, PlacementLine, TopologyInput } from '../layout/figure';
import { LogView } from '../logs/view';
import { ranktableIcon } from '../ui/icon';
import {
  IRunRef,
  JobsModel,
  ageSeconds,
  healthIssue,
  isLive,
  podsReady
} from '../jobs/model';
import { confirmResubmit, confirmStop } from '../jobs/confirm';
import { LogsModel } from '../logs/model';
import { IPodRow, RunModel } from './model';
import type { StreamClient } from '../api/client';

export type JobViewTab = 'overview' | 'logs' | 'metrics' | 'layout' | 'events';

/** A Job view opened on its logs reads its overview once the first lines came, or after this long. */
export const FIRST_LINES_FIRST_MS = 1000;

/** A pod that needs attention: a bad reason, a failed exit, restarts. */
function podIssue(p: IPodRow): boolean {
  const bad = ['CrashLoopBackOff', 'OOMKilled', 'Error', 'ImagePullBackOff'];
  return (
    bad.includes(p.reason ?? '') ||
    bad.includes(p.last_reason ?? '') ||
    (p.exit_code ?? 0) !== 0 ||
    (p.last_exit_code ?? 0) !== 0 ||
    (p.restarts ?? 0) > 0
  );
}

function Overview(props: {
  jobs: JobsModel;
  run: RunModel;
  trans: TranslationBundle;
}): JSX.Element {
  const { jobs, run, trans } = props;
  const d = run.description;
  const row = jobs.findRun(run.run.uid);
  const timeline = jobs.history.get(run.run.uid) ?? [];
  return (
    <div className="jp-Ranktable-overview">
      <section aria-label={trans.__('Phase timeline')}>
        <h3>{trans.__('Phase timeline')}</h3>
        <ol className="jp-Ranktable-timeline">
          {d?.job.created && (
            <li>
              <span className="jp-Ranktable-muted">
                {new Date(d.job.created).toLocaleTimeString()}
              </span>{' '}
              {trans.__('created')}
            </li>
          )}
          {timeline.map((t, i) => (
            <li key={i} data-phase={t.phase}>
              <span className="jp-Ranktable-muted">
                {new Date(t.at).toLocaleTimeString()}
              </span>{' '}
              <span className={`jp-Ranktable-phase-${t.phase}`}>{t.phase}</span>
            </li>
          ))}
          {run.ended && <li>{trans.__('ended: %1', run.ended)}</li>}
        </ol>
        {row && (
          <p className="jp-Ranktable-muted">
            {trans.__(
              'Rank table: %1 · age %2',
              String(row.rank_table ?? '–'),
              formatSeconds(ageSeconds(row))
            )}
            {healthIssue(row) && (
              <span className="jp-Ranktable-healthText">
                {' · '}
                {healthIssue(row)}
              </span>
            )}
          </p>
        )}
      </section>
      <section aria-label={trans.__('Pods')}>
        <h3>{trans.__('Pods')}</h3>
        <div className="jp-Ranktable-tableWrap">
          <table className="jp-Ranktable-table jp-Ranktable-pods">
            <thead>
              <tr>
                <th>{trans.__('Pod')}</th>
                <th>{trans.__('Node')}</th>
                <th>{trans.__('Leaf')}</th>
                <th>{trans.__('IP')}</th>
                <th>{trans.__('Phase')}</th>
                <th>{trans.__('Restarts')}</th>
                <th>{trans.__('Last state')}</th>
                <th>{trans.__('Exit code')}</th>
              </tr>
            </thead>
            <tbody>
              {(d?.pods ?? []).length === 0 && (
                <tr>
                  <td colSpan={8} className="jp-Ranktable-empty">
                    {d ? trans.__('No pods yet.') : trans.__('Loading…')}
                  </td>
                </tr>
              )}
              {(d?.pods ?? []).map(p => (
                <tr key={p.name} data-pod={p.name}>
                  <td>{p.name}</td>
                  <td>{p.node ?? '–'}</td>
                  <td>{p.leaf ?? '–'}</td>
                  <td>{p.host_ip ?? '–'}</td>
                  <td className={`jp-Ranktable-phase-${p.phase}`}>{p.phase}</td>
                  <td>{p.restarts}</td>
                  <td className={podIssue(p) ? 'jp-Ranktable-healthText' : ''}>
                    {p.reason ?? p.last_reason ?? p.state ?? '–'}
                  </td>
                  <td>{p.exit_code ?? p.last_exit_code ?? '–'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </div>
  );
}

function Events(props: { run: RunModel; trans: TranslationBundle }) {
  const { run, trans } = props;
  const events = run.description?.events ?? [];
  return (
    <ul className="jp-Ranktable-events">
      {events.length === 0 && <li>{trans.__('No events.')}</li>}
      {events.map((e, i) => (
        <li
          key={i}
          className={e.type === 'Warning' ? 'jp-Ranktable-issue-warning' : ''}
        >
          <span className="jp-Ranktable-muted">{e.last_seen ?? ''}</span>{' '}
          <strong>{e.reason}</strong> {e.object}: {e.message}
          {(e.count ?? 1) > 1 ? ` (×${e.count})` : ''}
          {e.hint && <div className="jp-Ranktable-hint">{e.hint}</div>}
        </li>
      ))}
    </ul>
  );
}

function LayoutTab(props: { run: RunModel; trans: TranslationBundle }) {
  const { run, trans } = props;
  const [topology, setTopology] = React.useState('');
  React.useEffect(() => {
    if (!run.layout) {
      void run.loadLayout();
    }
  }, [run]);
  return (
    <div className="jp-Ranktable-layoutTab">
      <div className="jp-Ranktable-toolbar">
        <TopologyInput trans={trans} value={topology} onChange={setTopology} />
        <button
          className="jp-mod-styled jp-mod-accept"
          onClick={() => void run.loadLayout(topology.trim())}
        >
          {trans.__('Plan')}
        </button>
      </div>
      <ErrorLine error={run.layoutError} />
      {run.layout && <PlacementLine result={run.layout} />}
      <LayoutResult result={run.layout} trans={trans} />
    </div>
  );
}

/** The body of a Job view: header with actions, then tabs for overview, logs, layout and events. */
function JobViewBody(props: {
  jobs: JobsModel;
  run: RunModel;
  logs: LogsModel;
  trans: TranslationBundle;
  tab: JobViewTab;
  onTab: (tab: JobViewTab) => void;
  openRun: (run: IRunRef) => void;
}): JSX.Element {
  const { jobs, run, logs, trans, tab } = props;
  useSignal(jobs.changed);
  useSignal(run.changed);
  const [error, setError] = React.useState('');
  const [busy, setBusy] = React.useState(false);
  const row = jobs.findRun(run.run.uid);
  const current = jobs.find(run.run.namespace, run.run.name);
  const insightsRef = React.useMemo(
    () => ({
      namespace: run.run.namespace,
      name: run.run.name,
      run: run.run.uid
    }),
    [run]
  );
  // an ended run's last description still says what the job was doing: once it ended, its record's
  // final phase (Stopped, Completed...) says what became of it
  const phase =
    row?.phase ??
    (run.ended
      ? (run.record?.phase ?? 'ended')
      : (run.description?.job.phase ?? '…'));
  const act = async (what: 'stop' | 'resubmit') => {
    setError('');
    const go =
      what === 'stop'
        ? await confirmStop(trans, run.run)
        : await confirmResubmit(trans, run.run, current);
    if (!go) {
      return;
    }
    setBusy(true);
    try {
      if (what === 'stop') {
        const stopped = await jobs.stop(run.run);
        await run.refresh(); // the job is gone: the view says so now, not at the next poll
        if (stopped.logs) {
          Notification.info(stopped.logs, { autoClose: 8000 });
        }
      } else {
        props.openRun(await jobs.resubmit(run.run));
      }
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const tabs: [JobViewTab, string][] = [
    ['overview', trans.__('Overview')],
    ['logs', trans.__('Logs')],
    ['metrics', trans.__('Metrics')],
    ['layout', trans.__('Layout')],
    ['events', trans.__('Events')]
  ];
  return (
    <div className="jp-Ranktable-jobView" data-uid={run.run.uid}>
      <header className="jp-Ranktable-jobHeader">
        <h2 title={`${run.run.namespace}/${run.run.name}`}>{run.run.name}</h2>
        <span className={`jp-Ranktable-phase jp-Ranktable-phase-${phase}`}>
          {phase}
        </span>
        <span className="jp-Ranktable-muted" title={run.run.uid}>
          {trans.__('run %1', run.run.uid.slice(0, 8))}
        </span>
        {row && (
          <span className="jp-Ranktable-muted">
            {trans.__('pods %1 ready', podsReady(row))}
          </span>
        )}
        <span className="jp-Ranktable-spacer" />
        <button
          className="jp-mod-styled"
          onClick={() => void run.refresh()}
          disabled={busy}
        >
          {trans.__('Refresh')}
        </button>
        <button
          className="jp-mod-styled"
          onClick={() => void act('resubmit')}
          disabled={busy}
          title={
            isLive(current)
              ? trans.__(
                  'Stop the running run %1, then submit this run’s spec as a new run',
                  (current.uid ?? '').slice(0, 8)
                )
              : trans.__('Submit this run’s spec again as a new run')
          }
        >
          {trans.__('Resubmit')}
        </button>
        <button
          className="jp-mod-styled jp-mod-warn"
          onClick={() => void act('stop')}
          disabled={busy || !!run.ended}
          title={
            run.ended
              ? trans.__('This run has ended: there is nothing to stop')
              : trans.__('Archive this run’s logs, then delete its job')
          }
        >
          {trans.__('Stop')}
        </button>
      </header>
      {run.ended && (
        <div className="jp-Ranktable-notice" role="status">
          {trans.__('This run has ended: %1.', run.ended)}{' '}
          {current?.uid && current.uid !== run.run.uid && (
            <button
              className="jp-mod-styled"
              onClick={() =>
                props.openRun({
                  namespace: current.namespace,
                  name: current.name,
                  uid: current.uid!
                })
              }
            >
              {trans.__('Open the current run')}
            </button>
          )}
        </div>
      )}
      <ErrorLine error={error || run.error} />
      <div className="jp-Ranktable-tabs" role="tablist">
        {tabs.map(([id, label]) => (
          <button
            key={id}
            role="tab"
            aria-selected={tab === id}
            className={
              'jp-Ranktable-tab' + (tab === id ? ' jp-mod-active' : '')
            }
            onClick={() => props.onTab(id)}
          >
            {label}
          </button>
        ))}
      </div>
      <div className="jp-Ranktable-tabBody" role="tabpanel">
        {tab === 'overview' && (
          <>
            <DiagnosisPanel job={insightsRef} />
            <Overview jobs={jobs} run={run} trans={trans} />
          </>
        )}
        {tab === 'metrics' && <JobInsights job={insightsRef} />}
        {/* logs stay mounted so switching tabs never blanks or restarts them */}
        <div
          className="jp-Ranktable-logsTab"
          style={{ display: tab === 'logs' ? 'flex' : 'none' }}
        >
          <LogView model={logs} trans={trans} />
        </div>
        {tab === 'layout' && <LayoutTab run={run} trans={trans} />}
        {tab === 'events' && <Events run={run} trans={trans} />}
      </div>
    </div>
  );
}

/** A Job view's content widget: owns the run's models for as long as the view is open. */
export class JobViewContent extends ReactWidget {
  readonly runModel: RunModel;
  readonly logs: LogsModel;
  tab: JobViewTab;

  constructor(
    readonly run: IRunRef,
    private _jobs: JobsModel,
    stream: StreamClient,
    private _trans: TranslationBundle,
    private _openRun: (run: IRunRef) => void,
    tab: JobViewTab = 'logs'
  ) {
    super();
    this.addClass('jp-Ranktable-jobViewContent');
    this.tab = tab;
    this.runModel = new RunModel(run);
    this.logs = new LogsModel(run, stream);
    this.logs.start(); // first lines first: the subscribe leaves before any other request
    if (tab === 'logs') {
      // the overview is not on screen: its first read waits for the first lines (at most 1 s), so the
      // server works for them alone
      const startRun = () => {
        if (this.logs.buffer.size || this.logs.status !== 'connecting…') {
          this.logs.changed.disconnect(startRun);
          clearTimeout(this._runTimer);
          this.runModel.start();
        }
      };
      this.logs.changed.connect(startRun);
      this._runTimer = setTimeout(() => {
        this.logs.changed.disconnect(startRun);
        this.runModel.start();
      }, FIRST_LINES_FIRST_MS);
    } else {
      this.runModel.start();
    }
  }

  private _runTimer: ReturnType<typeof setTimeout> | undefined;

  dispose(): void {
    clearTimeout(this._runTimer);
    this.runModel.dispose();
    this.logs.dispose();
    super.dispose();
  }

  protected render(): JSX.Element {
    return (
      <JobViewBody
        jobs={this._jobs}
        run={this.runModel}
        logs={this.logs}
        trans={this._trans}
        tab={this.tab}
        onTab={tab => {
          this.tab = tab;
          this.runModel.start(); // no-op once started
          this.update();
        }}
        openRun={this._openRun}
      />
    );
  }
}

export function jobViewId(run: IRunRef): string {
  return `ranktable-job-${run.uid}`;
}

export function createJobView(
  run: IRunRef,
  jobs: JobsModel,
  stream: StreamClient,
  trans: TranslationBundle,
  openRun: (run: IRunRef) => void
): MainAreaWidget<JobViewContent> {
  const content = new JobViewContent(run, jobs, stream, trans, openRun);
  const widget = new MainAreaWidget({ content });
  widget.id = jobViewId(run);
  widget.addClass('jp-Ranktable-jobViewWidget');
  widget.title.label = `${run.name} · ${run.uid.slice(0, 5)}`;
  widget.title.caption = trans.__(
    'Job %1/%2, run %3',
    run.namespace,
    run.name,
    run.uid
  );
  widget.title.icon = ranktableIcon;
  widget.title.closable = true;
  return widget;
}
