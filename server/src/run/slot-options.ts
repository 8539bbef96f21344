// SPDX-License-Identifier: MIT
// A GPU slot's options (slot.ts) and their defaults.
import type { Containment } from './containment.js';
import type { GpuGate } from './gpu-gate.js';
import type { GpuReleased } from './nvidia-smi.js';
import type { DeviceFacts, WorkerContext } from './protocol.js';
import type { PythonService } from './python-relay.js';

export type Isolation = 'process' | 'warm';

export interface SlotOptions {
  /** The GPU, as the probe saw it. */
  facts: DeviceFacts;
  /** The classes it serves (local-pool.ts: its model, its arch, 'any'). */
  classes: readonly string[];
  /** The GPU's turns, shared by the slots of its lanes (gpu-gate.ts). Default: a gate of its own (one lane). */
  gate?: GpuGate;
  /**
   * When a worker makes its CUDA context: 'job' (default), as its job starts, beside validation and NVRTC (a GPU of
   * one lane: no other job's timing can be running); 'turn', once its job's turn on the GPU has come (lanes share the
   * GPU); 'standby', before it says `ready` (the job waits for no context; the waiting worker holds its memory).
   */
  context?: WorkerContext;
  /** Other processes use it too, or it is a MIG slice. Default false. */
  shared?: boolean;
  /** 'process' (default): a fresh child per job; 'warm': one child across jobs. */
  isolation?: Isolation;
  /** The worker script: 'fake', a path, or the real one (default: $CUDAKIT_SERVER_WORKER; see child.ts). */
  worker?: string;
  /** Set for the children on top of the allowed part of the service's environment (containment.ts). */
  env?: Readonly<Record<string, string | undefined>>;
  /** The children's folders, environment and user. Default: defaultContainment(). */
  containment?: Containment;
  /** The service's Python (--python), for a job's runner (python-relay.ts); none without. */
  python?: PythonService;
  /** 'auto' (default): setpriv --pdeathsig where it works, else the child's watchdog thread. */
  deathGuard?: 'auto' | 'watchdog';
  /** From fork to `ready`. Default 30 s. */
  startTimeoutMs?: number;
  /** Failed starts in a row before the slot is quarantined. Default 3. */
  maxFailedStarts?: number;
  /** Pause after a failed start. Default 1 s. */
  restartDelayMs?: number;
  /** Process per job: how long a child may take to exit after its result before it is killed. Default 5 s. */
  exitGraceMs?: number;
  /** After SIGKILL: how long to wait for the exit before the slot is quarantined. Default 10 s. */
  killWaitMs?: number;
  /** Whether the GPU dropped a killed child's PID (default: nvidia-smi, polled). */
  gpuReleased?: GpuReleased;
  /** How long the GPU may keep a killed child's PID before the slot is quarantined. Default 30 s. */
  releaseTimeoutMs?: number;
  /** How much of a child's stderr (its last characters) is kept for a crash report. Default 8192. */
  stderrTailChars?: number;
}

export const SLOT_DEFAULTS = {
  startTimeoutMs: 30_000,
  maxFailedStarts: 3,
  restartDelayMs: 1_000,
  exitGraceMs: 5_000,
  killWaitMs: 10_000,
  releaseTimeoutMs: 30_000,
  stderrTailChars: 8_192,
} as const;

/** `o` without its undefined properties, so that spreading it over defaults keeps them. */
export function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
