// SPDX-License-Identifier: MIT
// A job's Python kernel, seen from the worker. As a reference: a JsReference for evaluate() whose every call sends
// the trial's inputs to the job's runner (files in the runner's folder) and copies its outputs into the job's output
// buffers, so the CUDA candidate is checked with all of cudakit's defences against outputs the Python reference
// computed from the same bytes. As a candidate (PythonReferenceOptions.role), the same calls are check()'s
// HostCandidate (python-candidate.ts). Then the runner times it on two of those input sets; its raw timestamps come
// back and every statistic, and the stopping rule, are computed here (the runner executes a request's code: it
// reports, it does not judge).
import {
  Device,
  type EvalJob,
  type HostValue,
  type JsReference,
  PRESETS,
  type StoppingRule,
  type Summary,
  fromBf16Bits,
  fromFp8Bits,
  fromHalfBits,
  shouldStop,
  summarize,
  toBf16Bits,
  toFp8Bits,
  toHalfBits,
} from 'cudakit';
import {
  PythonRunner,
  type RunnerDType,
  RunnerError,
  type RunnerLink,
  type RunnerReady,
  type RunnerTensor,
  tensorBytes,
  tensorFileName,
} from '../python-runner.js';
import type { PythonKernelSpec, PythonRole } from '../protocol.js';
import { relayedRunner } from './relay-link.js';

/** The reference's timing, as compat's ref_runtime and the report show it. */
export interface PythonTiming {
  stats: Summary;
  /** Each accepted sample, ms (the runner's event pairs, end minus start). */
  samples: { gpuMs: number }[];
  stopReason: string;
  /** How the runner timestamped (RunnerReady.timer). */
  timer: RunnerReady['timer'];
}

/** What the report says of a Python reference. */
export interface PythonReferenceReport {
  type: string;
  entry: string | undefined;
  loadMs: number | undefined;
  /**
   * 'kept': what it builds (torch_cuda's extension, Triton's kernels) was copied in from an earlier job of the same
   * principal with the same source, so its load paid no cold build; 'new': nothing was kept for it.
   */
  builds?: 'kept' | 'new';
  runtime: { python: string; torch: string; device: string } | undefined;
  timing: PythonTiming | undefined;
  /** Why it was not timed, when it was not. */
  notTimed?: string;
}

export interface PythonReferenceOptions {
  /**
   * 'reference' (default): its outputs are what the job's outputs must hold. 'candidate': the kernel under test (a
   * check()'s HostCandidate): its output tensors start from the job's poisoned output arrays, and its input tensors as
   * they are after each call are copied back, so the check sees a kernel that wrote its inputs.
   */
  role?: 'reference' | 'candidate';
  /** Limits of one command to the runner, ms (the slot's phase deadlines bound the whole job anyway). */
  loadTimeoutMs?: number;
  callTimeoutMs?: number;
  /** Bytes of the buffer cleared before each timed call, to flush the L2 (twice the L2's size). */
  flushBytes: number;
}

/** Samples per timing command: enough to spread the round trip's cost, few enough to stop early. */
const BATCH = 20;

/** A Python reference for one job: `reference` for evaluate(), then `time()`, then `close()`. */
export class PythonReference {
  readonly runner: PythonRunner;
  #spec: PythonKernelSpec;
  #o: Required<PythonReferenceOptions>;
  #calls = 0;
  /** Input files of the first calls, kept for timing. */
  #sets: Record<string, string>[] = [];
  #loaded: { entry: string; ms: number } | undefined;
  #loading: Promise<void> | undefined;
  #builds: 'kept' | 'new' | undefined;

  constructor(
    link: RunnerLink,
    dir: string,
    spec: PythonKernelSpec,
    o: PythonReferenceOptions,
    builds?: 'kept' | 'new',
  ) {
    this.runner = new PythonRunner(link, dir);
    this.#builds = builds;
    this.#spec = spec;
    this.#o = { role: 'reference', loadTimeoutMs: 600_000, callTimeoutMs: 120_000, ...o };
  }

  /**
   * Loads the reference in the runner (imports it, builds a torch_cuda extension, finds its entry point), once: the
   * first call of `reference` does, so a failure is the check's, blamed on the reference.
   */
  load(): Promise<void> {
    this.#loading ??= (async () => {
      const { args, outputs: _outputs, ...kernel } = this.#spec;
      const plain = args.map(({ from: _from, ...a }) => a);
      this.#loaded = await this.runner.load(kernel, plain, this.#o.loadTimeoutMs);
    })();
    return this.#loading;
  }

  /** evaluate()'s reference: the job's host arguments in, its output arguments filled with the runner's outputs. */
  readonly reference: JsReference = async (hostArgs: HostValue[]) => {
    try {
      await this.call(hostArgs);
    } catch (e) {
      throw e instanceof RunnerError ? new Error(describeRunnerError(e, `the Python ${this.#o.role}`)) : e;
    }
  };

  /**
   * One call of the kernel: its inputs to files (a candidate's outputs too, as the job's arrays hold them: poisoned),
   * its outputs into the job's output arrays; a candidate's inputs as they are after the call back into the job's.
   */
  async call(hostArgs: HostValue[]): Promise<void> {
    await this.load();
    const candidate = this.#o.role === 'candidate';
    const folder = `call-${this.#calls++}`;
    const files: Record<string, string> = {};
    this.#spec.args.forEach((a, i) => {
      if (a.kind !== 'tensor' || a.from === undefined || (a.role === 'output' && !candidate)) return;
      const what = `the job's argument ${a.from} for the ${this.#o.role}'s '${a.name}'`;
      const bytes = runnerBytes(hostArgs[a.from], a.dtype, what);
      const want = tensorBytes(a.dtype, a.shape);
      if (bytes.byteLength !== want) {
        throw new RangeError(
          `The ${this.#o.role}'s '${a.name}' (${a.dtype}[${a.shape.join(', ')}], ${want} bytes) gets ` +
            `${bytes.byteLength} bytes from the job's argument ${a.from}`,
        );
      }
      files[a.name] = this.runner.writeTensor(tensorFileName(folder, i, a.name), bytes);
    });
    if (this.#sets.length < 2) this.#sets.push(files);
    const ran = await this.runner.run(files, `${folder}/out`, this.#o.callTimeoutMs);
    const into = this.#spec.outputs;
    if (ran.outputs.length !== into.length) {
      throw new RangeError(
        `The Python ${this.#o.role} returned ${ran.outputs.length} output(s); the job has ${into.length}`,
      );
    }
    ran.outputs.forEach((t, k) => copyInto(this.runner.readTensor(t), t, hostArgs[into[k]!], `output ${k}`));
    if (!candidate) return;
    for (const a of this.#spec.args) {
      const file = ran.inputsAfter[a.name];
      if (a.kind !== 'tensor' || a.from === undefined || a.role !== 'input' || file === undefined) continue;
      const t = { file, dtype: a.dtype, shape: a.shape };
      copyInto(this.runner.readTensor(t), t, hostArgs[a.from], `input '${a.name}'`);
    }
  }

  /**
   * Times the reference on the first two calls' inputs, with `rule` (the job's), batch by batch until it stops.
   * Resolves to the timing and the report's part.
   */
  async time(rule: StoppingRule): Promise<PythonTiming> {
    const ready = await this.runner.ready;
    await this.runner.prepare(this.#sets, this.#o.flushBytes, this.#o.callTimeoutMs);
    const samples: number[] = [];
    const history: number[] = [];
    let accumulatedMs = 0;
    const started = performance.now();
    let warmup = rule.warmupMinRuns;
    for (;;) {
      const batch = await this.runner.time(BATCH, warmup, true, this.#o.callTimeoutMs);
      warmup = 0;
      for (let i = 0; i < BATCH; i++) {
        const ms = batch.endsMs[i]! - batch.startsMs[i]!;
        samples.push(ms);
        accumulatedMs += ms;
      }
      const d = shouldStop(samples, accumulatedMs, performance.now() - started, rule, history);
      if (d.stop) {
        return {
          stats: summarize(samples),
          samples: samples.map((gpuMs) => ({ gpuMs })),
          stopReason: d.reason,
          timer: ready.timer,
        };
      }
    }
  }

  /** What the report says of it so far. */
  async reportOf(timing: PythonTiming | undefined, notTimed?: string): Promise<PythonReferenceReport> {
    const ready = await this.runner.ready.catch(() => undefined);
    return {
      type: this.#spec.type,
      entry: this.#loaded?.entry,
      loadMs: this.#loaded?.ms,
      ...(this.#builds === undefined ? {} : { builds: this.#builds }),
      runtime: ready === undefined ? undefined : { python: ready.python, torch: ready.torch, device: ready.device },
      timing,
      ...(notTimed === undefined ? {} : { notTimed }),
    };
  }

  close(): void {
    this.runner.close();
  }
}

/**
 * A runner's failure as the check reports it: whose, where, the Python exception and the submitted source's frames.
 */
export function describeRunnerError(e: RunnerError, who = 'the Python reference'): string {
  const where = e.phase === 'load' ? 'loading' : e.phase === 'run' ? 'running' : e.phase;
  const what = e.pythonType === undefined ? e.message : `${e.pythonType}: ${e.message}`;
  const frames = e.traceback === undefined || e.traceback === '' ? '' : ` (${e.traceback.split('\n').join('; ')})`;
  return `${who} failed ${where} it: ${what}${frames}`;
}

/** The job's timing rule for the reference: its preset, its rule's overrides and its precision. */
export function referenceRule(job: EvalJob): StoppingRule {
  const t = job.timing ?? {};
  return {
    ...PRESETS[t.preset ?? 'default'],
    ...t.rule,
    ...(t.precision === undefined ? {} : { targetRelCI: t.precision }),
  };
}

/** A host buffer's bytes. */
function bytesOf(v: HostValue | undefined, what: string): Uint8Array {
  if (!ArrayBuffer.isView(v)) throw new TypeError(`Expected a buffer for ${what}`);
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

/** The runner's narrow floats, whose host arrays hold logical values (a Float32Array): their size, bits both ways. */
const NARROW: Partial<
  Record<RunnerDType, { bytes: 1 | 2; toBits: (x: number) => number; fromBits: (b: number) => number }>
> = {
  float16: { bytes: 2, toBits: toHalfBits, fromBits: fromHalfBits },
  bfloat16: { bytes: 2, toBits: toBf16Bits, fromBits: fromBf16Bits },
  float8_e4m3fn: { bytes: 1, toBits: (x) => toFp8Bits('f8e4m3', x), fromBits: (b) => fromFp8Bits('f8e4m3', b) },
  float8_e5m2: { bytes: 1, toBits: (x) => toFp8Bits('f8e5m2', x), fromBits: (b) => fromFp8Bits('f8e5m2', b) },
};

/**
 * The bytes a runner's tensor of `dtype` gets from a job's host array: its own bytes, but for the narrow floats
 * (float16, bfloat16, float8), whose host arrays hold logical values (a Float32Array, as check() and a JavaScript
 * reference see them), rounded to the tensor's bits.
 */
function runnerBytes(v: HostValue | undefined, dtype: RunnerDType, what: string): Uint8Array {
  const narrow = NARROW[dtype];
  if (narrow === undefined || !(v instanceof Float32Array)) return bytesOf(v, what);
  const bits = narrow.bytes === 2 ? new Uint16Array(v.length) : new Uint8Array(v.length);
  for (let i = 0; i < v.length; i++) bits[i] = narrow.toBits(v[i]!);
  return new Uint8Array(bits.buffer);
}

/**
 * Copies a runner's tensor into a job's host array. Same size: the bytes as they are (the mapping made their element
 * types agree). A float64 tensor for a Float32Array (torch promotes some results) is converted, and the narrow
 * floats' bits are widened into a Float32Array of logical values.
 */
function copyInto(bytes: Uint8Array, t: RunnerTensor, target: HostValue | undefined, what: string): void {
  const into = bytesOf(target, `the job's ${what}`);
  const narrow = NARROW[t.dtype];
  if (narrow !== undefined && target instanceof Float32Array) {
    if (bytes.byteLength === target.length * narrow.bytes) {
      const copy = bytes.slice();
      const bits = narrow.bytes === 2 ? new Uint16Array(copy.buffer) : copy;
      for (let i = 0; i < bits.length; i++) target[i] = narrow.fromBits(bits[i]!);
      return;
    }
  } else if (bytes.byteLength === into.byteLength) {
    into.set(bytes);
    return;
  }
  if (t.dtype === 'float64' && target instanceof Float32Array && bytes.byteLength === into.byteLength * 2) {
    const wide = new Float64Array(bytes.slice().buffer);
    target.set(wide);
    return;
  }
  throw new RangeError(
    `The Python kernel's ${what} is ${t.dtype}[${t.shape.join(', ')}] (${bytes.byteLength} bytes); the job's ` +
      `${what} has ${into.byteLength} bytes`,
  );
}

/** L2 bytes assumed where the GPU cannot be read yet: the larger L2s of today's GPUs. */
const FALLBACK_L2_BYTES = 64 << 20;

/**
 * The job's Python kernel in `role`, in a runner the slot starts for it (relayedRunner), its timed calls flushing
 * twice the GPU's L2. Rejects when the runner cannot start.
 */
export async function startPythonKernel(
  spec: PythonKernelSpec,
  jobId: string,
  role: PythonRole,
): Promise<PythonReference> {
  const { link, dir, builds } = await relayedRunner(jobId, role);
  let l2Bytes = FALLBACK_L2_BYTES;
  try {
    l2Bytes = Device.get(0).l2CacheBytes;
  } catch {
    // no device yet: the fallback
  }
  return new PythonReference(link, dir, spec, { role, flushBytes: 2 * l2Bytes }, builds);
}
