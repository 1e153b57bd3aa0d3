import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import { ErrorLine } from '../ui/common';
import { useSignal } from '../ui/usesignal';
import { ILineage, ILineageFault, LineageModel, seconds } from './lineage';

/** The Job view's Lineage section: run 1 -> fault -> run 2 from checkpoint ..., what each fault cost. */
export function LineageSection(props: {
  model: LineageModel;
  trans: TranslationBundle;
}): JSX.Element | null {
  const { model, trans } = props;
  useSignal(model.changed);
  const lineage = model.lineage;
  if (!lineage && !model.error) {
    return null;
  }
  const goodput = lineage?.goodput;
  return (
    <section aria-label={trans.__('Lineage')} className="jp-Ranktable-lineage">
      <h3>{trans.__('Lineage')}</h3>
      <ErrorLine error={model.error} />
      {lineage && (
        <ol className="jp-Ranktable-lineageRuns">
          {lineage.runs.map((run, i) => (
            <LineageRun
              key={run.uid}
              run={run}
              fault={lineage.faults[i]}
              first={i === 0}
              trans={trans}
            />
          ))}
        </ol>
      )}
      {goodput && (
        <p className="jp-Ranktable-goodput">
          {trans.__(
            'Goodput: %1 steps kept in %2 (%3 of the fault-free rate), %4 lost to faults',
            goodput.steps_kept.toLocaleString(),
            seconds(goodput.wall_s),
            goodput.share === null
              ? '–'
              : `${Math.round(goodput.share * 100)}%`,
            seconds(goodput.lost_s)
          )}
        </p>
      )}
    </section>
  );
}

/** One run of the lineage: where it started and ended, how it resumed, and the fault that ended it. */
function LineageRun(props: {
  run: ILineage['runs'][number];
  fault: ILineageFault | undefined;
  first: boolean;
  trans: TranslationBundle;
}): JSX.Element {
  const { run, fault, first, trans } = props;
  return (
    <li data-run={run.uid}>
      <strong>{trans.__('run %1', run.number)}</strong>{' '}
      <span className="jp-Ranktable-muted">{run.uid.slice(0, 8)}</span>{' '}
      {run.from_step !== null && run.from_step !== undefined
        ? trans.__('from checkpoint %1', run.from_step.toLocaleString())
        : !first
          ? trans.__('from scratch')
          : ''}{' '}
      {run.last_step !== null &&
        trans.__(
          'steps %1–%2',
          (run.first_step ?? 1).toLocaleString(),
          run.last_step.toLocaleString()
        )}{' '}
      {run.resumed_by === 'auto' && (
        <span className="jp-Ranktable-badge">{trans.__('auto-resumed')}</span>
      )}{' '}
      <span className={`jp-Ranktable-phase-${run.phase}`}>{run.phase}</span>
      {fault && (
        <div
          className="jp-Ranktable-lineageFault"
          data-fault={fault.node ?? ''}
        >
          {trans.__(
            '%1 at step %2: detected in %3, restarted in %4, %5 step(s) replayed, %6 lost',
            fault.text,
            fault.at_step?.toLocaleString() ?? '–',
            seconds(fault.detection_s),
            seconds(fault.restart_s),
            String(fault.replayed_steps ?? '–'),
            seconds(fault.lost_s)
          )}
        </div>
      )}
    </li>
  );
}
