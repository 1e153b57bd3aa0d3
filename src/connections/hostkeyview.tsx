import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import { ITestResult, fingerprintMatches, trustNewHostKey } from './hostkey';
import { ErrorLine, Field, Form, errorText } from '../ui/common';

/**
 * A changed host key, inside its profile's row: the refusal with both fingerprints, then — only when the
 * user asks — the "instance was recreated" step that needs the new fingerprint typed or pasted.
 */
export function HostKeyChanged(props: {
  profile: string;
  result: ITestResult;
  trans: TranslationBundle;
  /** The connection test after the replacement (ok, or why not). */
  onTrusted: (result: ITestResult) => void;
}): JSX.Element {
  const { profile, result, trans } = props;
  const [open, setOpen] = React.useState(false);
  return (
    <div
      className="jp-Ranktable-hostKeyChanged"
      role="alert"
      aria-label={trans.__('Host key changed')}
    >
      <div className="jp-Ranktable-error">
        {trans.__(
          'The host key of %1 changed: connection refused. Someone may be intercepting it, or the instance was recreated.',
          result.host ?? profile
        )}
      </div>
      <dl className="jp-Ranktable-fingerprints">
        <dt>{trans.__('Recorded')}</dt>
        <dd className="jp-Ranktable-fingerprint" data-fingerprint="recorded">
          {result.recorded}
        </dd>
        <dt>{trans.__('Presented now')}</dt>
        <dd className="jp-Ranktable-fingerprint" data-fingerprint="presented">
          {result.key_type ? `${result.key_type} ` : ''}
          {result.presented ?? ''}
        </dd>
      </dl>
      {open ? (
        <TrustNewKey {...props} onCancel={() => setOpen(false)} />
      ) : (
        <button className="jp-mod-styled" onClick={() => setOpen(true)}>
          {trans.__('The instance was recreated: trust the new key…')}
        </button>
      )}
    </div>
  );
}

/**
 * The "instance was recreated" step: the new fingerprint typed or pasted, checked against the one
 * presented now before the key can be trusted.
 */
function TrustNewKey(props: {
  profile: string;
  result: ITestResult;
  trans: TranslationBundle;
  onTrusted: (result: ITestResult) => void;
  onCancel: () => void;
}): JSX.Element {
  const { profile, result, trans } = props;
  const [typed, setTyped] = React.useState('');
  const [busy, setBusy] = React.useState(false);
  const [error, setError] = React.useState('');
  const matches = fingerprintMatches(typed, result.presented ?? '');

  const trust = async (): Promise<void> => {
    setBusy(true);
    setError('');
    try {
      props.onTrusted(await trustNewHostKey(profile, typed, result));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Form
      label={trans.__('Trust the new host key')}
      onSubmit={() => {
        if (matches) {
          void trust();
        }
      }}
    >
      <Field
        name={`replace-host-key-${profile}`}
        label={trans.__(
          'Check the new fingerprint with the instance’s owner or console, then type or paste it'
        )}
        message={
          typed.trim() && !matches
            ? trans.__('does not match the fingerprint presented now')
            : undefined
        }
      >
        <input
          className="jp-mod-styled jp-Ranktable-fingerprint"
          value={typed}
          placeholder="SHA256:…"
          autoComplete="off"
          spellCheck={false}
          onChange={e => setTyped(e.target.value)}
        />
      </Field>
      <ErrorLine error={error} />
      <div className="jp-Ranktable-actions">
        <button
          type="submit"
          className="jp-mod-styled jp-mod-warn"
          disabled={!matches || busy}
        >
          {trans.__('Trust the new key')}
        </button>
        <button
          type="button"
          className="jp-mod-styled"
          onClick={props.onCancel}
        >
          {trans.__('Cancel')}
        </button>
      </div>
    </Form>
  );
}
