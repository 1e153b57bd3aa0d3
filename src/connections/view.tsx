import * as React from 'react';
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { IProfile } from './model';
import { postJSON, requestAPI } from '../api/request';
import { ITestResult } from './hostkey';
import { HostKeyChanged } from './hostkeyview';
import {
  Badge,
  ErrorLine,
  Field,
  ISectionProps,
  Section,
  errorText,
  useModel
} from '../ui/common';

const EMPTY = {
  name: '',
  host: '',
  port: '',
  user: '',
  key_file: '',
  remote_dir: '',
  jump: ''
};

export function ConnectionsSection(props: ISectionProps): JSX.Element {
  const { model, trans } = props;
  useModel(model);
  const [adding, setAdding] = React.useState(false);
  const [form, setForm] = React.useState({ ...EMPTY });
  const [error, setError] = React.useState('');
  const [fieldError, setFieldError] = React.useState<{
    field: string;
    message: string;
  } | null>(null);
  const [busy, setBusy] = React.useState('');
  const [changedKeys, setChangedKeys] = React.useState<
    Record<string, ITestResult | undefined>
  >({});

  React.useEffect(() => {
    model.refreshProfiles().catch(e => setError(errorText(e)));
  }, [model]);

  const setStatus = (name: string, status: string, message = '') => {
    model.profileStatus = { ...model.profileStatus, [name]: status };
    model.profileMessages = { ...model.profileMessages, [name]: message };
    model.emit();
  };

  const test = async (
    profile: IProfile,
    accept?: string,
    passphrase?: string
  ): Promise<void> => {
    setBusy(profile.name);
    setStatus(profile.name, 'testing');
    setChangedKeys(k => ({ ...k, [profile.name]: undefined }));
    try {
      const body: Record<string, string> = {};
      if (accept) {
        body.accept_host_key = accept;
      }
      if (passphrase) {
        body.passphrase = passphrase;
      }
      const result = await postJSON<ITestResult>(
        `profiles/${encodeURIComponent(profile.name)}/test`,
        body
      );
      if (result.status === 'passphrase-required') {
        setStatus(profile.name, 'hostkey', result.message);
        const answer = await showDialog({
          title: trans.__('Key passphrase'),
          body: new PassphraseBody(
            trans.__(
              'The key of %1 is protected. The passphrase is kept in the server’s memory only.',
              profile.name
            )
          ),
          buttons: [
            Dialog.cancelButton(),
            Dialog.okButton({ label: trans.__('Unlock') })
          ]
        });
        if (answer.button.accept && answer.value) {
          await test(profile, accept, answer.value);
        } else {
          setStatus(profile.name, 'error', result.message);
        }
        return;
      }
      if (result.status === 'unknown-host-key' && result.fingerprint) {
        setStatus(profile.name, 'hostkey', result.message);
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
                <code className="jp-Ranktable-fingerprint">
                  {result.fingerprint}
                </code>
              </p>
            </div>
          ),
          buttons: [
            Dialog.cancelButton({ label: trans.__('Reject') }),
            Dialog.okButton({ label: trans.__('Accept and connect') })
          ]
        });
        if (answer.button.accept) {
          await test(profile, result.fingerprint);
          return;
        }
      } else if (result.status === 'host-key-changed') {
        setStatus(profile.name, 'changed', result.message);
        setChangedKeys(k => ({ ...k, [profile.name]: result }));
      } else {
        setStatus(
          profile.name,
          result.status === 'ok' ? 'ok' : 'error',
          result.message
        );
      }
    } catch (e) {
      setStatus(profile.name, 'error', errorText(e));
    } finally {
      setBusy('');
    }
  };

  const add = async (): Promise<void> => {
    setError('');
    setFieldError(null);
    const body: Record<string, unknown> = {
      name: form.name.trim(),
      host: form.host.trim()
    };
    if (form.port.trim()) {
      const port = Number(form.port);
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        setFieldError({
          field: 'port',
          message: trans.__('a port is a number from 1 to 65535')
        });
        return;
      }
      body.port = port;
    }
    for (const k of ['user', 'key_file', 'remote_dir', 'jump'] as const) {
      if (form[k].trim()) {
        body[k] = form[k].trim();
      }
    }
    try {
      await postJSON('profiles', body);
      setForm({ ...EMPTY });
      setAdding(false);
      await model.refreshProfiles();
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
      await requestAPI(`profiles/${encodeURIComponent(profile.name)}`, {
        method: 'DELETE'
      });
      await model.refreshProfiles();
    } catch (e) {
      setError(errorText(e));
    }
  };

  const input = (k: keyof typeof EMPTY, placeholder = '') => (
    <input
      className="jp-mod-styled"
      value={form[k]}
      placeholder={placeholder}
      onChange={e => setForm({ ...form, [k]: e.target.value })}
    />
  );
  const statusLabel: Record<string, string> = {
    ok: trans.__('connected'),
    error: trans.__('failed'),
    testing: trans.__('testing…'),
    hostkey: trans.__('host key?'),
    changed: trans.__('key changed'),
    unknown: trans.__('not tested')
  };

  return (
    <Section id="connections" title={trans.__('Connections')} model={model}>
      <ul
        className="jp-Ranktable-profiles"
        aria-label={trans.__('SSH profiles')}
      >
        {model.profiles.length === 0 && (
          <li className="jp-Ranktable-empty">
            {trans.__('No SSH profiles yet.')}
          </li>
        )}
        {model.profiles.map(p => {
          const status = model.profileStatus[p.name] ?? 'unknown';
          return (
            <li
              key={p.name}
              className="jp-Ranktable-profile"
              data-profile={p.name}
            >
              <div className="jp-Ranktable-profileMain">
                <strong>{p.name}</strong>{' '}
                <span className="jp-Ranktable-muted">
                  {p.user ? `${p.user}@` : ''}
                  {p.host}
                  {p.port ? `:${p.port}` : ''}
                </span>{' '}
                <Badge status={status} label={statusLabel[status] ?? status} />
              </div>
              {model.profileMessages[p.name] && status === 'error' && (
                <div className="jp-Ranktable-error">
                  {model.profileMessages[p.name]}
                </div>
              )}
              {status === 'changed' && changedKeys[p.name] && (
                <HostKeyChanged
                  profile={p.name}
                  result={changedKeys[p.name]!}
                  trans={trans}
                  onTrusted={r => {
                    setChangedKeys(k => ({ ...k, [p.name]: undefined }));
                    setStatus(
                      p.name,
                      r.status === 'ok' ? 'ok' : 'error',
                      r.message
                    );
                  }}
                />
              )}
              <div className="jp-Ranktable-actions">
                <button
                  className="jp-mod-styled jp-mod-accept"
                  disabled={busy === p.name}
                  onClick={() => void test(p)}
                >
                  {trans.__('Test')}
                </button>
                <button
                  className="jp-mod-styled jp-mod-reject"
                  onClick={() => void remove(p)}
                >
                  {trans.__('Remove')}
                </button>
              </div>
            </li>
          );
        })}
      </ul>
      {!adding && (
        <button className="jp-mod-styled" onClick={() => setAdding(true)}>
          {trans.__('Add profile…')}
        </button>
      )}
      {adding && (
        <form
          className="jp-Ranktable-form"
          aria-label={trans.__('New SSH profile')}
          onSubmit={e => {
            e.preventDefault();
            void add();
          }}
        >
          {(
            [
              'name',
              'host',
              'port',
              'user',
              'key_file',
              'remote_dir',
              'jump'
            ] as const
          ).map(k => (
            <Field
              key={k}
              name={`profile-${k}`}
              label={
                {
                  name: trans.__('Name'),
                  host: trans.__('Host'),
                  port: trans.__('Port'),
                  user: trans.__('User'),
                  key_file: trans.__('Key file'),
                  remote_dir: trans.__('Remote folder'),
                  jump: trans.__('Jump profile')
                }[k]
              }
              message={fieldError?.field === k ? fieldError.message : undefined}
            >
              {input(
                k,
                k === 'user' ? 'ma-user' : k === 'remote_dir' ? '~/work' : ''
              )}
            </Field>
          ))}
          <ErrorLine error={error} />
          <div className="jp-Ranktable-actions">
            <button type="submit" className="jp-mod-styled jp-mod-accept">
              {trans.__('Save')}
            </button>
            <button
              type="button"
              className="jp-mod-styled"
              onClick={() => setAdding(false)}
            >
              {trans.__('Cancel')}
            </button>
          </div>
        </form>
      )}
      {!adding && <ErrorLine error={error} />}
    </Section>
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
