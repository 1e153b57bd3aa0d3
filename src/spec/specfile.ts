/**
 * Job spec files (`*.rtjob.yaml`): YAML of `JobSpec`, read and written here, and the JSON Schema
 * (generated from the Python `JobSpec`, see `ranktable/compose/spec_schema.py`) prepared for the form.
 */
import * as jsyaml from 'js-yaml';
import validatorAjv8 from '@rjsf/validator-ajv8';

import jobSpecSchema from './jobspec.schema.json';

export const SPEC_FILE_EXTENSION = '.rtjob.yaml';
/** The largest spec file the form parses (a spec is a few hundred bytes; this bounds a mistake). */
export const SPEC_MAX_BYTES = 256 * 1024;

export type JobSpecJSON = Record<string, unknown>;

type Schema = Record<string, any>;

/** The generated JSON Schema as shipped (one source with the CLI, OpenAPI and the widget). */
export function jobSpecJsonSchema(): Schema {
  return jobSpecSchema as Schema;
}

/**
 * The schema the form renders: nullable fields become plain ones (an empty value means "not set"),
 * `entry` is inlined as an optional object, and draft-2020 `$schema`/`$id` are dropped for the validator.
 */
export function formSchema(): Schema {
  const src = jobSpecJsonSchema();
  const defs: Schema = src.$defs ?? {};
  const properties: Schema = {};
  for (const [name, prop] of Object.entries<Schema>(src.properties)) {
    const p: Schema = { ...prop };
    if (Array.isArray(p.anyOf)) {
      const ref = p.anyOf.find((a: Schema) => a.$ref);
      delete p.anyOf;
      Object.assign(p, { ...ref });
    }
    if (Array.isArray(p.type)) {
      p.type = p.type.find((t: string) => t !== 'null');
    }
    delete p['x-cli'];
    delete p['x-group'];
    properties[name] = p;
  }
  // Arguments are one line, split by the server as a shell does (`--steps 300` is two arguments)
  const entry = defs.EntryPoint;
  const argsField = entry?.properties?.args;
  const formDefs: Schema = entry
    ? {
        ...defs,
        EntryPoint: {
          ...entry,
          properties: {
            ...entry.properties,
            args: {
              ...argsField,
              type: 'string',
              items: undefined,
              description:
                'one line, split as a shell does: --steps 300 is two arguments'
            }
          }
        }
      }
    : defs;
  const out: Schema = {
    type: 'object',
    title: src.title,
    required: src.required,
    properties,
    $defs: formDefs,
    definitions: formDefs
  };
  return JSON.parse(
    JSON.stringify(out).replace(/#\/\$defs\//g, '#/definitions/')
  );
}

export interface IFormSection {
  title: string;
  fields: string[];
}

/**
 * The form's sections in order, each with its fields in the spec's order: from the schema's `x-groups`
 * and each property's `x-group` (the field info declared on the Python `JobSpec`).
 */
export function formSections(
  schema: Schema = jobSpecJsonSchema()
): IFormSection[] {
  const titles: string[] = schema['x-groups'] ?? [];
  const props = Object.entries<Schema>(schema.properties ?? {});
  return titles
    .map(title => ({
      title,
      fields: props.filter(([, p]) => p['x-group'] === title).map(([n]) => n)
    }))
    .filter(section => section.fields.length > 0);
}

const SHELL_SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** One word as a shell reads it back unchanged (Python's `shlex.quote`). */
export function shellQuote(word: string): string {
  if (word === '') {
    return "''";
  }
  return SHELL_SAFE.test(word) ? word : `'${word.replace(/'/g, `'"'"'`)}'`;
}

/** argv as the one line the form shows (Python's `shlex.join`; the server splits it back). */
export function shellLine(argv: string[]): string {
  return argv.map(shellQuote).join(' ');
}

/** The spec as the form shows it: a list of arguments as its one line. */
export function formSpec(spec: JobSpecJSON): JobSpecJSON {
  const entry = spec.entry as { args?: unknown } | null | undefined;
  if (entry && Array.isArray(entry.args)) {
    return { ...spec, entry: { ...entry, args: shellLine(entry.args) } };
  }
  return spec;
}

/** The arguments the job's script gets, as the server split them (its normalised spec). */
export function entryArgv(
  spec: JobSpecJSON | null | undefined
): string[] | null {
  const entry = spec?.entry as { script?: string; args?: unknown } | null;
  if (!entry?.script || !Array.isArray(entry.args)) {
    return null;
  }
  return [entry.script, ...entry.args.map(String)];
}

/** Every field the schema declares (what each surface must offer). */
export function schemaFields(): string[] {
  return Object.keys(jobSpecJsonSchema().properties);
}

function isEmpty(v: unknown): boolean {
  return (
    v === undefined ||
    v === null ||
    v === '' ||
    (Array.isArray(v) && v.length === 0) ||
    (typeof v === 'object' &&
      !Array.isArray(v) &&
      Object.keys(v as object).length === 0)
  );
}

/**
 * The spec as stored: fields equal to their default (or empty) are left out so files stay short and
 * diff well; an entry point without a script is no entry point.
 */
export function compactSpec(spec: JobSpecJSON): JobSpecJSON {
  const props = jobSpecJsonSchema().properties as Schema;
  const out: JobSpecJSON = {};
  for (const [key, value] of Object.entries(spec)) {
    if (key === 'entry') {
      const entry = value as { script?: string } | null;
      if (entry && entry.script) {
        out.entry = entry;
      }
      continue;
    }
    const def = props[key]?.default;
    if (
      key !== 'name' &&
      key !== 'image' &&
      (isEmpty(value) || JSON.stringify(value) === JSON.stringify(def))
    ) {
      continue;
    }
    out[key] = value;
  }
  return out;
}

export function specToText(spec: JobSpecJSON): string {
  return jsyaml.dump(compactSpec(spec), { lineWidth: -1, noRefs: true });
}

/** Parse a spec file; errors say what is wrong and where (line), never throw. */
export function parseSpecText(
  text: string
): { spec: JobSpecJSON } | { error: string } {
  if (text.length > SPEC_MAX_BYTES) {
    return {
      error: `the file is larger than ${SPEC_MAX_BYTES / 1024} KiB (the limit for a job spec)`
    };
  }
  let data: unknown;
  try {
    data = jsyaml.load(text, { schema: jsyaml.CORE_SCHEMA }) ?? {};
  } catch (e) {
    return { error: (e as Error).message.split('\n')[0] };
  }
  if (typeof data !== 'object' || Array.isArray(data) || data === null) {
    return {
      error: 'expected a mapping of JobSpec fields (name: ..., image: ...)'
    };
  }
  const known = new Set(schemaFields());
  const unknown = Object.keys(data as object).filter(k => !known.has(k));
  if (unknown.length) {
    return {
      error: `unknown field(s) ${unknown.join(', ')}; use only: ${Array.from(known).join(', ')}`
    };
  }
  return { spec: data as JobSpecJSON };
}

/** What a new job starts from: the last job's image and the profile's shared folder (both may be unknown). */
export interface INewSpecDefaults {
  image?: string;
  /** the instance folder the pods mount too (a profile's `shared.instance_path`) */
  shared?: string;
}

/**
 * The defaults of a new job: the image of the newest job that names one, and the first profile's shared
 * folder (where sync puts the code, seen by the pods at the same path).
 */
export function newSpecDefaults(
  jobs: { image?: string; created?: string | null }[],
  profiles: { shared?: { instance_path: string } | null }[]
): INewSpecDefaults {
  const newest = [...jobs]
    .filter(j => j.image)
    .sort((a, b) =>
      String(b.created ?? '').localeCompare(String(a.created ?? ''))
    )[0];
  const shared = profiles.find(p => p.shared?.instance_path)?.shared;
  return { image: newest?.image, shared: shared?.instance_path };
}

/**
 * A new spec file's text: the required fields, from the last job's image and with the script in the
 * shared folder, so the form opens without an issue it made itself (an unknown image is left to fill in).
 */
export function newSpecText(
  name = 'my-job',
  defaults: INewSpecDefaults = {}
): string {
  const folder = (defaults.shared ?? '/home/ma-user/work').replace(/\/+$/, '');
  return specToText({
    name,
    image: defaults.image ?? '',
    nodes: 2,
    npus_per_node: 8,
    entry: { script: `${folder}/train.py`, args: [] }
  });
}

/** The top-level field a dotted issue path names (`entry.script` -> `entry`). */
export function topField(path: string | null | undefined): string {
  return (path ?? '').replace(/^spec\.?/, '').split(/[.[]/)[0];
}

/**
 * Fields still to fill in: required ones that are empty. Their issues are not news before the user typed
 * anything (a new job leaves the image empty when no job named one yet).
 */
export function emptyRequired(spec: JobSpecJSON): string[] {
  const required: string[] = jobSpecJsonSchema().required ?? [];
  return required.filter(name => isEmpty(spec[name]));
}

/** The schema one form section renders: its fields only (required first), sharing the definitions. */
export function sectionSchema(
  fields: string[],
  schema: Schema = formSchema()
): { schema: Schema; order: string[] } {
  const required = (schema.required ?? []).filter((f: string) =>
    fields.includes(f)
  );
  const properties: Schema = {};
  for (const f of fields) {
    properties[f] = schema.properties[f];
  }
  return {
    schema: {
      type: 'object',
      required,
      properties,
      definitions: schema.definitions
    },
    order: [...required, ...fields.filter(f => !required.includes(f))]
  };
}

export interface ISpecError {
  /** dotted field path, e.g. `name`, `entry.script`, `volumes.0.kind` */
  path: string;
  message: string;
}

/**
 * The schema's verdict on a spec, per field. Strings still holding a `${param}` are not judged (their
 * value is only known at submit time).
 */
export function validateSpec(spec: JobSpecJSON): ISpecError[] {
  const schema = formSchema();
  const { errors } = validatorAjv8.validateFormData(
    formSpec(spec),
    schema as any
  );
  const out: ISpecError[] = [];
  for (const e of errors) {
    const path = (e.property ?? '').replace(/^\./, '');
    const value = path
      .split('.')
      .reduce<any>((v, k) => (v === null || v === undefined ? v : v[k]), spec);
    if (typeof value === 'string' && value.includes('${')) {
      continue;
    }
    out.push({ path, message: e.message ?? 'is not valid' });
  }
  return out;
}
