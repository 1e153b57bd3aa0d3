import * as React from 'react';
import { MainAreaWidget, Notification } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';
import { stoppedNotice } from '../jobs/settle';

import { ErrorLine, errorText, formatSeconds, TableHead } from '../ui/common';
import { useSignal } from '../ui/usesignal';
import { ComparePanel } from './compare';
import { DiagnosisPanel } from './diagnosis';
import { JobInsights } from './insights';
import { TERMINAL_PHASES } from './observe';
import { LayoutResult, PlacementLine, TopologyInput } from '../layout/figure';
import { LogView } from '../logs/view';
import { jobViewIcon } from '../ui/icon';
import {
  IJobRow,
  IRunRef,
  JobsModel,
  ageSeconds,
  healthIssue,
  isLive,
  podsReady
} from '../jobs/model';
import { confirmResubmit, confirmStop } from '../jobs/confirm';
import { LogsModel } from '../logs/model';
import { IPodRow, IRunHeader, RunModel, runHeader } from './model';
import { LineageModel } from './lineage';
import { LineageSection } from './lineageview';
import type { StreamClient } from '../api/client';

export type JobViewTab =
  'overview' | 'logs' | 'metrics' | 'compare' | 'layout' | 'events';

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
      <PodsSection pods={d?.pods} loaded={!!d} trans={trans} />
    </div>
  );
}

/** The run's pods, one row each: where it runs, its phase, restarts, last state and exit code. */
function PodsSection(props: {
  pods: IPodRow[] | undefined;
  loaded: boolean;
  trans: TranslationBundle;
}): JSX.Element {
  const { loaded, trans } = props;
  const rows = props.pods ?? [];
  return (
    <section aria-label={trans.__('Pods')}>
      <h3>{trans.__('Pods')}</h3>
      <div className="jp-Ranktable-tableWrap">
        <table className="jp-Ranktable-table jp-Ranktable-pods">
          <TableHead
            columns={[
              trans.__('Pod'),
              trans.__('Node'),
              trans.__('Leaf'),
              trans.__('IP'),
              trans.__('Phase'),
              trans.__('Restarts'),
              trans.__('Last state'),
              trans.__('Exit code')
            ]}
          />
          <tbody>
            {rows.length === 0 && (
              <tr>
                <td colSpan={8} className="jp-Ranktable-empty">
                  {loaded ? trans.__('No pods yet.') : trans.__('Loading…')}
                </td>
              </tr>
            )}
            {rows.map(p => (
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
interface IJobViewProps {
  jobs: JobsModel;
  run: RunModel;
  lineage: LineageModel;
  logs: LogsModel;
  trans: TranslationBundle;
  tab: JobViewTab;
  onTab: (tab: JobViewTab) => void;
  openRun: (run: IRunRef) => void;
}

function JobViewBody(props: IJobViewProps): JSX.Element {
  const { jobs, run, trans, tab } = props;
  useSignal(jobs.changed);
  useSignal(run.changed);
  const row = jobs.findRun(run.run.uid);
  const current = jobs.find(run.run.namespace, run.run.name);
  const { act, busy, error } = useRunActions(props, current);
  const insightsRef = React.useMemo(
    () => ({
      namespace: run.run.namespace,
      name: run.run.name,
      run: run.run.uid
    }),
    [run]
  );
  const header = runHeader(
    row,
    run.ended,
    run.record?.phase,
    run.description?.job.phase
  );
  return (
    <div className="jp-Ranktable-jobView" data-uid={run.run.uid}>
      <header className="jp-Ranktable-jobHeader">
        <RunStatus run={run} row={row} header={header} trans={trans} />
        <span className="jp-Ranktable-spacer" />
        <RunActions
          {...props}
          row={row}
          current={current}
          header={header}
          busy={busy}
          act={act}
        />
      </header>
      {run.ended && (
        <EndedNotice
          run={run}
          current={current}
          trans={trans}
          openRun={props.openRun}
        />
      )}
      <ErrorLine error={error || run.error} />
      <TabBar tab={tab} onTab={props.onTab} trans={trans} />
      <div className="jp-Ranktable-tabBody" role="tabpanel">
        {tab === 'overview' && (
          <>
            <DiagnosisPanel job={insightsRef} />
            <LineageSection model={props.lineage} trans={trans} />
            <Overview jobs={jobs} run={run} trans={trans} />
          </>
        )}
        {tab === 'metrics' && (
          <JobInsights
            job={insightsRef}
            live={!run.ended && !TERMINAL_PHASES.includes(header.phase)}
          />
        )}
        {tab === 'compare' && <ComparePanel job={insightsRef} trans={trans} />}
        {/* logs stay mounted so switching tabs never blanks or restarts them */}
        <div
          className="jp-Ranktable-logsTab"
          style={{ display: tab === 'logs' ? 'flex' : 'none' }}
        >
          <LogView model={props.logs} trans={trans} />
        </div>
        {tab === 'layout' && <LayoutTab run={run} trans={trans} />}
        {tab === 'events' && <Events run={run} trans={trans} />}
      </div>
    </div>
  );
}

type RunAction = 'stop' | 'resubmit' | 'resume';

/** Stop, resubmit or resume the run (after the user confirms); `busy` while it runs, `error` if it failed. */
function useRunActions(props: IJobViewProps, current: IJobRow | undefined) {
  const { jobs, run, trans } = props;
  const [error, setError] = React.useState('');
  const [busy, setBusy] = React.useState(false);
  const resume = async () => {
    const resumed = await jobs.resume(run.run);
    const next = {
      namespace: resumed.namespace,
      name: resumed.name,
      uid: resumed.uid
    };
    Notification.success(resumed.message, {
      autoClose: 10000,
      actions: [
        { label: trans.__('Open'), callback: () => props.openRun(next) }
      ]
    });
    void props.lineage.load();
    props.openRun(next);
  };
  const stop = async () => {
    const stopped = await jobs.stop(run.run);
    await run.refresh(); // the job is gone: the view says so now, not at the next poll
    const notice = stoppedNotice(stopped.logs);
    if (notice) {
      Notification.info(notice, { autoClose: 8000 });
    }
  };
  const act = async (what: RunAction) => {
    setError('');
    const go =
      what === 'stop'
        ? await confirmStop(trans, run.run)
        : what === 'resume'
          ? true // resume is the failed run's next step: it stops nothing that still trains well
          : await confirmResubmit(trans, run.run, current);
    if (!go) {
      return;
    }
    setBusy(true);
    try {
      if (what === 'resume') {
        await resume();
      } else if (what === 'stop') {
        await stop();
      } else {
        props.openRun(await jobs.resubmit(run.run));
      }
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return { act, busy, error };
}

/** The header's left: the job's name, its phase (or Failing), the run, why it fails or its pods ready. */
function RunStatus(props: {
  run: RunModel;
  row: IJobRow | undefined;
  header: IRunHeader;
  trans: TranslationBundle;
}): JSX.Element {
  const { run, row, trans } = props;
  const { phase, label, ended, failingWhy } = props.header;
  return (
    <>
      <h2 title={`${run.run.namespace}/${run.run.name}`}>{run.run.name}</h2>
      <span
        className={
          `jp-Ranktable-phase jp-Ranktable-phase-${phase}` +
          (failingWhy ? ' jp-Ranktable-phase-failing' : '')
        }
      >
        {trans.__(label)}
      </span>
      <span className="jp-Ranktable-muted" title={run.run.uid}>
        {trans.__('run %1', run.run.uid.slice(0, 8))}
      </span>
      {row && failingWhy && (
        <span className="jp-Ranktable-healthText" role="status">
          {trans.__('failing: %1', failingWhy)}
        </span>
      )}
      {row && !failingWhy && !ended && (
        <span className="jp-Ranktable-muted">
          {trans.__('pods %1 ready', podsReady(row))}
        </span>
      )}
    </>
  );
}

/** Why the user may not stop or resubmit the run (their rights over its owner's job), and whether it may
 * be resumed (it failed or was stopped). */
function actionRules(props: {
  jobs: JobsModel;
  run: RunModel;
  row: IJobRow | undefined;
  current: IJobRow | undefined;
  header: IRunHeader;
}): { cannotStop: string; cannotResubmit: string; canResume: boolean } {
  const { jobs, run, row, current } = props;
  const owned = {
    namespace: run.run.namespace,
    owner: row?.owner || run.description?.job.owner || current?.owner
  };
  return {
    cannotStop: jobs.permissions.whyNot('stop', owned),
    cannotResubmit: jobs.permissions.whyNot('resubmit', owned),
    canResume:
      ['Failed', 'Aborted', 'Terminated', 'Stopped'].includes(
        props.header.phase
      ) ||
      (!!run.ended && run.record?.phase !== 'Completed')
  };
}

/** Refresh, Resume, Resubmit and Stop, each disabled with the reason when it does not apply. */
function RunActions(
  props: IJobViewProps & {
    row: IJobRow | undefined;
    current: IJobRow | undefined;
    header: IRunHeader;
    busy: boolean;
    act: (what: RunAction) => Promise<void>;
  }
): JSX.Element {
  const { run, trans, current, busy, act } = props;
  const { phase, ended } = props.header;
  const { cannotStop, cannotResubmit, canResume } = actionRules(props);
  return (
    <>
      <button
        className="jp-mod-styled"
        onClick={() => {
          void run.refresh();
          void props.lineage.load();
        }}
        disabled={busy}
      >
        {trans.__('Refresh')}
      </button>
      <button
        className="jp-mod-styled jp-Ranktable-resume"
        onClick={() => void act('resume')}
        disabled={busy || !canResume}
        title={
          canResume
            ? trans.__(
                'Submit the next run of this lineage from the last checkpoint, without the node the fault was blamed on'
              )
            : trans.__('Only a failed or stopped run can be resumed')
        }
      >
        {trans.__('Resume')}
      </button>
      <button
        className="jp-mod-styled"
        onClick={() => void act('resubmit')}
        disabled={busy || !!cannotResubmit}
        data-why-not={cannotResubmit || undefined}
        title={
          cannotResubmit ||
          (isLive(current)
            ? trans.__(
                'Stop the running run %1, then submit this run’s spec as a new run',
                (current.uid ?? '').slice(0, 8)
              )
            : trans.__('Submit this run’s spec again as a new run'))
        }
      >
        {trans.__('Resubmit')}
      </button>
      <button
        className="jp-mod-styled jp-mod-warn"
        onClick={() => void act('stop')}
        disabled={busy || ended || !!cannotStop}
        data-why-not={cannotStop || undefined}
        title={
          ended
            ? trans.__(
                'This run has ended (%1): there is nothing to stop',
                phase
              )
            : cannotStop ||
              trans.__('Archive this run’s logs, then delete its job')
        }
      >
        {trans.__('Stop')}
      </button>
    </>
  );
}

/** An ended run says so, with a way to the job's current run when there is a newer one. */
function EndedNotice(props: {
  run: RunModel;
  current: IJobRow | undefined;
  trans: TranslationBundle;
  openRun: (run: IRunRef) => void;
}): JSX.Element {
  const { run, current, trans } = props;
  return (
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
  );
}

/** The Job view's tabs. */
function TabBar(props: {
  tab: JobViewTab;
  onTab: (tab: JobViewTab) => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { tab, trans } = props;
  const tabs: [JobViewTab, string][] = [
    ['overview', trans.__('Overview')],
    ['logs', trans.__('Logs')],
    ['metrics', trans.__('Metrics')],
    ['compare', trans.__('Compare')],
    ['layout', trans.__('Layout')],
    ['events', trans.__('Events')]
  ];
  return (
    <div className="jp-Ranktable-tabs" role="tablist">
      {tabs.map(([id, label]) => (
        <button
          key={id}
          role="tab"
          aria-selected={tab === id}
          className={'jp-Ranktable-tab' + (tab === id ? ' jp-mod-active' : '')}
          onClick={() => props.onTab(id)}
        >
          {label}
        </button>
      ))}
    </div>
  );
}

/** A Job view's content widget: owns the run's models for as long as the view is open. */
export class JobViewContent extends ReactWidget {
  readonly runModel: RunModel;
  readonly lineage: LineageModel;
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
    this.lineage = new LineageModel(run);
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
      void this.lineage.load();
    }
  }

  private _runTimer: ReturnType<typeof setTimeout> | undefined;

  dispose(): void {
    clearTimeout(this._runTimer);
    this.runModel.dispose();
    this.lineage.dispose();
    this.logs.dispose();
    super.dispose();
  }

  protected render(): JSX.Element {
    return (
      <JobViewBody
        jobs={this._jobs}
        run={this.runModel}
        lineage={this.lineage}
        logs={this.logs}
        trans={this._trans}
        tab={this.tab}
        onTab={tab => {
          this.tab = tab;
          this.runModel.start(); // no-op once started
          if (tab === 'overview') {
            void this.lineage.load();
          }
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
  widget.title.icon = jobViewIcon;
  widget.title.closable = true;
  return widget;
}
