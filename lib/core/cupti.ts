// SPDX-License-Identifier: MIT
// CUPTI, the CUDA profiling interface, for kernel durations: where the library is looked for (cuptiCandidates), whether
// it can be used here (cuptiStatus), and a trace of GPU activity (ActivityTrace) whose kernel, copy and memset
// records the sampler cuts into samples (sampleDurations). A kernel record's start and end are the GPU's own
// timestamps around the kernel, the source closest to Nsight Compute's gpu__time_duration; events around a kernel
// also time the event pair and the gaps beside the kernel (docs/benchmarking.md, 'Timers').
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { getNative } from './native.js';

/** CUpti_ActivityKind values read from CUPTI's records. */
const KIND = { memcpy: 1, memset: 2, kernel: 3, concurrentKernel: 10 } as const;
/** What a trace enables: kernels without serializing them, and copies and sets (a function target's work). */
const TRACED_KINDS = [KIND.concurrentKernel, KIND.memcpy, KIND.memset];

/** Whether CUPTI can time kernels in this process, and if not, why. */
export type CuptiStatus =
  | {
      /** CUPTI loaded. */
      available: true;
      /** The library's file. */
      path: string;
      /** Its CUPTI API version (cuptiGetVersion). */
      version: number;
    }
  | {
      /** CUPTI cannot be used: kernels are timed by events. */
      available: false;
      /** Why, with what was tried. */
      reason: string;
    };

/** One GPU operation CUPTI recorded. */
export interface ActivityRecord {
  kind: 'kernel' | 'memcpy' | 'memset';
  /** The kernel's (mangled) name; '' for copies and sets. */
  name: string;
  streamId: number;
  correlationId: number;
  /** GPU timestamps, ns, after the earliest start in the trace. */
  startNs: number;
  endNs: number;
}

const SONAMES = ['libcupti.so.13', 'libcupti.so.12', 'libcupti.so.11', 'libcupti.so'];

/** Environment variables by name, as process.env holds them (a type of its own: no @types/node in the .d.ts files). */
type Environment = Readonly<Record<string, string | undefined>>;

/** The directories under a CUDA root that hold CUPTI: CUDA 13's targets/<arch>-linux/lib, older toolkits' extras. */
function underRoot(root: string, arch: string): string[] {
  const target = arch === 'arm64' ? 'sbsa-linux' : 'x86_64-linux';
  return [join(root, 'targets', target, 'lib'), join(root, 'extras', 'CUPTI', 'lib64'), join(root, 'lib64')];
}

/** NVIDIA's CUPTI wheels (nvidia-cuda-cupti-cu12, CUDA 13's nvidia-cuda-cupti) in Python environments. */
function wheelDirs(env: Environment): string[] {
  const prefixes = [env.VIRTUAL_ENV, env.CONDA_PREFIX, env.HOME ? join(env.HOME, '.local') : undefined, '/usr/local'];
  const dirs: string[] = [];
  for (const prefix of prefixes) {
    if (!prefix) continue;
    const lib = join(prefix, 'lib');
    let entries: string[];
    try {
      entries = readdirSync(lib).filter((e) => /^python3\.\d+$/.test(e));
    } catch {
      continue;
    }
    for (const py of entries.sort().reverse()) {
      for (const site of ['site-packages', 'dist-packages']) {
        const nvidia = join(lib, py, site, 'nvidia');
        dirs.push(join(nvidia, 'cu13', 'lib'), join(nvidia, 'cuda_cupti', 'lib'));
      }
    }
  }
  return dirs;
}

/**
 * Where CUPTI is looked for, in order: `CUDAKIT_CUPTI_PATH` alone when set (an explicit choice is not second-guessed);
 * else the loader's names (LD_LIBRARY_PATH, the system's library cache), then $CUDA_PATH, $CUDA_HOME, the toolkit
 * above libnvrtc's directory and /usr/local/cuda (targets/<arch>-linux/lib, extras/CUPTI/lib64, lib64), libnvrtc's
 * own directory, then NVIDIA's CUPTI wheels in Python environments. Files that do not exist are left out.
 */
export function cuptiCandidates(env: Environment = process.env, nvrtcPath = '', arch: string = process.arch): string[] {
  if (env.CUDAKIT_CUPTI_PATH) return [env.CUDAKIT_CUPTI_PATH];
  const out = [...SONAMES];
  const roots = [
    env.CUDA_PATH,
    env.CUDA_HOME,
    nvrtcPath ? join(dirname(nvrtcPath), '..') : undefined,
    '/usr/local/cuda',
  ];
  const seen = new Set<string>();
  const dirs = [
    ...roots.flatMap((r) => (r ? underRoot(r, arch) : [])),
    ...(nvrtcPath ? [dirname(nvrtcPath)] : []), // CUDA 13 keeps libcupti beside libnvrtc (targets/<arch>-linux/lib)
    ...wheelDirs(env),
  ];
  for (const dir of dirs) {
    if (seen.has(dir) || !existsSync(dir)) continue;
    seen.add(dir);
    for (const so of SONAMES) if (existsSync(join(dir, so))) out.push(join(dir, so));
  }
  return out;
}

// compute-sanitizer's own libraries (the launcher libraries it maps beside them ship with Nsight Compute too).
const SANITIZER_LIBRARY = /\/libsanitizer-(collection|public)\.so$/;

/**
 * Whether a process runs under compute-sanitizer, which holds every launch (ncu cannot profile one) and CUPTI (a
 * trace of ours records nothing): from what the tool gives the process it starts (NV_SANITIZER_INJECTION_PORT_BASE,
 * or CUDA_INJECTION64_PATH naming its collection library), or from its libraries mapped into the process (`maps`: the
 * text of /proc/self/maps; the tool need not leave its variables in the environment).
 */
export function underComputeSanitizer(env: Environment, maps: string): boolean {
  if (env.NV_SANITIZER_INJECTION_PORT_BASE !== undefined) return true;
  if (/(^|\/)libsanitizer-collection\.so$/.test(env.CUDA_INJECTION64_PATH ?? '')) return true;
  return maps.split('\n').some((line) => SANITIZER_LIBRARY.test(line.trimEnd()));
}

/** Whether this process runs under compute-sanitizer (underComputeSanitizer of its environment and memory map). */
export function inComputeSanitizer(): boolean {
  let maps = '';
  try {
    maps = readFileSync('/proc/self/maps', 'utf8');
  } catch {
    // no /proc (not Linux): the environment alone tells
  }
  return underComputeSanitizer(process.env, maps);
}

let status: CuptiStatus | undefined;

/**
 * Whether CUPTI can time kernels in this process (decided once), and so which timer bench() takes: not under
 * compute-sanitizer (known by its variables or its libraries in the process, as profile() knows it), nor when another
 * CUDA tool is injected (Nsight Compute and Nsight Systems set CUDA_INJECTION64_PATH and hold CUPTI themselves), nor
 * when no candidate loads. Never throws; the reason says why not.
 */
export function cuptiStatus(): CuptiStatus {
  if (status !== undefined) return status;
  if (inComputeSanitizer()) {
    status = {
      available: false,
      reason: 'this process runs under compute-sanitizer, which holds CUPTI (kernels are timed by events)',
    };
    return status;
  }
  const injected = process.env.CUDA_INJECTION64_PATH;
  if (injected) {
    status = {
      available: false,
      reason: `a CUDA tool is attached (CUDA_INJECTION64_PATH=${injected}), and it holds CUPTI`,
    };
    return status;
  }
  const n = getNative();
  let nvrtcPath = '';
  try {
    nvrtcPath = n.nvrtcStatus().path;
  } catch {
    // no NVRTC: its toolkit is one place fewer to look
  }
  const loaded = n.cuptiLoad(cuptiCandidates(process.env, nvrtcPath));
  status = loaded.loaded
    ? { available: true, path: loaded.path, version: loaded.version }
    : {
        available: false,
        reason: `CUPTI (libcupti) could not be loaded; set CUDAKIT_CUPTI_PATH to it (tried: ${loaded.tried.join(
          '; ',
        )})`,
      };
  return status;
}

/**
 * @internal Marks CUPTI unusable for the rest of the process (it loaded, but a trace failed: a tool holds it, the
 * driver is older than the library ...), so later runs do not try again.
 */
export function disableCupti(reason: string): void {
  status = { available: false, reason };
}

const KIND_NAMES: Record<number, ActivityRecord['kind']> = {
  [KIND.memcpy]: 'memcpy',
  [KIND.memset]: 'memset',
  [KIND.kernel]: 'kernel',
  [KIND.concurrentKernel]: 'kernel',
};

/**
 * A trace of the process's kernels, copies and memsets between start() and stop() (CUPTI's activity API; one at a
 * time per process). Stop it after the traced work has finished (a stream synchronize), or its records are missing.
 */
export class ActivityTrace {
  #running: boolean;

  private constructor() {
    this.#running = true;
  }

  /** Starts a trace. Throws an Error with code 'CUDAKIT_CUPTI' when CUPTI refuses (see cuptiStatus() first). */
  static start(): ActivityTrace {
    getNative().cuptiActivityStart(TRACED_KINDS);
    return new ActivityTrace();
  }

  /** Ends the trace and returns its records in the order CUPTI delivered them; `dropped` counts records lost. */
  stop(): { records: ActivityRecord[]; dropped: number } {
    if (!this.#running) throw new Error('ActivityTrace.stop(): the trace was already stopped');
    this.#running = false;
    const raw = getNative().cuptiActivityStop(TRACED_KINDS);
    const records: ActivityRecord[] = [];
    const r = raw.records;
    for (let i = 0; i + 5 < r.length; i += 6) {
      const nameIndex = r[i + 3]!;
      records.push({
        kind: KIND_NAMES[r[i]!] ?? 'kernel',
        name: nameIndex >= 0 ? (raw.names[nameIndex] ?? '') : '',
        streamId: r[i + 1]!,
        correlationId: r[i + 2]!,
        startNs: r[i + 4]!,
        endNs: r[i + 5]!,
      });
    }
    return { records, dropped: raw.dropped };
  }
}

/**
 * The tick of the GPU timestamps in a trace (32 ns on an H100), in ns: the largest q from 4 to 1024 ns that nearly
 * every record's duration is a whole multiple of, to within 1 ns. CUPTI may carry each timestamp into the host's
 * clock and round it, so a duration of 152 ticks can read 4863 or 4865 ns: a greatest common divisor then falls to
 * 1 ns at the first such record. Distinct durations are counted, not records, so a trace that is mostly one kernel
 * of one duration cannot make a divisor of that duration the tick. 0 when no such q explains 90 % of them (a
 * timer of finer resolution); undefined with fewer than 8 distinct durations, too few to tell (a later trace may).
 */
export function durationTick(records: readonly ActivityRecord[]): number | undefined {
  const durations = new Set<number>();
  for (const r of records) {
    const ns = Math.round(r.endNs - r.startNs);
    if (ns > 0) durations.add(ns);
  }
  if (durations.size < 8) return undefined;
  const values = [...durations].slice(0, 2000); // plenty to tell the tick; bounds the search's cost
  let shortest = Number.POSITIVE_INFINITY;
  for (const d of values) shortest = Math.min(shortest, d);
  const allowedMisses = Math.floor(values.length * 0.1);
  for (let q = Math.min(1024, shortest); q >= 4; q--) {
    let misses = 0;
    for (const d of values) {
      const r = d % q;
      if (r > 1 && r < q - 1 && ++misses > allowedMisses) break;
    }
    if (misses <= allowedMisses) return q;
  }
  return 0;
}

/**
 * Cuts a trace into samples: each sample's operations lie between two launches of the `marker` kernel (the clock
 * probes before the start event and after the stop event), which come in pairs, one pair per sample. `how`: 'sum'
 * adds the durations of the operations in a window (what Nsight Compute reports for each kernel, summed: a kernel
 * target, a graph of its launches); 'span' takes the first start to the last end (a function target's work: its
 * gaps included, overlapping streams counted once). Throws an Error saying what does not fit (a window without
 * operations, a marker count that is not 2 × samples, a record without timestamps): the caller then keeps the
 * events' times.
 */
export function sampleDurations(
  records: readonly ActivityRecord[],
  marker: string,
  samples: number,
  how: 'sum' | 'span',
): number[] {
  const sorted = [...records].sort((a, b) => a.startNs - b.startNs || a.endNs - b.endNs);
  const markers = sorted.filter((r) => r.kind === 'kernel' && r.name === marker);
  if (markers.length !== 2 * samples) {
    throw new Error(`CUPTI recorded ${markers.length} clock probes for ${samples} samples (expected ${2 * samples})`);
  }
  const out: number[] = [];
  let next = 0; // the first record not yet placed
  for (let i = 0; i < samples; i++) {
    const open = markers[2 * i]!;
    const close = markers[2 * i + 1]!;
    let sum = 0;
    let first = Number.POSITIVE_INFINITY;
    let last = Number.NEGATIVE_INFINITY;
    let count = 0;
    for (; next < sorted.length && sorted[next]!.startNs < close.startNs; next++) {
      const r = sorted[next]!;
      // (CUPTI's 0, 0 for "no timestamps" comes out negative: before the trace's first start)
      if (!(r.endNs >= r.startNs) || r.startNs < 0) throw new Error(`CUPTI gave a ${r.kind} record without timestamps`);
      if (r === open || r.startNs < open.endNs) continue; // the probe itself, or what ran before it
      if (r.endNs > close.startNs) throw new Error(`a ${r.kind} record of sample ${i} ends after its closing probe`);
      sum += r.endNs - r.startNs;
      first = Math.min(first, r.startNs);
      last = Math.max(last, r.endNs);
      count++;
    }
    if (count === 0) throw new Error(`CUPTI recorded no GPU operation in sample ${i}`);
    out.push((how === 'sum' ? sum : last - first) / 1e6);
  }
  return out;
}
