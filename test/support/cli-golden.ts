// SPDX-License-Identifier: MIT
// The golden cases of `cudakit bench`: the command lines of scripts/gpu-check.sh's cli step (with the quick preset),
// each with the goldens of test/golden/ that its output must match. test/gpu/cli.test.ts runs them on a GPU,
// test/unit/eval-cli.test.ts over the captured reports, test/unit/eval-golden.test.ts holds the captured output to the
// same goldens, and test/unit/cli.test.ts maps the --compare line to its job. Run from the repository root, so that
// the reference labels read 'saxpy in examples/cuda/saxpy.cu' as the goldens do.
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { type Shape, jsonShape, outputLines, shapeDiff } from '../golden/shape.js';
import type { CliRun } from './cli.js';

/** saxpy's arguments over 16M floats, as --arg flags. */
export const SAXPY_16M_ARGS: readonly string[] = [
  '--arg',
  'f32=2.5',
  '--arg',
  'ptr:f32[16M]=uniform(-1,1)',
  '--arg',
  'ptr:f32[16M]=uniform(-1,1):out',
  '--arg',
  'i32=16777216',
];

export interface GoldenCase {
  /** The goldens' name in test/golden/: <name>.shape.json for --json, <name>.<stream>.txt for the printed lines. */
  name: string;
  /** The command line, without --json (each test gives its own file). */
  argv: readonly string[];
  /** The exit status. */
  code: number;
  /** Where the golden lines are printed; the other stream stays empty. */
  stream: 'stdout' | 'stderr';
}

/** A spec file checked against its JavaScript reference and timed. */
const SPEC: GoldenCase = {
  name: 'saxpy-spec',
  argv: ['bench', 'examples/saxpy.bench.ts', '--preset', 'quick'],
  code: 0,
  stream: 'stdout',
};

/** A four-per-thread saxpy against the plain one: checked against it, then a speedup and a verdict. */
const COMPARE: GoldenCase = {
  name: 'compare',
  argv: [
    'bench',
    'examples/cuda/saxpy_vec4.cu',
    '--kernel',
    'saxpy',
    ...SAXPY_16M_ARGS,
    '--grid',
    '4096',
    '--block',
    '1024',
    '--compare',
    'examples/cuda/saxpy.cu',
    '--compare-grid',
    '65536',
    '--compare-block',
    '256',
    '--bytes',
    '12*16M',
    '--preset',
    'quick',
  ],
  code: 0,
  stream: 'stdout',
};

/** A saxpy that skips its last element, against the right one: exit 1 before any timing. */
const REF_FAIL: GoldenCase = {
  name: 'ref-fail',
  argv: [
    'bench',
    'examples/cuda/saxpy_wrong.cu',
    '--kernel',
    'saxpy',
    ...SAXPY_16M_ARGS,
    '--grid',
    '65536',
    '--block',
    '256',
    '--ref',
    'examples/cuda/saxpy.cu',
  ],
  code: 1,
  stream: 'stderr',
};

export const GOLDEN = { spec: SPEC, compare: COMPARE, refFail: REF_FAIL } as const;
export const GOLDEN_CASES: readonly GoldenCase[] = Object.values(GOLDEN);

const GOLDEN_DIR = new URL('../golden/', import.meta.url);

/** A file of test/golden/ ('compare.shape.json', 'captured/compare.json'). */
export const golden = (name: string): string => readFileSync(new URL(name, GOLDEN_DIR), 'utf8');
/** A golden text file's lines, without the last newline. */
export const goldenLines = (name: string): string[] => golden(name).replace(/\n$/, '').split('\n');

/**
 * The case's run matches its goldens: its exit status, its golden lines on its stream and nothing on the other, and
 * the --json it wrote to `json` of the golden shape.
 */
export function expectGolden(c: GoldenCase, r: CliRun, json: string): void {
  expect(r[c.stream === 'stdout' ? 'stderr' : 'stdout']).toBe('');
  expect(r.code).toBe(c.code);
  expect(outputLines(r[c.stream])).toEqual(goldenLines(`${c.name}.${c.stream}.txt`));
  const shape = JSON.parse(golden(`${c.name}.shape.json`)) as Shape;
  expect(shapeDiff(jsonShape(JSON.parse(readFileSync(json, 'utf8'))), shape)).toEqual([]);
}
