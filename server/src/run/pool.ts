// SPDX-License-Identifier: MIT
// The contract between the service (scheduler, API) and the GPU side: one slot per GPU, each supervising one worker
// child at a time. run/slot.ts implements a slot, run/local-pool.ts the pool of this host's GPUs (found by a probe
// child: the API process never loads the addon).
import type { EvalPhase } from 'cudakit';
import type { ChildExit } from './child.js';
import type { Deadlines, DeviceFacts, JobExtras, LaunchFacts, RunJob, RunProgress, RunReport } from './protocol.js';
import type { PythonFacts } from './python.js';

export type SlotState = 'starting' | 'idle' | 'busy' | 'restarting' | 'quarantined';

/**
 * What a GPU class is written as, wherever one is named: a job's `gpu`, `--gpu-class`, a board's class, a query's:
 * letters, digits, '_', '.' and '-', 64 at most ('H200', 'sm_90', 'any').
 */
export const GPU_CLASS_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/** What /v1/gpus shows of a slot. */
export interface SlotInfo {
  uuid: string;
  name: string;
  arch: string;
  /** The classes this GPU serves: its name's model ('H200'), its arch ('sm_90'), 'any'. */
  classes: string[];
  state: SlotState;
  /** Jobs run since start, and children restarted after a kill, a crash or a failed start. */
  jobs: number;
  restarts: number;
  /** The restarts by why the worker was replaced ('timeout', 'crash', 'start-failed' ...). */
  restartsByReason?: Record<string, number>;
  lastError: string | undefined;
  /** Other processes use this GPU too, or it is a MIG slice: timings there are not exclusive. */
  shared: boolean;
  /** Its memory, as the probe read it (a job's device-bytes cap follows the smallest GPU's). */
  totalMemoryBytes: number;
  /** Its launch limits, as the probe read them (admission follows the smallest GPU's); absent from older agents. */
  launch?: LaunchFacts;
  /** The host of the agent that has it (distributed mode). */
  host?: string;
  /** Its host's Python for the Python kernel types (--python); absent without one. */
  python?: PythonFacts;
  /**
   * Jobs it may have at once (--lanes): one on the GPU, the others starting, compiling or waiting for their turn;
   * absent from older agents (one).
   */
  lanes?: number;
  /** Jobs on it now (at most `lanes`). */
  running?: number;
}

/** How a job ended on a slot. Only 'report' comes from the worker; the rest the supervisor decides. */
export type SlotOutcome =
  | { kind: 'report'; report: RunReport; device: DeviceFacts | undefined }
  /** A deadline passed: the child's process group was killed and the slot is respawning. */
  | { kind: 'timeout'; phase: EvalPhase | 'profile' | undefined; limitMs: number; scope: 'phase' | 'job' }
  /** The child died (or broke the protocol) without a report. */
  | {
      kind: 'crashed';
      phase: EvalPhase | 'profile' | undefined;
      signal: string | undefined;
      exitCode: number | undefined;
      stderrTail: string;
      reason: string;
    }
  /** cancel() was called: the child was killed. */
  | { kind: 'cancelled' };

export interface RunHooks {
  onPhase?(phase: EvalPhase | 'profile'): void;
  onProgress?(progress: RunProgress): void;
  /**
   * Whether what the job does now may be shown (false inside a hidden case of a problem). Where not, the slot's
   * lastError, which every reader of the GPUs sees, says that a hidden case failed and nothing more: no phase, no
   * deadline, no message of the worker's. Default true.
   */
  showsDetails?(): boolean;
}

/** A crash's outcome: the child `e` died (or broke the protocol, or was killed for it) in `phase`. */
export function crashedOutcome(
  phase: EvalPhase | 'profile' | undefined,
  e: ChildExit | undefined,
  stderrTail: string,
  reason: string,
): SlotOutcome {
  return { kind: 'crashed', phase, signal: e?.signal ?? undefined, exitCode: e?.code ?? undefined, stderrTail, reason };
}

/** A slot leased to one job. */
export interface SlotLease {
  readonly info: SlotInfo;
  /** Runs the job on the leased slot's ready child; resolves with how it ended, never rejects. */
  run(
    id: string,
    job: RunJob,
    seedSalt: string,
    deadlines: Deadlines,
    hooks: RunHooks,
    extras?: JobExtras,
  ): Promise<SlotOutcome>;
  /** Kills the child running this lease's job (the run resolves with 'cancelled'). */
  cancel(): void;
}

export interface GpuPool {
  /** Probes the GPUs and starts one child per slot; resolves when the probe has answered (slots may still start). */
  start(): Promise<void>;
  /** Why there is no GPU, when the probe found none (the service still starts and answers 503 to submissions). */
  readonly unavailableReason: string | undefined;
  /**
   * While there is no GPU: how long a client should wait before it submits again (Retry-After), or undefined when
   * waiting will not bring one (a host without a driver or a GPU: it takes an operator).
   */
  readonly unavailableRetryAfterSeconds: number | undefined;
  slots(): SlotInfo[];
  /** Leases an idle slot that serves `gpuClass`, or undefined when none is idle now. */
  lease(gpuClass: string): SlotLease | undefined;
  /** Whether any slot (idle or not, not quarantined) serves `gpuClass`. */
  serves(gpuClass: string): boolean;
  /**
   * Reads the GPUs again before the service refuses a job for want of one, where the pool's view can lag (an API
   * node reads the agents' registry every second: one that started after the agents has not read it yet).
   */
  recheck?(): Promise<void>;
  /** Called whenever a slot becomes idle (the scheduler then leases it). */
  onIdle(listener: () => void): void;
  /** Re-probes a quarantined slot (the admin route, and a periodic timer). */
  reprobe(uuid: string): Promise<SlotInfo | undefined>;
  /**
   * Stops accepting leases, waits up to `graceMs` for running jobs, then kills every child; resolves when all exited.
   */
  stop(graceMs: number): Promise<void>;
}
