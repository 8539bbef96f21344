// SPDX-License-Identifier: MIT
// evaluate(): one job through validate → compile → load → check → time → re-check, resolving to a report
// whatever happens to the kernel. No terminal output, no files written, no exit codes, no process-wide state: the
// CLI, spec files and a service each print, store or send the report as they need.
//
// The module is loaded afresh for each phase that runs the candidate (check, then timing), and the reference afresh
// for the re-check, so no __device__ state carries answers from one phase to the next (tensara#238). Compiling comes
// before anything touches the GPU, so a job that does not compile is reported without one (given compile.arch).
import { basename } from 'node:path';
import {
  CudaError,
  Device,
  checkCompiledSignature,
  type Kernel,
  type LaunchConfig,
  type Module,
  type ObjectCode,
  type Signature,
  checkOptions,
  fromDeviceBytes,
  isContextLost,
  parseDiagnostics,
  probe,
  typeError,
} from '../core/index.js';
import {
  type ArgSpec,
  type BenchOptions,
  type BenchResult,
  type BufferArgSpec,
  type CheckOptions,
  type CheckResult,
  type CompareResult,
  type InputSets,
  type Reference,
  type StoppingRule,
  bench,
  check,
  compare,
  inputSets,
  signatureOf,
} from '../measure/index.js';
import type {
  EvalCheck,
  EvalJob,
  EvalKernelRef,
  EvalKernelRole,
  EvalOptions,
  EvalPhase,
  EvalProgress,
  EvalTimingOptions,
  JsReference,
} from './job.js';
import { type EvalCompileFacts, type EvalError, type EvalReport, emptyReport, errorOf } from './report.js';
import { type SourceText, compileSource, readSource } from './source.js';
import { InvalidJobError, type PreparedJob, prepareJob } from './validate.js';

/** One kernel of the job: where it comes from, how it launches, what it is called in reports. */
interface KernelPlan {
  role: EvalKernelRole;
  ref: { source: EvalJob['source']; kernel: string; headers?: Readonly<Record<string, string>> | undefined };
  label: string;
  config: LaunchConfig;
  signature: Signature;
  /** A reference kernel's own arguments (EvalKernelRef.args). */
  io?: ArgSpec[];
  src?: SourceText;
  code?: ObjectCode;
}

/** The check's reference and what reports call it; `of` gives it for a phase (a kernel from a module of its own). */
interface RefSource {
  label: string;
  /** The kernel a 'reference-fault' is blamed on. */
  role: EvalKernelRole;
  /** null: no reference (the reference-free check). */
  of: (phase: 'check' | 'recheck') => Promise<Reference | null>;
}

/** What the phases after 'validate' run on: the job in canonical form, its argument specs, its kernels. */
interface Plan {
  job: EvalJob;
  prep: PreparedJob;
  io: ArgSpec[];
  /** The candidate first, then the reference kernel, the compare baseline and the precise reference where there are. */
  kernels: KernelPlan[];
}

/** What 'load' leaves for the later phases: the device, and each kernel from the module the check uses. */
interface Loaded {
  device: Device;
  first: Map<EvalKernelRole, Kernel>;
}

/** A kernel timed by bench() or compare(), over the input sets. */
interface KernelTarget {
  kernel: Kernel;
  config: LaunchConfig;
  args: (set: number) => never;
  name: string;
}

/** Stops the pipeline: the report is final. */
class Stop {
  constructor(readonly report: EvalReport) {}
}

/**
 * Runs one job: compiles its kernels, checks the candidate against the reference (a kernel, the expected outputs,
 * a JavaScript function in `options.reference`, or the compare baseline), times it with bench() or compare(), and
 * re-checks the timed launches' outputs. Resolves to an EvalReport for every job: one that is invalid (phase
 * 'validate', every problem listed), does not compile ('compile', with NVRTC's diagnostics), does not load, fails
 * the check or faults ('check'; a fault is the verdict `defence: 'fault'` with the driver error), faults while timed
 * ('time'), or fails the re-check ('recheck'). After a sticky fault nothing more touches the GPU: the report is
 * returned as it stands, and the process must restart to use the GPU again (docs/errors.md).
 *
 * @throws TypeError for bad `options` only (an unknown key, a reference that is not a function ...): the caller's
 *   mistake, not the job's.
 * @example
 * const report = await evaluate(job, { reference: (args) => { ... } });
 * if (!report.passed) console.error(`${report.phase}: ${report.error?.message}`);
 */
export async function evaluate(job: EvalJob, options?: EvalOptions): Promise<EvalReport> {
  const o = checkEvalOptions(options);
  const j = (typeof job === 'object' && job !== null ? job : {}) as Record<string, unknown>;
  const run = new Pipeline(typeof j.name === 'string' ? j.name : typeof j.kernel === 'string' ? j.kernel : 'job', o);
  try {
    return await run.all(job);
  } catch (e) {
    if (e instanceof Stop) return e.report;
    throw e;
  } finally {
    run.release();
  }
}

function checkEvalOptions(options: EvalOptions | undefined): EvalOptions {
  const keys = ['reference', 'onProgress', 'signal', 'baseDir', 'device', 'waitForGpu'] as const;
  const o = checkOptions('options', options, keys) as EvalOptions;
  const bad = (key: string, expected: string, value: unknown): never => {
    throw typeError(`options.${key}`, expected, value);
  };
  if (o.reference !== undefined && typeof o.reference !== 'function') bad('reference', 'a function', o.reference);
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') bad('onProgress', 'a function', o.onProgress);
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) bad('signal', 'an AbortSignal', o.signal);
  if (o.baseDir !== undefined && typeof o.baseDir !== 'string') bad('baseDir', 'a string', o.baseDir);
  if (o.device !== undefined && !(o.device instanceof Device)) bad('device', 'a Device', o.device);
  if (o.waitForGpu !== undefined && typeof o.waitForGpu !== 'function') bad('waitForGpu', 'a function', o.waitForGpu);
  return o;
}

class Pipeline {
  readonly report: EvalReport;
  readonly #o: EvalOptions;
  #phase: EvalPhase = 'validate';
  #t0 = 0;
  readonly #modules: Module[] = [];
  #sets: InputSets | undefined;

  constructor(name: string, o: EvalOptions) {
    this.report = emptyReport(name);
    this.#o = o;
  }

  #emit(p: EvalProgress): void {
    this.#o.onProgress?.(p);
  }

  #begin(phase: EvalPhase): void {
    this.#phase = phase;
    this.#t0 = performance.now();
    if (this.#o.signal?.aborted === true) {
      const reason = this.#o.signal.reason as unknown;
      const why = reason instanceof Error ? `: ${reason.message}` : '';
      const message = `evaluate() was aborted before the ${phase} phase${why}`;
      this.#fail({ kind: 'aborted', code: 'ABORT_ERR', message });
    }
    this.#emit({ kind: 'phase', phase });
  }

  #end(): void {
    this.report.phases.push({ phase: this.#phase, ms: performance.now() - this.#t0 });
  }

  /** Ends the pipeline in the current phase with `error`. */
  #fail(error: EvalError): never {
    this.#end();
    this.report.phase = this.#phase;
    this.report.error = error;
    this.report.passed = false;
    throw new Stop(this.report);
  }

  /** Runs `f`; an exception fails the current phase (see errorOf). */
  async #guard<T>(f: () => T | Promise<T>, kernel?: EvalKernelRole): Promise<T> {
    try {
      return await f();
    } catch (e) {
      if (e instanceof Stop) throw e;
      return this.#fail(errorOf(e, kernel));
    }
  }

  /** The phases in order. A phase that fails ends the run (Stop) with the report as it stands. */
  async all(job: EvalJob): Promise<EvalReport> {
    const plan = this.#validate(job);
    await this.#compile(plan);
    await this.#waitForGpu();
    const loaded = await this.#load(plan);
    const reference = this.#referenceOf(plan, loaded);
    await this.#check(plan, loaded, reference);
    if (plan.job.timing?.skip === true) return this.#passed();
    const sets = await this.#time(plan, loaded.device);
    await this.#recheck(plan, reference, sets);
    return this.#passed();
  }

  /** 'validate': every problem of the job at once; else its canonical form, argument specs and kernels. */
  #validate(job: EvalJob): Plan {
    this.#begin('validate');
    const prep = prepareJob(job);
    if (Array.isArray(prep)) this.#fail(errorOf(new InvalidJobError(prep)));
    const j = prep.job;
    this.report.name = j.name!;
    const plan: Plan = { job: j, prep, io: prep.args.map((a) => a.spec), kernels: kernelPlans(j, prep) };
    this.#end();
    return plan;
  }

  /** 'compile': every kernel of the job, before anything touches the GPU. */
  async #compile(plan: Plan): Promise<void> {
    this.#begin('compile');
    for (const k of plan.kernels) await this.#compileKernel(k, plan.job);
    this.#end();
  }

  /** Waits for the caller's turn on the GPU (EvalOptions.waitForGpu); its rejection fails the load phase. */
  async #waitForGpu(): Promise<void> {
    const wait = this.#o.waitForGpu;
    if (wait === undefined) return;
    try {
      await wait();
    } catch (e) {
      this.#begin('load');
      this.#fail(errorOf(e));
    }
  }

  /** 'load': the device, and every kernel into a module of its own (the check's), its attributes into the report. */
  async #load(plan: Plan): Promise<Loaded> {
    this.#begin('load');
    const device = await this.#guard(() => {
      try {
        return this.#o.device ?? Device.get(0);
      } catch (e) {
        // No GPU to load on: what the load checks first, each kernel's arguments against its compiled parameters,
        // is still checked from the code itself, so that a mismatch is reported as itself (as it is with a GPU).
        for (const k of plan.kernels) checkCompiledSignature(k.code!, k.ref.kernel, k.signature);
        throw e;
      }
    });
    const first = new Map<EvalKernelRole, Kernel>();
    for (const k of plan.kernels) first.set(k.role, await this.#loadKernel(device, k, true));
    this.#end();
    return { device, first };
  }

  /**
   * What the check and the re-check compare with, in order of precedence: the JavaScript function, the job's
   * expected outputs or reference kernel, the compare baseline; undefined for none.
   */
  #referenceOf(plan: Plan, { device, first }: Loaded): RefSource | undefined {
    const refPlan = plan.kernels.find((k) => k.role === 'reference') ?? plan.kernels.find((k) => k.role === 'baseline');
    if (this.#o.reference !== undefined) {
      const f = this.#o.reference;
      return { label: 'the JavaScript reference', role: 'reference', of: () => Promise.resolve(f) };
    }
    if (plan.prep.expected !== undefined) {
      const f = expectedReference(plan.prep.expected, plan.io);
      return { label: 'the expected outputs', role: 'reference', of: () => Promise.resolve(f) };
    }
    if (refPlan === undefined) return undefined;
    return {
      label: `${refPlan.label} in ${refPlan.src!.name}`,
      role: refPlan.role,
      // The check uses the module loaded above; the re-check its own: __device__ state stays with its phase.
      of: async (phase) => {
        const kernel = phase === 'check' ? first.get(refPlan.role)! : await this.#loadKernel(device, refPlan, false);
        return { kernel, config: refPlan.config, ...(refPlan.io !== undefined ? { io: refPlan.io } : {}) };
      },
    };
  }

  /** 'check': the candidate against `reference`, or without one the defences that need none; or not at all. */
  async #check(plan: Plan, { first }: Loaded, reference: RefSource | undefined): Promise<void> {
    const { skip = false, withoutReference = 'reference-free' } = plan.job.check ?? {};
    this.#begin('check');
    if (skip || (reference === undefined && withoutReference === 'skip')) {
      this.report.check = { skipped: `not checked (${skip ? 'check.skip' : 'no reference'})` };
      if (!skip) this.report.warnings.push("correctness not checked: no reference (check.withoutReference: 'skip')");
      this.#emit({ kind: 'checked', check: this.report.check });
    } else {
      // Without a reference, the defences that need none (check(candidate, null, io)); no re-check after timing.
      const none: RefSource = {
        label: 'no reference (reference-free check)',
        role: 'reference',
        of: () => Promise.resolve(null),
      };
      const candidate = plan.kernels[0]!;
      const options = { ...checkOptionsOf(plan.job), ...precisionOf(plan, first) };
      await this.#checkCandidate(first.get('candidate')!, candidate, reference ?? none, plan.io, options);
    }
    this.#dispose();
    this.#end();
  }

  /**
   * 'time': the candidate in a fresh module, over rotating input sets, with bench(), or with compare() against the
   * baseline. Returns the input sets, whose outputs the re-check reads.
   */
  async #time(plan: Plan, device: Device): Promise<InputSets> {
    const j = plan.job;
    const candidate = plan.kernels[0]!;
    const baseline = plan.kernels.find((k) => k.role === 'baseline');
    this.#begin('time');
    const kernel = await this.#loadKernel(device, candidate, false);
    const other = baseline === undefined ? undefined : await this.#loadKernel(device, baseline, false);
    const zeroOnFree = j.zeroOnFree === true ? { zeroOnFree: true } : {};
    // Fresh inputs for every timed launch (a result cached from one launch never serves another), but in graph mode,
    // whose replays repeat their launches.
    const fresh = { fresh: (j.timing?.mode ?? 'cold') !== 'graph' };
    const sets = await this.#guard(() =>
      inputSets(device, plan.io, checkOptionsOf(j).seed, { ...zeroOnFree, ...fresh }),
    );
    this.#sets = sets;
    const args = sets.args as (set: number) => never;
    if (other === undefined) {
      this.report.timing = await this.#bench({ kernel, config: candidate.config, args, name: candidate.label }, j);
    } else {
      const [a, b] = compareNames(baseline!, candidate);
      this.report.comparison = await this.#compare(
        { kernel: other, config: baseline!.config, args, name: a },
        { kernel, config: candidate.config, args, name: b },
        j,
      );
    }
    this.#dispose();
    this.#end();
    return sets;
  }

  /** bench() with the job's timing options, its progress as 'samples' events. */
  async #bench(target: KernelTarget, j: EvalJob): Promise<BenchResult> {
    const { kernel, config, args, name } = target;
    const mode = j.timing?.mode ?? 'cold';
    return this.#guard(() =>
      bench(kernel, config, args, {
        ...timingOptionsOf(j),
        name,
        onProgress: (x) =>
          this.#emit({
            kind: 'samples',
            name,
            mode,
            samples: x.samples,
            rejected: x.rejected,
            elapsedMs: x.elapsedMs,
            relCI: x.relCI,
          }),
      }),
    );
  }

  /** compare() of A (the baseline) and B (the candidate) with the job's timing options, its progress as 'rounds'. */
  async #compare(a: KernelTarget, b: KernelTarget, j: EvalJob): Promise<CompareResult> {
    const rounds = j.timing?.rounds === undefined ? {} : { rounds: j.timing.rounds };
    return this.#guard(() =>
      compare(a, b, {
        ...timingOptionsOf(j),
        ...rounds,
        onProgress: (x) => this.#emit({ kind: 'rounds', a: a.name, b: b.name, round: x.round, rounds: x.rounds }),
      }),
    );
  }

  /**
   * 'recheck', after a check against a reference: the timed launches' outputs too, so that a kernel right once but
   * wrong when repeated (races, stale state) fails.
   */
  async #recheck(plan: Plan, reference: RefSource | undefined, sets: InputSets): Promise<void> {
    const before = this.report.check;
    if (reference === undefined || before === undefined || !('before' in before)) return;
    this.#begin('recheck');
    const ref = (await this.#guard(() => reference.of('recheck')))!;
    const { atol, rtol, tolerances } = checkOptionsOf(plan.job);
    const after = await this.#guard(() => sets.verify(ref, defined({ atol, rtol, tolerances })));
    Object.assign(before, { passed: after.passed, afterTiming: after });
    if (!after.passed) this.#fail(verdictError(after, reference.role));
    this.#end();
  }

  /** Every phase passed (or was skipped). */
  #passed(): EvalReport {
    this.report.passed = true;
    return this.report;
  }

  /** Reads and compiles one kernel's source; its facts go into the report. */
  async #compileKernel(k: KernelPlan, j: EvalJob): Promise<void> {
    const src = await this.#guard(() => readSource(k.ref.source, this.#o.baseDir, `${k.role}.cu`), k.role);
    k.src = src;
    const own = k.role === 'candidate' ? {} : ((k.ref as EvalKernelRef).compile ?? {});
    const options = { ...j.compile, ...own };
    const device = this.#o.device;
    if (options.arch === undefined && device !== undefined && options.target !== 'ptx') options.arch = device.arch;
    if (options.arch === undefined && device === undefined && options.target !== 'ptx' && !probe().ok) {
      // The arch would be the GPU's, and there is none: that is the failure (the driver's CudaError, kind 'cuda', with
      // its remedy), not the compiler's RangeError about a missing arch.
      await this.#guard(() => {
        try {
          Device.get(0);
        } catch (e) {
          throw e instanceof CudaError
            ? CudaError.inPhase(e, "evaluate(): compile for the GPU's arch (no compile.arch)")
            : e;
        }
      }, k.role);
    }
    try {
      k.code = await compileSource(src, options, [k.ref.kernel], k.ref.headers ?? j.headers);
    } catch (e) {
      const error = errorOf(e, k.role);
      if (error.kind === 'compile') error.source = src.name;
      this.#fail(error);
    }
    const c = k.code;
    const facts: EvalCompileFacts = {
      kernel: k.ref.kernel,
      loweredName: c.loweredNames[k.ref.kernel] ?? k.ref.kernel,
      source: src.name,
      target: c.target,
      arch: c.arch,
      nvrtcVersion: c.nvrtcVersion,
      compileMs: c.compileMs,
      cached: c.cached ?? false,
      flags: [...c.options],
      log: c.log,
      diagnostics: parseDiagnostics(c.log, src.text),
    };
    this.report.compile[k.role] = facts;
    for (const d of facts.diagnostics) {
      if (d.severity === 'warning') this.report.warnings.push(`${d.file}:${d.line}: warning: ${d.message}`);
    }
  }

  /** Loads one kernel's code into a fresh module; the first load of each also records the kernel's attributes. */
  async #loadKernel(device: Device, k: KernelPlan, first: boolean): Promise<Kernel> {
    return this.#guard(() => {
      const m = device.loadModule(k.code!);
      this.#modules.push(m);
      const kernel = m.getKernel(k.ref.kernel, k.signature);
      const smem = k.config.sharedMemBytes ?? 0;
      if (smem > kernel.attributes.maxDynamicSharedSizeBytes) kernel.setMaxDynamicSharedMemory(smem);
      if (first) {
        const a = kernel.attributes;
        Object.assign(this.report.compile[k.role]!, {
          registers: a.numRegs,
          spillBytes: a.localSizeBytes,
          sharedSizeBytes: a.sharedSizeBytes,
          constSizeBytes: a.constSizeBytes,
          maxThreadsPerBlock: a.maxThreadsPerBlock,
        });
      }
      return kernel;
    }, k.role);
  }

  /** Runs check() on the candidate, records its result and fails the phase on a failed verdict. */
  async #checkCandidate(
    kernel: Kernel,
    k: KernelPlan,
    reference: RefSource,
    io: ArgSpec[],
    options: CheckOptions,
  ): Promise<CheckResult> {
    const ref = await this.#guard(() => reference.of('check'));
    const r = await this.#guard(() => check({ kernel, config: k.config }, ref, io, options));
    const requireDeterminism = options.requireDeterminism === true;
    const c: EvalCheck = { reference: reference.label, passed: r.passed, requireDeterminism, before: r };
    this.report.check = c;
    this.#emit({ kind: 'checked', check: { ...c } }); // as it stands now: the re-check updates the report's
    if (!r.passed) this.#fail(verdictError(r, reference.role));
    return r;
  }

  /** Unloads the phase's modules (none after a sticky error: nothing more touches the GPU). */
  #dispose(): void {
    for (const m of this.#modules.splice(0)) quietly(() => m.dispose());
  }

  /** Releases what is left (after a failure too). */
  release(): void {
    this.#dispose();
    const sets = this.#sets;
    this.#sets = undefined;
    if (sets !== undefined) quietly(() => sets.dispose());
  }
}

/** Runs a cleanup step unless the CUDA context is lost; a failure because it is lost is dropped (docs/errors.md). */
function quietly(release: () => void): void {
  if (isContextLost(undefined)) return;
  try {
    release();
  } catch (e) {
    if (!isContextLost(e)) throw e;
  }
}

/**
 * A failed CheckResult as the report's error: a fault is a CUDA error of the candidate ('fault') or of the reference
 * kernel (`reference`: the job's reference or the compare baseline), anything else a verdict.
 */
function verdictError(r: CheckResult, reference: EvalKernelRole): EvalError {
  const defence = r.defence ?? 'mismatch';
  if (r.error !== undefined) {
    const { code, api, result, sticky } = r.error;
    const kernel = defence === 'reference-fault' ? reference : 'candidate';
    return { kind: 'cuda', code, message: r.summary, kernel, api, result, sticky, defence };
  }
  return { kind: 'verdict', code: defence, message: r.summary, defence };
}

/** The candidate's launch configuration (profileJob launches it the same way). */
export function launchConfigOf(j: EvalJob): LaunchConfig {
  const smem = j.sharedMemBytes ?? 0;
  return {
    grid: j.grid,
    block: j.block,
    ...(smem > 0 ? { sharedMemBytes: smem } : {}),
    ...(j.cooperative === true ? { cooperative: true } : {}),
    ...(j.clusterDim !== undefined ? { clusterDim: j.clusterDim } : {}),
  };
}

/** The job's kernels: the candidate first, then the reference kernel and the compare baseline when there are. */
function kernelPlans(j: EvalJob, prep: PreparedJob): KernelPlan[] {
  const smem = j.sharedMemBytes ?? 0;
  const config = launchConfigOf(j);
  const signature = prep.signature;
  const ref = { source: j.source, kernel: j.kernel, headers: j.headers };
  const plans: KernelPlan[] = [{ role: 'candidate', ref, label: j.name ?? j.kernel, config, signature }];
  const other = (role: EvalKernelRole, r: EvalKernelRef): KernelPlan => {
    const s = r.sharedMemBytes ?? smem;
    const c: LaunchConfig = { ...config, grid: r.grid ?? config.grid, block: r.block ?? config.block };
    if (s > 0) c.sharedMemBytes = s;
    else delete c.sharedMemBytes;
    return { role, ref: r, label: r.name ?? r.kernel, config: c, signature };
  };
  if (j.reference !== undefined && 'kernel' in j.reference) {
    const plan = other('reference', j.reference);
    const own = prep.referenceArgs?.map((a) => a.spec);
    if (own !== undefined) Object.assign(plan, { io: own, signature: signatureOf(own) });
    plans.push(plan);
  }
  if (j.compare !== undefined) plans.push(other('baseline', j.compare));
  const precise = j.check?.precision?.reference;
  if (precise !== undefined) {
    const plan = other('precise', precise);
    const own = prep.preciseArgs?.map((a) => a.spec);
    if (own !== undefined) Object.assign(plan, { io: own, signature: signatureOf(own) });
    plans.push(plan);
  }
  return plans;
}

/** Report names for A and B: the labels, qualified by the file when they are the same. */
function compareNames(a: KernelPlan, b: KernelPlan): [string, string] {
  if (a.label !== b.label) return [a.label, b.label];
  return [`${basename(a.src!.name)}:${a.label}`, `${basename(b.src!.name)}:${b.label}`];
}

/** A JavaScript reference that writes literal expected outputs (device bytes) into the host arrays. */
function expectedReference(expected: Map<number, Uint8Array>, io: readonly ArgSpec[]): JsReference {
  return (args) => {
    for (const [i, bytes] of expected) {
      const values = fromDeviceBytes((io[i] as BufferArgSpec).dtype, bytes);
      (args[i] as unknown as { set(x: ArrayLike<number | bigint>): void }).set(values);
    }
  };
}

/**
 * check()'s options for a job: its check options but skip and withoutReference (the pipeline's) and precision (whose
 * kernel the pipeline loads: precisionOf), and zeroOnFree.
 */
function checkOptionsOf(j: EvalJob): CheckOptions {
  const { skip, withoutReference, precision, ...own } = j.check ?? {};
  return j.zeroOnFree === true ? { ...own, zeroOnFree: true } : own;
}

/** check()'s `precision` for a job with check.precision: the precise kernel, loaded with the check's modules. */
function precisionOf(plan: Plan, first: Map<EvalKernelRole, Kernel>): Pick<CheckOptions, 'precision'> {
  const p = plan.job.check?.precision;
  const k = plan.kernels.find((x) => x.role === 'precise');
  if (p === undefined || k === undefined) return {};
  const reference = { kernel: first.get('precise')!, config: k.config, ...(k.io !== undefined ? { io: k.io } : {}) };
  return { precision: { reference, ...(p.factor !== undefined ? { factor: p.factor } : {}) } };
}

/** The options bench() and compare() share, from the job's timing options. */
function timingOptionsOf(
  j: EvalJob,
): Pick<BenchOptions, 'mode' | 'preset' | 'timer' | 'rule' | 'inputSets' | 'bytes' | 'flops'> {
  const timing = j.timing ?? {};
  return defined({
    mode: timing.mode,
    preset: timing.preset,
    timer: timing.timer,
    rule: timing.rule === undefined && timing.precision === undefined ? undefined : ruleOf(timing),
    inputSets: timing.inputSets,
    bytes: timing.bytes,
    flops: timing.flops,
  });
}

/**
 * @internal A job's overrides of the stopping rule: timing.rule, with timing.precision as its precision target
 * (targetRelCI).
 */
export function ruleOf(timing: EvalTimingOptions): Partial<StoppingRule> {
  return { ...timing.rule, ...(timing.precision === undefined ? {} : { targetRelCI: timing.precision }) };
}

/** Options without their undefined fields (exactOptionalPropertyTypes: absent and undefined differ). */
type Defined<T> = { [K in keyof T]?: Exclude<T[K], undefined> };
function defined<T extends object>(o: T): Defined<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Defined<T>;
}
