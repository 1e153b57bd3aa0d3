/**
 * The Compose form <-> JobSpec JSON (`ranktable.jobs.JobSpec.to_dict`). The form holds strings as typed;
 * parsing them here gives immediate, field-local messages, while the server's validation (via
 * `/ranktable/jobs/compose`) stays the authority on what a job may be.
 */
export type JobSpecJSON = Record<string, unknown>;

export interface IFormState {
  name: string;
  namespace: string;
  image: string;
  framework: string;
  mode: 'command' | 'entry';
  command: string;
  script: string;
  args: string;
  nodes: string;
  npus_per_node: string;
  cpu: string;
  memory: string;
  env: string;
  labels: string;
  node_selector: string;
  queue: string;
  max_retry: string;
  routing: boolean;
  flavour: string;
}

export type FormErrors = Partial<Record<keyof IFormState, string>>;

export const SHELL = ['/bin/bash', '-c'];

export function emptyForm(): IFormState {
  return {
    name: '',
    namespace: 'default',
    image: '',
    framework: 'mindspore',
    mode: 'command',
    command: '',
    script: '',
    args: '',
    nodes: '1',
    npus_per_node: '8',
    cpu: '',
    memory: '',
    env: '',
    labels: '',
    node_selector: '',
    queue: 'default',
    max_retry: '3',
    routing: false,
    flavour: ''
  };
}

/** `KEY=VALUE` lines -> object; blank lines and `#` comments ignored. */
export function parsePairs(
  text: string
): { value: Record<string, string> } | { error: string } {
  const value: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line || line.startsWith('#')) {
      continue;
    }
    const eq = line.indexOf('=');
    if (eq <= 0) {
      return { error: `line ${i + 1}: expected KEY=VALUE, got "${line}"` };
    }
    value[line.slice(0, eq).trim()] = line.slice(eq + 1);
  }
  return { value };
}

export function formatPairs(obj: unknown): string {
  if (!obj || typeof obj !== 'object') {
    return '';
  }
  return Object.entries(obj as Record<string, unknown>)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}

function parseInteger(text: string): number | null {
  return /^\s*\d+\s*$/.test(text) ? parseInt(text, 10) : null;
}

/** Split an argument string on whitespace, honouring simple single/double quotes. */
export function splitArgs(text: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const m of text.matchAll(re)) {
    out.push(
      m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3])
    );
  }
  return out;
}

export function formToSpec(form: IFormState): {
  spec: JobSpecJSON;
  errors: FormErrors;
} {
  const errors: FormErrors = {};
  const spec: JobSpecJSON = {
    name: form.name.trim(),
    namespace: form.namespace.trim() || 'default',
    image: form.image.trim(),
    framework: form.framework,
    queue: form.queue.trim() || 'default',
    routing: form.routing
  };
  if (form.flavour.trim()) {
    spec.flavour = form.flavour.trim();
  }
  if (form.mode === 'command') {
    spec.command = form.command.trim() ? [...SHELL, form.command] : [];
  } else {
    spec.command = [];
    spec.entry = { script: form.script.trim(), args: splitArgs(form.args) };
    if (!form.script.trim()) {
      errors.script = 'the entry point script is required';
    }
  }
  for (const key of ['nodes', 'npus_per_node', 'max_retry'] as const) {
    const n = parseInteger(form[key]);
    if (n === null) {
      errors[key] = 'must be a whole number';
    } else {
      spec[key] = n;
    }
  }
  for (const key of ['cpu', 'memory'] as const) {
    if (form[key].trim()) {
      spec[key] = form[key].trim();
    }
  }
  for (const key of ['env', 'labels', 'node_selector'] as const) {
    const parsed = parsePairs(form[key]);
    if ('error' in parsed) {
      errors[key] = parsed.error;
    } else {
      spec[key] = parsed.value;
    }
  }
  return { spec, errors };
}

export function specToForm(spec: JobSpecJSON): IFormState {
  const form = emptyForm();
  const str = (v: unknown, d = ''): string =>
    v === null || v === undefined ? d : String(v);
  form.name = str(spec.name);
  form.namespace = str(spec.namespace, 'default');
  form.image = str(spec.image);
  form.framework = str(spec.framework, 'mindspore');
  form.nodes = str(spec.nodes, '1');
  form.npus_per_node = str(spec.npus_per_node, '8');
  form.cpu = str(spec.cpu);
  form.memory = str(spec.memory);
  form.queue = str(spec.queue, 'default');
  form.max_retry = str(spec.max_retry, '3');
  form.routing = Boolean(spec.routing);
  form.flavour = str(spec.flavour);
  form.env = formatPairs(spec.env);
  form.labels = formatPairs(spec.labels);
  form.node_selector = formatPairs(spec.node_selector);
  const entry = spec.entry as { script?: string; args?: string[] } | null;
  if (entry && entry.script) {
    form.mode = 'entry';
    form.script = entry.script;
    form.args = (entry.args ?? [])
      .map(a => (/\s|"/.test(a) ? JSON.stringify(a) : a))
      .join(' ');
  } else {
    const command = (spec.command as string[] | undefined) ?? [];
    form.mode = 'command';
    if (
      command.length === 3 &&
      command[0] === SHELL[0] &&
      command[1] === SHELL[1]
    ) {
      form.command = command[2];
    } else {
      form.command = command.join(' ');
    }
  }
  return form;
}

/** The form field a server issue path (`spec.env.FOO`, `spec.volumes[0].name`) belongs to. */
export function fieldOfIssue(path: string | null | undefined): string {
  if (!path) {
    return '';
  }
  const rest = path.replace(/^spec\./, '');
  const head = rest.split(/[.[]/)[0];
  if (head === 'entry') {
    return rest.includes('args') ? 'args' : 'script';
  }
  if (head === 'secret_env') {
    return 'env';
  }
  return head;
}
