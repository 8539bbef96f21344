// SPDX-License-Identifier: MIT
// The Node side of the Python runner's protocol (server/python/cudakit_runner.py --serve): JSON lines, one command
// and one answer each, tensors passed as files of raw bytes in the job's private folder. The runner executes code
// from a request, so every answer is hostile until checked here: its shape, its numbers, the files it names (inside
// the folder, of the size their dtype and shape make) and its timestamps (in order, and adding up to no more than
// the wall time this side saw). This side computes every statistic from the raw timestamps; the runner only reports
// them. How the lines travel (a child's pipes, or the GPU slot's relay to a worker) is a RunnerLink.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

/** The runner's protocol version (its probe and its `ready` carry it). */
export const RUNNER_PROTOCOL = 1;

/** Kernel types the runner executes; 'cuda' kernels are cudakit's own. */
export const PYTHON_KERNEL_TYPES = ['torch', 'torch_cuda', 'triton', 'multi_kernel'] as const;
export type PythonKernelType = (typeof PYTHON_KERNEL_TYPES)[number];

/** Tensor element types as the runner names them (torch's), with their sizes in bytes. */
export const RUNNER_DTYPE_BYTES = {
  float32: 4,
  float64: 8,
  float16: 2,
  bfloat16: 2,
  float8_e4m3fn: 1,
  float8_e5m2: 1,
  int64: 8,
  int32: 4,
  int16: 2,
  int8: 1,
  uint8: 1,
  bool: 1,
} as const;
export type RunnerDType = keyof typeof RUNNER_DTYPE_BYTES;

/** One argument of a Python kernel, in its io order. */
export type PythonArg =
  | { name: string; kind: 'tensor'; dtype: RunnerDType; shape: number[]; role: 'input' | 'output' | 'inout' }
  | {
      name: string;
      kind: 'scalar';
      dtype: 'int' | 'float' | 'bool' | 'str';
      value: number | boolean | string;
      role: 'input';
      /** A Triton constexpr, passed by keyword. */
      meta?: boolean;
    };

/** A Python kernel as the runner loads it. */
export interface PythonKernel {
  type: PythonKernelType;
  source: string;
  metadata: Record<string, unknown> | null;
  launch: {
    grid?: { x: number; y: number; z: number };
    num_warps?: number;
    num_stages?: number;
  } | null;
}

/** A tensor the runner wrote: where, of what type and shape. */
export interface RunnerTensor {
  file: string;
  dtype: RunnerDType;
  shape: number[];
}

/** What the runner says of itself once it is up. */
export interface RunnerReady {
  pid: number;
  python: string;
  torch: string;
  device: 'cuda' | 'cpu';
  /** How it timestamps: CUDA events bound through libcuda before any submitted code ran, torch's events, or the CPU. */
  timer: 'cuda-events' | 'torch-events' | 'perf-counter';
}

/** One batch of timed calls: each sample's start and end on one clock, ms, and this side's wall time of the batch. */
export interface RunnerBatch {
  startsMs: number[];
  endsMs: number[];
  /** Wall time of the whole round trip as this side saw it, ms (an upper bound of what the samples may add to). */
  observedWallMs: number;
}

/** Where a failure came from, as the runner says: the kernel's code or the runner's contract. */
export type RunnerErrorKind =
  | 'protocol'
  | 'import'
  | 'entry'
  | 'missing'
  | 'raise'
  | 'output'
  /** This side: the runner broke the protocol (a bad answer, a timestamp out of order, a file outside its folder). */
  | 'answer'
  /** This side: the runner did not answer in time, or exited. */
  | 'gone';

/** A failure of a command to the runner: the kernel's own error (with its traceback) or the runner's. */
export class RunnerError extends Error {
  readonly kind: RunnerErrorKind;
  /** The command that failed. */
  readonly phase: string;
  /** The Python exception's class, when there was one. */
  readonly pythonType: string | undefined;
  /** Frames of the submitted source only ('kernel.py:12 in forward'), never a path outside the job's folder. */
  readonly traceback: string | undefined;
  constructor(kind: RunnerErrorKind, phase: string, message: string, pythonType?: string, traceback?: string) {
    super(message);
    this.name = 'RunnerError';
    this.kind = kind;
    this.phase = phase;
    this.pythonType = pythonType;
    this.traceback = traceback;
  }
}

/** How protocol lines travel between this side and a runner. */
export interface RunnerLink {
  send(line: string): void;
  /** Every line the runner writes, in order. */
  onLine(listener: (line: string) => void): void;
  /** The runner is gone (it exited, or the relay closed), with why. */
  onClose(listener: (why: string) => void): void;
}

/** A runner's answer lines are at most this long (a 'timed' of 100,000 samples is about 4 MB). */
export const ANSWER_CHARS_MAX = 8 << 20;

/** A link over a child's stdin and stdout (its stderr is the caller's to read). */
export function childLink(child: ChildProcess): RunnerLink {
  const lines = createInterface({ input: child.stdout!, crlfDelay: Number.POSITIVE_INFINITY });
  return {
    send: (line) => {
      child.stdin!.write(`${line}\n`);
    },
    onLine: (listener) => lines.on('line', listener),
    onClose: (listener) => {
      child.stdin!.on('error', () => listener('its input closed'));
      child.on('exit', (code, signal) => listener(signal === null ? `it exited with ${code}` : `it got ${signal}`));
      child.on('error', (e) => listener(`it could not run (${e.message})`));
    },
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Bytes a tensor of `dtype` and `shape` has. */
export function tensorBytes(dtype: RunnerDType, shape: readonly number[]): number {
  return shape.reduce((n, d) => n * d, 1) * RUNNER_DTYPE_BYTES[dtype];
}

interface Pending {
  phase: string;
  expect: string;
  resolve: (answer: Record<string, unknown>) => void;
  reject: (e: RunnerError) => void;
  timer: NodeJS.Timeout;
}

/**
 * A client of one runner process: `ready`, then `load` once, then any number of `run`, `prepare` and `time`, then
 * `close`. Commands go one at a time (each waits for its answer). Paths are relative to `dir`, the job's folder as
 * this side sees it.
 */
export class PythonRunner {
  readonly dir: string;
  readonly ready: Promise<RunnerReady>;
  #link: RunnerLink;
  #pending = new Map<number, Pending>();
  #nextId = 1;
  #gone: string | undefined;
  #readyWaiter: Pending | undefined;

  constructor(link: RunnerLink, dir: string, options: { readyTimeoutMs?: number } = {}) {
    this.#link = link;
    this.dir = resolve(dir);
    this.ready = new Promise<Record<string, unknown>>((res, rej) => {
      this.#readyWaiter = this.#waiter('start', 'ready', res, rej, options.readyTimeoutMs ?? 120_000, 0);
    }).then((a) => readyOf(a));
    // A failed start with nobody awaiting `ready` yet must not be an unhandled rejection; callers still see it.
    this.ready.catch(() => {});
    link.onLine((line) => this.#answer(line));
    link.onClose((why) => this.#close(`the runner is gone: ${why}`));
  }

  /** Loads the kernel (imports its source, finds its entry point). Resolves to the entry's name and the time taken. */
  async load(
    kernel: PythonKernel,
    args: readonly PythonArg[],
    timeoutMs: number,
  ): Promise<{ entry: string; ms: number }> {
    const a = await this.#command('load', 'loaded', { kernel, args }, timeoutMs);
    if (typeof a.entry !== 'string' || !isFiniteNumber(a.ms)) throw this.#bad('load', "a 'loaded' without entry or ms");
    return { entry: a.entry.slice(0, 200), ms: a.ms };
  }

  /**
   * One call of the kernel on the tensors in `files` (arg name → file); its outputs and the inputs as they are after
   * the call land in `out`. Every file named in the answer is checked to be inside the folder and of its size.
   */
  async run(
    files: Readonly<Record<string, string>>,
    out: string,
    timeoutMs: number,
  ): Promise<{ outputs: RunnerTensor[]; inputsAfter: Record<string, string>; ms: number }> {
    this.#inside(out, 'run');
    const a = await this.#command('run', 'ran', { files, out }, timeoutMs);
    if (!Array.isArray(a.outputs) || !isObject(a.inputsAfter) || !isFiniteNumber(a.ms)) {
      throw this.#bad('run', "a 'ran' without outputs, inputsAfter or ms");
    }
    const outputs = a.outputs.map((o, i) => this.#tensorOf(o, `outputs[${i}]`));
    const inputsAfter: Record<string, string> = {};
    for (const [name, file] of Object.entries(a.inputsAfter)) {
      if (typeof file !== 'string') throw this.#bad('run', `inputsAfter.${name} is not a file name`);
      this.#inside(file, 'run');
      inputsAfter[name] = file;
    }
    return { outputs, inputsAfter, ms: a.ms };
  }

  /** Loads `sets` (each arg name → file) to the device for timing, and a buffer of `flushBytes` to flush the L2. */
  async prepare(
    sets: readonly Readonly<Record<string, string>>[],
    flushBytes: number,
    timeoutMs: number,
  ): Promise<void> {
    const a = await this.#command('prepare', 'prepared', { sets, flushBytes }, timeoutMs);
    if (a.sets !== sets.length) throw this.#bad('prepare', `${String(a.sets)} sets prepared of ${sets.length}`);
  }

  /**
   * Times `samples` calls after `warmup` untimed ones, rotating over the prepared sets. Resolves to the raw
   * timestamps, checked: as many as asked, finite, each sample starting after the last one ended, and all of them
   * adding up to no more than the wall time this side saw for the batch.
   */
  async time(samples: number, warmup: number, flush: boolean, timeoutMs: number): Promise<RunnerBatch> {
    const sentAt = performance.now();
    const a = await this.#command('time', 'timed', { samples, warmup, flush }, timeoutMs);
    const observedWallMs = performance.now() - sentAt;
    const { startsMs, endsMs } = a;
    const ok = (v: unknown): v is number[] =>
      Array.isArray(v) && v.length === samples && v.every((x) => isFiniteNumber(x) && x >= 0);
    if (!ok(startsMs) || !ok(endsMs)) throw this.#bad('time', `a 'timed' without ${samples} starts and ends`);
    let sumMs = 0;
    for (let i = 0; i < samples; i++) {
      if (endsMs[i]! < startsMs[i]!) throw this.#bad('time', `sample ${i} ends before it starts`);
      if (i > 0 && startsMs[i]! < endsMs[i - 1]!) throw this.#bad('time', `sample ${i} starts before ${i - 1} ended`);
      sumMs += endsMs[i]! - startsMs[i]!;
    }
    if (sumMs > observedWallMs) {
      throw this.#bad(
        'time',
        `its samples add up to ${sumMs.toFixed(3)} ms, more than the ${observedWallMs.toFixed(3)} ms the batch took`,
      );
    }
    return { startsMs, endsMs, observedWallMs };
  }

  /** Asks the runner to exit and fails whatever still waits. Never throws. */
  close(): void {
    if (this.#gone === undefined) {
      try {
        this.#link.send(JSON.stringify({ v: RUNNER_PROTOCOL, t: 'bye' }));
      } catch {
        // gone already
      }
    }
    this.#close('the runner was closed');
  }

  /** Writes a tensor's bytes to `file` (relative to the folder), making its folder. Returns the relative name. */
  writeTensor(file: string, bytes: Uint8Array): string {
    const path = this.#inside(file, 'write');
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, bytes);
    return file;
  }

  /** Reads a tensor the runner wrote, checking its size against its dtype and shape. */
  readTensor(t: RunnerTensor): Uint8Array {
    return this.readFile(t.file, tensorBytes(t.dtype, t.shape));
  }

  /** Reads a file the runner wrote, of exactly `bytes` bytes (a size it cannot choose). */
  readFile(file: string, bytes: number): Uint8Array {
    const path = this.#inside(file, 'read');
    let size: number;
    try {
      const s = statSync(path);
      if (!s.isFile()) throw new Error('not a file');
      size = s.size;
    } catch {
      throw this.#bad('read', `${file} is not a file it wrote`);
    }
    if (size !== bytes) throw this.#bad('read', `${file} holds ${size} bytes, not ${bytes}`);
    return new Uint8Array(readFileSync(path));
  }

  /** `file` as an absolute path inside the folder; a name that leaves it is the runner breaking the protocol. */
  #inside(file: string, phase: string): string {
    const path = resolve(this.dir, file);
    if (typeof file !== 'string' || file.startsWith('/') || !path.startsWith(this.dir + sep)) {
      throw this.#bad(phase, `'${String(file).slice(0, 80)}' is not a file in the job's folder`);
    }
    return path;
  }

  #tensorOf(v: unknown, what: string): RunnerTensor {
    if (!isObject(v) || typeof v.file !== 'string' || typeof v.dtype !== 'string' || !Array.isArray(v.shape)) {
      throw this.#bad('run', `${what} is not a tensor (file, dtype, shape)`);
    }
    if (!Object.hasOwn(RUNNER_DTYPE_BYTES, v.dtype)) throw this.#bad('run', `${what} has dtype '${v.dtype}'`);
    if (v.shape.length > 8 || !v.shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
      throw this.#bad('run', `${what} has shape ${JSON.stringify(v.shape).slice(0, 80)}`);
    }
    this.#inside(v.file, 'run');
    return { file: v.file, dtype: v.dtype as RunnerDType, shape: v.shape as number[] };
  }

  #bad(phase: string, what: string): RunnerError {
    return new RunnerError('answer', phase, `the Python runner broke its protocol: ${what}`);
  }

  async #command(
    t: string,
    expect: string,
    body: Record<string, unknown>,
    timeoutMs: number,
  ): Promise<Record<string, unknown>> {
    await this.ready;
    if (this.#gone !== undefined) throw new RunnerError('gone', t, this.#gone);
    const id = this.#nextId++;
    const answer = new Promise<Record<string, unknown>>((res, rej) => {
      this.#pending.set(id, this.#waiter(t, expect, res, rej, timeoutMs, id));
    });
    this.#link.send(JSON.stringify({ v: RUNNER_PROTOCOL, t, id, ...body }));
    return answer;
  }

  #waiter(
    phase: string,
    expect: string,
    resolve: (a: Record<string, unknown>) => void,
    reject: (e: RunnerError) => void,
    timeoutMs: number,
    id: number,
  ): Pending {
    const timer = setTimeout(() => {
      this.#settle(
        id,
        new RunnerError('gone', phase, `the Python runner did not answer '${phase}' in ${timeoutMs} ms`),
      );
    }, timeoutMs);
    return { phase, expect, resolve, reject, timer };
  }

  #settle(id: number, outcome: RunnerError | Record<string, unknown>): void {
    const p = id === 0 ? this.#readyWaiter : this.#pending.get(id);
    if (p === undefined) return;
    if (id === 0) this.#readyWaiter = undefined;
    else this.#pending.delete(id);
    clearTimeout(p.timer);
    if (outcome instanceof RunnerError) p.reject(outcome);
    else p.resolve(outcome);
  }

  #answer(line: string): void {
    let a: unknown;
    try {
      a = line.length > ANSWER_CHARS_MAX ? undefined : JSON.parse(line);
    } catch {
      a = undefined;
    }
    if (!isObject(a) || a.v !== RUNNER_PROTOCOL || typeof a.t !== 'string') {
      return this.#fail(this.#bad('answer', `a line that is not a version-${RUNNER_PROTOCOL} message`));
    }
    if (a.t === 'ready') {
      if (this.#readyWaiter === undefined) return this.#fail(this.#bad('answer', "a second 'ready'"));
      return this.#settle(0, a);
    }
    const id = typeof a.id === 'number' ? a.id : undefined;
    const p = id === undefined ? undefined : this.#pending.get(id);
    if (a.t === 'error') {
      const e = errorOf(a, p?.phase);
      // An error answering no command (a protocol complaint of the runner's) fails whatever waits.
      return p === undefined ? this.#fail(e) : this.#settle(id!, e);
    }
    if (p === undefined || a.t !== p.expect) {
      return this.#fail(this.#bad('answer', `an answer '${a.t.slice(0, 40)}' to no command that waits for it`));
    }
    this.#settle(id!, a);
  }

  /** The runner broke the protocol: it is not trusted for anything more. */
  #fail(e: RunnerError): void {
    this.#close(e.message, e);
  }

  #close(why: string, error?: RunnerError): void {
    this.#gone ??= why;
    const e = error ?? new RunnerError('gone', 'close', why);
    if (this.#readyWaiter !== undefined) this.#settle(0, new RunnerError(e.kind, 'start', e.message));
    for (const id of [...this.#pending.keys()]) {
      const p = this.#pending.get(id)!;
      this.#settle(id, new RunnerError(e.kind, p.phase, e.message, e.pythonType, e.traceback));
    }
  }
}

function readyOf(a: Record<string, unknown>): RunnerReady {
  const { pid, python, torch, device, timer } = a;
  if (
    typeof pid !== 'number' ||
    typeof python !== 'string' ||
    typeof torch !== 'string' ||
    (device !== 'cuda' && device !== 'cpu') ||
    (timer !== 'cuda-events' && timer !== 'torch-events' && timer !== 'perf-counter')
  ) {
    throw new RunnerError('answer', 'start', "the Python runner broke its protocol: a 'ready' without its facts");
  }
  return { pid, python: python.slice(0, 40), torch: torch.slice(0, 40), device, timer };
}

const KINDS: readonly RunnerErrorKind[] = ['protocol', 'import', 'entry', 'missing', 'raise', 'output'];

/** A runner's error answer as a RunnerError, its texts bounded. */
function errorOf(a: Record<string, unknown>, phase: string | undefined): RunnerError {
  const kind = KINDS.includes(a.kind as RunnerErrorKind) ? (a.kind as RunnerErrorKind) : 'protocol';
  const text = (v: unknown, max: number): string | undefined => (typeof v === 'string' ? v.slice(0, max) : undefined);
  return new RunnerError(
    kind,
    phase ?? text(a.phase, 20) ?? 'protocol',
    text(a.message, 2000) ?? 'the Python runner failed without saying why',
    text(a.type, 80),
    text(a.traceback, 4000),
  );
}

/**
 * A relative file name for argument `index` named `name` inside `folder`: the index keeps two names apart that read
 * alike once made safe (argument names come from requests).
 */
export function tensorFileName(folder: string, index: number, name: string): string {
  return join(folder, `${index}-${name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64)}.bin`);
}
