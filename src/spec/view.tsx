import * as React from 'react';
import {
  ABCWidgetFactory,
  DocumentRegistry,
  DocumentWidget
} from '@jupyterlab/docregistry';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';

import { ErrorLine, errorText } from '../ui/common';
import { useSignal } from '../ui/usesignal';
import {
  ILayoutResult,
  LayoutFigure,
  LayoutFigures,
  PlacementLine
} from '../layout/figure';
import { jobSpecIcon } from '../ui/icon';
import { IRunRef, JobsModel } from '../jobs/model';
import { ComposeModel, IIssue } from './model';
import { ITemplateParam, templateParams } from './template';
import { FormSection, OPEN_SECTIONS } from './sections';
import {
  IFormSection,
  JobSpecJSON,
  SPEC_FILE_EXTENSION,
  emptyRequired,
  formSchema,
  formSections,
  formSpec,
  topField,
  validateSpec,
  parseSpecText,
  specToText
} from './specfile';

export const SPEC_FILE_TYPE = 'rtjob';
/** After a valid check, the planned layout follows this much later (an edit in between restarts it). */
const PREVIEW_DELAY_MS = 300;
export const SPEC_FACTORY = 'Ranktable job';

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
  useSignal(compose.permissions.changed);
  React.useEffect(() => void compose.permissions.load(), [compose]);
  const { touch, isTouched } = useTouched(compose);
  const actions = useSpecActions(compose, props.openRun);
  const [open, setOpen] = React.useState<Record<string, boolean>>({});
  const schema = React.useMemo(() => formSchema(), []);
  const extraErrors = fieldErrors(compose, isTouched);
  const { shownIssues, toFill } = issuesToShow(compose, isTouched);
  const toggle = (title: string) =>
    setOpen(o => ({
      ...o,
      [title]: !(o[title] ?? OPEN_SECTIONS.includes(title))
    }));
  return (
    <div className="jp-Ranktable-specEditor">
      <SpecToolbar
        compose={compose}
        actions={actions}
        errorCount={shownIssues.filter(i => i.severity === 'error').length}
        toFill={toFill}
        trans={trans}
      />
      <ErrorLine error={actions.error} />
      <div className="jp-Ranktable-specColumns">
        <div className="jp-Ranktable-specFormCol">
          <TemplateParams compose={compose} trans={trans} />
          {compose.parseError ? (
            <div className="jp-Ranktable-error" role="alert">
              {trans.__(
                'This file is not a job spec the form can show: %1. Fix it with Open With → Editor.',
                compose.parseError
              )}
            </div>
          ) : (
            formSections().map(section => (
              <FormSection
                key={section.title}
                section={section}
                schema={schema}
                spec={formSpec(compose.spec)}
                errors={extraErrors}
                open={
                  open[section.title] ?? OPEN_SECTIONS.includes(section.title)
                }
                trans={trans}
                onToggle={() => toggle(section.title)}
                onBlur={touch}
                onChange={part => setSection(compose, section, part, touch)}
              />
            ))
          )}
        </div>
        <SpecSide
          compose={compose}
          issues={shownIssues}
          actions={actions}
          trans={trans}
        />
      </div>
    </div>
  );
}

/** The issues shown, and the required fields left empty: a new job's empty required field is "to fill in",
 * not an issue, until it is touched or Submit is tried. */
function issuesToShow(
  compose: ComposeModel,
  isTouched: (id: string) => boolean
): { shownIssues: IIssue[]; toFill: string[] } {
  const fresh = (field: string | null | undefined) => {
    const top = topField(field);
    return (
      !!top &&
      !isTouched(fieldId('.' + top)) &&
      emptyRequired(compose.spec).includes(top)
    );
  };
  const shownIssues = compose.issues.filter(i => !fresh(i.field));
  const toFill = emptyRequired(compose.spec).filter(
    f => !isTouched(fieldId('.' + f))
  );
  return { shownIssues, toFill };
}

/** Which fields the user touched: their validation shows once touched (or once Submit was tried). */
function useTouched(compose: ComposeModel) {
  const [touched, setTouched] = React.useState<Set<string>>(new Set());
  const touch = (id: string) =>
    setTouched(t => (t.has(id) ? t : new Set([...t, id])));
  const isTouched = (id: string) =>
    compose.submitTried ||
    Array.from(touched).some(t => t === id || id.startsWith(t + '_'));
  return { touch, isTouched };
}

/**
 * Validation beside each field, but only once the field was touched (or Submit was tried): the schema's
 * rules and the server's issues both become rjsf "extra errors" on their field.
 */
function fieldErrors(
  compose: ComposeModel,
  isTouched: (id: string) => boolean
): Record<string, any> {
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
  return extraErrors;
}

/** A section's edit into the spec; a field whose value changed counts as touched. */
function setSection(
  compose: ComposeModel,
  section: IFormSection,
  part: JobSpecJSON,
  touch: (id: string) => void
): void {
  const next: Record<string, unknown> = { ...compose.spec };
  for (const key of section.fields) {
    if (JSON.stringify(part[key]) !== JSON.stringify(compose.spec[key])) {
      touch(fieldId('.' + key));
    }
    if (part[key] === undefined) {
      delete next[key];
    } else {
      next[key] = part[key];
    }
  }
  compose.setSpec(next);
}

/** Submit and Preview layout (`busy` names the one running); a valid spec's layout is previewed live. */
function useSpecActions(
  compose: ComposeModel,
  openRun: (run: IRunRef) => void
) {
  const [layout, setLayout] = React.useState<ILayoutResult | null>(null);
  const [layoutError, setLayoutError] = React.useState('');
  const [busy, setBusy] = React.useState('');
  const [error, setError] = React.useState('');
  const submit = async () => {
    setError('');
    setBusy('submit');
    try {
      const run = await compose.submit();
      if (run) {
        openRun(run);
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

  // live: once the server has checked a spec with no error, where it would run is previewed too
  const valid =
    !!compose.yaml && !compose.issues.some(i => i.severity === 'error');
  React.useEffect(() => {
    if (!valid) {
      return;
    }
    const timer = setTimeout(() => void preview(), PREVIEW_DELAY_MS);
    return () => clearTimeout(timer);
  }, [compose.yaml, valid]);
  return { layout, layoutError, busy, error, submit, preview };
}

type SpecActions = ReturnType<typeof useSpecActions>;

/** Submit, Preview layout and the spec's state: checking, its issues, what is left to fill in, valid. */
function SpecToolbar(props: {
  compose: ComposeModel;
  actions: SpecActions;
  errorCount: number;
  toFill: string[];
  trans: TranslationBundle;
}): JSX.Element {
  const { compose, actions, errorCount, toFill, trans } = props;
  const { busy } = actions;
  const cannotSubmit = compose.permissions.whyNot('submit');
  return (
    <div className="jp-Ranktable-specToolbar jp-Ranktable-toolbar">
      <button
        className="jp-mod-styled jp-mod-accept"
        onClick={() => void actions.submit()}
        disabled={!!busy || !!compose.parseError || !!cannotSubmit}
        data-why-not={cannotSubmit || undefined}
        title={cannotSubmit || undefined}
      >
        {busy === 'submit' ? trans.__('Submitting…') : trans.__('Submit')}
      </button>
      <button
        className="jp-mod-styled"
        onClick={() => void actions.preview()}
        disabled={!!busy || !!compose.parseError}
      >
        {trans.__('Preview layout')}
      </button>
      <span className="jp-Ranktable-muted" aria-live="polite">
        {compose.checking
          ? trans.__('checking…')
          : errorCount
            ? trans._n('%1 issue', '%1 issues', errorCount)
            : toFill.length
              ? trans.__('to fill in: %1', toFill.join(', '))
              : compose.yaml
                ? trans.__('valid')
                : ''}
      </span>
    </div>
  );
}

/** The template's `${NAME}` parameters, each with its value (a secret's hidden). */
function TemplateParams(props: {
  compose: ComposeModel;
  trans: TranslationBundle;
}): JSX.Element | null {
  const { compose, trans } = props;
  const params = compose.params;
  if (params.length === 0) {
    return null;
  }
  return (
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
  );
}

/** The side column: issues and notes, the planned layout, the argv and the manifest. */
function SpecSide(props: {
  compose: ComposeModel;
  issues: IIssue[];
  actions: SpecActions;
  trans: TranslationBundle;
}): JSX.Element {
  const { compose, trans } = props;
  const { layout, layoutError } = props.actions;
  return (
    <div className="jp-Ranktable-specSideCol">
      <IssuesSection issues={props.issues} trans={trans} />
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
      <details className="jp-Ranktable-manifest" open>
        <summary>{trans.__('Manifest (YAML)')}</summary>
        <pre
          className="jp-Ranktable-yaml"
          tabIndex={0}
          aria-label={trans.__('Manifest (YAML)')}
        >
          {compose.yaml || '–'}
        </pre>
      </details>
    </div>
  );
}

/** The issues to fix, then the notes: what the server added or advises (info) is not an issue. */
function IssuesSection(props: {
  issues: IIssue[];
  trans: TranslationBundle;
}): JSX.Element {
  const { trans } = props;
  const problems = props.issues.filter(i => i.severity !== 'info');
  const notes = props.issues.filter(i => i.severity === 'info');
  return (
    <section aria-label={trans.__('Issues')}>
      <h3>{trans.__('Issues')}</h3>
      <ul className="jp-Ranktable-issues">
        {problems.length === 0 && (
          <li className="jp-Ranktable-muted">{trans.__('None.')}</li>
        )}
        {problems.map((i, n) => (
          <IssueItem
            key={n}
            issue={i}
            className={`jp-Ranktable-issue-${i.severity}`}
          />
        ))}
      </ul>
      {notes.length > 0 && (
        <ul
          className="jp-Ranktable-issues jp-Ranktable-notes"
          aria-label={trans.__('Notes')}
        >
          {notes.map((i, n) => (
            <IssueItem key={n} issue={i} className="jp-Ranktable-note" />
          ))}
        </ul>
      )}
    </section>
  );
}

function IssueItem(props: { issue: IIssue; className: string }): JSX.Element {
  const { issue } = props;
  return (
    <li className={props.className}>
      <strong>{issue.field || 'spec'}</strong>: {issue.message}
      {issue.fix && <div className="jp-Ranktable-hint">{issue.fix}</div>}
    </li>
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
    widget.title.icon = jobSpecIcon;
    widget.addClass('jp-Ranktable-specDocument');
    return widget;
  }
}

export { SPEC_FILE_EXTENSION, parseSpecText, specToText, templateParams };
export type { ITemplateParam };
