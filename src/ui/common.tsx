import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import { RanktableModel, SectionId } from '../connections/model';
import { RanktableAPIError, messageOf } from '../api/errors';
import { useSignal } from './usesignal';

/** Re-render when the shared model changes. */
export function useModel(model: RanktableModel): number {
  return useSignal(model.changed);
}

export interface ISectionProps {
  model: RanktableModel;
  trans: TranslationBundle;
}

/** A section's list of items (profiles, forwards, kernels, jobs), or one line saying there are none. */
export function ItemList<T>(props: {
  className: string;
  label: string;
  items: readonly T[];
  empty: React.ReactNode;
  children: (item: T) => React.ReactNode;
}): JSX.Element {
  return (
    <ul className={props.className} aria-label={props.label}>
      {props.items.length === 0 && (
        <li className="jp-Ranktable-empty">{props.empty}</li>
      )}
      {props.items.map(props.children)}
    </ul>
  );
}

/** What a section that works through an SSH profile shows while there is none. */
export function NoProfileYet(props: { trans: TranslationBundle }): JSX.Element {
  return (
    <div className="jp-Ranktable-empty">
      {props.trans.__('Add an SSH profile under Connections first.')}
    </div>
  );
}

/** One sidebar section's body (the SidePanel's accordion draws its title and collapses it). */
export function Section(props: {
  id: SectionId;
  title: string;
  model: RanktableModel;
  children: React.ReactNode;
}): JSX.Element {
  return (
    <div
      className="jp-Ranktable-sectionBody"
      data-section={props.id}
      aria-label={props.title}
    >
      {props.children}
    </div>
  );
}

export function errorText(error: unknown): string {
  if (error instanceof RanktableAPIError) {
    return error.fix ? `${error.message}` : error.message;
  }
  return messageOf(error);
}

export function ErrorLine(props: { error: string }): JSX.Element | null {
  if (!props.error) {
    return null;
  }
  return (
    <div className="jp-Ranktable-error" role="alert">
      {props.error}
    </div>
  );
}

export function Field(props: {
  label: string;
  name: string;
  message?: string;
  warning?: string;
  children: React.ReactElement;
  hint?: string;
}): JSX.Element {
  const id = `jp-Ranktable-field-${props.name}`;
  const msgId = `${id}-msg`;
  const child = React.cloneElement(props.children, {
    id,
    'aria-invalid': props.message ? true : undefined,
    'aria-describedby': props.message || props.warning ? msgId : undefined
  });
  return (
    <div
      className={
        'jp-Ranktable-field' +
        (props.children.props.type === 'checkbox'
          ? ' jp-Ranktable-field-check'
          : '')
      }
      data-field={props.name}
    >
      <label htmlFor={id}>{props.label}</label>
      {child}
      {props.message && (
        <div className="jp-Ranktable-fieldError" id={msgId} role="alert">
          {props.message}
        </div>
      )}
      {!props.message && props.warning && (
        <div className="jp-Ranktable-fieldWarning" id={msgId}>
          {props.warning}
        </div>
      )}
      {props.hint && <div className="jp-Ranktable-hint">{props.hint}</div>}
    </div>
  );
}

/** A one-line text input bound to a string state; other attributes (the id and aria ones `Field` adds)
 * pass through to the input. */
export function TextInput(
  props: { value: string; onChange: (value: string) => void } & Omit<
    React.InputHTMLAttributes<HTMLInputElement>,
    'value' | 'onChange'
  >
): JSX.Element {
  const { onChange, ...rest } = props;
  return (
    <input
      className="jp-mod-styled"
      {...rest}
      onChange={e => onChange(e.target.value)}
    />
  );
}

/** A sidebar form: submitting it (Enter, or its submit button) calls `onSubmit` instead of loading a page. */
export function Form(props: {
  label: string;
  onSubmit: () => void;
  children: React.ReactNode;
}): JSX.Element {
  return (
    <form
      className="jp-Ranktable-form"
      aria-label={props.label}
      onSubmit={e => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      {props.children}
    </form>
  );
}

/** A labelled one-line text input bound to a string state. */
export function TextField(props: {
  name: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  placeholder?: string;
  hint?: string;
}): JSX.Element {
  return (
    <Field name={props.name} label={props.label} hint={props.hint}>
      <TextInput
        value={props.value}
        placeholder={props.placeholder}
        onChange={props.onChange}
      />
    </Field>
  );
}

/** A table's header row: one column heading each ('' for an unlabelled column). */
export function TableHead(props: { columns: readonly string[] }): JSX.Element {
  return (
    <thead>
      <tr>
        {props.columns.map((c, i) =>
          c ? <th key={i}>{c}</th> : <th key={i} />
        )}
      </tr>
    </thead>
  );
}

export function Badge(props: { status: string; label: string }): JSX.Element {
  return (
    <span
      className={`jp-Ranktable-badge jp-Ranktable-badge-${props.status}`}
      title={props.label}
    >
      {props.label}
    </span>
  );
}

/** Save text as a file through the browser. */
export function downloadText(
  filename: string,
  text: string,
  type = 'text/plain'
): void {
  const blob = new Blob([text], { type });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) {
    return '–';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function formatSeconds(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) {
    return '–';
  }
  if (s < 60) {
    return `${Math.round(s)} s`;
  }
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}
