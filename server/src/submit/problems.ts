// SPDX-License-Identifier: MIT
// The problem registry: problems the operator installs, one folder each under the registry's directory. Two kinds:
//
// - a single-shape problem, so that a client can be checked against a trusted reference it does not send (and a
//   JavaScript one, which a request may never carry: `node:vm` is no sandbox):
//
//     <dir>/<name>/problem.json   { description?, args, reference?: EvalKernelRef, timing?: { bytes?, flops? },
//                                   check?: { atol?, rtol? } }   (a reference's source.file is relative to the folder)
//     <dir>/<name>/reference.mjs  export const reference = (args) => { ... }   (a JsReference), instead of the kernel
//
//   A job names one as `reference: { problem: '<name>' }`: the problem's args become the job's, its bytes, flops and
//   tolerances the defaults of the job's own.
// - a problem with cases (problem-cases.ts): problem.json is the library's EvalProblem, with `dims` and `cases`. A
//   submission names it as `problem: '<name>'` and gives its kernel and its launch over the dimensions.
//
// The API process reads problem.json and the kernels' sources (data); a reference module is imported by the worker
// that runs the job (run/worker/reference-module.ts).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type EvalProblem, InvalidJobError, type JobProblem, validateJob } from 'cudakit';
import { type CasesProblem, type CasesProblemInfo, hasCases, readCasesProblem } from './problem-cases.js';
import { type Fail, JS_REFERENCE_FILES, jsReferenceOf, withSourceRead } from './problem-files.js';

export type { CasesProblemInfo } from './problem-cases.js';

/** Names a request may use: a folder name with no path in it. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A single-shape problem as GET /v1/problems shows it. */
export interface ProblemInfo {
  name: string;
  description: string;
  args: unknown[];
  reference: 'cuda' | 'javascript';
  bytes?: number;
  flops?: number;
}

interface Problem extends Omit<ProblemInfo, 'bytes' | 'flops'> {
  bytes: number | undefined;
  flops: number | undefined;
  /** The CUDA reference with its source read into `text`, or undefined for a JavaScript one. */
  kernelRef: Record<string, unknown> | undefined;
  /** The JavaScript reference's module, for the worker. */
  modulePath: string | undefined;
  timing: Record<string, unknown>;
  check: Record<string, unknown>;
}

/** A problem.json, or a folder, that cannot be served: the server refuses to start and says which and why. */
export class ProblemRegistryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProblemRegistryError';
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A job that references problem `name`, what a job's `reference` must then be and nothing else. */
export function problemNameOf(reference: unknown): string | undefined {
  if (!isObject(reference) || !('problem' in reference)) return undefined;
  return typeof reference.problem === 'string' ? reference.problem : '';
}

export class ProblemRegistry {
  readonly dir: string | undefined;
  /** The single-shape problems. */
  readonly #problems: ReadonlyMap<string, Problem>;
  /** The problems with cases. */
  readonly #cases: ReadonlyMap<string, CasesProblem>;

  private constructor(dir: string | undefined, problems: Map<string, Problem>, cases: Map<string, CasesProblem>) {
    this.dir = dir;
    this.#problems = problems;
    this.#cases = cases;
  }

  /** No registry: a job naming a problem is told that none is installed. */
  static empty(): ProblemRegistry {
    return new ProblemRegistry(undefined, new Map(), new Map());
  }

  /**
   * Reads every problem under `dir` (one folder each) and checks it as a job would be checked.
   * @throws ProblemRegistryError naming the folder or file and what is wrong with it.
   */
  static load(dir: string): ProblemRegistry {
    const root = resolve(dir);
    if (!existsSync(root) || !statSync(root).isDirectory()) {
      throw new ProblemRegistryError(`The problem registry ${root} is not a directory`);
    }
    const problems = new Map<string, Problem>();
    const cases = new Map<string, CasesProblem>();
    for (const entry of readdirSync(root, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
      if (!NAME.test(entry.name)) {
        throw new ProblemRegistryError(
          `Problem folder '${entry.name}' in ${root}: a name is letters, digits, '_', '.' and '-', at most 64`,
        );
      }
      const problem = readProblem(root, entry.name);
      if ('info' in problem) cases.set(entry.name, problem);
      else problems.set(entry.name, problem);
    }
    return new ProblemRegistry(root, problems, cases);
  }

  get size(): number {
    return this.#problems.size + this.#cases.size;
  }

  /** Every problem, by name: a single-shape one as it always was, one with cases with its `kind: 'cases'`. */
  list(): (ProblemInfo | CasesProblemInfo)[] {
    const single = [...this.#problems.values()].map(({ name, description, args, reference, bytes, flops }) => ({
      name,
      description,
      args,
      reference,
      ...(bytes === undefined ? {} : { bytes }),
      ...(flops === undefined ? {} : { flops }),
    }));
    const withCases = [...this.#cases.values()].map((c) => structuredClone(c.info));
    return [...single, ...withCases].sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The problem with cases `name`, its kernels' sources read in (a copy: the caller may keep it), or undefined where
   * none is installed under that name.
   */
  withCases(name: string): EvalProblem | undefined {
    const found = this.#cases.get(name);
    return found === undefined ? undefined : structuredClone(found.problem);
  }

  /** The names of the problems with cases, sorted. */
  namesWithCases(): string[] {
    return [...this.#cases.keys()];
  }

  /**
   * The job with its problem in place: the problem's args, its CUDA reference (a JavaScript one is the worker's to
   * import: `problem` names it), its bytes, flops and tolerances under the job's own. A job without a problem is
   * returned as it is.
   * @throws InvalidJobError for an unknown problem, or args given beside one.
   */
  expand(job: Record<string, unknown>): { job: Record<string, unknown>; problem: string | undefined } {
    const name = problemNameOf(job.reference);
    if (name === undefined) return { job, problem: undefined };
    const problems: JobProblem[] = [];
    const reference = job.reference as Record<string, unknown>;
    const extra = Object.keys(reference).filter((k) => k !== 'problem');
    if (extra.length > 0) {
      problems.push({
        path: 'job.reference',
        message: `Expected only { problem } for job.reference but received the keys ${extra.join(', ')} beside it`,
        type: 'TypeError',
      });
    }
    const problem = this.#problems.get(name);
    if (problem === undefined && this.#cases.has(name)) {
      problems.push({
        path: 'job.reference.problem',
        message:
          `Expected a single-shape problem for job.reference.problem but received '${name}', a problem with cases ` +
          `(submit it as { problem: '${name}', source, kernel, grid, block } without reference or args)`,
        type: 'RangeError',
      });
    } else if (problem === undefined) {
      const known = [...this.#problems.keys()];
      const installed =
        known.length === 0
          ? 'no problem is installed on this server'
          : `installed: ${known.slice(0, 20).join(', ')}${known.length > 20 ? ', ...' : ''}`;
      problems.push({
        path: 'job.reference.problem',
        message:
          'Expected the name of an installed problem for job.reference.problem ' +
          `but received '${name.slice(0, 80)}' (${installed})`,
        type: 'RangeError',
      });
    }
    if (job.args !== undefined) {
      problems.push({
        path: 'job.args',
        message:
          `Expected no args for job.args (the problem '${name.slice(0, 80)}' defines them) but received ` +
          (Array.isArray(job.args) ? `${job.args.length} of them` : typeof job.args),
        type: 'TypeError',
      });
    }
    if (problems.length > 0) throw new InvalidJobError(problems);
    const p = problem!;
    const expanded: Record<string, unknown> = { ...job, args: structuredClone(p.args) };
    if (p.kernelRef !== undefined) expanded.reference = structuredClone(p.kernelRef);
    else delete expanded.reference;
    if (Object.keys(p.timing).length > 0) {
      expanded.timing = { ...p.timing, ...(isObject(job.timing) ? job.timing : {}) };
    }
    if (Object.keys(p.check).length > 0) {
      expanded.check = { ...p.check, ...(isObject(job.check) ? job.check : {}) };
    }
    return { job: expanded, problem: p.kernelRef === undefined ? p.name : undefined };
  }

  /** The JavaScript reference module of problem `name`, or undefined (no such problem, or a CUDA reference). */
  modulePath(name: string): string | undefined {
    return this.#problems.get(name)?.modulePath ?? this.#cases.get(name)?.modulePath;
  }
}

function readProblem(root: string, name: string): Problem | CasesProblem {
  const folder = join(root, name);
  const file = join(folder, 'problem.json');
  const fail: Fail = (why) => {
    throw new ProblemRegistryError(`Problem '${name}' (${file}): ${why}`);
  };
  if (!existsSync(file)) fail('no problem.json');
  let spec: unknown;
  try {
    spec = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    fail(`not JSON: ${(e as Error).message}`);
  }
  if (!isObject(spec)) return fail('expected an object');
  if (hasCases(spec)) return readCasesProblem(folder, name, spec, fail);
  const known = new Set(['description', 'args', 'reference', 'timing', 'check']);
  const unknown = Object.keys(spec).filter((k) => !known.has(k));
  if (unknown.length > 0) fail(`unknown keys ${unknown.join(', ')} (known: ${[...known].join(', ')})`);
  if (!Array.isArray(spec.args) || spec.args.length === 0) fail('expected args, a non-empty array of argspecs');
  if (spec.description !== undefined && typeof spec.description !== 'string') fail('description must be a string');

  const timing: Record<string, unknown> = {};
  if (spec.timing !== undefined) {
    if (!isObject(spec.timing)) fail('timing must be { bytes?, flops? }');
    for (const [k, v] of Object.entries(spec.timing as Record<string, unknown>)) {
      if (k !== 'bytes' && k !== 'flops') fail(`timing.${k} is not a problem's to set (only bytes, flops)`);
      timing[k] = v;
    }
  }
  const check: Record<string, unknown> = {};
  if (spec.check !== undefined) {
    if (!isObject(spec.check)) fail('check must be { atol?, rtol? }');
    for (const [k, v] of Object.entries(spec.check as Record<string, unknown>)) {
      if (k !== 'atol' && k !== 'rtol') fail(`check.${k} is not a problem's to set (only atol, rtol)`);
      check[k] = v;
    }
  }

  const jsFile = jsReferenceOf(folder);
  let kernelRef: Record<string, unknown> | undefined;
  if (spec.reference !== undefined) {
    if (jsFile !== undefined) fail(`both a reference kernel in problem.json and ${jsFile}: keep one`);
    kernelRef = withSourceRead(folder, spec.reference, 'reference', fail);
  } else if (jsFile === undefined) {
    fail(`no reference: give problem.json a reference kernel, or the folder a ${JS_REFERENCE_FILES.join(' or ')}`);
  }

  // Checked as a job with a stand-in candidate: the args, the reference kernel and the options are the problem's.
  try {
    validateJob({
      source: 'extern "C" __global__ void candidate() {}',
      kernel: 'candidate',
      grid: 1,
      block: 1,
      args: spec.args,
      ...(kernelRef === undefined ? {} : { reference: kernelRef }),
      ...(Object.keys(timing).length > 0 ? { timing } : {}),
      ...(Object.keys(check).length > 0 ? { check } : {}),
    });
  } catch (e) {
    if (e instanceof InvalidJobError) fail(e.problems.map((p) => p.message).join('; '));
    throw e;
  }
  const number = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
  return {
    name,
    description: typeof spec.description === 'string' ? spec.description : '',
    args: spec.args as unknown[],
    reference: kernelRef === undefined ? 'javascript' : 'cuda',
    bytes: number(timing.bytes),
    flops: number(timing.flops),
    kernelRef,
    modulePath: kernelRef === undefined ? jsFile : undefined,
    timing,
    check,
  };
}
