// SPDX-License-Identifier: MIT
// Problems with cases in the registry (server/src/submit/problem-cases.ts, problem-files.ts): the shipped set loads,
// each kernel's source file is read in at load (inside its folder only, links included), a JavaScript reference may
// stand in for the reference kernel, and every folder that cannot be served stops the start with its name and fault.
import { readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidJobError } from 'cudakit';
import { afterEach, describe, expect, it } from 'vitest';
import { ProblemRegistry, ProblemRegistryError } from '../../src/submit/problems.js';
import { ADD, ADD_PROBLEM, registry as makeRegistry } from '../support/cases-problem.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const registry = (files: Record<string, string | object>): string => makeRegistry(files, dirs);

/** The problem set the server ships. */
const SHIPPED_DIR = fileURLToPath(new URL('../../problems', import.meta.url));

const SINGLE = {
  'fill/problem.json': { args: ['y@ptr:f32[32]:out', 'n@i32=32'] },
  'fill/reference.mjs': 'export const reference = ([y]) => y.fill(1);\n',
};

describe('problems with cases in the registry', () => {
  it('loads the shipped set, every kernel source read in', () => {
    const problems = ProblemRegistry.load(SHIPPED_DIR);
    const folders = readdirSync(SHIPPED_DIR, { withFileTypes: true }).filter((e) => e.isDirectory());
    expect(problems.namesWithCases()).toEqual(folders.map((e) => e.name).sort());
    const vectorAdd = problems.withCases('vector-add')!;
    expect(vectorAdd.reference?.source).toEqual({
      text: readFileSync(join(SHIPPED_DIR, 'vector-add', 'reference.cu'), 'utf8'),
      name: 'reference.cu',
    });
    expect(problems.modulePath('vector-add')).toBeUndefined();
  });

  it('keeps the single-shape problems beside them as they were, and hands out copies', () => {
    const problems = ProblemRegistry.load(
      registry({ ...SINGLE, 'add/problem.json': ADD_PROBLEM, 'add/reference.cu': ADD }),
    );
    expect(problems.size).toBe(2);
    expect(problems.namesWithCases()).toEqual(['add']);
    expect(problems.withCases('fill')).toBeUndefined();
    const add = problems.withCases('add')!;
    expect(add.reference).toEqual({ ...ADD_PROBLEM.reference, source: { text: ADD, name: 'reference.cu' } });
    expect(add.cases).toEqual(ADD_PROBLEM.cases);
    add.cases = [];
    expect(problems.withCases('add')!.cases).toHaveLength(4);
    // A single-shape job naming it is told how to submit to it.
    const job = { source: 'x', kernel: 'k', grid: 1, block: 1, reference: { problem: 'add' } };
    const e = (() => {
      try {
        problems.expand(job);
      } catch (err) {
        return err as InvalidJobError;
      }
    })();
    expect(e).toBeInstanceOf(InvalidJobError);
    expect(e!.problems[0]!.message).toContain("received 'add', a problem with cases (submit it as { problem: 'add'");
  });

  it('takes a JavaScript reference in place of the reference kernel, with a baseline to score against', () => {
    const { reference, ...rest } = ADD_PROBLEM;
    const dir = registry({
      'add/problem.json': { ...rest, baseline: { ...reference, source: { file: 'kernels/base.cu' } } },
      'add/kernels/base.cu': ADD,
      'add/reference.mjs':
        'export const reference = ([a, b, c, n]) => { for (let i = 0; i < n; i++) c[i] = a[i] + b[i]; };\n',
    });
    const problems = ProblemRegistry.load(dir);
    expect(problems.modulePath('add')).toBe(join(dir, 'add', 'reference.mjs'));
    expect(problems.withCases('add')!.baseline?.source).toEqual({ text: ADD, name: 'kernels/base.cu' });
  });

  const { reference: _reference, ...unreferenced } = ADD_PROBLEM;
  it.each([
    [{ 'add/problem.json': { ...ADD_PROBLEM, name: 'other' }, 'add/reference.cu': ADD }, "problem.json names 'other'"],
    [
      { 'add/problem.json': { ...ADD_PROBLEM, reference: { ...ADD_PROBLEM.reference, source: { file: '../x.cu' } } } },
      "reference.source.file '../x.cu' is outside the folder",
    ],
    [{ 'add/problem.json': ADD_PROBLEM }, "reference.source.file 'reference.cu' does not exist"],
    [
      { 'add/problem.json': { ...ADD_PROBLEM, cases: [{ dims: { n: 1 << 21 } }] }, 'add/reference.cu': ADD },
      'Expected an integer in [1, 1048576] for problem.cases[0].dims.n but received 2097152',
    ],
    [
      { 'add/problem.json': ADD_PROBLEM, 'add/reference.cu': ADD, 'add/reference.mjs': 'export const reference = 1;' },
      'both a reference kernel in problem.json and',
    ],
    [{ 'add/problem.json': unreferenced }, 'no kernel to score against'],
    [
      { 'add/problem.json': { ...unreferenced, baseline: { ...ADD_PROBLEM.reference, source: ADD } } },
      'no reference to check against',
    ],
  ])('refuses a folder that cannot be served (%#), naming it and its fault', (files, expected) => {
    const dir = registry(files as Record<string, string | object>);
    expect(() => ProblemRegistry.load(dir)).toThrow(ProblemRegistryError);
    expect(() => ProblemRegistry.load(dir)).toThrow(`Problem 'add' (${join(dir, 'add', 'problem.json')}): `);
    expect(() => ProblemRegistry.load(dir)).toThrow(expected);
  });

  it('refuses a source that links outside its folder', () => {
    const secret = registry({ 'secret.cu': ADD });
    const dir = registry({ 'add/problem.json': ADD_PROBLEM });
    symlinkSync(join(secret, 'secret.cu'), join(dir, 'add', 'reference.cu'));
    expect(() => ProblemRegistry.load(dir)).toThrow("reference.source.file 'reference.cu' links outside the folder");
  });
});
