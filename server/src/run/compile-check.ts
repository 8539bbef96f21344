// SPDX-License-Identifier: MIT
// The compile check: where no GPU can take a job, whether its kernels compile and take the arguments the job gives. The
// answer comes from a child (run/worker/compile-check.ts) forked like a GPU worker, with the same containment (its own
// empty folder, the allowed environment, the worker user) and no GPU visible, killed with its process group at a
// deadline: the server process never runs NVRTC on a client's source. A few checks run at once; past that, or when the
// child cannot say, the answer is 'unknown' and the service refuses as it would without the check.
import type { Arch, EvalJob, EvalReport, JobProblem } from 'cudakit';
import { type DeathGuard, WorkerChild, chooseDeathGuard, workerScript } from './child.js';
import { type Containment, defaultContainment } from './containment.js';
import { PROTOCOL_VERSION, isChildMessage } from './protocol.js';

export type CompileCheckResult =
  /** The job cannot run on any GPU as it is: these problems, at the job's paths. */
  | { kind: 'fails'; problems: JobProblem[] }
  /** Its kernels compile for the arch the check used, with the job's arguments. */
  | { kind: 'compiles'; arch: string | undefined }
  /** No answer (no NVRTC, an arch this NVRTC lacks, a deadline, the checks' limit): the job's fate is the GPU's. */
  | { kind: 'unknown'; reason: string };

export interface CheckOptions {
  /** The arch when the job names none (the arch of the GPU class it asks for). Default: the newest NVRTC knows. */
  arch?: Arch;
  /** The job's own limit for its compile, when shorter than the checker's. */
  timeoutMs?: number;
}

export interface CompileCheckerOptions {
  /** Set for the child, on top of the allowed part of the service's environment (containment.ts). */
  env?: Readonly<Record<string, string | undefined>>;
  /** The workers' folders, environment and user. Default: defaultContainment(). */
  containment?: Containment;
  /** Checks that run at once; more get 'unknown'. Default 2. */
  maxConcurrent?: number;
  /** From the fork to the answer. Default 30 s (NVRTC's start, a large kernel's compile). */
  timeoutMs?: number;
  deathGuard?: 'auto' | 'watchdog';
}

const DEFAULTS = { maxConcurrent: 2, timeoutMs: 30_000 };
/** A child's stderr kept for the log of a failed check. */
const STDERR_TAIL_CHARS = 2_000;
/** Diagnostics quoted in a problem's message; the rest is counted. */
const QUOTED_DIAGNOSTICS = 5;
/** NVRTC's code for a program it rejected: the only compile failure that is the source's fault. */
const REJECTED = 'NVRTC_ERROR_COMPILATION';

export class CompileChecker {
  readonly #o: Required<Omit<CompileCheckerOptions, 'containment'>> & { containment: Containment | undefined };
  readonly #children = new Set<WorkerChild>();
  #guard: Promise<DeathGuard> | undefined;
  #stopped = false;
  #seq = 0;

  constructor(options: CompileCheckerOptions = {}) {
    this.#o = {
      env: options.env ?? {},
      containment: options.containment,
      maxConcurrent: options.maxConcurrent ?? DEFAULTS.maxConcurrent,
      timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
      deathGuard: options.deathGuard ?? 'auto',
    };
  }

  /**
   * Whether `job` compiles, for its `compile.arch`, else `o.arch` (the arch of the GPU class it asks for, when the
   * class names one), else the newest this NVRTC knows; within `o.timeoutMs` (the job's compile deadline) when that is
   * shorter than the checker's own. Never rejects.
   */
  async check(job: EvalJob, o: CheckOptions = {}): Promise<CompileCheckResult> {
    const arch = o.arch;
    if (this.#stopped) return { kind: 'unknown', reason: 'the server is stopping' };
    if (this.#children.size >= this.#o.maxConcurrent) {
      return { kind: 'unknown', reason: `${this.#children.size} compile checks are running already` };
    }
    const compile = typeof job.compile === 'object' && job.compile !== null ? job.compile : {};
    const checked: EvalJob =
      arch === undefined || compile.arch !== undefined || compile.target === 'ptx'
        ? job
        : { ...job, compile: { ...compile, arch } };
    let report: EvalReport | string;
    try {
      report = await this.#run(checked, Math.min(o.timeoutMs ?? Infinity, this.#o.timeoutMs));
    } catch (e) {
      report = (e as Error).message;
    }
    return typeof report === 'string' ? { kind: 'unknown', reason: report } : checkResultOf(report, checked);
  }

  /** Kills every check in progress; later checks answer 'unknown'. */
  stop(): void {
    this.#stopped = true;
    for (const child of this.#children) child.kill();
  }

  /** The child's report, or why there is none. */
  async #run(job: EvalJob, timeoutMs: number): Promise<EvalReport | string> {
    this.#guard ??= chooseDeathGuard(this.#o.deathGuard);
    const guard = await this.#guard;
    const startedMs = Date.now();
    const child = new WorkerChild({
      script: workerScript('compile-check'),
      uuid: '', // no GPU: the check compiles, it never launches
      isolation: 'process',
      guard,
      env: this.#o.env,
      containment: this.#o.containment ?? defaultContainment(),
      startTimeoutMs: timeoutMs,
      stderrTailChars: STDERR_TAIL_CHARS,
    });
    this.#children.add(child);
    let timer: NodeJS.Timeout | undefined;
    try {
      const ready = await child.ready;
      if (!ready.ok) return `the compile check did not start: ${ready.reason}`;
      const id = `check-${++this.#seq}`;
      const answer = new Promise<EvalReport | string>((resolve) => {
        child.onMessage = (m) => {
          if (!isChildMessage(m)) return resolve('the compile check broke the protocol');
          // The compile check runs an EvalJob, never a problem: its answer is evaluate()'s report.
          if (m.t === 'result' && m.id === id) return resolve(m.report as EvalReport);
          if (m.t === 'fatal') return resolve(`the compile check failed: ${m.error.message}`);
        };
        child.onExit = () => resolve('the compile check exited without an answer');
        const leftMs = Math.max(0, timeoutMs - (Date.now() - startedMs));
        timer = setTimeout(() => resolve(`no answer from the compile check within ${timeoutMs} ms`), leftMs);
      });
      const deadlines = { jobMs: timeoutMs, phaseMs: {} };
      child.send({ v: PROTOCOL_VERSION, t: 'job', id, job, seedSalt: '', deadlines });
      return await answer;
    } finally {
      clearTimeout(timer);
      child.kill(); // its group too, whatever it left
      this.#children.delete(child);
    }
  }
}

/** The path of a kernel's source in the job, by the role evaluate() gives it. */
function sourcePath(role: string | undefined): string {
  if (role === 'reference') return 'job.reference.source';
  if (role === 'baseline') return 'job.compare.source';
  if (role === 'precise') return 'job.check.precision.reference.source';
  return 'job.source';
}

/** What a report of the check child says about the job. */
export function checkResultOf(report: EvalReport, job: EvalJob): CompileCheckResult {
  const e = report.error;
  if (report.phase === 'validate' && e?.kind === 'invalid-job') {
    return { kind: 'fails', problems: (e.problems ?? []).map((p) => ({ ...p })) };
  }
  if (report.phase === 'compile') {
    if (e?.kind !== 'compile' || e.code !== REJECTED) {
      return { kind: 'unknown', reason: `the compile check could not compile: ${e?.message ?? 'no reason given'}` };
    }
    const diagnostics = e.diagnostics ?? [];
    const errors = diagnostics.filter((d) => d.severity === 'error');
    const quoted = (errors.length > 0 ? errors : diagnostics).slice(0, QUOTED_DIAGNOSTICS);
    const lines = quoted.map((d) => `${d.file}(${d.line}): ${d.severity}: ${d.message}`);
    const more = errors.length > quoted.length ? ` (and ${errors.length - quoted.length} more errors)` : '';
    const what = lines.length > 0 ? `${lines.join('; ')}${more}` : e.message;
    const arch = (e.flags ?? []).find((f) => f.startsWith('--gpu-architecture='))?.slice('--gpu-architecture='.length);
    const forArch = arch === undefined ? '' : ` on ${arch}`;
    const message = `Expected CUDA C++ that compiles for ${sourcePath(e.kernel)}${forArch} but NVRTC reports: ${what}`;
    return { kind: 'fails', problems: [{ path: sourcePath(e.kernel), message, type: 'TypeError' }] };
  }
  // evaluate() checks each kernel's arguments against its compiled parameters before it needs a GPU to load.
  if (report.phase === 'load' && e?.kind === 'exception' && e.code === 'TypeError') {
    const named = /^(?:Kernel|Parameter \d+ of kernel) '([^']*)'/.exec(e.message)?.[1];
    const path =
      named !== undefined && named !== job.kernel && named === kernelOf(job.reference)
        ? 'job.reference.args'
        : named !== undefined && named !== job.kernel && named === kernelOf(job.compare)
          ? 'job.compare.args'
          : named !== undefined && named !== job.kernel && named === kernelOf(job.check?.precision?.reference)
            ? 'job.check.precision.reference.args'
            : 'job.args';
    return { kind: 'fails', problems: [{ path, message: e.message, type: 'TypeError' }] };
  }
  if (report.phase === 'load' || report.passed) return { kind: 'compiles', arch: report.compile.candidate?.arch };
  return { kind: 'unknown', reason: `the compile check ended in its ${report.phase ?? 'last'} phase` };
}

/** The kernel a job's reference or compare names, when it is a kernel. */
function kernelOf(ref: unknown): string | undefined {
  const kernel = typeof ref === 'object' && ref !== null ? (ref as { kernel?: unknown }).kernel : undefined;
  return typeof kernel === 'string' ? kernel : undefined;
}
