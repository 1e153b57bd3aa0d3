/**
 * CSV export as the platform's guides define it: every field quoted with `quote`, and inside a quoted
 * field both the quote character and the escape character itself are preceded by `escape`.
 */
export interface ICsvOptions {
  quote?: string;
  escape?: string;
  separator?: string;
}

export function csvField(value: unknown, options: ICsvOptions = {}): string {
  const quote = options.quote ?? '"';
  const escape = options.escape ?? '\\';
  const text = value === null || value === undefined ? '' : String(value);
  let out = '';
  for (const ch of text) {
    if (ch === escape || ch === quote) {
      out += escape;
    }
    out += ch;
  }
  return quote + out + quote;
}

export function csvRow(values: unknown[], options: ICsvOptions = {}): string {
  return values.map(v => csvField(v, options)).join(options.separator ?? ',');
}

export function toCsv(
  header: string[],
  rows: unknown[][],
  options: ICsvOptions = {}
): string {
  const lines = [csvRow(header, options)];
  for (const row of rows) {
    lines.push(csvRow(row, options));
  }
  return lines.join('\r\n') + '\r\n';
}
