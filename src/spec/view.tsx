import * as React from 'react';
import {
  ABCWidgetFactory,
  DocumentRegistry,
  DocumentWidget
} from '@jupyterlab/docregistry';
import { TranslationBundle } from '@jupyterlab/translation';
import { FormComponent, ReactWidget } from '@jupyterlab/ui-components';
import validatorAjv8 from '@rjsf/validator-ajv8';

import { ErrorLine, errorText } from '../ui/common';
import {
  ILayoutResult,
  LayoutFigure,
  LayoutFigures,
  PlacementLine
} from '../layout/figure';
import { ranktableIcon } from '../ui/icon';
import { IRunRef, JobsModel } from '../jobs/model';
import { ComposeModel } from './model';
import { ITemplateParam, templateParams } from './template';
import {
  SPEC_FILE_EXTENSION,
  formSchema,
  formSpec,
  validateSpec,
  parseSpecText,
  specToText
} from './specfile';

export const SPEC_FILE_TYPE = 'rtjob';
export const SPEC_FACTORY = 'Ranktable job';

function useSignal(signal: { connect: any; disconnect: any }): void {
  const [, setTick] = React.useState(0);
  React.useEffect(() => {
    const f = () => setTick(t => t + 1);
    signal.connect(f);
    return () => {
      signal.disconnect(f);
    };
  }, [signal]);
}

/** `.entry.script` -> `root_entry_script` (rjsf's field ids). */
function fieldId(property: string): string {
  return 'root' + property.replace(/\[(\d+)\]/g, '.$1').replace(/\./g, '_');
}

function SpecForm(props: {
  compose: ComposeModel;
  trans: TranslationBundle;
  openRun: (run: IRunRef) => void;
}): JSX.Element {
  const { compose, trans } = props;
  useSignal(compose.changed);
  const [touched, setTouched] = React.useState<Set<string>>(new Set());
  const [layout, setLayout] = React.useState<ILayoutResult | null>(null);
  const [layoutError, setLayoutError] = React.useState('');
  const [busy, setBusy] = React.useState('');
  const [error, setError] = React.useState('');
  const touch = (id: string) =>
    setTouched(t => (t.has(id) ? t : new Set([...t, id])));
  const isTouched = (id: string) =>
    compose.submitTried ||
    Array.from(touched).some(t => t === id || id.startsWith(t + '_'));

  // validation beside each field, but only once the field was touched (or Submit was tried): the
  // schema's rules and the server's issues both become rjsf "extra errors" on their field
  const extraErrors: Record<string, any> = {};
  const addError = (path: string, message: string) => {
    if (!path || !isTouched(fieldId('.' + path))) {
      return;
    }
    let node = extraErrors;
    for (const part of path.replace(/\[(\d+)\]/g, '.$1').split('.')) {
      node = node[part] = node[part] ?? {};
    }
    if (!(node.__errors ?? []).includes(message)) {
      node.__errors = [...(node.__errors ?? []), message];
    }
  };
  if (!compose.parseError) {
    for (const e of validateSpec(compose.spec)) {
      addError(e.path, e.message);
    }
  }
  for (const issue of compose.issues) {
    if (issue.severity === 'error') {
      addError((issue.field ?? '').replace(/^spec\.?/, ''), issue.message);
    }
  }

  const submit = async () => {
    setError('');
    setBusy('submit');
    try {
      const run = await compose.submit();
      if (run) {
        props.openRun(run);
      }
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy('');
    }
  };
  const preview = async () => {
    setLayoutError('');
    setBusy('layout');
    try {
      setLayout(await compose.preview());
    } catch (e) {
      setLayout(null);
      setLayoutError(errorText(e));
    } finally {
      setBusy('');
    }
  };

  const params = compose.params;
  return (
    <div className="jp-Ranktable-specEditor">
      <div className="jp-Ranktable-specToolbar jp-Ranktable-toolbar">
        <button
          className="jp-mod-styled jp-mod-accept"
          onClick={() => void submit()}
          disabled={!!busy || !!compose.parseError}
        >
          {busy === 'submit' ? trans.__('Submitting…') : trans.__('Submit')}
        </button>
        <button
          className="jp-mod-styled"
          onClick={() => void preview()}
          disabled={!!busy || !!compose.parseError}
        >
          {trans.__('Preview layout')}
        </button>
        <span className="jp-Ranktable-muted">
          {compose.checking
            ? trans.__('checking…')
            : compose.issues.length
              ? trans.__('%1 issue(s)', compose.issues.length)
              : compose.yaml
                ? trans.__('valid')
                : ''}
        </span>
      </div>
      <ErrorLine error={error} />
      <div className="jp-Ranktable-specColumns">
        <div className="jp-Ranktable-specFormCol">
          {params.length > 0 && (
            <fieldset className="jp-Ranktable-fieldset">
              <legend>{trans.__('Template parameters')}</legend>
              {params.map(p => (
                <label key={p.name} className="jp-Ranktable-param">
                  <code>{'${' + p.name + '}'}</code>
                  <input
                    className="jp-mod-styled"
                    type={p.secret ? 'password' : 'text'}
                    value={p.value}
                    aria-label={trans.__('Value of %1', p.name)}
                    onChange={e => compose.setParam(p.name, e.target.value)}
                  />
                </label>
              ))}
            </fieldset>
          )}
          {compose.parseError ? (
            <div className="jp-Ranktable-error" role="alert">
              {trans.__(
                'This file is not a job spec the form can show: %1. Fix it with Open With → Editor.',
                compose.parseError
              )}
            </div>
          ) : (
            <FormComponent
              schema={formSchema() as any}
              formData={formSpec(compose.spec) as any}
              validator={validatorAjv8 as any}
              showErrorList={false}
              noHtml5Validate
              extraErrors={extraErrors as any}
              onBlur={(id: string) => touch(id)}
              onFocus={() => undefined}
              onChange={e => {
                const next = e.formData as Record<string, unknown>;
                for (const key of Object.keys(next)) {
                  if (
                    JSON.stringify(next[key]) !==
                    JSON.stringify(compose.spec[key])
                  ) {
                    touch(fieldId('.' + key));
                  }
                }
                compose.setSpec(next);
              }}
              formContext={{}}
              uiSchema={{
                'ui:submitButtonOptions': { norender: true },
                image: { 'ui:placeholder': 'registry/image:tag' }
              }}
            />
          )}
        </div>
        <div className="jp-Ranktable-specSideCol">
          <section aria-label={trans.__('Issues')}>
            <h3>{trans.__('Issues')}</h3>
            <ul className="jp-Ranktable-issues">
              {compose.issues.length === 0 && (
                <li className="jp-Ranktable-muted">{trans.__('None.')}</li>
              )}
              {compose.issues.map((i, n) => (
                <li key={n} className={`jp-Ranktable-issue-${i.severity}`}>
                  <strong>{i.field || 'spec'}</strong>: {i.message}
                  {i.fix && <div className="jp-Ranktable-hint">{i.fix}</div>}
                </li>
              ))}
            </ul>
          </section>
          {compose.argv && (
            <section aria-label={trans.__('Arguments (argv)')}>
              <h3>{trans.__('Arguments (argv)')}</h3>
              <ol className="jp-Ranktable-argv">
                {compose.argv.map((word, n) => (
                  <li key={n}>
                    <code>{word === '' ? "''" : word}</code>
                  </li>
                ))}
              </ol>
            </section>
          )}
          <section aria-label={trans.__('Manifest')}>
            <h3>{trans.__('Manifest (YAML)')}</h3>
            <pre className="jp-Ranktable-yaml">{compose.yaml || '–'}</pre>
          </section>
          <section aria-label={trans.__('Planned layout')}>
            <h3>{trans.__('Planned layout')}</h3>
            <ErrorLine error={layoutError} />
            {!layout && !layoutError && (
              <p className="jp-Ranktable-muted">
                {trans.__(
                  'Preview layout shows where the scheduler is expected to place the job.'
                )}
              </p>
            )}
            {layout && (
              <>
                <PlacementLine result={layout} />
                <LayoutFigures result={layout} trans={trans} />
                <LayoutFigure result={layout} trans={trans} />
              </>
            )}
          </section>
        </div>
      </div>
    </div>
  );
}

/** The form view of a `*.rtjob.yaml` file: edits the same text model the text editor edits. */
export class SpecEditor extends ReactWidget {
  readonly compose: ComposeModel;

  constructor(
    readonly context: DocumentRegistry.CodeContext,
    jobs: JobsModel,
    private _trans: TranslationBundle,
    private _openRun: (run: IRunRef) => void
  ) {
    super();
    this.addClass('jp-Ranktable-specEditorWidget');
    this.compose = new ComposeModel(jobs);
    const model = context.model;
    const load = () => this.compose.setText(model.sharedModel.getSource());
    void context.ready.then(load);
    model.contentChanged.connect(() => {
      if (model.sharedModel.getSource() !== this.compose.text) {
        load();
      }
    });
    this.compose.textEdited.connect((_, text) => {
      if (model.sharedModel.getSource() !== text) {
        model.sharedModel.setSource(text);
      }
    });
  }

  dispose(): void {
    this.compose.dispose();
    super.dispose();
  }

  protected render(): JSX.Element {
    return (
      <SpecForm
        compose={this.compose}
        trans={this._trans}
        openRun={this._openRun}
      />
    );
  }
}

export class SpecEditorFactory extends ABCWidgetFactory<
  DocumentWidget<SpecEditor>,
  DocumentRegistry.ICodeModel
> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<DocumentWidget<SpecEditor>>,
    private _jobs: JobsModel,
    private _trans: TranslationBundle,
    private _openRun: (run: IRunRef) => void
  ) {
    super(options);
  }

  protected createNewWidget(
    context: DocumentRegistry.CodeContext
  ): DocumentWidget<SpecEditor> {
    const content = new SpecEditor(
      context,
      this._jobs,
      this._trans,
      this._openRun
    );
    const widget = new DocumentWidget({ content, context });
    widget.title.icon = ranktableIcon;
    widget.addClass('jp-Ranktable-specDocument');
    return widget;
  }
}

export { SPEC_FILE_EXTENSION, parseSpecText, specToText, templateParams };
export type { ITemplateParam };
