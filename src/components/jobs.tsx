import * as React from 'react';
import { Dialog, showDialog } from '@jupyterlab/apputils';

import { IJobSummary, key } from '../model';
import { IJobQuery, phasesOf, queryJobs } from '../jobtable';
import { postJSON, requestAPI } from '../request';
import {
  ErrorLine,
  ISectionProps,
  Section,
  errorText,
  formatSeconds,
  useModel
} from './common';

interface IColumn {
  key: string;
  label: string;
  value?: (job: IJobSummary) => React.ReactNode;
}

function jobPath(job: IJobSummary): string {
  return `jobs/${encodeURIComponent(job.namespace)}/${encodeURIComponent(job.name)}`;
}

function Describe(props: {
  data: any;
  trans: ISectionProps['trans'];
}): JSX.Element {
  const { data, trans } = props;
  return (
    <div className="jp-Ranktable-describe">
      <p>{trans.__('Rank table: %1', data.rank_table_status)}</p>
      <table className="jp-Ranktable-table">
        <thead>
          <tr>
            <th>{trans.__('Pod')}</th>
            <th>{trans.__('Node')}</th>
            <th>{trans.__('Host IP')}</th>
            <th>{trans.__('Leaf')}</th>
            <th>{trans.__('Phase')}</th>
            <th>{trans.__('Restarts')}</th>
          </tr>
        </thead>
        <tbody>
          {(data.pods ?? []).map((p: any) => (
            <tr key={p.name}>
              <td>{p.name}</td>
              <td>{p.node ?? '–'}</td>
              <td>{p.host_ip ?? '–'}</td>
              <td>{p.leaf ?? '–'}</td>
              <td>{p.phase}</td>
              <td>{p.restarts}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h4>{trans.__('Events')}</h4>
      <ul className="jp-Ranktable-events">
        {(data.events ?? []).length === 0 && <li>{trans.__('No events.')}</li>}
        {(data.events ?? []).map((e: any, i: number) => (
          <li
            key={i}
            className={e.type === 'Warning' ? 'jp-Ranktable-issue-warning' : ''}
          >
            <strong>{e.reason}</strong> {e.object}: {e.message}
            {e.hint && <div className="jp-Ranktable-hint">{e.hint}</div>}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function JobsSection(props: ISectionProps): JSX.Element {
  const { model, trans } = props;
  useModel(model);
  const columns: IColumn[] = [
    { key: 'name', label: trans.__('Name') },
    { key: 'namespace', label: trans.__('Namespace') },
    { key: 'phase', label: trans.__('Phase') },
    { key: 'nodes', label: trans.__('Nodes') },
    { key: 'running', label: trans.__('Running') },
    { key: 'succeeded', label: trans.__('Succeeded') },
    { key: 'failed', label: trans.__('Failed') },
    { key: 'retries', label: trans.__('Retries') },
    { key: 'rank_table', label: trans.__('Rank table') },
    { key: 'queue', label: trans.__('Queue') },
    {
      key: 'age_seconds',
      label: trans.__('Age'),
      value: j => formatSeconds(j.age_seconds as number)
    }
  ];
  const [query, setQuery] = React.useState<IJobQuery>({
    sortKey: 'name',
    sortDir: 'asc',
    phase: 'All'
  });
  const [visible, setVisible] = React.useState<string[]>([
    'name',
    'phase',
    'nodes',
    'running',
    'rank_table',
    'age_seconds'
  ]);
  const [error, setError] = React.useState('');
  const [busy, setBusy] = React.useState('');
  const [chooser, setChooser] = React.useState(false);

  React.useEffect(() => {
    model.refreshJobs().catch(e => setError(errorText(e)));
    model.watchJobs();
  }, [model]);

  const act = async (
    job: IJobSummary,
    what: 'stop' | 'resubmit' | 'describe'
  ): Promise<void> => {
    setError('');
    setBusy(`${key(job)}:${what}`);
    try {
      if (what === 'stop') {
        const answer = await showDialog({
          title: trans.__('Stop job'),
          body: trans.__(
            'Stop %1? Its pods and rank-table ConfigMap are deleted.',
            job.name
          ),
          buttons: [
            Dialog.cancelButton(),
            Dialog.warnButton({ label: trans.__('Stop') })
          ]
        });
        if (answer.button.accept) {
          await requestAPI(jobPath(job), { method: 'DELETE' });
        }
      } else if (what === 'resubmit') {
        await postJSON(`${jobPath(job)}/resubmit`, {});
      } else {
        const data = await requestAPI<any>(jobPath(job));
        await showDialog({
          title: trans.__('Job %1', job.name),
          body: <Describe data={data} trans={trans} />,
          buttons: [Dialog.okButton({ label: trans.__('Close') })]
        });
      }
      await model.refreshJobs();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy('');
    }
  };

  const shown = columns.filter(c => visible.includes(c.key));
  const rows = queryJobs(model.jobs, query);
  const sortBy = (k: string) =>
    setQuery({
      ...query,
      sortKey: k,
      sortDir: query.sortKey === k && query.sortDir === 'asc' ? 'desc' : 'asc'
    });
  return (
    <Section id="jobs" title={trans.__('Jobs')} model={model}>
      <div className="jp-Ranktable-toolbar">
        <input
          className="jp-mod-styled"
          type="search"
          aria-label={trans.__('Search jobs')}
          placeholder={trans.__('Search')}
          value={query.search ?? ''}
          onChange={e => setQuery({ ...query, search: e.target.value })}
        />
        <select
          className="jp-mod-styled"
          aria-label={trans.__('Phase')}
          value={query.phase}
          onChange={e => setQuery({ ...query, phase: e.target.value })}
        >
          <option value="All">{trans.__('All phases')}</option>
          {phasesOf(model.jobs).map(p => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
        <button
          className="jp-mod-styled"
          aria-expanded={chooser}
          onClick={() => setChooser(!chooser)}
        >
          {trans.__('Columns')}
        </button>
      </div>
      {chooser && (
        <fieldset className="jp-Ranktable-fieldset jp-Ranktable-columns">
          <legend>{trans.__('Columns')}</legend>
          {columns.map(c => (
            <label key={c.key}>
              <input
                type="checkbox"
                checked={visible.includes(c.key)}
                disabled={c.key === 'name'}
                onChange={e =>
                  setVisible(
                    e.target.checked
                      ? [...visible, c.key]
                      : visible.filter(v => v !== c.key)
                  )
                }
              />{' '}
              {c.label}
            </label>
          ))}
        </fieldset>
      )}
      <ErrorLine error={error || model.jobsError} />
      <div className="jp-Ranktable-tableWrap">
        <table className="jp-Ranktable-table" aria-label={trans.__('Jobs')}>
          <thead>
            <tr>
              {shown.map(c => (
                <th
                  key={c.key}
                  aria-sort={
                    query.sortKey === c.key
                      ? query.sortDir === 'asc'
                        ? 'ascending'
                        : 'descending'
                      : 'none'
                  }
                >
                  <button
                    className="jp-Ranktable-sort"
                    onClick={() => sortBy(c.key)}
                  >
                    {c.label}
                    {query.sortKey === c.key
                      ? query.sortDir === 'asc'
                        ? ' ▲'
                        : ' ▼'
                      : ''}
                  </button>
                </th>
              ))}
              <th className="jp-Ranktable-pinned">{trans.__('Actions')}</th>
            </tr>
          </thead>
          <tbody>
            {rows.length === 0 && (
              <tr>
                <td colSpan={shown.length + 1} className="jp-Ranktable-empty">
                  {trans.__('No jobs.')}
                </td>
              </tr>
            )}
            {rows.map(job => (
              <tr key={key(job)} data-job={job.name} data-phase={job.phase}>
                {shown.map(c => (
                  <td
                    key={c.key}
                    className={
                      c.key === 'phase' ? `jp-Ranktable-phase-${job.phase}` : ''
                    }
                  >
                    {c.value ? c.value(job) : String(job[c.key] ?? '')}
                  </td>
                ))}
                <td className="jp-Ranktable-pinned jp-Ranktable-rowActions">
                  <button
                    className="jp-mod-styled"
                    disabled={!!busy}
                    onClick={() => void act(job, 'describe')}
                  >
                    {trans.__('Describe')}
                  </button>
                  <button
                    className="jp-mod-styled"
                    onClick={() => {
                      model.layoutJob = job;
                      model.layoutSpec = null;
                      model.show('layout');
                    }}
                  >
                    {trans.__('Layout')}
                  </button>
                  <button
                    className="jp-mod-styled"
                    onClick={() => {
                      model.logsJob = job;
                      model.show('logs');
                    }}
                  >
                    {trans.__('Logs')}
                  </button>
                  <button
                    className="jp-mod-styled"
                    disabled={!!busy}
                    onClick={() => void act(job, 'resubmit')}
                  >
                    {trans.__('Resubmit')}
                  </button>
                  <button
                    className="jp-mod-styled jp-mod-warn"
                    disabled={!!busy}
                    onClick={() => void act(job, 'stop')}
                  >
                    {trans.__('Stop')}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Section>
  );
}
