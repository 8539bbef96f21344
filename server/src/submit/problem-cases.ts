// SPDX-License-Identifier: MIT
// A problem with cases in the registry: a folder whose problem.json is the library's EvalProblem (lib/eval/problem.ts:
// named dimensions, the arguments and launches over them, public and hidden cases), checked by validateProblem() when
// the registry loads, the source files of its kernels read in (problem-files.ts), so the problem a worker receives
// names no path. A reference.mjs may stand in for the reference kernel as the check's reference; then a baseline
// kernel is what the score is relative to. What GET /v1/problems shows of it never holds a hidden case's name or
// dimensions, only how many there are.
import { type EvalProblem, InvalidProblemError, type ProblemDim, caseName, validateProblem } from 'cudakit';
import { type Fail, isObject, jsReferenceOf, withSourceRead } from './problem-files.js';

/** A dimension's greatest value where its problem gives none: the library's default (lib/eval/problem.ts). */
const DIM_MAX_DEFAULT = 2 ** 31 - 1;

/** A problem with cases as GET /v1/problems shows it. */
export interface CasesProblemInfo {
  name: string;
  description: string;
  kind: 'cases';
  /** The kernel's arguments, sizes over the dimensions. */
  args: unknown[];
  /** What a submission is checked against: a CUDA kernel, a JavaScript module, or every case's expected outputs. */
  reference: 'cuda' | 'javascript' | 'expected';
  /** Every dimension with its bounds. */
  dims: Record<string, { min: number; max: number; description?: string }>;
  /** The public cases: their names and dimensions. */
  cases: { name: string; dims: Record<string, number> }[];
  /** How many hidden cases there are: nothing else of them is shown. */
  hiddenCases: number;
  /** A launch's bytes and flops (the roofline), over the dimensions. */
  bytes?: number | string;
  flops?: number | string;
}

/** A problem with cases as the registry keeps it. */
export interface CasesProblem {
  /** Validated, every source file read into `{ text, name }`. */
  problem: EvalProblem;
  /** Its JavaScript reference module (the worker imports it), or undefined. */
  modulePath: string | undefined;
  info: CasesProblemInfo;
}

/** Whether a problem.json is a problem with cases (the older single-shape problems have no `cases`). */
export function hasCases(spec: Record<string, unknown>): boolean {
  return 'cases' in spec;
}

/**
 * Reads the problem with cases of `folder` (its parsed problem.json `spec`; its folder's name `name`).
 * @throws what `fail` throws, naming what is wrong: the library's every problem, a source outside the folder ...
 */
export function readCasesProblem(
  folder: string,
  name: string,
  spec: Record<string, unknown>,
  fail: Fail,
): CasesProblem {
  if (spec.name !== name) {
    const named = typeof spec.name === 'string' ? `'${spec.name.slice(0, 80)}'` : 'nothing';
    fail(`problem.json names ${named}, its folder '${name}': a problem's name is its folder's`);
  }
  const modulePath = jsReferenceOf(folder);
  if (modulePath !== undefined && spec.reference !== undefined) {
    fail(
      `both a reference kernel in problem.json and ${modulePath}: keep one (a kernel to time against is a baseline)`,
    );
  }
  const read: Record<string, unknown> = { ...spec };
  for (const key of ['reference', 'baseline'] as const) {
    if (spec[key] !== undefined) read[key] = withSourceRead(folder, spec[key], key, fail);
  }
  const check = isObject(spec.check) ? spec.check : undefined;
  if (check !== undefined && isObject(check.precision) && check.precision.reference !== undefined) {
    const reference = withSourceRead(folder, check.precision.reference, 'check.precision.reference', fail);
    read.check = { ...check, precision: { ...check.precision, reference } };
  }
  let problem: EvalProblem;
  try {
    problem = validateProblem(read);
  } catch (e) {
    if (e instanceof InvalidProblemError) fail(e.problems.map((p) => p.message).join('; '));
    throw e;
  }
  if (problem.reference === undefined && problem.baseline === undefined) {
    fail('no kernel to score against: give problem.json a reference or a baseline kernel');
  }
  const expected = problem.cases.every((c) => c.expected !== undefined);
  if (problem.reference === undefined && modulePath === undefined && !expected) {
    fail('no reference to check against: a reference kernel, a reference.mjs, or expected outputs in every case');
  }
  const reference = problem.reference !== undefined ? 'cuda' : modulePath !== undefined ? 'javascript' : 'expected';
  return { problem, modulePath, info: infoOf(problem, reference) };
}

function infoOf(p: EvalProblem, reference: CasesProblemInfo['reference']): CasesProblemInfo {
  const declared: [string, ProblemDim][] = Array.isArray(p.dims)
    ? (p.dims as readonly string[]).map((n) => [n, {}])
    : Object.entries(p.dims as Readonly<Record<string, ProblemDim>>);
  const dims = Object.fromEntries(
    declared.map(([n, d]) => [
      n,
      {
        min: d.min ?? 1,
        max: d.max ?? DIM_MAX_DEFAULT,
        ...(d.description === undefined ? {} : { description: d.description }),
      },
    ]),
  );
  const { bytes, flops } = p.timing ?? {};
  return {
    name: p.name,
    description: p.description ?? '',
    kind: 'cases',
    args: structuredClone([...p.args]) as unknown[],
    reference,
    dims,
    cases: p.cases.filter((c) => c.visibility !== 'hidden').map((c) => ({ name: caseName(c), dims: { ...c.dims } })),
    hiddenCases: p.cases.filter((c) => c.visibility === 'hidden').length,
    ...(bytes === undefined ? {} : { bytes }),
    ...(flops === undefined ? {} : { flops }),
  };
}
