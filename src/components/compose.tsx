import * as React from 'react';
import { Clipboard, Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { IJobRef } from '../model';
import { postJSON } from '../request';
import {
  FormErrors,
  IFormState,
  emptyForm,
  fieldOfIssue,
  formToSpec
} from '../specform';
import {
  ITemplateParam,
  maskSecrets,
  substituteDeep,
  templateParams
} from '../template';
import { IVersion, rollback, saveVersion } from '../versions';
import {
  ErrorLine,
  Field,
  ISectionProps,
  Section,
  downloadText,
  errorText,
  useModel
} from './common';

export interface IIssue {
  field: string | null;
  severity: 'error' | 'warning' | 'info';
  message: string;
  fix?: string | null;
}

interface IComposeResult {
  issues: IIssue[];
  yaml: string;
  spec: Record<string, unknown> | null;
}

export interface ITemplate {
  name: string;
  form: IFormState;
  params: ITemplateParam[];
}

const TEXT_FIELDS: (keyof IFormState)[] = [
  'name',
  'namespace',
  'image',
  'command',
  'script',
  'args',
  'nodes',
  'npus_per_node',
  'cpu',
  'memory',
  'env',
  'labels',
  'node_selector',
  'queue',
  'max_retry',
  'flavour'
];

function paramsIn(form: IFormState): string[] {
  return templateParams(TEXT_FIELDS.map(k => String(form[k])).join('\n'));
}

export function ComposeSection(props: ISectionProps): JSX.Element {
  const { model, trans } = props;
  useModel(model);
  const [form, setForm] = React.useState<IFormState>(
    () => model.draft ?? emptyForm()
  );
  const [params, setParams] = React.useState<ITemplateParam[]>([]);
  const [localErrors, setLocalErrors] = React.useState<FormErrors>({});
  const [result, setResult] = React.useState<IComposeResult | null>(null);
  const [error, setError] = React.useState('');
  const [submitted, setSubmitted] = React.useState('');
  const [templates, setTemplates] = React.useState<ITemplate[]>([]);
  const [versions, setVersions] = React.useState<IVersion<IFormState>[]>([]);
  const [checking, setChecking] = React.useState(false);
  const seq = React.useRef(0);

  React.useEffect(() => {
    void model.store
      .load<ITemplate[]>('templates')
      .then(t => setTemplates(t ?? []));
    void model.store
      .load<IVersion<IFormState>[]>('versions')
      .then(v => setVersions(v ?? []));
  }, [model]);

  // keep one param row per ${name} used in the form
  const names = paramsIn(form);
  const rows = names.map(
    n => params.find(p => p.name === n) ?? { name: n, value: '', secret: false }
  );

  /** The spec with params substituted, or field errors explaining why there is none. */
  const build = (): {
    spec: Record<string, unknown> | null;
    errors: FormErrors;
  } => {
    const { spec, errors } = formToSpec(form);
    // a parameter without a value is missing (not an empty string): say so on every field using it
    const missing = rows.filter(p => p.value === '').map(p => p.name);
    if (missing.length) {
      const withMissing: FormErrors = { ...errors };
      for (const k of TEXT_FIELDS) {
        const here = missing.filter(n =>
          String(form[k]).includes('${' + n + '}')
        );
        if (here.length) {
          withMissing[k] = trans.__(
            'give a value for %1 under Parameters',
            here.map(n => '${' + n + '}').join(', ')
          );
        }
      }
      return { spec: null, errors: withMissing };
    }
    return { spec: substituteDeep(spec, rows), errors };
  };

  // validate as you type (debounced): local parsing first, then the server's rules
  React.useEffect(() => {
    model.draft = form;
    const { spec, errors } = build();
    setLocalErrors(errors);
    const mine = ++seq.current;
    const timer = setTimeout(() => {
      if (!spec) {
        return;
      }
      setChecking(true);
      postJSON<IComposeResult>('jobs/compose', { spec })
        .then(r => {
          if (mine === seq.current) {
            setResult(r);
            setError('');
          }
        })
        .catch(e => mine === seq.current && setError(errorText(e)))
        .finally(() => mine === seq.current && setChecking(false));
    }, 300);
    return () => clearTimeout(timer);
  }, [form, JSON.stringify(rows)]);

  const issuesFor = (
    key: string,
    severity: IIssue['severity'][]
  ): string | undefined => {
    const list = (result?.issues ?? []).filter(
      i => fieldOfIssue(i.field) === key && severity.includes(i.severity)
    );
    return list.length
      ? list
          .map(i => (i.fix ? `${i.message} — ${i.fix}` : i.message))
          .join('; ')
      : undefined;
  };
  const fieldKeys = new Set<string>([
    ...TEXT_FIELDS,
    'framework',
    'routing',
    'mode'
  ]);
  const general = (result?.issues ?? []).filter(
    i => !fieldKeys.has(fieldOfIssue(i.field))
  );
  const hasErrors =
    Object.keys(localErrors).length > 0 ||
    (result?.issues ?? []).some(i => i.severity === 'error');
  const yaml = result ? maskSecrets(result.yaml, rows) : '';

  const set = (k: keyof IFormState, v: string | boolean) =>
    setForm({ ...form, [k]: v });
  const text = (
    k: keyof IFormState,
    label: string,
    opts: { multiline?: boolean; placeholder?: string; hint?: string } = {}
  ) => (
    <Field
      name={k}
      label={label}
      message={localErrors[k] ?? issuesFor(k, ['error'])}
      warning={issuesFor(k, ['warning', 'info'])}
      hint={opts.hint}
    >
      {opts.multiline ? (
        <textarea
          className="jp-mod-styled"
          rows={3}
          value={String(form[k])}
          placeholder={opts.placeholder}
          onChange={e => set(k, e.target.value)}
        />
      ) : (
        <input
          className="jp-mod-styled"
          value={String(form[k])}
          placeholder={opts.placeholder}
          onChange={e => set(k, e.target.value)}
        />
      )}
    </Field>
  );

  const remember = (label: string) => {
    const next = saveVersion(versions, form, Date.now(), label);
    setVersions(next);
    void model.store.save('versions', next);
  };

  const submit = async (): Promise<void> => {
    const { spec } = build();
    if (!spec) {
      return;
    }
    setError('');
    setSubmitted('');
    try {
      const job = await postJSON<IJobRef>('jobs', { spec });
      remember(trans.__('submitted'));
      setSubmitted(trans.__('Submitted %1 in %2', job.name, job.namespace));
      model.logsJob = job;
      model.show('jobs');
      void model.refreshJobs().catch(() => undefined);
    } catch (e) {
      setError(errorText(e));
    }
  };

  const saveTemplate = async (): Promise<void> => {
    const answer = await showDialog({
      title: trans.__('Save as template'),
      body: new NameBody(form.name || 'template'),
      buttons: [
        Dialog.cancelButton(),
        Dialog.okButton({ label: trans.__('Save') })
      ]
    });
    if (!answer.button.accept || !answer.value) {
      return;
    }
    // secret values are never stored: the user types them again
    const stored = rows.map(p => (p.secret ? { ...p, value: '' } : p));
    const next = [
      ...templates.filter(t => t.name !== answer.value),
      { name: answer.value, form, params: stored }
    ];
    setTemplates(next);
    await model.store.save('templates', next);
  };

  const useTemplate = (name: string) => {
    const t = templates.find(x => x.name === name);
    if (t) {
      setForm({ ...t.form });
      setParams(t.params);
    }
  };

  const showLayout = () => {
    const { spec } = build();
    if (spec) {
      model.layoutSpec = spec;
      model.layoutJob = null;
      model.show('layout');
    }
  };

  return (
    <Section id="compose" title={trans.__('Compose')} model={model}>
      <div className="jp-Ranktable-row">
        <Field name="template" label={trans.__('Template')}>
          <select
            className="jp-mod-styled"
            value=""
            onChange={e => useTemplate(e.target.value)}
          >
            <option value="">{trans.__('— start from a template —')}</option>
            {templates.map(t => (
              <option key={t.name} value={t.name}>
                {t.name}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <form
        className="jp-Ranktable-form"
        aria-label={trans.__('Job spec')}
        onSubmit={e => {
          e.preventDefault();
          void submit();
        }}
      >
        {text('name', trans.__('Job name'), { placeholder: 'bert-pretrain' })}
        {text('namespace', trans.__('Namespace'))}
        {text('image', trans.__('Image'), {
          placeholder: 'bert_pretrain_mindspore:v1'
        })}
        <Field name="framework" label={trans.__('Framework')}>
          <select
            className="jp-mod-styled"
            value={form.framework}
            onChange={e => set('framework', e.target.value)}
          >
            {(model.config?.frameworks ?? ['mindspore', 'pytorch']).map(f => (
              <option key={f} value={f}>
                {f}
              </option>
            ))}
          </select>
        </Field>
        <fieldset className="jp-Ranktable-fieldset">
          <legend>{trans.__('What runs')}</legend>
          <label>
            <input
              type="radio"
              checked={form.mode === 'command'}
              onChange={() => set('mode', 'command')}
            />{' '}
            {trans.__('Command')}
          </label>{' '}
          <label>
            <input
              type="radio"
              checked={form.mode === 'entry'}
              onChange={() => set('mode', 'entry')}
            />{' '}
            {trans.__('Training script (launcher)')}
          </label>
        </fieldset>
        {form.mode === 'command' ? (
          text('command', trans.__('Command (bash -c)'), {
            multiline: true,
            placeholder: 'python train.py'
          })
        ) : (
          <>
            {text('script', trans.__('Script'), { placeholder: 'train.py' })}
            {text('args', trans.__('Arguments'))}
          </>
        )}
        <div className="jp-Ranktable-grid">
          {text('nodes', trans.__('Nodes'))}
          {text('npus_per_node', trans.__('NPUs per node'))}
          {text('cpu', trans.__('CPU per pod'), { placeholder: '192' })}
          {text('memory', trans.__('Memory per pod'), {
            placeholder: '1536Gi'
          })}
        </div>
        <Field
          name="routing"
          label={trans.__('Ranktable routing')}
          warning={issuesFor('routing', ['error', 'warning', 'info'])}
        >
          <input
            type="checkbox"
            checked={form.routing}
            onChange={e => set('routing', e.target.checked)}
          />
        </Field>
        {text('flavour', trans.__('Node flavour'), {
          placeholder: Object.keys(model.config?.flavours ?? {})[0] ?? 'snt9b'
        })}
        {text('queue', trans.__('Queue'))}
        {text('max_retry', trans.__('Max retries'))}
        {text('env', trans.__('Environment (KEY=VALUE per line)'), {
          multiline: true
        })}
        {text('labels', trans.__('Labels (KEY=VALUE per line)'), {
          multiline: true
        })}
        {text('node_selector', trans.__('Node selector (KEY=VALUE per line)'), {
          multiline: true
        })}
        {rows.length > 0 && (
          <fieldset className="jp-Ranktable-fieldset jp-Ranktable-params">
            <legend>{trans.__('Parameters')}</legend>
            {rows.map(p => (
              <div
                key={p.name}
                className="jp-Ranktable-param"
                data-param={p.name}
              >
                <label htmlFor={`jp-Ranktable-param-${p.name}`}>
                  {'${' + p.name + '}'}
                </label>
                <input
                  id={`jp-Ranktable-param-${p.name}`}
                  className="jp-mod-styled"
                  type={p.secret ? 'password' : 'text'}
                  value={p.value}
                  autoComplete="off"
                  onChange={e =>
                    setParams([
                      ...rows.filter(x => x.name !== p.name),
                      { ...p, value: e.target.value }
                    ])
                  }
                />
                <label>
                  <input
                    type="checkbox"
                    checked={p.secret}
                    onChange={e =>
                      setParams([
                        ...rows.filter(x => x.name !== p.name),
                        { ...p, secret: e.target.checked }
                      ])
                    }
                  />{' '}
                  {trans.__('secret')}
                </label>
              </div>
            ))}
          </fieldset>
        )}
        {general.length > 0 && (
          <ul
            className="jp-Ranktable-issues"
            aria-label={trans.__('Validation')}
          >
            {general.map((i, n) => (
              <li key={n} className={`jp-Ranktable-issue-${i.severity}`}>
                {i.field ? <code>{i.field}</code> : null} {i.message}
                {i.fix ? ` — ${i.fix}` : ''}
              </li>
            ))}
          </ul>
        )}
        <ErrorLine error={error} />
        {submitted && <div className="jp-Ranktable-ok">{submitted}</div>}
        <div className="jp-Ranktable-actions">
          <button
            type="submit"
            className="jp-mod-styled jp-mod-accept"
            disabled={hasErrors || checking || !result}
          >
            {trans.__('Submit')}
          </button>
          <button
            type="button"
            className="jp-mod-styled"
            onClick={showLayout}
            disabled={Boolean(localErrors.nodes)}
          >
            {trans.__('Show layout')}
          </button>
          <button
            type="button"
            className="jp-mod-styled"
            onClick={() => remember(trans.__('saved'))}
          >
            {trans.__('Save version')}
          </button>
          <button
            type="button"
            className="jp-mod-styled"
            onClick={() => void saveTemplate()}
          >
            {trans.__('Save as template')}
          </button>
        </div>
      </form>
      <details className="jp-Ranktable-yaml" open>
        <summary>{trans.__('YAML preview')}</summary>
        <div className="jp-Ranktable-actions">
          <button
            className="jp-mod-styled"
            disabled={!yaml}
            onClick={() => Clipboard.copyToSystem(yaml)}
          >
            {trans.__('Copy')}
          </button>
          <button
            className="jp-mod-styled"
            disabled={!yaml}
            onClick={() =>
              downloadText(
                `${form.name || 'job'}.yaml`,
                yaml,
                'application/yaml'
              )
            }
          >
            {trans.__('Download')}
          </button>
        </div>
        <pre
          className="jp-Ranktable-pre"
          aria-label={trans.__('Composed manifests')}
        >
          {yaml}
        </pre>
      </details>
      {versions.length > 0 && (
        <details className="jp-Ranktable-versions">
          <summary>{trans.__('Saved versions (%1)', versions.length)}</summary>
          <ul>
            {versions.map((v, i) => (
              <li key={v.savedAt + ':' + i}>
                {new Date(v.savedAt).toLocaleString()}{' '}
                <span className="jp-Ranktable-muted">{v.label}</span>{' '}
                <button
                  className="jp-mod-styled"
                  onClick={() => {
                    const r = rollback(versions, i, Date.now());
                    setForm({ ...r.value });
                    setVersions(r.versions);
                    void model.store.save('versions', r.versions);
                  }}
                >
                  {trans.__('Roll back')}
                </button>
              </li>
            ))}
          </ul>
        </details>
      )}
    </Section>
  );
}

/** A one-field dialog body returning the typed name. */
class NameBody extends Widget {
  constructor(value: string) {
    const input = document.createElement('input');
    input.className = 'jp-mod-styled';
    input.value = value;
    super({ node: input });
  }
  getValue(): string {
    return (this.node as HTMLInputElement).value.trim();
  }
}
