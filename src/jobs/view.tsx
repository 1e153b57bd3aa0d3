import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import { formatSeconds } from '../ui/common';
import { useSignal } from '../ui/usesignal';
import { MiddleEllipsis } from '../ui/ellipsis';
import { TeamView } from '../team/view';
import {
  IJobRow,
  IRunRef,
  JobsModel,
  POLL_MS,
  ageSeconds,
  failing,
  healthIssue,
  jobKey,
  podsReady
} from './model';

export function useJobs(jobs: JobsModel): void {
  // ages and the banner's countdown tick even when nothing else changes
  useSignal(jobs.changed, 1000);
}

/** What each notice above the jobs list reads. */
interface INoticeProps {
  jobs: JobsModel;
  trans: TranslationBundle;
}

/** A lost pool or API: the reason, and when it is tried again; gone by itself on the next data. */
export function Banner(props: INoticeProps): JSX.Element | null {
  const { jobs, trans } = props;
  const b = jobs.banner;
  if (!b) {
    return null;
  }
  return (
    <div className="jp-Ranktable-banner" role="alert">
      <strong>{trans.__('Cluster unavailable')}</strong>
      <div className="jp-Ranktable-bannerReason">{b.message}</div>
      <RetryLine
        retryAt={b.retryAt}
        counting={wait => trans.__('retrying in %1 s', wait)}
        waiting={trans.__('retrying…')}
        action={trans.__('Retry now')}
        onAction={() => void jobs.refresh()}
      />
    </div>
  );
}

/** The Jupyter server was lost (killed, restarting, unreachable): the list is stale until it is back. */
export function DisconnectedNotice(props: INoticeProps): JSX.Element | null {
  const { jobs, trans } = props;
  if (!jobs.disconnected) {
    return null;
  }
  return (
    <div
      className="jp-Ranktable-banner"
      role="status"
      data-notice="disconnected"
    >
      <strong>{trans.__('Disconnected from the Jupyter server')}</strong>
      <div className="jp-Ranktable-bannerReason">
        {trans.__(
          'Reconnecting by itself; the jobs below are the last known state, not live.'
        )}
      </div>
      <RetryLine
        retryAt={jobs.stream.retryAt}
        counting={wait => trans.__('next try in %1 s', wait)}
        waiting={trans.__('reconnecting…')}
        action={trans.__('Reconnect now')}
        onAction={() => jobs.reconnect()}
      />
    </div>
  );
}

/** A lost connection's next try: the seconds until it (or that it is under way), and a link to try now. */
function RetryLine(props: {
  retryAt: number;
  counting: (seconds: number) => string;
  waiting: string;
  action: string;
  onAction: () => void;
}): JSX.Element {
  const wait = Math.max(0, Math.ceil((props.retryAt - Date.now()) / 1000));
  return (
    <div className="jp-Ranktable-muted">
      {wait > 0 ? props.counting(wait) : props.waiting}{' '}
      <button className="jp-Ranktable-link" onClick={props.onAction}>
        {props.action}
      </button>
    </div>
  );
}

/** The websocket could not be opened (a proxy refusing upgrades): the list is polled, and why. */
export function PollingNotice(props: INoticeProps): JSX.Element | null {
  const { jobs, trans } = props;
  if (!jobs.polling) {
    return null;
  }
  return (
    <div className="jp-Ranktable-notice" role="status" data-notice="polling">
      <strong>{trans.__('Live updates unavailable')}</strong>{' '}
      {trans.__(
        'The websocket to this server could not be opened (a proxy in front of Jupyter must pass WebSocket upgrades: Upgrade and Connection headers). Jobs are read every %1 s instead.',
        POLL_MS / 1000
      )}
    </div>
  );
}

function JobRow(props: {
  job: IJobRow;
  me: string | null;
  trans: TranslationBundle;
  onOpen: (run: IRunRef) => void;
}): JSX.Element {
  const { job, trans } = props;
  const other = !!job.owner && !!props.me && job.owner !== props.me;
  const issue = healthIssue(job);
  const why = failing(job);
  // a crash loop's pods are Running and ready between restarts: the row says Failing, with why
  const phase = why && job.phase === 'Running' ? 'Failing' : job.phase;
  const ready = podsReady(job);
  const age = formatSeconds(ageSeconds(job));
  const open = () =>
    job.uid &&
    props.onOpen({ namespace: job.namespace, name: job.name, uid: job.uid });
  return (
    <li
      className="jp-Ranktable-jobRow"
      data-job={job.name}
      data-namespace={job.namespace}
      data-uid={job.uid ?? ''}
      data-phase={job.phase}
      data-failing={why || undefined}
      data-owner={job.owner || undefined}
      title={trans.__(
        '%1%2/%3 · %4 · pods ready %5 · rank table %6 · age %7%8',
        job.owner ? trans.__('owner %1 · ', job.owner) : '',
        job.namespace,
        job.name,
        why ? trans.__('%1, failing: %2', job.phase, why) : job.phase,
        ready,
        String(job.rank_table ?? '–'),
        age,
        issue ? ` · ${issue}` : ''
      )}
      tabIndex={0}
      onClick={open}
      onKeyDown={e => {
        if (e.key === 'Enter') {
          open();
        }
      }}
    >
      <span
        className={
          'jp-Ranktable-health' + (issue ? ' jp-mod-bad' : ' jp-mod-ok')
        }
        aria-label={issue ? trans.__('Needs attention: %1', issue) : ''}
      >
        {issue ? '!' : ''}
      </span>
      <MiddleEllipsis
        className="jp-Ranktable-jobName"
        text={job.name}
        tail={8}
      />
      {other && <span className="jp-Ranktable-owner">{job.owner}</span>}
      <span className={`jp-Ranktable-phase jp-Ranktable-phase-${phase}`}>
        {phase}
      </span>
      <span
        className={'jp-Ranktable-ready' + (why ? ' jp-mod-bad' : '')}
        aria-label={trans.__('pods ready')}
      >
        {ready}
      </span>
    </li>
  );
}

/** The sidebar's Jobs section: a compact list; a click opens the run's Job view. */
export function JobsList(props: {
  jobs: JobsModel;
  trans: TranslationBundle;
  onOpen: (run: IRunRef) => void;
}): JSX.Element {
  const { jobs, trans } = props;
  useJobs(jobs);
  const [search, setSearch] = React.useState('');
  React.useEffect(() => jobs.watch(), [jobs]);
  if (jobs.permissions.noRead) {
    return (
      <div className="jp-Ranktable-sectionBody" data-section="jobs">
        <div className="jp-Ranktable-notice" role="alert" data-notice="no-read">
          {jobs.permissions.noRead}
        </div>
      </div>
    );
  }
  const me = jobs.permissions.permissions?.owner ?? null;
  const rows = jobs.jobs.filter(
    j => !search || j.name.toLowerCase().includes(search.toLowerCase())
  );
  const stale = !!jobs.banner || jobs.disconnected;
  return (
    <div className="jp-Ranktable-sectionBody" data-section="jobs">
      {/* while disconnected, failed requests are a consequence: one notice says it all */}
      {jobs.disconnected ? (
        <DisconnectedNotice jobs={jobs} trans={trans} />
      ) : (
        <Banner jobs={jobs} trans={trans} />
      )}
      <PollingNotice jobs={jobs} trans={trans} />
      <input
        className="jp-mod-styled jp-Ranktable-jobSearch"
        type="search"
        aria-label={trans.__('Filter jobs')}
        placeholder={trans.__('Filter jobs')}
        value={search}
        onChange={e => setSearch(e.target.value)}
      />
      {stale && rows.length > 0 && (
        <div className="jp-Ranktable-muted">
          {trans.__('Last known state, not live:')}
        </div>
      )}
      <ul
        className={'jp-Ranktable-jobList' + (stale ? ' jp-mod-stale' : '')}
        aria-label={trans.__('Jobs')}
      >
        {rows.length === 0 && (
          <li className="jp-Ranktable-empty">
            {jobs.disconnected
              ? trans.__('Jobs unknown while the server is unreachable.')
              : jobs.banner
                ? trans.__('Jobs unknown while the cluster is unavailable.')
                : trans.__('No jobs.')}
          </li>
        )}
        {rows.map(job => (
          <JobRow
            key={jobKey(job)}
            job={job}
            me={me}
            trans={trans}
            onOpen={props.onOpen}
          />
        ))}
      </ul>
      <TeamView
        team={jobs.team}
        me={me}
        rights={jobs.permissions.permissions}
        trans={trans}
      />
    </div>
  );
}
