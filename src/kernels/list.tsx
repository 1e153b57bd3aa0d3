import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import { RemoteKernelsModel } from './model';
import { ErrorLine, errorText, ItemList } from '../ui/common';
import { useListModel } from '../ui/uselist';

export const KERNELS_REFRESH_MS = 5000;

function started(seconds: number | null | undefined): string {
  return seconds ? new Date(seconds * 1000).toLocaleString() : '';
}

/** The recorded remote kernels (they outlive the Jupyter server): attach a detached one, or shut one down. */
export function RemoteKernelsList(props: {
  kernels: RemoteKernelsModel;
  trans: TranslationBundle;
}): JSX.Element {
  const { kernels, trans } = props;
  useListModel(kernels, KERNELS_REFRESH_MS);
  const [error, setError] = React.useState('');
  const run = async (action: () => Promise<unknown>): Promise<void> => {
    setError('');
    try {
      await action();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <div className="jp-Ranktable-remoteKernels">
      <h3 className="jp-Ranktable-subhead">
        {trans.__('Running on instances')}
      </h3>
      <ItemList
        className="jp-Ranktable-kernels"
        label={trans.__('Running remote kernels')}
        items={kernels.kernels}
        empty={trans.__('No remote kernels running.')}
      >
        {k => (
          <li
            key={k.kernel_id}
            className="jp-Ranktable-remoteKernel"
            data-kernel={k.kernel_id}
            data-attached={k.attached ? 'true' : 'false'}
          >
            <div className="jp-Ranktable-profileMain">
              <strong>{k.profile ?? k.kernel_name}</strong>{' '}
              <span
                className={`jp-Ranktable-badge jp-Ranktable-badge-${
                  k.attached ? 'ok' : 'hostkey'
                }`}
              >
                {k.attached ? trans.__('attached') : trans.__('detached')}
              </span>
            </div>
            <div
              className="jp-Ranktable-muted jp-Ranktable-kernelId"
              title={started(k.started)}
            >
              {k.kernel_id.slice(0, 8)}
              {k.pid ? ` · pid ${k.pid}` : ''}
            </div>
            <div className="jp-Ranktable-actions">
              {!k.attached && (
                <button
                  className="jp-mod-styled jp-mod-accept"
                  disabled={kernels.busy === k.kernel_id}
                  onClick={() => void run(() => kernels.attach(k.kernel_id))}
                >
                  {trans.__('Attach')}
                </button>
              )}
              <button
                className="jp-mod-styled jp-mod-reject"
                disabled={kernels.busy === k.kernel_id}
                onClick={() => void run(() => kernels.shutdown(k.kernel_id))}
              >
                {trans.__('Shut down')}
              </button>
            </div>
          </li>
        )}
      </ItemList>
      <ErrorLine error={error || kernels.error} />
    </div>
  );
}
