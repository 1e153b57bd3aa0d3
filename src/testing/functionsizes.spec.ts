/// <reference types="node" />
/**
 * No hand-written TypeScript function grows over 80 lines (issue #27), the twin of
 * tests/core/test_function_sizes.py. A function's size is its span, first line to last, comments
 * included; the generated API types (src/api/openapi.ts) are left out. There are no exceptions.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';

const LIMIT = 80;
const SRC = path.resolve(__dirname, '..');
const GENERATED = new Set(['api/openapi.ts']);

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      return sourceFiles(full);
    }
    return /\.tsx?$/.test(entry.name) && !/\.spec\.tsx?$/.test(entry.name)
      ? [full]
      : [];
  });
}

function nameOf(node: ts.Node, source: ts.SourceFile): string {
  const named = node as { name?: ts.Node };
  if (named.name) {
    return named.name.getText(source);
  }
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
    return parent.name.getText(source);
  }
  const line = source.getLineAndCharacterOfPosition(node.getStart(source));
  return `<anonymous at line ${line.line + 1}>`;
}

/** {"file::function": lines} for every function, method and arrow function in `text`. */
export function functionSizes(file: string, text: string): Map<string, number> {
  const source = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS
  );
  const sizes = new Map<string, number>();
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source));
      const last = source.getLineAndCharacterOfPosition(node.getEnd());
      sizes.set(`${file}::${nameOf(node, source)}`, last.line - first.line + 1);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return sizes;
}

function allSizes(): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const full of sourceFiles(SRC)) {
    const file = path.relative(SRC, full).split(path.sep).join('/');
    if (!GENERATED.has(file)) {
      functionSizes(file, fs.readFileSync(full, 'utf8')).forEach(
        (lines, name) => sizes.set(name, Math.max(lines, sizes.get(name) ?? 0))
      );
    }
  }
  return sizes;
}

describe('function sizes', () => {
  it('keeps every hand-written function within the limit', () => {
    const long = [...allSizes()].filter(([, lines]) => lines > LIMIT);
    expect(long).toEqual([]);
  });

  it('measures a long arrow function inside a class method', () => {
    const body = Array.from(
      { length: LIMIT },
      (_, i) => `    const x${i} = ${i};`
    );
    const text = [
      'class A {',
      '  f() {',
      '    const g = () => {',
      ...body,
      '    };',
      '  }',
      '}'
    ];
    const sizes = functionSizes('a.ts', text.join('\n'));
    expect(sizes.get('a.ts::f')).toBe(LIMIT + 4);
    expect(sizes.get('a.ts::g')).toBe(LIMIT + 2);
  });
});
