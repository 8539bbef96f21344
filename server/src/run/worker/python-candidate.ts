// SPDX-License-Identifier: MIT
// A job whose kernel under test is Python (cudakit-server --python: the original server's torch, torch_cuda, triton
// and multi_kernel candidates), seen from the worker. cudakit does not launch it: its runner does, so it is check()'s
// HostCandidate (lib/measure/check.ts), called on the job's seeded inputs and poisoned outputs through the runner's
// files, with every defence that applies off cudakit's own launches: outputs left unwritten, inputs it changed (the
// runner writes them back after each call), non-finite values, the comparison with the reference, two runs on the
// same inputs. Then the runner times it (raw timestamps; every statistic and the stopping rule computed here, as for a
// Python reference), and one more trial on fresh inputs re-checks it after timing. The result is an EvalReport, the
// shape every part of the service reads, with the runner's side in `pythonCandidate`.
import {
  type ArgSpec,
  type CheckOptions,
  type CheckResult,
  type EvalCheck,
  type EvalError,
  type EvalPhase,
  type EvalReport,
  type HostValue,
  type Reference,
  type StoppingRule,
  check,
  checkArgSpecs,
  emptyReport,
} from 'cudakit';
import { RunnerError } from '../python-runner.js';
import {
  type PythonReference,
  type PythonReferenceReport,
  type PythonTiming,
  describeRunnerError,
} from './python-reference.js';

/** What the worker runs for a Python candidate. */
export interface PythonCandidateJob {
  /** The report's name. */
  name: string;
  /** The job's arguments: inputs with how to fill them, outputs, scalars (the candidate's files are made from them). */
  io: ArgSpec[];
  /** The check's options: trials, seed, tolerances, determinism. */
  check?: Pick<CheckOptions, 'trials' | 'seed' | 'atol' | 'rtol' | 'tolerances' | 'determinism' | 'requireDeterminism'>;
  /** Check only (no timing, no re-check). */
  skipTiming?: boolean;
  /** The timing's stopping rule (the job's preset and overrides). */
  rule: StoppingRule;
}

/** The report of a Python candidate: evaluate()'s shape, with the runner's side of it. */
export type PythonCandidateReport = EvalReport & { pythonCandidate: PythonReferenceReport };

/** The re-check after timing draws its inputs from a seed of its own, past the check's trials. */
const RECHECK_SEED_OFFSET = 1_000_003;

/**
 * Runs a Python candidate through validate, load, check, time and recheck. `candidate` is the job's runner in the
 * candidate role; `reference` what its outputs must match (a Python reference's JsReference, a reference kernel, the
 * expected outputs as a function), or undefined for a reference-free check. Resolves to the report whatever happens
 * in the phases; closes neither side.
 */
export async function evaluatePythonCandidate(
  job: PythonCandidateJob,
  candidate: PythonReference,
  reference: { reference: Reference; label: string } | undefined,
  onPhase?: (phase: EvalPhase) => void,
): Promise<PythonCandidateReport> {
  const report = emptyReport(job.name);
  let timing: PythonTiming | undefined;
  let notTimed: string | undefined;
  /** Runs a phase, timing it; a thrown error fails it. Resolves to false once a phase has failed. */
  const phase = async (name: EvalPhase, work: () => Promise<EvalError | undefined>): Promise<boolean> => {
    onPhase?.(name);
    const started = performance.now();
    let error: EvalError | undefined;
    try {
      error = await work();
    } catch (e) {
      error = errorOfPython(e);
    }
    report.phases.push({ phase: name, ms: performance.now() - started });
    if (error === undefined) return true;
    report.phase = name;
    report.error = error;
    return false;
  };
  const host = { host: (args: HostValue[]) => candidate.call(args) };
  const checkOptions: CheckOptions = { ...job.check };
  const ran =
    (await phase('validate', async () => {
      checkArgSpecs(job.io);
      return undefined;
    })) &&
    (await phase('load', async () => {
      await candidate.load();
      return undefined;
    })) &&
    (await phase('check', async () => {
      const r = await check(host, reference?.reference ?? null, job.io, checkOptions);
      report.check = checkOf(r, reference?.label, checkOptions);
      return r.passed ? undefined : verdictOf(r);
    }));
  if (!ran) {
    notTimed = report.phase === 'check' ? 'the kernel did not pass its check' : `its ${report.phase} phase failed`;
  } else if (job.skipTiming === true) notTimed = 'timing.skip';
  if (ran && job.skipTiming !== true) {
    const timed =
      (await phase('time', async () => {
        timing = await candidate.time(job.rule);
        notTimed = undefined;
        return undefined;
      })) &&
      (await phase('recheck', async () => {
        const seed = (checkOptions.seed ?? 42) + RECHECK_SEED_OFFSET;
        const r = await check(host, reference?.reference ?? null, job.io, {
          ...checkOptions,
          trials: 1,
          seed,
          determinism: false,
        });
        const before = report.check as Extract<EvalCheck, { before: CheckResult }>;
        report.check = { ...before, passed: r.passed, afterTiming: r };
        return r.passed ? undefined : verdictOf(r);
      }));
    if (!timed && timing === undefined) notTimed = `timing failed: ${report.error?.message ?? 'unknown'}`;
  }
  report.passed = report.error === undefined;
  const pythonCandidate = await candidate.reportOf(timing, notTimed);
  return { ...report, pythonCandidate };
}

/** The check's part of the report. */
function checkOf(r: CheckResult, label: string | undefined, o: CheckOptions): EvalCheck {
  return {
    reference: label ?? 'no reference (reference-free check)',
    passed: r.passed,
    requireDeterminism: o.requireDeterminism === true,
    before: r,
  };
}

/** A failed check as the report's error: the defence that fired. */
function verdictOf(r: CheckResult): EvalError {
  const defence = r.defence ?? 'mismatch';
  return { kind: 'verdict', code: defence, message: r.summary, defence };
}

/**
 * An exception in a phase as the report's error: the runner's failures with where and what in Python (the submitted
 * source's frames only), anything else (an io the library refuses: a TypeError or RangeError) by its name and message.
 */
function errorOfPython(e: unknown): EvalError {
  if (e instanceof RunnerError) {
    // 'gone': it did not answer in time, or exited (a crash, a kill); anything else is the kernel's own failure.
    const code = e.kind === 'gone' ? 'ERR_PYTHON_RUNNER_GONE' : 'ERR_PYTHON_KERNEL';
    return { kind: 'exception', code, message: describeRunnerError(e, 'the Python kernel'), kernel: 'candidate' };
  }
  const error = e instanceof Error ? e : new Error(String(e));
  return { kind: 'exception', code: error.name, message: error.message, kernel: 'candidate' };
}
