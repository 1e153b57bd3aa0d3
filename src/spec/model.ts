import { ISignal, Signal } from '@lumino/signaling';

import { post } from '../api/client';
import type { components } from '../api/openapi';
import { Model } from '../ui/model';
import { ILayoutResult } from '../layout/figure';
import { ITemplateParam, substitute, templateParams } from './template';
import {
  JobSpecJSON,
  compactSpec,
  entryArgv,
  parseSpecText,
  specToText
} from './specfile';
import { IRunRef, JobsModel } from '../jobs/model';
import type { PermissionsModel } from '../permissions/model';

/** POST /ranktable/jobs/compose's verdict (`components/schemas/Compose`). */
type ICompose = components['schemas']['Compose'];
/** One problem the server found in the spec, with the field it names and the fix. */
export type IIssue = ICompose['issues'][number];
/**
 * The spec as the form holds it: fields left out take the server's defaults, and the server reports a
 * missing one as an issue (JobSpec in openapi.yaml lists the complete spec).
 */
type ISpecBody = components['schemas']['JobSpec'];

export const CHECK_DELAY_MS = 400;

/**
 * One spec file being edited: its text (shared with the text editor), the spec parsed from it, the
 * template parameters and the server's verdict (issues + manifest), refreshed after each edit.
 */
export class ComposeModel extends Model {
  text = '';
  spec: JobSpecJSON = {};
  parseError = '';
  issues: IIssue[] = [];
  yaml = '';
  /** The entry point's argv as the server split it (script first); null without an entry point. */
  argv: string[] | null = null;
  checking = false;
  submitTried = false;
  params: ITemplateParam[] = [];
  private _textEdited = new Signal<this, string>(this);
  private _seq = 0;

  constructor(private _jobs: JobsModel) {
    super();
  }

  /** The form changed the spec: the file's new text (the document writes it to its model). */
  /** What the user may do: Submit is disabled with the reason when they may not submit. */
  get permissions(): PermissionsModel {
    return this._jobs.permissions;
  }

  get textEdited(): ISignal<this, string> {
    return this._textEdited;
  }

  /** The file's text changed (opened, or edited in the text editor). */
  setText(text: string): void {
    this.text = text;
    const parsed = parseSpecText(text);
    if ('error' in parsed) {
      this.parseError = parsed.error;
    } else {
      this.parseError = '';
      this.spec = parsed.spec;
    }
    this._syncParams();
    this.emit();
    this._checkSoon();
  }

  /** The form changed a field. */
  setSpec(spec: JobSpecJSON): void {
    const text = specToText(spec);
    this.spec = compactSpec(spec);
    if (text === this.text) {
      return;
    }
    this.text = text;
    this._syncParams();
    this._textEdited.emit(text);
    this.emit();
    this._checkSoon();
  }

  setParam(name: string, value: string): void {
    this.params = this.params.map(p => (p.name === name ? { ...p, value } : p));
    this.emit();
    this._checkSoon();
  }

  /** The spec with `${param}` values substituted; null (with issues) while a value is missing. */
  resolved(): JobSpecJSON | null {
    const missing = this.params.filter(p => p.value === '');
    if (missing.length) {
      return null;
    }
    const text = substitute(this.text, this.params);
    const parsed = parseSpecText(text);
    return 'spec' in parsed ? parsed.spec : null;
  }

  async check(): Promise<void> {
    const spec = this.resolved();
    const mine = ++this._seq;
    if (!spec) {
      const missing = this.params.filter(p => p.value === '').map(p => p.name);
      this.issues = missing.length
        ? [
            {
              field: null,
              severity: 'error',
              message: `give a value for ${missing.map(n => '${' + n + '}').join(', ')} under Template parameters`
            }
          ]
        : [];
      this.yaml = '';
      this.emit();
      return;
    }
    this.checking = true;
    this.emit();
    try {
      const answer = await post(
        '/ranktable/jobs/compose',
        {},
        { spec: spec as ISpecBody }
      );
      if (mine === this._seq) {
        this.issues = answer.issues;
        this.yaml = answer.yaml;
        this.argv = entryArgv(answer.spec);
      }
    } catch (e) {
      if (mine === this._seq) {
        this.issues = [
          { field: null, severity: 'error', message: (e as Error).message }
        ];
      }
    } finally {
      if (mine === this._seq) {
        this.checking = false;
        this.emit();
      }
    }
  }

  async submit(): Promise<IRunRef | null> {
    this.submitTried = true;
    await this.check();
    const spec = this.resolved();
    if (!spec || this.issues.some(i => i.severity === 'error')) {
      return null;
    }
    return this._jobs.submit(spec);
  }

  async preview(): Promise<ILayoutResult> {
    const spec = this.resolved();
    if (!spec) {
      throw new Error('give every template parameter a value first');
    }
    return post('/ranktable/layout/preview', {}, { spec: spec as ISpecBody });
  }

  private _syncParams(): void {
    const names = templateParams(this.text);
    this.params = names.map(
      n =>
        this.params.find(p => p.name === n) ?? {
          name: n,
          value: '',
          secret: /secret|token|password|key/i.test(n)
        }
    );
  }

  private _checkSoon(): void {
    this.later('check', () => void this.check(), CHECK_DELAY_MS, true);
  }
}
