// SPDX-License-Identifier: MIT
// Reading the imports of the repository's TypeScript files, as text: what the layer rules (layers.test.ts) and the
// house rules on cycles (house.test.ts) are checked on.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

export const root = normalize(join(new URL('.', import.meta.url).pathname, '../..'));

/** The TypeScript files under `dir` (declaration files left out), relative to the repository root. */
export function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|mts)$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => relative(root, join(e.parentPath, e.name)));
}

export interface Import {
  file: string;
  line: number;
  /** The specifier as written. */
  spec: string;
  /** For a relative specifier: the imported file, relative to the repository root, with .ts for .js. */
  target: string | undefined;
  /**
   * `import type` or `export type`: nothing of it is left at run time. Not `import { type A }`, which
   * verbatimModuleSyntax keeps as an import of the module.
   */
  typeOnly: boolean;
}

/** Static imports and re-exports (`import ... from`, `export ... from`, `import('...')`), type-only ones included. */
export function importsOf(file: string, text: string): Import[] {
  const out: Import[] = [];
  const re = new RegExp(
    /(?:^|\n)\s*((?:import|export)\b[^'"]*?)\bfrom\s*['"]([^'"]+)['"]|/.source +
      /(?:^|\n)\s*import\s*['"]([^'"]+)['"]|/.source +
      /\bimport\(\s*['"]([^'"]+)['"]\s*\)/.source,
    'g',
  );
  for (const m of text.matchAll(re)) {
    const spec = (m[2] ?? m[3] ?? m[4])!;
    const line = text.slice(0, m.index + m[0].length).split('\n').length;
    let target = spec.startsWith('.') ? normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts') : undefined;
    // A path that is no file next to this one is code in a string run from the repository root (a child process).
    if (target !== undefined && !existsSync(join(root, target))) target = normalize(spec).replace(/\.js$/, '.ts');
    const typeOnly = m[1] !== undefined && /^(?:import|export)\s+type\b/.test(m[1]);
    out.push({ file, line, spec, target, typeOnly });
  }
  return out;
}
