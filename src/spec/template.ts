/**
 * Job templates with `${param}` variables: find them, substitute them, and mask secret values in
 * anything shown (YAML preview, saved versions).
 */
export const PARAM_RE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export interface ITemplateParam {
  name: string;
  value: string;
  secret: boolean;
}

export const MASK = '******';

/** Names of the `${param}` variables in `text`, in first-seen order, without duplicates. */
export function templateParams(text: string): string[] {
  const seen: string[] = [];
  for (const match of text.matchAll(PARAM_RE)) {
    if (!seen.includes(match[1])) {
      seen.push(match[1]);
    }
  }
  return seen;
}

export class MissingParamError extends Error {
  constructor(readonly names: string[]) {
    super(`no value for ${names.map(n => '${' + n + '}').join(', ')}`);
  }
}

/**
 * Replace every `${name}` with its value. `$${name}` stays a literal `${name}`. Unknown names are an
 * error (listing all of them) rather than silently left in.
 */
export function substitute(
  text: string,
  params: ITemplateParam[],
  options: { mask?: boolean } = {}
): string {
  const byName = new Map(params.map(p => [p.name, p]));
  const missing: string[] = [];
  const out = text.replace(
    /(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g,
    (whole, dollar: string, name: string) => {
      if (dollar) {
        return whole.slice(1);
      }
      const param = byName.get(name);
      if (!param) {
        if (!missing.includes(name)) {
          missing.push(name);
        }
        return whole;
      }
      return options.mask && param.secret ? MASK : param.value;
    }
  );
  if (missing.length) {
    throw new MissingParamError(missing);
  }
  return out;
}

/** Substitute inside every string of a JSON-like value (the job spec). */
export function substituteDeep<T>(
  value: T,
  params: ITemplateParam[],
  options: { mask?: boolean } = {}
): T {
  if (typeof value === 'string') {
    return substitute(value, params, options) as unknown as T;
  }
  if (Array.isArray(value)) {
    return value.map(v => substituteDeep(v, params, options)) as unknown as T;
  }
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = substituteDeep(v, params, options);
    }
    return out as T;
  }
  return value;
}

/** Hide secret values wherever they occur verbatim in `text` (e.g. YAML built from the real values). */
export function maskSecrets(text: string, params: ITemplateParam[]): string {
  let out = text;
  for (const p of params) {
    if (p.secret && p.value) {
      out = out.split(p.value).join(MASK);
    }
  }
  return out;
}
