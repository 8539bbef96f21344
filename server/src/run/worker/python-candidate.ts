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
  Device,
  type LoadedReference,
  type CheckOptions,
  type CheckResult,
  type EvalCheck,
  type EvalError,
  type EvalJob,
  type EvalPhase,
  type EvalReport,
  type HostValue,
  type Reference,
  type StoppingRule,
  check,
  checkArgSpecs,
  emptyReport,
  evalErrorOf,
  loadJobReference,
  prepareJob,
} from 'cudakit';
import type { PythonJob } from '../protocol.js';
import { RunnerError } from '../python-runner.js';
import {
  type PythonReference,
  type PythonReferenceReport,
  type PythonTiming,
  describeRunnerError,
  referenceRule,
  startPythonKernel,
} from './python-reference.js';
import { stopRelayedRunner } from './relay-link.js';

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

/** The report of a Python candidate: evaluate()'s shape, with the runner's side of it (and its Python reference's). */
export type PythonCandidateReport = EvalReport & {
  pythonCandidate: PythonReferenceReport;
  pythonReference?: PythonReferenceReport;
};

/** A reference's own failure inside check(): the report blames the reference, not the candidate. */
class ReferenceFailure extends Error {
  override name = 'ReferenceFailure';
}

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
  const given = reference?.reference;
  // A reference function's failure is the reference's: told apart from the candidate's (errorOfPython).
  const against: Reference | null =
    given === undefined
      ? null
      : typeof given === 'function'
        ? async (args: HostValue[]) => {
            try {
              await given(args);
            } catch (e) {
              throw new ReferenceFailure(e instanceof Error ? e.message : String(e));
            }
          }
        : given;
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
      const r = await check(host, against, job.io, checkOptions);
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
        const r = await check(host, against, job.io, {
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
  if (e instanceof ReferenceFailure) {
    return { kind: 'exception', code: 'ERR_PYTHON_REFERENCE', message: e.message, kernel: 'reference' };
  }
  if (e instanceof RunnerError) {
    // 'gone': it did not answer in time, or exited (a crash, a kill); anything else is the kernel's own failure.
    const code = e.kind === 'gone' ? 'ERR_PYTHON_RUNNER_GONE' : 'ERR_PYTHON_KERNEL';
    return { kind: 'exception', code, message: describeRunnerError(e, 'the Python kernel'), kernel: 'candidate' };
  }
  const error = e instanceof Error ? e : new Error(String(e));
  return { kind: 'exception', code: error.name, message: error.message, kernel: 'candidate' };
}

/** The check's options an EvalJob's check gives a Python candidate. */
const CHECK_KEYS = ['trials', 'seed', 'atol', 'rtol', 'tolerances', 'determinism', 'requireDeterminism'] as const;

/**
 * A job whose kernel under test is Python, as the worker runs it (runJob, its seed already mixed): the candidate's
 * runner, and its Python reference's when it has one, started through the slot; the check against that reference,
 * else the job's expected outputs, else reference-free; then the reference timed beside the candidate when the
 * candidate passed and was timed. Resolves to the report whatever fails; stops both runners.
 */
export async function runPythonCandidateJob(
  job: EvalJob,
  python: PythonJob,
  jobId: string,
  onPhase?: (phase: EvalPhase) => void,
): Promise<PythonCandidateReport> {
  const name = job.name ?? job.kernel;
  const prepared = prepareJob(job);
  if (Array.isArray(prepared)) {
    // The service validated the job before it was queued: a job that fails here is reported, never thrown.
    const message = prepared.map((p) => `${p.path}: ${p.message}`).join('; ');
    return failedBefore(
      name,
      'validate',
      { kind: 'exception', code: 'ERR_INVALID_JOB_ARGS', message, kernel: 'candidate' },
      'its validate phase failed',
    );
  }
  const checkOptions: PythonCandidateJob['check'] = {};
  for (const key of CHECK_KEYS) {
    const value = job.check?.[key as keyof typeof job.check];
    if (value !== undefined) (checkOptions as Record<string, unknown>)[key] = value;
  }
  const candidateJob: PythonCandidateJob = {
    name,
    io: prepared.args.map((a) => a.spec),
    check: checkOptions,
    skipTiming: job.timing?.skip === true,
    rule: referenceRule(job),
  };
  const started: PythonReference[] = [];
  let cudaReference: LoadedReference | undefined;
  try {
    let candidate: PythonReference;
    try {
      candidate = await startPythonKernel(python.candidate!, jobId, 'candidate');
      started.push(candidate);
    } catch (e) {
      const message = (e as Error).message;
      return failedBefore(
        name,
        'load',
        { kind: 'exception', code: 'ERR_PYTHON_RUNNER_GONE', message, kernel: 'candidate' },
        'its runner could not start',
      );
    }
    let pythonReference: PythonReference | undefined;
    let reference: { reference: Reference; label: string } | undefined;
    if (python.reference !== undefined) {
      try {
        pythonReference = await startPythonKernel(python.reference, jobId, 'reference');
        started.push(pythonReference);
        reference = { reference: pythonReference.reference, label: `the Python reference (${python.reference.type})` };
      } catch (e) {
        const error = e as Error;
        reference = { reference: () => Promise.reject(error), label: 'the Python reference' };
      }
    } else if (prepared.job.reference !== undefined && 'kernel' in prepared.job.reference) {
      onPhase?.('compile');
      try {
        cudaReference = await loadJobReference(prepared.job, Device.get(0));
      } catch (e) {
        return failedBefore(name, 'compile', evalErrorOf(e, 'reference'), 'its CUDA reference could not be loaded');
      }
      if (cudaReference !== undefined) {
        reference = { reference: cudaReference.reference, label: `the CUDA reference ${cudaReference.label}` };
      }
    } else if (prepared.expected !== undefined) {
      reference = { reference: expectedReference(prepared.expected), label: 'the expected outputs' };
    }
    const report: PythonCandidateReport = await evaluatePythonCandidate(candidateJob, candidate, reference, onPhase);
    if (pythonReference !== undefined) {
      report.pythonReference = await timeReference(pythonReference, report, candidateJob.rule, onPhase);
    }
    return report;
  } finally {
    cudaReference?.dispose();
    for (const kernel of started) kernel.close();
    stopRelayedRunner(jobId, 'candidate');
    if (python.reference !== undefined) stopRelayedRunner(jobId, 'reference');
  }
}

/** A reference that writes the job's expected outputs (argument index → bytes) into the output arrays. */
function expectedReference(expected: Map<number, Uint8Array>): Reference {
  return (args: HostValue[]) => {
    for (const [i, bytes] of expected) {
      const target = args[i];
      if (!ArrayBuffer.isView(target)) throw new TypeError(`The job's argument ${i} is no output array`);
      new Uint8Array(target.buffer, target.byteOffset, target.byteLength).set(bytes);
    }
  };
}

/** The Python reference's part of the report: timed with the job's rule once the candidate passed and was timed. */
async function timeReference(
  reference: PythonReference,
  report: PythonCandidateReport,
  rule: StoppingRule,
  onPhase: ((phase: EvalPhase) => void) | undefined,
): Promise<PythonReferenceReport> {
  if (!report.passed || report.pythonCandidate.timing === undefined) {
    const why = report.passed ? 'the kernel was not timed' : 'the kernel did not pass its check';
    return reference.reportOf(undefined, why);
  }
  try {
    onPhase?.('time');
    return await reference.reportOf(await reference.time(rule));
  } catch (e) {
    const why = e instanceof RunnerError ? describeRunnerError(e) : (e as Error).message;
    return reference.reportOf(undefined, `timing the reference failed: ${why}`);
  }
}

/** The report of a candidate that failed before its runner loaded it (its job's io, or its runner's start). */
function failedBefore(
  name: string,
  phase: 'validate' | 'compile' | 'load',
  error: EvalError,
  notTimed: string,
): PythonCandidateReport {
  return {
    ...emptyReport(name),
    phase,
    phases: [{ phase, ms: 0 }],
    error,
    pythonCandidate: {
      type: 'unknown',
      entry: undefined,
      loadMs: undefined,
      runtime: undefined,
      timing: undefined,
      notTimed,
    },
  };
}
