// SPDX-License-Identifier: MIT
// LocalGpuPool: the GpuPool of this host. A probe child (run/worker/probe.ts; the API process never loads the addon)
// lists the GPUs; the configured ones each get one GpuSlot (slot.ts) per lane, the lanes of a GPU sharing its turns
// (gpu-gate.ts): with two, the next job's worker starts, validates and compiles while a job uses the GPU. Leases go
// to idle lanes by class, a GPU with fewer jobs on it first.
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { type WorkerScript, workerScript } from './child.js';
import type { Containment } from './containment.js';
import { type ComputeApp, computeApps } from './nvidia-smi.js';
import type { GpuPool, SlotInfo, SlotLease, SlotState } from './pool.js';
import type { PythonFacts } from './python.js';
import type { PythonService } from './python-relay.js';
import type { DeviceFacts, LaunchFacts } from './protocol.js';
import { GpuGate } from './gpu-gate.js';
import { GpuSlot, type Isolation, type SlotOptions } from './slot.js';

export interface LocalPoolOptions {
  /** The GPUs to use: indices (nvidia-smi's order) or UUIDs ('GPU-…', 'MIG-…'). Default: all. */
  gpus?: readonly (number | string)[];
  /** Default 'process' (a fresh worker per job). */
  isolation?: Isolation;
  /**
   * Jobs a GPU may have at once, each in a worker of its own, one of them on the GPU and the others in their CPU work
   * or waiting for their turn (1 to 4; warm isolation keeps 1). Default 1.
   */
  lanes?: number;
  /** The worker (and probe) script: 'fake', a path, or the real one (default: $CUDAKIT_SERVER_WORKER). */
  worker?: string;
  /** Added to the probe's environment, and set for the workers (containment.ts). */
  env?: Readonly<Record<string, string | undefined>>;
  /** The workers' folders, environment and user. Default: defaultContainment(). */
  containment?: Containment;
  /** This host's Python for the Python kernel types, as checked at start (--python); none without. */
  python?: PythonFacts;
  /** How the slots start a job's runner with it. */
  pythonService?: PythonService;
  /** How long the probe may take. Default 60 s. */
  probeTimeoutMs?: number;
  /** The processes on the GPUs at probe time (a GPU with others' processes is 'shared'). Default: nvidia-smi. */
  computeApps?: () => Promise<ComputeApp[] | undefined>;
  /** Classes every GPU serves besides its own (model, arch, 'any'): an operator's labels, such as 'H200-nvl'. */
  extraClasses?: readonly string[];
  /** Reprobes quarantined slots this often; 0: never. Default 5 min. */
  reprobeIntervalMs?: number;
  /** Per slot (timeouts, gpuReleased ...). */
  slot?: Omit<SlotOptions, 'facts' | 'classes' | 'shared' | 'isolation' | 'worker' | 'env' | 'containment'>;
}

/** What the probe prints. */
export interface ProbeOutput {
  devices: DeviceFacts[];
  reason: string | undefined;
}

const PROBE_OUTPUT_MAX_BYTES = 1 << 20;

/**
 * The classes a GPU serves: its model from the name ('NVIDIA H200' → 'H200', 'NVIDIA A100-SXM4-80GB' → 'A100',
 * 'NVIDIA GeForce RTX 4090' → 'RTX4090'), its arch ('sm_90'), and 'any'.
 */
export function gpuClasses(facts: Pick<DeviceFacts, 'name' | 'arch'>): string[] {
  const words = facts.name.split(/[\s-]+/).filter((w) => w !== '' && !/^(NVIDIA|Tesla|GeForce|Quadro)$/i.test(w));
  let model = words[0] ?? facts.name;
  if (/^(RTX|GTX|TITAN)$/i.test(model) && words[1] !== undefined) model += words[1];
  return [...new Set([model, facts.arch, 'any'])];
}

/** Runs the probe script and parses its last line. Never rejects: a failure is the reason. */
export function runProbe(
  script: WorkerScript,
  env: Readonly<Record<string, string | undefined>>,
  timeoutMs: number,
): Promise<ProbeOutput> {
  return new Promise<ProbeOutput>((resolve) => {
    const failed = (why: string): void => resolve({ devices: [], reason: `the GPU probe failed: ${why}` });
    const child = spawn(process.execPath, [...script.execArgv, script.path, ...script.args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // nvidia-smi's order, so a configured index means what nvidia-smi shows
      env: { ...process.env, ...env, CUDA_DEVICE_ORDER: 'PCI_BUS_ID' },
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      if (stdout.length < PROBE_OUTPUT_MAX_BYTES) stdout += s;
    });
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-4096)));
    child.on('error', (e) => failed(e.message));
    child.on('close', (code, signal) => {
      const line = stdout.trim().split('\n').pop() ?? '';
      const parsed = parseProbeOutput(line);
      if (parsed !== undefined) return resolve(parsed);
      const how = signal === 'SIGKILL' ? `no answer within ${timeoutMs} ms` : `exit code ${code}, signal ${signal}`;
      const said = errorLine(stderr);
      failed(said === undefined ? how : `${how}: ${said}`);
    });
  });
}

/** The line of a child's stderr that says what went wrong: its first 'SomethingError: ...', else its last line. */
function errorLine(stderr: string): string | undefined {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^Node\.js v/.test(l));
  return lines.find((l) => /^[A-Za-z]*Error\b/.test(l)) ?? lines[lines.length - 1];
}

function parseProbeOutput(line: string): ProbeOutput | undefined {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const { devices, reason } = v as { devices?: unknown; reason?: unknown };
  if (!Array.isArray(devices) || !devices.every(isDeviceFacts)) return undefined;
  return { devices, reason: typeof reason === 'string' ? reason : undefined };
}

function isDeviceFacts(d: unknown): d is DeviceFacts {
  const f = d as Partial<Record<keyof DeviceFacts, unknown>> | null;
  return (
    typeof f === 'object' &&
    f !== null &&
    typeof f.ordinal === 'number' &&
    typeof f.uuid === 'string' &&
    typeof f.name === 'string' &&
    typeof f.arch === 'string' &&
    typeof f.totalMemoryBytes === 'number' &&
    typeof f.multiprocessorCount === 'number' &&
    typeof f.driverVersion === 'string' &&
    (f.nvrtcVersion === undefined || typeof f.nvrtcVersion === 'string') &&
    isLaunchFacts(f.launch)
  );
}

function isLaunchFacts(l: unknown): l is LaunchFacts {
  const f = l as Partial<Record<keyof LaunchFacts, unknown>> | null;
  const dim = (d: unknown) => Array.isArray(d) && d.length === 3 && d.every((x) => typeof x === 'number');
  return (
    typeof f === 'object' &&
    f !== null &&
    typeof f.maxThreadsPerBlock === 'number' &&
    dim(f.maxBlockDim) &&
    dim(f.maxGridDim) &&
    typeof f.maxSharedMemoryPerBlockOptinBytes === 'number' &&
    typeof f.maxClusterBlocks === 'number'
  );
}

/** The most lanes a GPU may have. */
export const MAX_LANES = 4;

/** One GPU of the pool: its lanes, which share its turns. */
interface PoolGpu {
  uuid: string;
  shared: boolean;
  lanes: GpuSlot[];
}

export class LocalGpuPool implements GpuPool {
  readonly #o: LocalPoolOptions;
  #slots: GpuSlot[] = [];
  #gpus: PoolGpu[] = [];
  #unavailableReason: string | undefined;
  #started: Promise<void> | undefined;
  #stopping = false;
  #reprobeTimer: NodeJS.Timeout | undefined;
  readonly #idleListeners: (() => void)[] = [];
  /** Configured GPUs the probe did not find (the others still serve). */
  readonly warnings: string[] = [];

  constructor(options: LocalPoolOptions = {}) {
    this.#o = options;
  }

  /** The probe found no GPU here: no wait brings one (it takes an operator and a restart). */
  get unavailableRetryAfterSeconds(): undefined {
    return undefined;
  }

  get unavailableReason(): string | undefined {
    return this.#unavailableReason;
  }

  start(): Promise<void> {
    this.#started ??= this.#start();
    return this.#started;
  }

  async #start(): Promise<void> {
    const env = this.#o.env ?? {};
    const probe = await runProbe(workerScript('probe', this.#o.worker), env, this.#o.probeTimeoutMs ?? 60_000);
    if (this.#stopping) return;
    const chosen = this.#select(probe.devices);
    if (chosen.length === 0) {
      this.#unavailableReason =
        probe.devices.length === 0 ? (probe.reason ?? 'no CUDA device') : this.warnings.join('; ');
      return;
    }
    const apps = (await (this.#o.computeApps ?? computeApps)().catch(() => undefined)) ?? [];
    const isolation = this.#o.isolation ?? 'process';
    const lanes = isolation === 'warm' ? 1 : (this.#o.lanes ?? 1);
    // A waiting worker's context is made before its job with standby; else as its job starts where the GPU has one
    // lane, and at its turn where lanes share it.
    const context = this.#o.slot?.context ?? (lanes > 1 ? 'turn' : 'job');
    this.#gpus = chosen.map((facts) => {
      const gate = new GpuGate();
      const shared = facts.uuid.startsWith('MIG-') || apps.some((a) => a.uuid === facts.uuid);
      const options: SlotOptions = {
        ...this.#o.slot,
        facts,
        classes: [...new Set([...gpuClasses(facts), ...(this.#o.extraClasses ?? [])])],
        shared,
        isolation,
        env,
        gate,
        context,
        ...(this.#o.containment === undefined ? {} : { containment: this.#o.containment }),
        ...(this.#o.worker === undefined ? {} : { worker: this.#o.worker }),
        ...(this.#o.pythonService === undefined ? {} : { python: this.#o.pythonService }),
      };
      return { uuid: facts.uuid, shared, lanes: Array.from({ length: lanes }, () => new GpuSlot(options)) };
    });
    this.#slots = this.#gpus.flatMap((g) => g.lanes);
    for (const slot of this.#slots) {
      slot.onIdle(() => this.#emitIdle());
      void slot.start();
    }
    const every = this.#o.reprobeIntervalMs ?? 300_000;
    if (every > 0) {
      this.#reprobeTimer = setInterval(() => {
        for (const g of this.#gpus) if (g.lanes.some((l) => l.state === 'quarantined')) void this.reprobe(g.uuid);
      }, every);
      this.#reprobeTimer.unref();
    }
  }

  /** The configured GPUs among those found; what is configured but absent becomes a warning. */
  #select(devices: DeviceFacts[]): DeviceFacts[] {
    const wanted = this.#o.gpus;
    if (wanted === undefined) return devices;
    const chosen: DeviceFacts[] = [];
    for (const w of wanted) {
      const d = devices.find((x) => (typeof w === 'number' ? x.ordinal === w : x.uuid === w));
      if (d === undefined) this.warnings.push(`GPU ${w} is configured but the probe did not find it`);
      else if (!chosen.includes(d)) chosen.push(d);
    }
    return chosen;
  }

  #emitIdle(): void {
    for (const listener of this.#idleListeners) {
      try {
        listener();
      } catch {
        // the scheduler's exception must not stop the other listeners
      }
    }
  }

  /** The slot objects themselves, every lane of every GPU in GPU order (tests, the admin routes). */
  slotObjects(): readonly GpuSlot[] {
    return this.#slots;
  }

  /** One entry per GPU, its lanes taken together (mergeLanes). */
  slots(): SlotInfo[] {
    const python = this.#o.python;
    return this.#gpus.map((g) => {
      const info = mergeLanes(g.lanes.map((l) => l.info()));
      return python === undefined ? info : { ...info, python };
    });
  }

  /**
   * Leases an idle lane of the class: on an exclusive GPU before a shared one (timings there are not disturbed), and
   * on a GPU with fewer jobs before one with more (a job waits for no turn where a GPU is free).
   */
  lease(gpuClass: string): SlotLease | undefined {
    if (this.#stopping) return undefined;
    const running = (g: PoolGpu) => g.lanes.filter((l) => l.state === 'busy').length;
    const order = this.#gpus
      .filter((g) => g.lanes[0]!.classes.includes(gpuClass))
      .map((g) => ({ g, running: running(g) }))
      .sort((a, b) => Number(a.g.shared) - Number(b.g.shared) || a.running - b.running);
    for (const { g } of order) {
      for (const slot of g.lanes) {
        if (slot.state !== 'idle') continue;
        const lease = slot.lease();
        if (lease !== undefined) return lease;
      }
    }
    return undefined;
  }

  serves(gpuClass: string): boolean {
    return this.#slots.some((s) => s.state !== 'quarantined' && s.classes.includes(gpuClass));
  }

  onIdle(listener: () => void): void {
    this.#idleListeners.push(listener);
  }

  /** Reprobes every lane of the GPU, one after another (the first finds whether the GPU dropped a held PID). */
  async reprobe(uuid: string): Promise<SlotInfo | undefined> {
    const gpu = this.#gpus.find((g) => g.uuid === uuid);
    if (gpu === undefined) return undefined;
    for (const lane of gpu.lanes) await lane.reprobe();
    const info = mergeLanes(gpu.lanes.map((l) => l.info()));
    const python = this.#o.python;
    return python === undefined ? info : { ...info, python };
  }

  /** Drains: no more leases; running jobs get `graceMs` to finish; then every child is killed. */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#reprobeTimer);
    await this.#started?.catch(() => undefined);
    const drained = Promise.all(this.#slots.map((s) => s.whenNotBusy()));
    const grace = new AbortController();
    await Promise.race([drained, sleep(graceMs, undefined, { signal: grace.signal }).catch(() => undefined)]);
    grace.abort();
    await Promise.all(this.#slots.map((s) => s.stop()));
  }
}

/** The order of states in mergeLanes: a GPU is as available as its most available lane. */
const STATE_RANK: Record<SlotState, number> = { idle: 0, busy: 1, starting: 2, restarting: 3, quarantined: 4 };

/**
 * What /v1/gpus shows of a GPU with several lanes: its most available lane's state (idle when any lane can take a
 * job), the jobs and restarts of all, the last error any lane has, and how many jobs run on it now.
 */
export function mergeLanes(lanes: readonly SlotInfo[]): SlotInfo {
  const first = lanes[0]!;
  const state = lanes.map((l) => l.state).sort((a, b) => STATE_RANK[a] - STATE_RANK[b])[0]!;
  const byReason: Record<string, number> = {};
  for (const l of lanes) {
    for (const [reason, n] of Object.entries(l.restartsByReason ?? {})) byReason[reason] = (byReason[reason] ?? 0) + n;
  }
  return {
    ...first,
    state,
    jobs: lanes.reduce((n, l) => n + l.jobs, 0),
    restarts: lanes.reduce((n, l) => n + l.restarts, 0),
    restartsByReason: byReason,
    lastError: lanes.find((l) => l.lastError !== undefined)?.lastError,
    lanes: lanes.length,
    running: lanes.filter((l) => l.state === 'busy').length,
  };
}
