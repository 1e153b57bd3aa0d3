import * as React from 'react';

import { ForwardsModel } from '../kernels/model';
import {
  ErrorLine,
  Field,
  ISectionProps,
  Section,
  TextField,
  errorText,
  useModel
} from '../ui/common';
import { useListModel } from '../ui/uselist';

export const FORWARDS_REFRESH_MS = 5000;

/** Port forwards (TensorBoard, a web app on the instance): open, list with a link to 127.0.0.1, close. */
export function ForwardsSection(
  props: ISectionProps & { forwards: ForwardsModel }
): JSX.Element {
  const { model, trans, forwards } = props;
  useModel(model);
  useListModel(forwards, FORWARDS_REFRESH_MS);
  const [profile, setProfile] = React.useState('');
  const [port, setPort] = React.useState('');
  const [error, setError] = React.useState<{
    field: string | null;
    message: string;
  } | null>(null);
  const chosen = profile || model.profiles[0]?.name || '';

  const open = async (): Promise<void> => {
    setError(null);
    try {
      await forwards.open(chosen, port);
      setPort('');
    } catch (e: any) {
      setError({ field: e?.field ?? null, message: errorText(e) });
    }
  };
  const close = async (id: string): Promise<void> => {
    setError(null);
    try {
      await forwards.close(id);
    } catch (e) {
      setError({ field: null, message: errorText(e) });
    }
  };

  return (
    <Section id="forwards" title={trans.__('Port forwards')} model={model}>
      <ul
        className="jp-Ranktable-forwards"
        aria-label={trans.__('Port forwards')}
      >
        {forwards.forwards.length === 0 && (
          <li className="jp-Ranktable-empty">
            {trans.__('No port forwards open.')}
          </li>
        )}
        {forwards.forwards.map(f => (
          <li key={f.id} className="jp-Ranktable-forward" data-forward={f.id}>
            <div className="jp-Ranktable-forwardMain">
              <strong>{f.profile}</strong>
              <span className="jp-Ranktable-muted">
                {' '}
                {trans.__('port %1', f.remote_port)} →{' '}
              </span>
              <code className="jp-Ranktable-forwardUrl">{f.url}</code>
              {f.owner && (
                <span className="jp-Ranktable-muted">
                  {' '}
                  {trans.__('(another process, pid %1)', f.pid ?? '?')}
                </span>
              )}
            </div>
            <div className="jp-Ranktable-actions">
              <a
                className="jp-mod-styled jp-Ranktable-linkButton"
                href={f.url}
                target="_blank"
                rel="noopener noreferrer"
                title={trans.__('Open %1 in a new tab', f.url)}
              >
                {trans.__('Open')}
              </a>
              <button
                className="jp-mod-styled jp-mod-reject"
                disabled={forwards.busy === f.id}
                onClick={() => void close(f.id)}
              >
                {trans.__('Close')}
              </button>
            </div>
          </li>
        ))}
      </ul>
      <form
        className="jp-Ranktable-form"
        aria-label={trans.__('New port forward')}
        onSubmit={e => {
          e.preventDefault();
          void open();
        }}
      >
        <Field
          name="forward-profile"
          label={trans.__('Instance')}
          message={error?.field === 'profile' ? error.message : undefined}
        >
          <select
            className="jp-mod-styled"
            value={chosen}
            onChange={e => setProfile(e.target.value)}
          >
            {model.profiles.map(p => (
              <option key={p.name} value={p.name}>
                {p.name}
              </option>
            ))}
          </select>
        </Field>
        <TextField
          name="forward-port"
          label={trans.__('Remote port (e.g. 6006 for TensorBoard)')}
          value={port}
          placeholder="6006"
          onChange={setPort}
        />
        {error?.field === 'remote_port' && (
          <div className="jp-Ranktable-fieldError" role="alert">
            {error.message}
          </div>
        )}
        {error &&
          error.field !== 'remote_port' &&
          error.field !== 'profile' && <ErrorLine error={error.message} />}
        <button
          type="submit"
          className="jp-mod-styled jp-mod-accept"
          disabled={forwards.busy === 'open' || !chosen}
        >
          {trans.__('Forward to 127.0.0.1')}
        </button>
      </form>
      <ErrorLine error={forwards.error} />
    </Section>
  );
}
