/**
 * The job form as JupyterLab's settings editor draws a plugin: one collapsible section per `x-groups`
 * entry of the JobSpec schema, each an rjsf FormComponent (JupyterLab's templates, compact: the
 * description once as the field's help, icon buttons to add and remove list items).
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import {
  FormComponent,
  caretDownIcon,
  caretRightIcon
} from '@jupyterlab/ui-components';
import validatorAjv8 from '@rjsf/validator-ajv8';

import { IFormSection, JobSpecJSON, sectionSchema } from './specfile';

/** Sections open when the form opens: where a new job is decided. The rest opens on demand. */
export const OPEN_SECTIONS = ['Basics', 'What runs', 'Resources'];

const UI_SCHEMA_FIELDS: Record<string, Record<string, unknown>> = {
  image: { 'ui:placeholder': 'registry/image:tag' }
};

/** A section's id for the DOM (`What runs` -> `what-runs`). */
export function sectionId(title: string): string {
  return title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}

export function FormSection(props: {
  section: IFormSection;
  schema: Record<string, any>;
  spec: JobSpecJSON;
  errors: Record<string, any>;
  open: boolean;
  trans: TranslationBundle;
  onToggle: () => void;
  onChange: (part: JobSpecJSON) => void;
  onBlur: (id: string) => void;
}): JSX.Element {
  const { section, open, trans } = props;
  const id = sectionId(section.title);
  const { schema, uiSchema } = useSectionSchema(section, props.schema);
  const { data, errors } = sectionPart(section, props.spec, props.errors);
  const errorCount = Object.keys(errors).length;
  const body = React.useRef<HTMLDivElement>(null);
  useControlLabels(body);
  const Caret = open ? caretDownIcon : caretRightIcon;
  return (
    <section
      className="jp-Ranktable-formSection"
      data-section={id}
      aria-labelledby={`jp-Ranktable-formSection-${id}`}
    >
      <h3 className="jp-Ranktable-formSectionHeader">
        <button
          id={`jp-Ranktable-formSection-${id}`}
          aria-expanded={open}
          aria-controls={`jp-Ranktable-formSectionBody-${id}`}
          onClick={props.onToggle}
        >
          <Caret.react tag="span" elementPosition="center" />
          <span>{trans.__(section.title)}</span>
          {errorCount > 0 && (
            <span className="jp-Ranktable-formSectionErrors">
              {trans._n('%1 to fix', '%1 to fix', errorCount)}
            </span>
          )}
        </button>
      </h3>
      <div
        id={`jp-Ranktable-formSectionBody-${id}`}
        className="jp-Ranktable-formSectionBody"
        ref={body}
        hidden={!open}
      >
        <FormComponent
          idPrefix="root"
          schema={schema as any}
          formData={data as any}
          validator={validatorAjv8 as any}
          showErrorList={false}
          noHtml5Validate
          compact
          showModifiedFromDefault={false}
          extraErrors={errors as any}
          onBlur={(fieldId: string) => props.onBlur(fieldId)}
          onFocus={() => undefined}
          onChange={e => props.onChange(e.formData as JobSpecJSON)}
          formContext={{ defaultFormData: {} }}
          uiSchema={uiSchema}
        />
      </div>
    </section>
  );
}

/** The section's part of the JobSpec schema, and its rjsf ui schema (field order, placeholders). */
function useSectionSchema(
  section: IFormSection,
  whole: Record<string, any>
): { schema: Record<string, any>; uiSchema: Record<string, unknown> } {
  const { schema, order } = React.useMemo(
    () => sectionSchema(section.fields, whole),
    [section, whole]
  );
  const uiSchema = React.useMemo(() => {
    const ui: Record<string, unknown> = {
      'ui:submitButtonOptions': { norender: true },
      'ui:order': [...order, '*']
    };
    for (const f of section.fields) {
      if (UI_SCHEMA_FIELDS[f]) {
        ui[f] = UI_SCHEMA_FIELDS[f];
      }
    }
    return ui;
  }, [order, section]);
  return { schema, uiSchema };
}

/** The spec's values and errors of the section's fields. */
function sectionPart(
  section: IFormSection,
  spec: JobSpecJSON,
  allErrors: Record<string, any>
): { data: JobSpecJSON; errors: Record<string, any> } {
  const data: JobSpecJSON = {};
  const errors: Record<string, any> = {};
  for (const f of section.fields) {
    if (spec[f] !== undefined) {
      data[f] = spec[f];
    }
    if (allErrors[f]) {
      errors[f] = allErrors[f];
    }
  }
  return { data, errors };
}

/** Compact templates draw each field's title as text, not a <label>: name each control by it. */
function useControlLabels(body: React.RefObject<HTMLDivElement>): void {
  React.useEffect(() => {
    body.current
      ?.querySelectorAll<HTMLElement>('.jp-FormGroup-contentCompact')
      .forEach(group => {
        const title = group.querySelector(
          ':scope > .jp-FormGroup-compactTitle > .jp-FormGroup-fieldLabel'
        );
        const control = group.querySelector<HTMLElement>(
          ':scope > .jp-inputFieldWrapper input, :scope > .jp-inputFieldWrapper select, :scope > .jp-inputFieldWrapper textarea'
        );
        if (
          title?.textContent &&
          control &&
          !control.hasAttribute('aria-label')
        ) {
          control.setAttribute('aria-label', title.textContent);
        }
      });
  });
}
