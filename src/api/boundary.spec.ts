/// <reference types="node" />
/**
 * The eslint rule that keeps views off the server: a view importing request, stream or the client fails
 * lint, a model importing the client passes, and the sources as they are pass.
 */
import { execFileSync } from 'child_process';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '..', '..');
const ESLINT = path.join(ROOT, 'node_modules', '.bin', 'eslint');

/** Lint `text` as if it were the file `file`; the errors' messages (none: it passes). */
function lint(file: string, text: string): string[] {
  try {
    execFileSync(
      ESLINT,
      ['--format', 'json', '--stdin', '--stdin-filename', file],
      { cwd: ROOT, input: text, encoding: 'utf8' }
    );
    return [];
  } catch (e: any) {
    const results = JSON.parse(e.stdout) as {
      messages: { ruleId: string; message: string }[];
    }[];
    return results.flatMap(r =>
      r.messages.map(m => `${m.ruleId}: ${m.message}`)
    );
  }
}

const RULE = '@typescript-eslint/no-restricted-imports';

describe('views stay off the server (eslint no-restricted-imports)', () => {
  it.each([
    ["import { postJSON } from '../api/request';", 'src/sync/view.tsx'],
    ["import { StreamClient } from '../api/stream';", 'src/logs/view.tsx'],
    ["import { get } from '../api/client';", 'src/connections/view.tsx'],
    ["import { requestAPI } from '../api/request';", 'src/jobs/model.ts']
  ])(
    '%s in %s fails',
    (line, file) => {
      const errors = lint(
        file,
        `${line}\nexport const used = [${line.split(/[{}]/)[1]}];\n`
      );
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(RULE);
    },
    60000
  );

  it('a model may use the client, and a view may name its types', () => {
    expect(
      lint(
        'src/jobs/model.ts',
        "import { get } from '../api/client';\nexport const used = get;\n"
      )
    ).toEqual([]);
    expect(
      lint(
        'src/jobview/view.tsx',
        "import type { StreamClient } from '../api/client';\nexport type Used = StreamClient;\n"
      )
    ).toEqual([]);
  }, 60000);
});
