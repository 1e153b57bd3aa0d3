import * as React from 'react';
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { INewProfile, IProfile } from './model';
import { ITestRequest, ITestResult } from './hostkey';
import { HostKeyChanged } from './hostkeyview';
import { MiddleEllipsis } from '../ui/ellipsis';
import {
  Badge,
  ErrorLine,
  Field,
  Form,
  ISectionProps,
  Section,
  TextInput,
  errorText,
  useModel,
  ItemList
} from '../ui/common';
import { useWhyNot, WriteButton } from '../permissions/view';

const EMPTY = {
  name: '',
  host: '',
  port: '',
  user: '',
  key_file: '',
  remote_dir: '',
  jump: ''
};

type ProfileField = keyof typeof EMPTY;
type Translate = ISectionProps['trans'];

export function ConnectionsSection(props: ISectionProps): JSX.Element {
  const { model, trans } = props;
  const readOnly = useWhyNot('write');
  useModel(model);
  const [adding, setAdding] = React.useState(false);
  const [error, setError] = React.useState('');
  const tester = useProfileTest(props);

  React.useEffect(() => {
    model.refreshProfiles().catch(e => setError(errorText(e)));
  }, [model]);

  const remove = async (profile: IProfile): Promise<void> => {
    const answer = await showDialog({
      title: trans.__('Remove profile'),
      body: trans.__(
        'Remove the SSH profile "%1"? Its key file and remote files are kept.',
        profile.name
      ),
      buttons: [
        Dialog.cancelButton(),
        Dialog.warnButton({ label: trans.__('Remove') })
      ]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await model.removeProfile(profile.name);
    } catch (e) {
      setError(errorText(e));
    }
  };

  return (
    <Section id="connections" title={trans.__('Connections')} model={model}>
      <ItemList
        className="jp-Ranktable-profiles"
        label={trans.__('SSH profiles')}
        items={model.profiles}
        empty={trans.__('No SSH profiles yet.')}
      >
        {p => (
          <ProfileRow
            key={p.name}
            {...props}
            profile={p}
            tester={tester}
            onRemove={() => void remove(p)}
          />
        )}
      </ItemList>
      {!adding && (
        <WriteButton
          className="jp-mod-styled"
          whyNot={readOnly}
          onClick={() => setAdding(true)}
        >
          {trans.__('Add profile…')}
        </WriteButton>
      )}
      {adding && (
        <ProfileForm
          {...props}
          error={error}
          setError={setError}
          onClose={() => setAdding(false)}
        />
      )}
      {!adding && <ErrorLine error={error} />}
    </Section>
  );
}

interface IProfileTester {
  /** The profile whose test is under way ('' when none). */
  busy: string;
  /** The host-key-changed answers, by profile, until the new key is trusted. */
  changedKeys: Record<string, ITestResult | undefined>;
  test: (profile: IProfile) => Promise<void>;
  trusted: (profile: string, result: ITestResult) => void;
}

/** Testing a profile: the passphrase and unknown-host-key dialogs, then the status the section shows. */
function useProfileTest(props: ISectionProps): IProfileTester {
  const { model, trans } = props;
  const [busy, setBusy] = React.useState('');
  const [changedKeys, setChangedKeys] = React.useState<
    Record<string, ITestResult | undefined>
  >({});

  const test = async (
    profile: IProfile,
    accept?: string,
    passphrase?: string
  ): Promise<void> => {
    setBusy(profile.name);
    model.setStatus(profile.name, 'testing');
    setChangedKeys(k => ({ ...k, [profile.name]: undefined }));
    try {
      const body: ITestRequest = {};
      if (accept) {
        body.accept_host_key = accept;
      }
      if (passphrase) {
        body.passphrase = passphrase;
      }
      const result = await model.testProfile(profile.name, body);
      if (result.status === 'passphrase-required') {
        model.setStatus(profile.name, 'hostkey', result.message);
        const typed = await askPassphrase(trans, profile.name);
        if (typed) {
          await test(profile, accept, typed);
        } else {
          model.setStatus(profile.name, 'error', result.message);
        }
        return;
      }
      if (result.status === 'unknown-host-key' && result.fingerprint) {
        model.setStatus(profile.name, 'hostkey', result.message);
        if (await askAcceptHostKey(trans, profile, result)) {
          await test(profile, result.fingerprint);
          return;
        }
      } else if (result.status === 'host-key-changed') {
        model.setStatus(profile.name, 'changed', result.message);
        setChangedKeys(k => ({ ...k, [profile.name]: result }));
      } else {
        model.setStatus(
          profile.name,
          result.status === 'ok' ? 'ok' : 'error',
          result.message
        );
      }
    } catch (e) {
      model.setStatus(profile.name, 'error', errorText(e));
    } finally {
      setBusy('');
    }
  };
  const trusted = (profile: string, r: ITestResult): void => {
    setChangedKeys(k => ({ ...k, [profile]: undefined }));
    model.setStatus(profile, r.status === 'ok' ? 'ok' : 'error', r.message);
  };
  return { busy, changedKeys, test: profile => test(profile), trusted };
}

/** The key passphrase, asked in a dialog ('' when cancelled); the server keeps it in memory only. */
async function askPassphrase(
  trans: Translate,
  profile: string
): Promise<string> {
  const answer = await showDialog({
    title: trans.__('Key passphrase'),
    body: new PassphraseBody(
      trans.__(
        'The key of %1 is protected. The passphrase is kept in the server’s memory only.',
        profile
      )
    ),
    buttons: [
      Dialog.cancelButton(),
      Dialog.okButton({ label: trans.__('Unlock') })
    ]
  });
  return answer.button.accept && answer.value ? answer.value : '';
}

/** Whether the user accepts the host key the server presents, after comparing its fingerprint. */
async function askAcceptHostKey(
  trans: Translate,
  profile: IProfile,
  result: ITestResult
): Promise<boolean> {
  const answer = await showDialog({
    title: trans.__('Unknown host key'),
    body: (
      <div className="jp-Ranktable-hostKeyDialog">
        <p>
          {trans.__(
            'The authenticity of %1 cannot be established. Compare this fingerprint with the one your administrator or console shows before accepting.',
            result.host ?? profile.host
          )}
        </p>
        <p>
          {result.key_type}{' '}
          <code className="jp-Ranktable-fingerprint">{result.fingerprint}</code>
        </p>
      </div>
    ),
    buttons: [
      Dialog.cancelButton({ label: trans.__('Reject') }),
      Dialog.okButton({ label: trans.__('Accept and connect') })
    ]
  });
  return answer.button.accept;
}

/** One profile: its address and state, a changed host key to trust, Test and Remove. */
function ProfileRow(
  props: ISectionProps & {
    profile: IProfile;
    tester: IProfileTester;
    onRemove: () => void;
  }
): JSX.Element {
  const { model, trans, profile: p, tester } = props;
  const readOnly = useWhyNot('write');
  // a profile nobody tested here yet is "connected" when the server holds a live connection to it
  const status =
    model.profileStatus[p.name] ?? (p.connected ? 'ok' : 'unknown');
  const statusLabel: Record<string, string> = {
    ok: trans.__('connected'),
    error: trans.__('failed'),
    testing: trans.__('testing…'),
    hostkey: trans.__('host key?'),
    changed: trans.__('key changed'),
    unknown: trans.__('not tested')
  };
  const changed = tester.changedKeys[p.name];
  return (
    <li className="jp-Ranktable-profile" data-profile={p.name}>
      <div className="jp-Ranktable-profileMain">
        <strong>{p.name}</strong>{' '}
        <MiddleEllipsis
          className="jp-Ranktable-muted"
          text={`${p.user ? `${p.user}@` : ''}${p.host}${p.port ? `:${p.port}` : ''}`}
          tail={10}
        />{' '}
        <Badge status={status} label={statusLabel[status] ?? status} />
      </div>
      {model.profileMessages[p.name] && status === 'error' && (
        <div className="jp-Ranktable-error">
          {model.profileMessages[p.name]}
        </div>
      )}
      {status === 'changed' && changed && (
        <HostKeyChanged
          profile={p.name}
          result={changed}
          trans={trans}
          onTrusted={r => tester.trusted(p.name, r)}
        />
      )}
      <div className="jp-Ranktable-actions">
        <WriteButton
          className="jp-mod-styled jp-mod-accept"
          whyNot={readOnly}
          busy={tester.busy === p.name}
          onClick={() => void tester.test(p)}
        >
          {trans.__('Test')}
        </WriteButton>
        <WriteButton
          className="jp-mod-styled jp-mod-reject"
          whyNot={readOnly}
          onClick={props.onRemove}
        >
          {trans.__('Remove')}
        </WriteButton>
      </div>
    </li>
  );
}

/** The new profile's fields as the server takes them (blank ones left out), or a port error. */
function profileBody(
  form: typeof EMPTY,
  trans: Translate
): INewProfile | { field: ProfileField; message: string } {
  const body: INewProfile = { name: form.name.trim(), host: form.host.trim() };
  if (form.port.trim()) {
    const port = Number(form.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      return {
        field: 'port',
        message: trans.__('a port is a number from 1 to 65535')
      };
    }
    body.port = port;
  }
  for (const k of ['user', 'key_file', 'remote_dir', 'jump'] as const) {
    if (form[k].trim()) {
      body[k] = form[k].trim();
    }
  }
  return body;
}

const PLACEHOLDERS: Partial<Record<ProfileField, string>> = {
  user: 'ma-user',
  remote_dir: '~/work'
};

function fieldLabels(trans: Translate): Record<ProfileField, string> {
  return {
    name: trans.__('Name'),
    host: trans.__('Host'),
    port: trans.__('Port'),
    user: trans.__('User'),
    key_file: trans.__('Key file'),
    remote_dir: trans.__('Remote folder'),
    jump: trans.__('Jump profile')
  };
}

/** The "New SSH profile" form: a field error under its field, any other error above the buttons. */
function ProfileForm(
  props: ISectionProps & {
    error: string;
    setError: (error: string) => void;
    onClose: () => void;
  }
): JSX.Element {
  const { model, trans, setError } = props;
  const [form, setForm] = React.useState({ ...EMPTY });
  const [fieldError, setFieldError] = React.useState<{
    field: string;
    message: string;
  } | null>(null);

  const add = async (): Promise<void> => {
    setError('');
    setFieldError(null);
    const body = profileBody(form, trans);
    if ('field' in body && 'message' in body) {
      setFieldError(body);
      return;
    }
    try {
      await model.addProfile(body as INewProfile);
      setForm({ ...EMPTY });
      props.onClose();
    } catch (e: any) {
      if (e?.field) {
        setFieldError({
          field: String(e.field).replace(/^profile\./, ''),
          message: errorText(e)
        });
      } else {
        setError(errorText(e));
      }
    }
  };
  const labels = fieldLabels(trans);

  return (
    <Form label={trans.__('New SSH profile')} onSubmit={() => void add()}>
      {(Object.keys(EMPTY) as ProfileField[]).map(k => (
        <Field
          key={k}
          name={`profile-${k}`}
          label={labels[k]}
          message={fieldError?.field === k ? fieldError.message : undefined}
        >
          <TextInput
            value={form[k]}
            placeholder={PLACEHOLDERS[k] ?? ''}
            onChange={value => setForm({ ...form, [k]: value })}
          />
        </Field>
      ))}
      <ErrorLine error={props.error} />
      <div className="jp-Ranktable-actions">
        <button type="submit" className="jp-mod-styled jp-mod-accept">
          {trans.__('Save')}
        </button>
        <button type="button" className="jp-mod-styled" onClick={props.onClose}>
          {trans.__('Cancel')}
        </button>
      </div>
    </Form>
  );
}

/** A password field for a dialog; the value never leaves this request. */
class PassphraseBody extends Widget {
  constructor(text: string) {
    const node = document.createElement('div');
    const p = document.createElement('p');
    p.textContent = text;
    const input = document.createElement('input');
    input.type = 'password';
    input.autocomplete = 'off';
    input.className = 'jp-mod-styled';
    node.append(p, input);
    super({ node });
  }
  getValue(): string {
    return this.node.querySelector('input')!.value;
  }
}
