/**
 * The Sync section's dialogs: download a remote path, and the profile's automatic upload mode (the
 * section itself keeps state and actions on a few lines).
 */
import * as React from 'react';
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { ReactWidget } from '@jupyterlab/ui-components';

import { Field, ISectionProps, TextField } from '../ui/common';

/** The upload modes as the sidebar names them. */
export function modeLabel(trans: ISectionProps['trans'], mode: string): string {
  const labels: Record<string, string> = {
    always: trans.__('Always (saves and outside changes)'),
    explicit: trans.__('On explicit save'),
    never: trans.__('Never')
  };
  return labels[mode] ?? mode;
}

/** A dialog body holding a small form; its value is read when the dialog closes. */
class FormBody<T> extends ReactWidget implements Dialog.IBodyWidget<T> {
  constructor(
    private _render: (set: (v: T) => void, value: T) => JSX.Element,
    private _value: T
  ) {
    super();
    this.addClass('jp-Ranktable-dialogForm');
  }
  getValue(): T {
    return this._value;
  }
  protected render(): JSX.Element {
    return this._render(v => {
      this._value = v;
      this.update();
    }, this._value);
  }
}

/** A dialog holding a small form (`render` draws it from its value): the value when accepted, else null. */
async function askForm<T>(options: {
  title: string;
  accept: string;
  initial: T;
  render: (set: (v: T) => void, value: T) => JSX.Element;
  focusNodeSelector?: string;
}): Promise<T | null> {
  const answer = await showDialog({
    title: options.title,
    body: new FormBody<T>(options.render, options.initial),
    buttons: [
      Dialog.cancelButton(),
      Dialog.okButton({ label: options.accept })
    ],
    focusNodeSelector: options.focusNodeSelector
  });
  return answer.button.accept ? answer.value : null;
}

/** Ask which remote file or folder to download, and where to (in the Jupyter root). */
export async function askDownload(
  trans: ISectionProps['trans']
): Promise<{ remote: string; local: string } | null> {
  const value = await askForm({
    title: trans.__('Download from the remote'),
    accept: trans.__('Download'),
    initial: { remote: '', local: '' },
    render: (set, v) => (
      <>
        <TextField
          name="download-remote"
          label={trans.__('Remote path (relative to the remote folder)')}
          value={v.remote}
          onChange={remote => set({ ...v, remote })}
        />
        <TextField
          name="download-local"
          label={trans.__('Save as (in the Jupyter root)')}
          value={v.local}
          placeholder={v.remote}
          onChange={local => set({ ...v, local })}
        />
      </>
    ),
    focusNodeSelector: 'input'
  });
  if (!value?.remote) {
    return null;
  }
  return { remote: value.remote, local: value.local || value.remote };
}

/** Ask when the profile's saves are uploaded (saved on the server with the folder shown). */
export async function askSyncMode(
  trans: ISectionProps['trans'],
  mode: string
): Promise<string | null> {
  return askForm({
    title: trans.__('Sync settings'),
    accept: trans.__('Save'),
    initial: mode,
    render: (set, v) => (
      <Field name="sync-mode" label={trans.__('Automatic upload')}>
        <select
          className="jp-mod-styled"
          value={v}
          onChange={e => set(e.target.value)}
        >
          {['always', 'explicit', 'never'].map(m => (
            <option key={m} value={m}>
              {modeLabel(trans, m)}
            </option>
          ))}
        </select>
      </Field>
    )
  });
}
