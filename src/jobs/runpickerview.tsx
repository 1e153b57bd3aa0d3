import * as React from 'react';
import { Dialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';

import { TableHead } from '../ui/common';
import { useSignal } from '../ui/usesignal';
import { IRunRef } from './model';
import { IJobChoice, RunPickerModel, shortAge, shortUid } from './runpicker';

function JobChoiceRow(props: {
  job: IJobChoice;
  model: RunPickerModel;
  trans: TranslationBundle;
  onOpen: () => void;
}): JSX.Element {
  const { job, model, trans, onOpen } = props;
  const selectedHere = job.runs.find(r => r.uid === model.selected?.uid);
  const shown = selectedHere ?? job.runs[0];
  const checked = !!selectedHere;
  const id = `jp-Ranktable-pick-${job.namespace}-${job.name}`;
  return (
    <tr
      className={`jp-Ranktable-pickRow${checked ? ' jp-mod-selected' : ''}`}
      data-job={job.name}
      data-namespace={job.namespace}
      aria-selected={checked}
      onClick={() => model.select(shown)}
      onDoubleClick={() => {
        model.select(shown);
        onOpen();
      }}
    >
      <td>
        <input
          type="radio"
          name="jp-Ranktable-pick"
          id={id}
          checked={checked}
          onChange={() => model.select(shown)}
        />
      </td>
      <td className="jp-Ranktable-pickName">
        <label htmlFor={id} title={`${job.namespace}/${job.name}`}>
          {job.name}
        </label>
      </td>
      <td>
        <span className={`jp-Ranktable-phase-${shown.phase}`}>
          {shown.phase}
        </span>
        {!shown.current && (
          <span className="jp-Ranktable-muted"> {trans.__('(earlier)')}</span>
        )}
      </td>
      <td>
        {job.runs.length > 1 ? (
          <select
            className="jp-mod-styled jp-Ranktable-pickRun"
            aria-label={trans.__('Run of %1', job.name)}
            value={shown.uid}
            onClick={e => e.stopPropagation()}
            onChange={e =>
              model.select(job.runs.find(r => r.uid === e.target.value) ?? null)
            }
          >
            {job.runs.map(r => (
              <option key={r.uid} value={r.uid}>
                {r.current
                  ? trans.__('%1 · current', shortUid(r.uid))
                  : trans.__(
                      '%1 · %2 · %3 ago',
                      shortUid(r.uid),
                      r.phase,
                      shortAge(r.age)
                    )}
              </option>
            ))}
          </select>
        ) : (
          <code title={shown.uid}>{shortUid(shown.uid)}</code>
        )}
      </td>
      <td className="jp-Ranktable-muted">
        {trans.__('%1 ago', shortAge(shown.age))}
      </td>
    </tr>
  );
}

function RunPicker(props: {
  model: RunPickerModel;
  trans: TranslationBundle;
  onOpen: () => void;
}): JSX.Element {
  const { model, trans, onOpen } = props;
  useSignal(model.changed);
  if (model.state === 'loading') {
    return (
      <p className="jp-Ranktable-muted">
        {trans.__('Reading the jobs on the pool…')}
      </p>
    );
  }
  if (model.state === 'unreachable' || model.state === 'empty') {
    return (
      <div className="jp-Ranktable-pickEmpty" role="status">
        <strong>
          {model.state === 'empty'
            ? trans.__('No jobs on the pool.')
            : trans.__('The pool is unreachable.')}
        </strong>
        {model.error && (
          <div className="jp-Ranktable-bannerReason">{model.error}</div>
        )}
        <p className="jp-Ranktable-muted">
          {model.state === 'empty'
            ? trans.__(
                'Submit one from a job spec (Launcher → Ranktable job), then open its Job view here.'
              )
            : trans.__('Check the connection to the cluster and try again.')}
        </p>
        <button
          className="jp-mod-styled jp-mod-reject"
          onClick={() => void model.load()}
        >
          {trans.__('Reload')}
        </button>
      </div>
    );
  }
  return (
    <table className="jp-Ranktable-pickTable">
      <TableHead
        columns={[
          '',
          trans.__('Name'),
          trans.__('Phase'),
          trans.__('Run'),
          trans.__('Submitted')
        ]}
      />
      <tbody>
        {model.choices.map(job => (
          <JobChoiceRow
            key={`${job.namespace}/${job.name}`}
            job={job}
            model={model}
            trans={trans}
            onOpen={onOpen}
          />
        ))}
      </tbody>
    </table>
  );
}

/** The dialog's body: renders the model; its value is the selected run. */
class RunPickerBody
  extends ReactWidget
  implements Dialog.IBodyWidget<IRunRef | null>
{
  onOpen: () => void = () => undefined;

  constructor(
    readonly model: RunPickerModel,
    private _trans: TranslationBundle
  ) {
    super();
    this.addClass('jp-Ranktable-runPicker');
  }

  getValue(): IRunRef | null {
    return this.model.selected;
  }

  render(): JSX.Element {
    return (
      <RunPicker
        model={this.model}
        trans={this._trans}
        onOpen={() => this.onOpen()}
      />
    );
  }
}

/**
 * Ask which run to open: the pool's jobs with name, phase, short uid and age; a job's earlier runs
 * are in its Run menu. Resolves to the run, or null (cancelled, no jobs, or the pool unreachable).
 */
export async function pickRun(
  model: RunPickerModel,
  trans: TranslationBundle
): Promise<IRunRef | null> {
  const body = new RunPickerBody(model, trans);
  const dialog = new Dialog<IRunRef | null>({
    title: trans.__('Open a Job view'),
    body,
    buttons: [
      Dialog.cancelButton({ label: trans.__('Cancel') }),
      Dialog.okButton({ label: trans.__('Open') })
    ]
  });
  dialog.addClass('jp-Ranktable-runPickerDialog');
  body.onOpen = () => dialog.resolve(1);
  // Open only with a run to open (not while reading, nor with no jobs or the pool unreachable)
  const syncOpen = () => {
    const open = dialog.node.querySelector<HTMLButtonElement>(
      '.jp-Dialog-button.jp-mod-accept'
    );
    if (open) {
      open.disabled = model.selected === null;
    }
  };
  model.changed.connect(syncOpen);
  syncOpen();
  void model.load();
  try {
    const result = await dialog.launch();
    return result.button.accept ? result.value : null;
  } finally {
    model.dispose();
  }
}
