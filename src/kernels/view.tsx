import * as React from 'react';

import {
  ErrorLine,
  Section,
  TextField,
  errorText,
  useModel,
  NoProfileYet
} from '../ui/common';
import type { ISectionProps } from '../ui/common';
import { RemoteKernelsModel, addRemoteKernelSpec } from './model';
import { RemoteKernelsList } from './list';
import { useWhyNot } from '../permissions/view';

export interface IKernelsProps extends ISectionProps {
  openNotebook: (kernelName: string) => Promise<void>;
  remoteKernels?: RemoteKernelsModel;
}

export function KernelsSection(props: IKernelsProps): JSX.Element {
  const { model, trans } = props;
  const readOnly = useWhyNot('write');
  useModel(model);
  const [busy, setBusy] = React.useState('');
  const [error, setError] = React.useState('');
  const [done, setDone] = React.useState('');
  const [python, setPython] = React.useState('python3');

  const open = async (profile: string): Promise<void> => {
    setBusy(profile);
    setError('');
    try {
      const r = await addRemoteKernelSpec(profile, python.trim() || 'python3');
      await props.openNotebook(r.kernel_name);
      setDone(trans.__('Opened a notebook on %1', r.display_name));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy('');
    }
  };

  return (
    <Section id="kernels" title={trans.__('Remote kernels')} model={model}>
      {model.profiles.length === 0 && <NoProfileYet trans={trans} />}
      <TextField
        name="kernel-python"
        label={trans.__('Remote Python (needs ipykernel)')}
        value={python}
        onChange={setPython}
      />
      <ul className="jp-Ranktable-kernels">
        {model.profiles.map(p => (
          <li key={p.name}>
            <button
              className="jp-mod-styled"
              disabled={busy === p.name || !!readOnly}
              title={readOnly || trans.__('Open a notebook on %1', p.name)}
              onClick={() => void open(p.name)}
            >
              {trans.__('Open a notebook on %1', p.name)}
            </button>
          </li>
        ))}
      </ul>
      {done && <div className="jp-Ranktable-ok">{done}</div>}
      <ErrorLine error={error} />
      {props.remoteKernels && (
        <RemoteKernelsList kernels={props.remoteKernels} trans={trans} />
      )}
    </Section>
  );
}
