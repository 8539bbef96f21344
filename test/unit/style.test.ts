// SPDX-License-Identifier: MIT
// Line length: every line of the sources is at most 120 columns, the width Prettier (TypeScript) and clang-format
// (native/) format to. Neither wraps comments, long strings or template literals, and neither formats the shell
// scripts or bench/native/baseline.c, so this test checks what they leave. Columns are characters (code points, not
// bytes: '…', '×' and 'µ' are one column each). A long line fails here, named with its file, line and length.
import { readFileSync, readdirSync } from 'node:fs';
import { join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = normalize(join(new URL('.', import.meta.url).pathname, '../..'));

export const MAX_COLUMNS = 120;

/** The folders checked, each with the file types checked in it. */
const CHECKED: [dir: string, types: RegExp][] = [
  ['lib', /\.(ts|mts|sh|c)$/],
  ['test', /\.(ts|mts|sh|c)$/],
  ['bench', /\.(ts|mts|sh|c)$/],
  ['examples', /\.(ts|mts|sh|c)$/],
  ['scripts', /\.(ts|mts|sh|c)$/],
  ['native', /\.(cc|h)$/],
  ['server', /\.(ts|mts|mjs|sh)$/],
];

// Nothing in these folders is excluded. test/golden/captured/ holds the CLI's output as captured (.txt, .json), whose
// lines are as long as the CLI writes them; those files are data, not among the types checked, so they need no
// exclusion (test/golden/shape.ts, code, is checked). Skipped: folders of installed or built files, not sources.
const SKIPPED = /(^|\/)(node_modules|dist|bench\/native\/out)(\/|$)/;

function sourceFiles(): string[] {
  return CHECKED.flatMap(([dir, types]) =>
    readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile() && types.test(e.name))
      .map((e) => relative(root, join(e.parentPath, e.name)))
      .filter((file) => !SKIPPED.test(file)),
  ).sort();
}

/**
 * 'file:line: N columns' for each line of `text` longer than `max` columns (code points; the CR of a CRLF line end is
 * not counted).
 */
export function longLines(file: string, text: string, max = MAX_COLUMNS): string[] {
  return text.split('\n').flatMap((line, i) => {
    const columns = [...line.replace(/\r$/, '')].length;
    return columns > max ? [`${file}:${i + 1}: ${columns} columns (at most ${max})`] : [];
  });
}

describe('line length', () => {
  it('counts columns as code points, not bytes or UTF-16 units', () => {
    expect(longLines('x.ts', '…'.repeat(120))).toEqual([]);
    expect(longLines('x.ts', '𝑥'.repeat(120))).toEqual([]); // two UTF-16 units each
    expect(longLines('x.ts', 'a'.repeat(120) + '\r\n')).toEqual([]);
    expect(longLines('x.ts', `ok\n${'µ'.repeat(121)}\nok`)).toEqual(['x.ts:2: 121 columns (at most 120)']);
  });

  it('keeps every line of lib/, test/, bench/, examples/, scripts/, native/ and server/ within 120 columns', () => {
    const files = sourceFiles();
    for (const [dir] of CHECKED)
      expect(
        files.some((f) => f.startsWith(`${dir}/`)),
        dir,
      ).toBe(true);
    expect(files).toContain('scripts/gpu-check.sh');
    expect(files).toContain('bench/native/baseline.c');
    expect(files.flatMap((file) => longLines(file, readFileSync(join(root, file), 'utf8')))).toEqual([]);
  });
});
