import * as React from 'react';

import { ProfileSelect } from '../connections/profileselect';
import { ForwardsModel, IForward, forwardHref } from './model';
import {
  ErrorLine,
  Field,
  Form,
  Section,
  TextField,
  errorText,
  useModel,
  ItemList
} from '../ui/common';
import type { ISectionProps } from '../ui/common';
import { useListModel } from '../ui/uselist';
import { useWhyNot, WriteButton } from '../permissions/view';

export const FORWARDS_REFRESH_MS = 5000;

/** An error the server (or the model) named a field for, or not. */
interface IFormError {
  field: string | null;
  message: string;
}

/** Port forwards (TensorBoard, a web app on the instance): open, list with a link (the server's authenticated
 * proxy path for its own forwards), close. */
export function ForwardsSection(
  props: ISectionProps & { forwards: ForwardsModel }
): JSX.Element {
  const { model, trans, forwards } = props;
  useModel(model);
  useListModel(forwards, FORWARDS_REFRESH_MS);
  const [profile, setProfile] = React.useState('');
  const [port, setPort] = React.useState('');
  const [error, setError] = React.useState<IFormError | null>(null);
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
      <ItemList
        className="jp-Ranktable-forwards"
        label={trans.__('Port forwards')}
        items={forwards.forwards}
        empty={trans.__('No port forwards open.')}
      >
        {f => (
          <ForwardRow
            key={f.id}
            forward={f}
            trans={trans}
            busy={forwards.busy === f.id}
            onClose={() => void close(f.id)}
          />
        )}
      </ItemList>
      <ForwardForm
        {...props}
        profile={chosen}
        setProfile={setProfile}
        port={port}
        setPort={setPort}
        error={error}
        onOpen={() => void open()}
      />
      <ErrorLine error={forwards.error} />
    </Section>
  );
}

/** One forward: the instance and port, its address, Open (a new tab; the authenticated path) and Close. */
function ForwardRow(props: {
  forward: IForward;
  trans: ISectionProps['trans'];
  busy: boolean;
  onClose: () => void;
}): JSX.Element {
  const { forward: f, trans } = props;
  const readOnly = useWhyNot('write');
  const href = forwardHref(f);
  return (
    <li key={f.id} className="jp-Ranktable-forward" data-forward={f.id}>
      <div className="jp-Ranktable-forwardMain">
        <strong>{f.profile}</strong>
        <span className="jp-Ranktable-muted">
          {' '}
          {trans.__('port %1', f.remote_port)} →{' '}
        </span>
        <code className="jp-Ranktable-forwardUrl">{href ?? f.url}</code>
        {f.owner && (
          <span className="jp-Ranktable-muted">
            {' '}
            {trans.__('(another process, pid %1)', f.pid ?? '?')}
          </span>
        )}
      </div>
      <div className="jp-Ranktable-actions">
        {href && (
          <a
            className="jp-mod-styled jp-Ranktable-linkButton"
            href={href}
            target="_blank"
            rel="noopener noreferrer"
            title={trans.__('Open %1 in a new tab', href)}
          >
            {trans.__('Open')}
          </a>
        )}
        <WriteButton
          className="jp-mod-styled jp-mod-reject"
          whyNot={readOnly}
          busy={props.busy}
          onClick={props.onClose}
        >
          {trans.__('Close')}
        </WriteButton>
      </div>
    </li>
  );
}

/** The new forward's instance and remote port; a field's error under it, any other above the button. */
function ForwardForm(
  props: ISectionProps & {
    forwards: ForwardsModel;
    profile: string;
    setProfile: (profile: string) => void;
    port: string;
    setPort: (port: string) => void;
    error: IFormError | null;
    onOpen: () => void;
  }
): JSX.Element {
  const { model, trans, forwards, profile, setProfile, port, setPort, error } =
    props;
  const noExecute = useWhyNot('execute');
  return (
    <Form label={trans.__('New port forward')} onSubmit={props.onOpen}>
      <Field
        name="forward-profile"
        label={trans.__('Instance')}
        message={error?.field === 'profile' ? error.message : undefined}
      >
        <ProfileSelect
          profiles={model.profiles}
          value={profile}
          onChange={setProfile}
        />
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
      {error && error.field !== 'remote_port' && error.field !== 'profile' && (
        <ErrorLine error={error.message} />
      )}
      <button
        type="submit"
        className="jp-mod-styled jp-mod-accept"
        disabled={forwards.busy === 'open' || !profile || !!noExecute}
        title={noExecute || undefined}
      >
        {trans.__('Forward port')}
      </button>
    </Form>
  );
}
