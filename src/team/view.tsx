import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import { TableHead } from '../ui/common';
import { useSignal } from '../ui/usesignal';
import { ITeam, TeamModel } from './model';
import type { IPermissions } from '../permissions/model';

const ACTIONS: [string, string][] = [
  ['list', 'list'],
  ['submit', 'submit'],
  ['stop', 'stop'],
  ['stop_others', 'stop others’ jobs'],
  ['logs', 'read logs'],
  ['exec', 'exec in pods']
];

/** What the pool's RBAC lets this user do in their namespace (SelfSubjectAccessReview, via the server). */
export function RightsLine(props: {
  rights: IPermissions | null;
  trans: TranslationBundle;
}): JSX.Element | null {
  const { rights, trans } = props;
  if (!rights) {
    return null;
  }
  const allowed = (rights.allowed ?? {}) as Record<string, boolean>;
  const may = ACTIONS.filter(([key]) => allowed[key]).map(([, t]) =>
    trans.__(t)
  );
  const not = ACTIONS.filter(([key]) => allowed[key] === false).map(([, t]) =>
    trans.__(t)
  );
  return (
    <div className="jp-Ranktable-muted" data-team="rights">
      {trans.__(
        'You (%1) in namespace %2: may %3; may not %4.',
        rights.user ?? trans.__('unknown user'),
        rights.namespace,
        may.join(', ') || '–',
        not.join(', ') || '–'
      )}
    </div>
  );
}

/**
 * The team's jobs on the shared pool, folded under the Jobs section: who owns what, what is queued, the
 * free NPUs per leaf and per queue. Read-only; read from the server only while it is unfolded.
 */
export function TeamView(props: {
  team: TeamModel;
  me: string | null;
  rights?: IPermissions | null;
  trans: TranslationBundle;
}): JSX.Element {
  const { team, trans } = props;
  useSignal(team.changed);
  React.useEffect(() => () => team.follow(false), [team]);
  const t = team.team;
  return (
    <details
      className="jp-Ranktable-team"
      onToggle={e => team.follow((e.target as HTMLDetailsElement).open)}
    >
      <summary>{trans.__('Team: every user’s jobs (read-only)')}</summary>
      <RightsLine rights={props.rights ?? null} trans={trans} />
      {team.error && <div className="jp-Ranktable-error">{team.error}</div>}
      {t && (
        <>
          <TeamJobs jobs={t.jobs} trans={trans} />
          {t.jobs.length === 0 && (
            <div className="jp-Ranktable-muted">
              {trans.__('No jobs on the pool.')}
            </div>
          )}
          <div className="jp-Ranktable-muted" data-team="free">
            {t.free_npus !== null && t.free_npus !== undefined
              ? trans.__(
                  'Free NPUs: %1 (per leaf: %2)',
                  t.free_npus,
                  Object.entries(t.free_per_leaf ?? {})
                    .map(([leaf, n]) => `${leaf} ${n}`)
                    .join(', ') || '–'
                )
              : trans.__(
                  'Free NPUs: unknown (only your namespace may be listed)'
                )}
          </div>
          {t.queues.map(q => (
            <div
              className="jp-Ranktable-muted"
              data-queue={q.name}
              key={q.name}
            >
              {trans.__(
                'Queue %1: %2 queued, %3 NPUs in use, %4 free',
                q.name,
                q.queued_jobs,
                q.used_npus,
                q.free_npus ?? '–'
              )}
            </div>
          ))}
        </>
      )}
    </details>
  );
}

/** The team's jobs, one row each: name, owner, phase, NPUs (the user's own marked). */
function TeamJobs(props: {
  jobs: ITeam['jobs'];
  trans: TranslationBundle;
}): JSX.Element {
  const { jobs, trans } = props;
  return (
    <table className="jp-Ranktable-teamJobs" aria-label={trans.__('Team jobs')}>
      <TableHead
        columns={[
          trans.__('Job'),
          trans.__('Owner'),
          trans.__('Phase'),
          trans.__('NPUs')
        ]}
      />
      <tbody>
        {jobs.map(j => (
          <tr
            key={`${j.namespace}/${j.name}`}
            data-job={j.name}
            data-namespace={j.namespace}
            className={j.mine ? 'jp-mod-mine' : undefined}
            title={`${j.namespace}/${j.name} · ${j.queue ?? 'default'}`}
          >
            <td>{j.name}</td>
            <td>{j.owner || '–'}</td>
            <td>{j.phase}</td>
            <td>{j.npus ?? 0}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
