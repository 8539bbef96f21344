// SPDX-License-Identifier: MIT
// profile(): device metrics of one launch, from Nsight Compute. A child process (profile-child.ts) launches the
// kernel once under `ncu --csv --page raw`, on the inputs check() builds for its first trial; this process compiles
// nothing, starts no CUDA context and reads ncu's output. Nothing is timed under ncu: its replay passes, cache
// flushes and serialisation would be in every sample, so bench() and compare() never run there.
//
// What a machine lacks is an outcome, not an exception: no ncu, no permission to read the counters, a process under
// compute-sanitizer, a launch that failed, a timeout each resolve to `deviceMetrics: null` with a warning that says
// which (and what to do), so an evaluation service can report the job's verdict all the same. Only the caller's own
// mistakes (a bad launch description, an unknown option) throw, as TypeError or RangeError.
import { spawn } from 'node:child_process';
import {
  accessSync,
  constants,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, dirname, extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  type Dim3,
  type LaunchConfig,
  ObjectCode,
  type Signature,
  checkObject,
  checkOptions,
  checkPositiveInt,
  checkSize,
  checkString,
  inComputeSanitizer,
  rangeError,
  typeError,
} from '../core/index.js';
import { type ArgSpec, checkArgSpecs, signatureOf } from './argspec.js';
import {
  DEFAULT_DEVICE_METRICS,
  type DeviceMetric,
  type DeviceMetricGroup,
  groupMetrics,
  inaccessibleMetrics,
  lacksCounterPermission,
  ncuArguments,
  ncuVersionOf,
  outputTail,
  parseRawPage,
} from './profile-ncu.js';
import { LAUNCHED_MARKER, type LaunchFile, encodeLaunch } from './profile-launch.js';

export type { DeviceMetric, DeviceMetricGroup } from './profile-ncu.js';

/** One launch to profile: compiled code, the kernel, its launch configuration and its arguments as specs. */
export interface ProfileLaunch {
  /** The module: an ObjectCode (Program.compile()), PTX text, or CUBIN / fatbin bytes. */
  code: ObjectCode | Uint8Array | string;
  /** The kernel: as compiled (an ObjectCode maps a C++ name such as 'scale<float>' to its symbol), or its symbol. */
  kernel: string;
  /** How to launch it; a `stream` cannot cross into the child (it launches on the default stream). */
  config: LaunchConfig;
  /** One spec per kernel parameter, as check() takes them: the child builds the inputs from these. */
  io: readonly ArgSpec[];
  /** Parameter types. Default: signatureOf(io). */
  signature?: Signature;
  /** check()'s seed: the launch gets the inputs of check()'s first trial. Default 42. */
  seed?: number;
}

/** Options of profile(): which ncu metrics or sections to collect, where ncu is, how long it may take. */
export interface ProfileOptions {
  /**
   * ncu metrics to collect, by name (`dram__bytes_read.sum`). Default: DEFAULT_DEVICE_METRICS, unless `sections` are
   * given; then only what the sections collect.
   */
  metrics?: readonly string[];
  /** ncu sections to collect (`SpeedOfLight`, `MemoryWorkloadAnalysis` ...), every metric of each. */
  sections?: readonly string[];
  /** ncu's path. Default: `ncu` on PATH. */
  ncu?: string;
  /** How long ncu may take before its processes are killed, ms. Default 120 000. */
  timeoutMs?: number;
  /**
   * 'own' (default): ncu leads a process group of its own, killed whole on timeout or when this process exits.
   * 'caller': ncu stays in the caller's process group, so a supervisor that kills the caller's group kills it too
   * (an evaluation service's worker); on timeout ncu and its descendants are killed one by one.
   */
  processGroup?: 'own' | 'caller';
}

/** What ncu measured for the launch. */
export interface DeviceMetrics {
  /** The kernel as ncu names it: demangled ('void scale<float>(const float *, float *, int)'), or its C name. */
  kernel: string;
  /** Every metric collected, by ncu's name. */
  metrics: Record<string, DeviceMetric>;
  /** The same metrics by group (speedOfLight, memory, compute ...; 'other' for those no group names). */
  groups: Partial<Record<DeviceMetricGroup, Record<string, DeviceMetric>>>;
  /** `ncu --version`'s version, e.g. '2025.3.1.0'. */
  ncuVersion: string | undefined;
  /** The command that collected them. */
  command: string[];
  /** Metrics asked for that ncu cannot collect on this GPU; left out (see ProfileResult.warnings). */
  unavailable: string[];
  /** Wall time of the ncu run(s), ms. */
  wallMs: number;
}

/** Why there are no metrics. */
export type ProfileFailure =
  /** No ncu at the path given, or none on PATH. */
  | 'ncu-not-found'
  /** ERR_NVGPUCTRPERM: the driver lets only administrators read the performance counters. */
  | 'permission'
  /** This process runs under compute-sanitizer, which holds the launch ncu would profile; ncu is not started. */
  | 'sanitizer'
  /** ncu did not finish within timeoutMs; its processes were killed. */
  | 'timeout'
  /** The launch failed in the child (a fault, a launch configuration the kernel refuses ...). */
  | 'launch-failed'
  /** ncu ran, the launch finished, and ncu reported nothing (no kernel of that name, an unknown section ...). */
  | 'ncu-failed';

/**
 * profile()'s outcome: `deviceMetrics` and warnings for the reader (metrics ncu cannot collect here), or
 * `deviceMetrics: null` with `failure` saying why and `warnings[0]` saying it in words, with the remedy.
 */
export type ProfileResult =
  | {
      /** What ncu measured. */
      deviceMetrics: DeviceMetrics;
      /** Nothing failed. */
      failure: undefined;
      /** Warnings for the reader, such as metrics ncu cannot collect on this GPU. */
      warnings: string[];
    }
  | {
      /** No metrics. */
      deviceMetrics: null;
      /** Why there are none. */
      failure: ProfileFailure;
      /** The failure in words, with the remedy, first. */
      warnings: string[];
    };

export const DEFAULT_PROFILE_TIMEOUT_MS = 120_000;
const VERSION_TIMEOUT_MS = 15_000;
/** Output kept per stream: the raw page is at the end. */
const MAX_OUTPUT_CHARS = 16 << 20;

const PERMISSION_REMEDY =
  'the driver lets only administrators read the GPU performance counters. Run as root (or with CAP_SYS_ADMIN), ' +
  'or allow every user: `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in a file under /etc/modprobe.d/, ' +
  'then reload the nvidia kernel module (or reboot)';

interface Resolved {
  launch: LaunchFile;
  metrics: string[];
  sections: string[];
  ncu: string | undefined;
  timeoutMs: number;
  processGroup: 'own' | 'caller';
}

/**
 * Device metrics of one launch from Nsight Compute: the kernel is launched once, in a child process under
 * `ncu --csv --page raw --cache-control all --clock-control none`, filtered to that kernel (`--kernel-name`, by its
 * symbol) and to one launch (`--launch-count 1`), on the inputs of check()'s first trial. Returns the metrics by
 * name and by group (see METRIC_GROUPS). Metrics that ncu cannot collect on this GPU are left out, with a warning.
 *
 * Resolves to `deviceMetrics: null` with a `failure` and a warning, never rejects, when there is no ncu, ncu may not
 * read the counters (the warning gives the `NVreg_RestrictProfilingToAdminUsers=0` remedy), this process runs under
 * compute-sanitizer, the launch fails, or ncu does not finish within timeoutMs: the machine's limits, not the
 * caller's mistakes.
 *
 * @throws TypeError / RangeError for a bad launch description or bad options, before anything is started.
 * @example
 * const code = new Program(source).compile();
 * const r = await profile({ code, kernel: 'copy', config: { grid: 4096, block: 256 }, io: parseArgSpecs(args) });
 * if (r.deviceMetrics === null) console.warn(r.warnings[0]);
 * else console.log(r.deviceMetrics.metrics['dram__bytes_read.sum']);
 */
export async function profile(launch: ProfileLaunch, options?: ProfileOptions): Promise<ProfileResult> {
  const r = resolveLaunch(launch, options);
  const ncu = findNcu(r.ncu);
  if (ncu === undefined) {
    const where = r.ncu === undefined ? 'on PATH' : `at ${r.ncu}`;
    const remedy = r.ncu === undefined ? ': install Nsight Compute, or give its path' : '';
    return failed('ncu-not-found', `ncu (Nsight Compute) not found ${where}${remedy}`);
  }
  if (inComputeSanitizer()) {
    return failed(
      'sanitizer',
      'this process runs under compute-sanitizer, and ncu cannot profile a launch it holds: run without it',
    );
  }
  const version = await run(ncu, ['--version'], VERSION_TIMEOUT_MS, r.processGroup);
  if (version.spawnError !== undefined) {
    return failed('ncu-not-found', `ncu at ${ncu} could not be run: ${version.spawnError}`);
  }
  const ncuVersion = ncuVersionOf(version.stdout);

  const dir = mkdtempSync(join(tmpdir(), 'cudakit-profile-'));
  try {
    const file = join(dir, 'launch.json');
    writeFileSync(file, encodeLaunch(r.launch), { mode: 0o600 });
    const app = [...childCommand(), file];
    const t0 = performance.now();
    let metrics = r.metrics;
    const unavailable: string[] = [];
    for (;;) {
      const command = [ncu, ...ncuArguments(r.launch.symbol, { metrics, sections: r.sections }, app)];
      const deadlineMs = r.timeoutMs - (performance.now() - t0);
      const out = await run(ncu, command.slice(1), Math.max(1, deadlineMs), r.processGroup);
      const all = `${out.stdout}\n${out.stderr}`;
      if (out.timedOut) {
        const s = Math.round(r.timeoutMs / 1000);
        return failed('timeout', `ncu did not finish within ${s} s and was killed${lastOutput(all)}`);
      }
      if (out.spawnError !== undefined)
        return failed('ncu-not-found', `ncu at ${ncu} could not be run: ${out.spawnError}`);
      if (lacksCounterPermission(all))
        return failed('permission', `ncu was refused (ERR_NVGPUCTRPERM): ${PERMISSION_REMEDY}`);
      // A metric this GPU does not have fails the whole run: once more without it.
      const missing = inaccessibleMetrics(all).filter((m) => metrics.includes(m));
      if (missing.length > 0) {
        unavailable.push(...missing);
        metrics = metrics.filter((m) => !missing.includes(m));
        if (metrics.length > 0 || r.sections.length > 0) continue;
        return failed(
          'ncu-failed',
          `ncu cannot collect any of the metrics asked for on this GPU: ${unavailable.join(', ')}`,
        );
      }
      const page = parseRawPage(out.stdout);
      if (page === undefined) {
        const code = out.signal !== undefined ? `signal ${out.signal}` : `exit code ${out.code}`;
        if (!all.includes(LAUNCHED_MARKER)) {
          return failed(
            'launch-failed',
            `the profiled launch of ${r.launch.symbol} failed (${code})${lastOutput(all)}`,
          );
        }
        return failed('ncu-failed', `ncu reported no metrics for ${r.launch.symbol} (${code})${lastOutput(all)}`);
      }
      // The metrics asked for, by name (ncu may add columns of its own); with sections, all that they collect.
      const collected =
        r.sections.length > 0
          ? page.metrics
          : Object.fromEntries(Object.entries(page.metrics).filter(([name]) => metrics.includes(name)));
      const warnings: string[] = [];
      if (unavailable.length > 0) {
        const n = unavailable.length;
        warnings.push(
          `ncu cannot collect ${n} metric${n === 1 ? '' : 's'} on this GPU, left out: ${unavailable.join(', ')}`,
        );
      }
      const deviceMetrics: DeviceMetrics = {
        kernel: page.kernel,
        metrics: collected,
        groups: groupMetrics(collected),
        ncuVersion,
        command,
        unavailable,
        wallMs: performance.now() - t0,
      };
      return { deviceMetrics, failure: undefined, warnings };
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function failed(failure: ProfileFailure, why: string): ProfileResult {
  return { deviceMetrics: null, failure, warnings: [`device metrics not collected: ${why}`] };
}

function lastOutput(output: string): string {
  const tail = outputTail(output);
  return tail === '' ? '' : `; its last output:\n${tail}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Arguments

const NAME = /^[A-Za-z0-9_.:$-]+$/;

/** Checks profile()'s options without a launch (for callers that compile first: profileJob). */
export function checkProfileOptions(options: ProfileOptions | undefined): void {
  resolveOptions(options);
}

function resolveOptions(options: ProfileOptions | undefined): Omit<Resolved, 'launch'> {
  const keys = ['metrics', 'sections', 'ncu', 'timeoutMs', 'processGroup'] as const;
  const o = checkOptions('options', options, keys);
  const names = (key: 'metrics' | 'sections', what: string, example: string): string[] | undefined => {
    const v = o[key];
    if (v === undefined) return undefined;
    if (!Array.isArray(v)) throw typeError(`options.${key}`, `an array of ${what} names such as ['${example}']`, v);
    return v.map((s: unknown, i) => {
      if (typeof s !== 'string' || !NAME.test(s)) {
        throw typeError(`options.${key}[${i}]`, `an ${what} name such as ${example}`, s);
      }
      return s;
    });
  };
  const metrics = names('metrics', 'ncu metric', 'dram__bytes_read.sum');
  const sections = names('sections', 'ncu section', 'SpeedOfLight') ?? [];
  if (metrics !== undefined && metrics.length === 0 && sections.length === 0) {
    throw rangeError('options.metrics', 'at least one metric (or options.sections)', metrics);
  }
  const ncu = o.ncu === undefined ? undefined : checkString('options.ncu', o.ncu);
  if (ncu === '') throw typeError('options.ncu', "the path of ncu (or no ncu option: 'ncu' on PATH)", ncu);
  const timeoutMs = o.timeoutMs === undefined ? DEFAULT_PROFILE_TIMEOUT_MS : o.timeoutMs;
  if (typeof timeoutMs !== 'number') throw typeError('options.timeoutMs', 'a positive number of ms', timeoutMs);
  if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs)) {
    throw rangeError('options.timeoutMs', 'a positive number of ms', timeoutMs);
  }
  const processGroup = o.processGroup ?? 'own';
  if (processGroup !== 'own' && processGroup !== 'caller') {
    throw typeError('options.processGroup', "'own' or 'caller'", processGroup);
  }
  return {
    metrics: metrics ?? (sections.length > 0 ? [] : [...DEFAULT_DEVICE_METRICS]),
    sections,
    ncu,
    timeoutMs,
    processGroup,
  };
}

function checkDim(name: string, v: unknown): Dim3 {
  if (typeof v === 'number') return checkPositiveInt(name, v);
  if (!Array.isArray(v) || v.length < 1 || v.length > 3) {
    throw typeError(name, 'a positive integer or an array of 1 to 3 of them', v);
  }
  v.forEach((d: unknown, i) => checkPositiveInt(`${name}[${i}]`, d));
  return [...v] as unknown as Dim3;
}

function resolveLaunch(launch: ProfileLaunch, options: ProfileOptions | undefined): Resolved {
  const l = checkObject('launch', launch) as Partial<ProfileLaunch>;
  const code = l.code;
  let image: Uint8Array;
  let symbol = checkString('launch.kernel', l.kernel);
  if (symbol === '') throw typeError('launch.kernel', "a kernel's name", symbol);
  if (code instanceof ObjectCode) {
    image = code.bytes;
    symbol = code.loweredNames[symbol] ?? symbol;
  } else if (code instanceof Uint8Array) image = code;
  else if (typeof code === 'string') image = new TextEncoder().encode(code);
  else throw typeError('launch.code', 'an ObjectCode, PTX text, or CUBIN / fatbin bytes (a Uint8Array)', code);
  if (image.byteLength === 0) throw typeError('launch.code', 'a non-empty module image', code);

  const c = checkObject('launch.config', l.config) as Partial<LaunchConfig>;
  if (c.stream !== undefined) {
    throw typeError(
      'launch.config.stream',
      'no stream (the launch runs in a child process, on its default stream)',
      c.stream,
    );
  }
  const config: LaunchFile['config'] = {
    grid: checkDim('launch.config.grid', c.grid),
    block: checkDim('launch.config.block', c.block),
  };
  if (c.sharedMemBytes !== undefined)
    config.sharedMemBytes = checkSize('launch.config.sharedMemBytes', c.sharedMemBytes);
  if (c.cooperative !== undefined) {
    if (typeof c.cooperative !== 'boolean') throw typeError('launch.config.cooperative', 'a boolean', c.cooperative);
    config.cooperative = c.cooperative;
  }
  if (c.clusterDim !== undefined) config.clusterDim = checkDim('launch.config.clusterDim', c.clusterDim);

  const io = [...checkArgSpecs(l.io as readonly ArgSpec[], 'launch.io')];
  const signature = l.signature ?? signatureOf(io);
  if (!Array.isArray(signature))
    throw typeError('launch.signature', "an array of parameter types such as ['ptr', 'f32']", signature);
  if (signature.length !== io.length) {
    throw rangeError('launch.signature', `one parameter type per argument spec (${io.length})`, signature);
  }
  const seed = l.seed === undefined ? 42 : checkSize('launch.seed', l.seed);
  return { launch: { image, symbol, signature: [...signature], config, io, seed }, ...resolveOptions(options) };
}

// ---------------------------------------------------------------------------------------------------------------
// Processes

/** ncu's path: the one given (a name is looked up on PATH), else `ncu` on PATH; undefined when there is none. */
export function findNcu(given: string | undefined, path = process.env.PATH ?? ''): string | undefined {
  const name = given ?? 'ncu';
  const executable = (p: string): boolean => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (name.includes('/')) return executable(name) ? name : undefined;
  for (const dir of path.split(delimiter)) {
    if (dir !== '' && executable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The child: node (with tsx when running from the TypeScript sources) and profile-child beside this file. */
function childCommand(): string[] {
  const here = fileURLToPath(import.meta.url);
  const ext = extname(here); // '.ts' from the sources (tsx, vitest), '.js' built
  const child = join(dirname(here), `profile-child${ext}`);
  return [process.execPath, ...(ext === '.js' ? [] : ['--import', tsxLoader()]), child];
}

function tsxLoader(): string {
  try {
    return pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  } catch {
    throw new Error('profile() from the TypeScript sources needs tsx (a development dependency); build the package');
  }
}

interface RunOutput {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: string | undefined;
  timedOut: boolean;
  /** Why it could not be started (ENOENT, EACCES ...). */
  spawnError: string | undefined;
}

/** Runs a command to its end or to `timeoutMs`, when its processes are killed (see ProfileOptions.processGroup). */
function run(file: string, args: readonly string[], timeoutMs: number, group: 'own' | 'caller'): Promise<RunOutput> {
  return new Promise((done) => {
    const out: RunOutput = {
      stdout: '',
      stderr: '',
      code: null,
      signal: undefined,
      timedOut: false,
      spawnError: undefined,
    };
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: group === 'own' });
    const keep = (key: 'stdout' | 'stderr') => (chunk: Buffer) => {
      out[key] += chunk.toString('utf8');
      if (out[key].length > MAX_OUTPUT_CHARS) out[key] = out[key].slice(-MAX_OUTPUT_CHARS);
    };
    child.stdout.on('data', keep('stdout'));
    child.stderr.on('data', keep('stderr'));
    const kill = (): void => {
      const pid = child.pid;
      if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      if (group === 'own') {
        quietly(() => process.kill(-pid, 'SIGKILL'));
      } else {
        for (const p of [pid, ...descendants(pid)]) quietly(() => process.kill(p, 'SIGKILL'));
      }
    };
    const timer = setTimeout(() => {
      out.timedOut = true;
      kill();
    }, timeoutMs);
    // A caller that exits takes ncu and the application with it.
    process.on('exit', kill);
    child.on('error', (e: NodeJS.ErrnoException) => {
      out.spawnError = e.code ?? e.message;
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      process.off('exit', kill);
      out.code = code;
      out.signal = signal ?? undefined;
      done(out);
    });
  });
}

function quietly(f: () => void): void {
  try {
    f();
  } catch {
    // already gone
  }
}

/** Every process below `pid` (Linux /proc; none elsewhere), children before their own children. */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      // The command name may hold spaces and parentheses: the fields after its last ')' are state, then ppid.
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(e), ppid);
    } catch {
      // exited meanwhile
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    for (const [child, parent] of parentOf) {
      if (parent === p && !found.includes(child)) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}
