// SPDX-License-Identifier: MIT
// The package's types stand alone: a project without @types/node (`types: []`, no DOM library) that imports cudakit
// type-checks with skipLibCheck off, so no shipped .d.ts names Buffer, NodeJS.*, AbortSignal or another global that
// only @types/node or the DOM declares. The declarations are emitted afresh from lib/ (as the package's build does)
// into a node_modules/cudakit of a temporary project, so a stale dist/ cannot hide a regression.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, expect, it } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;
let work = '';

/** The diagnostics as `file(line,col): message`, paths relative to the temporary project. */
function format(diagnostics: readonly ts.Diagnostic[]): string[] {
  return diagnostics.map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file === undefined || d.start === undefined) return text;
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${d.file.fileName.replace(`${work}/`, '')}(${line + 1},${character + 1}): ${text}`;
  });
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'cudakit-types-'));
  const pkg = join(work, 'node_modules', 'cudakit');
  mkdirSync(pkg, { recursive: true });
  // The package's exports, as package.json gives them.
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({
      name: 'cudakit',
      type: 'module',
      exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } },
    }),
  );
  const host: ts.ParseConfigFileHost = {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(format([d]).join('\n'));
    },
  };
  const build = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.build.json'),
    { outDir: join(pkg, 'dist'), declaration: true, emitDeclarationOnly: true, declarationMap: false, noEmit: false },
    host,
  )!;
  const emitted = ts.createProgram(build.fileNames, build.options).emit();
  expect(format(emitted.diagnostics)).toEqual([]);
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

it('a project without @types/node type-checks against the package, its .d.ts files included', () => {
  writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'app', type: 'module', private: true }));
  const app = join(work, 'app.ts');
  writeFileSync(
    app,
    `import { type Arch, type EvalReport, Device, Program, evaluate, probe, supportedArchNames } from 'cudakit';
     const p = probe();
     const arch: Arch = supportedArchNames()[0] ?? 'sm_90';
     if (p.ok) {
       const device = Device.get(0);
       using module = device.loadModule(new Program('extern "C" __global__ void k() {}').compile({ arch }));
       module.getKernel('k', []).launch({ grid: 1, block: 1 });
       await device.synchronizeAsync({ timeoutMs: 1000 });
     }
     const report: EvalReport = await evaluate({ source: '', kernel: 'k', grid: 1, block: 1, args: [] });
     export const passed: boolean = report.passed;
    `,
  );
  const program = ts.createProgram([app], {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    // What a Node project without @types/node has: the language's own library, no DOM.
    lib: ['lib.es2023.d.ts', 'lib.esnext.disposable.d.ts'],
    types: [],
    skipLibCheck: false,
    noEmit: true,
  });
  const files = program.getSourceFiles().map((f) => f.fileName);
  expect(files).toContain(join(work, 'node_modules/cudakit/dist/core/native.d.ts')); // the package's types were read
  expect(files.filter((f) => f.includes('@types/node'))).toEqual([]);
  expect(format(ts.getPreEmitDiagnostics(program))).toEqual([]);
});
