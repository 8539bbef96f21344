// SPDX-License-Identifier: MIT
// The layers of lib/ (CONTRIBUTING.md): every import in lib/, bench/ and examples/ goes down the stack, never up or
// sideways into another layer's internals. A back-edge fails here, named with its file and line.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Import, filesUnder, importsOf, root } from './imports.js';

const LAYERS = ['core', 'measure', 'eval', 'cli'] as const;
type Layer = (typeof LAYERS)[number];
const layerOf = (path: string): Layer | undefined => LAYERS.find((l) => path.startsWith(`lib/${l}/`));

/** What a file in `from` may import (relative targets), besides `node:*`. */
function allowed(from: string, imp: Import): boolean {
  const t = imp.target;
  if (t === undefined) {
    if (imp.spec.startsWith('node:')) return true;
    // Packages: the CLI may load tsx (spec files); core loads the addon through node-gyp-build at run time.
    return layerOf(from) === 'cli' && imp.spec === 'tsx/esm/api';
  }
  const fromLayer = layerOf(from);
  const toLayer = layerOf(t);
  if (from === 'lib/index.ts') return ['lib/core/index.ts', 'lib/measure/index.ts', 'lib/eval/index.ts'].includes(t);
  switch (fromLayer) {
    case 'core':
      return toLayer === 'core';
    case 'measure':
      return toLayer === 'measure' || t === 'lib/core/index.ts' || t === 'lib/core/sampler.ts';
    case 'eval':
      return toLayer === 'eval' || t === 'lib/core/index.ts' || t === 'lib/measure/index.ts';
    case 'cli':
      return toLayer === 'cli' || t === 'lib/eval/index.ts' || t === 'lib/index.ts';
    default:
      // bench/ and examples/: the package root, and their own folder's helpers.
      return t === 'lib/index.ts' || (!t.startsWith('lib/') && dirname(t) === dirname(from));
  }
}

describe('layers', () => {
  const files = [...filesUnder('lib'), ...filesUnder('bench'), ...filesUnder('examples')];

  it('lib/ is the four layers and the package root', () => {
    const top = readdirSync(join(root, 'lib')).sort();
    expect(top).toEqual(['cli', 'core', 'eval', 'index.ts', 'measure']);
    for (const layer of ['core', 'measure', 'eval']) expect(files).toContain(`lib/${layer}/index.ts`);
  });

  it('every import goes down the stack', () => {
    const backEdges: string[] = [];
    for (const file of files) {
      for (const imp of importsOf(file, readFileSync(join(root, file), 'utf8'))) {
        if (!allowed(file, imp)) backEdges.push(`${file}:${imp.line} imports ${imp.spec}`);
      }
    }
    expect(backEdges).toEqual([]);
  });

  it('reads imports the way the rule needs', () => {
    const text =
      "import { a } from './stats.js';\nimport type { B } from '../core/kernel.js';\n" +
      "export { c } from './format.js';\nimport 'node:fs';\nconst m = await import('../cli/main.js');\n" +
      "run(`\n  import { x } from './lib/index.ts';`);\n";
    expect(importsOf('lib/measure/bench.ts', text).map((i) => `${i.line} ${i.target ?? i.spec}`)).toEqual([
      '1 lib/measure/stats.ts',
      '2 lib/core/kernel.ts',
      '3 lib/measure/format.ts',
      '4 node:fs',
      '5 lib/cli/main.ts',
      '7 lib/index.ts',
    ]);
    expect(
      allowed('lib/measure/bench.ts', importsOf('lib/measure/bench.ts', "import { k } from '../core/kernel.js';")[0]!),
    ).toBe(false);
    expect(
      allowed(
        'lib/core/device.ts',
        importsOf('lib/core/device.ts', "import { bench } from '../measure/index.js';")[0]!,
      ),
    ).toBe(false);
    expect(
      allowed('examples/x.ts', importsOf('examples/x.ts', "import { bench } from '../lib/measure/bench.js';")[0]!),
    ).toBe(false);
    expect(allowed('examples/x.ts', importsOf('examples/x.ts', "import { bench } from '../lib/index.js';")[0]!)).toBe(
      true,
    );
  });
});
