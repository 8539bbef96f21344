// SPDX-License-Identifier: MIT
// A GpuPool without GPUs or children, for the scheduler's and the API's tests: each lease's run() plays the job's
// phases and resolves a canned SlotOutcome after a delay, chosen by the job's name (or by a test's own `script`). It
// records every run's interval per slot, so a test can show that no slot ever ran two jobs at once. A submission to a
// problem with cases (its problem in the run's extras) plays the cases as the fake worker does (fake-problem.ts).
import type { EvalJob, EvalPhase, EvalReport, ProblemSubmission } from 'cudakit';
import type { GpuPool, RunHooks, SlotInfo, SlotLease, SlotOutcome, SlotState } from '../../src/run/pool.js';
import type { Deadlines, JobExtras, LaunchFacts, RunJob, RunProgress } from '../../src/run/protocol.js';
import type { PythonFacts } from '../../src/run/python.js';
import { fakeProblemProgress, fakeProblemReport } from '../../src/run/worker/fake-problem.js';
import { H200_LAUNCH } from '../../../test/support/devices.js';

export interface FakeGpu {
  uuid: string;
  name: string;
  arch: string;
  /** Default 150 GB (an H200's 141 GiB, rounded). */
  totalMemoryBytes?: number;
  /** Default H200_LAUNCH; null: none reported (an agent of an older version). */
  launch?: LaunchFacts | null;
  /** A MIG slice, or a GPU other processes use too. Default false. */
  shared?: boolean;
  /** Its host's Python (--python). Default: none. */
  python?: PythonFacts;
}

/** What a run does: wait `delayMs` (or until cancelled, with Infinity), then end with `outcome`. */
export interface FakeScript {
  delayMs: number;
  outcome: SlotOutcome;
  phases?: (EvalPhase | 'profile')[];
  /** Progress sent before the outcome, in order; after each case's start, the phases again (its job's). */
  progress?: RunProgress[];
}

export interface FakeRunRecord {
  id: string;
  uuid: string;
  startMs: number;
  endMs: number | undefined;
  deadlines: Deadlines;
  /** What the service asked of the worker beside the job. */
  job: RunJob;
  extras: JobExtras | undefined;
  outcome: SlotOutcome | undefined;
}

export const H200: FakeGpu = { uuid: 'GPU-00000000-0000-0000-0000-000000000200', name: 'NVIDIA H200', arch: 'sm_90' };

export function fakeGpus(n: number, base: FakeGpu = H200): FakeGpu[] {
  return Array.from({ length: n }, (_, i) => ({
    ...base,
    uuid: `${base.uuid.slice(0, -3)}${String(i).padStart(3, '0')}`,
  }));
}

/** The classes a slot serves: its model ('H200', 'H100'), its arch, 'any'. */
function classesOf(gpu: FakeGpu): string[] {
  const model = /\b([A-Z]\d{2,3}[A-Z]?)\b/.exec(gpu.name.replace(/^NVIDIA /, ''))?.[1];
  return [...(model === undefined ? [] : [model]), gpu.arch, 'any'];
}

export function passedReport(name: string, extra: Partial<EvalReport> = {}): EvalReport {
  return {
    name,
    passed: true,
    phase: undefined,
    error: undefined,
    phases: [
      { phase: 'compile', ms: 1 },
      { phase: 'check', ms: 1 },
    ],
    compile: {},
    check: undefined,
    timing: undefined,
    comparison: undefined,
    warnings: [],
    ...extra,
  };
}

export function failedReport(name: string, error: NonNullable<EvalReport['error']>, phase: EvalPhase): EvalReport {
  return { ...passedReport(name), passed: false, phase, error };
}

/**
 * The default script by job name: 'sleep:<ms>' passes after that long; 'hang' runs until cancelled; 'incorrect',
 * 'timeout', 'crash', 'crash-outside' end as they say; anything else passes after 5 ms. A submission to a problem
 * named 'public-fail' or 'hidden-fail' fails there (fake-problem.ts); one with another name passes every case.
 */
export function scriptByName(job: EvalJob, _id?: string, extras?: JobExtras): FakeScript {
  const name = job.name ?? job.kernel;
  const problem = extras?.problem;
  if (problem !== undefined && !['hang', 'timeout', 'crash', 'crash-outside'].includes(name.split(':')[0]!)) {
    const outcome = name === 'public-fail' || name === 'hidden-fail' ? name : 'pass';
    const submission = job as unknown as ProblemSubmission;
    const caseReport = (label: string, error: EvalReport['error']) =>
      error === undefined ? passedReport(label) : failedReport(label, error, 'check');
    const report = fakeProblemReport(problem, submission, outcome, caseReport);
    const progress = fakeProblemProgress(problem, submission, outcome);
    return { delayMs: 5, outcome: { kind: 'report', report, device: undefined }, progress };
  }
  const [kind, arg] = name.split(':');
  switch (kind) {
    case 'sleep':
      return { delayMs: Number(arg), outcome: { kind: 'report', report: passedReport(name), device: undefined } };
    case 'hang':
      return { delayMs: Infinity, outcome: { kind: 'report', report: passedReport(name), device: undefined } };
    case 'incorrect': {
      const error = { kind: 'verdict', code: 'mismatch', message: '3 of 32 elements differ', defence: 'mismatch' };
      const report = failedReport(name, error as NonNullable<EvalReport['error']>, 'check');
      return { delayMs: 5, outcome: { kind: 'report', report, device: undefined } };
    }
    case 'timeout':
      return { delayMs: 5, outcome: { kind: 'timeout', phase: 'time', limitMs: 50_000, scope: 'phase' } };
    case 'crash':
      return {
        delayMs: 5,
        outcome: {
          kind: 'crashed',
          phase: 'check',
          signal: 'SIGSEGV',
          exitCode: undefined,
          stderrTail: 'Segmentation fault',
          reason: 'the worker died',
        },
      };
    case 'crash-outside':
      return {
        delayMs: 5,
        outcome: {
          kind: 'crashed',
          phase: undefined,
          signal: undefined,
          exitCode: 1,
          stderrTail: '',
          reason: 'the worker exited before the job',
        },
      };
    default:
      return { delayMs: 5, outcome: { kind: 'report', report: passedReport(name), device: undefined } };
  }
}

interface Slot {
  info: SlotInfo;
  /** The job it runs, while busy. */
  running: string | undefined;
}

export class FakePool implements GpuPool {
  readonly runs: FakeRunRecord[] = [];
  /** Leases of a busy slot, or runs on a slot already running: must stay empty. */
  readonly violations: string[] = [];
  unavailableReason: string | undefined;
  /** Without a GPU, as a host without a driver: no Retry-After (an API node's pool gives one: set it). */
  unavailableRetryAfterSeconds: number | undefined = undefined;
  /** A test's own recheck (GpuPool.recheck), when it plays a pool whose view lags. */
  recheck?: () => Promise<void>;
  /** A problem's submission comes as its EvalJob-like self: scripts read a job's name and kernel, which it has too. */
  script: (job: EvalJob, id: string, extras?: JobExtras) => FakeScript = scriptByName;
  /** What a reprobe brings a quarantined slot back as: 'idle', or 'quarantined' for a GPU still broken. */
  reprobeOutcome: 'idle' | 'quarantined' = 'idle';
  /** The slots reprobe() was called for, in order. */
  readonly reprobed: string[] = [];
  readonly #slots: Slot[];
  readonly #idle: (() => void)[] = [];
  /** The end of each run in flight, by job id. */
  readonly #enders = new Map<string, (outcome: SlotOutcome) => void>();
  #stopped = false;

  constructor(gpus: FakeGpu[] = fakeGpus(1), unavailableReason?: string) {
    this.unavailableReason = unavailableReason;
    // A host without a GPU has no slots.
    this.#slots = (unavailableReason === undefined ? gpus : []).map((g) => ({
      info: {
        uuid: g.uuid,
        name: g.name,
        arch: g.arch,
        classes: classesOf(g),
        state: 'idle',
        jobs: 0,
        restarts: 0,
        lastError: undefined,
        shared: g.shared ?? false,
        totalMemoryBytes: g.totalMemoryBytes ?? 150_000_000_000,
        ...(g.launch === null ? {} : { launch: g.launch ?? H200_LAUNCH }),
        ...(g.python === undefined ? {} : { python: g.python }),
      },
      running: undefined,
    }));
  }

  async start(): Promise<void> {}

  slots(): SlotInfo[] {
    return this.#slots.map((s) => ({ ...s.info, classes: [...s.info.classes] }));
  }

  /** A test's hand on a slot's state (a quarantine, a restart). */
  setState(uuid: string, state: SlotState): void {
    const slot = this.#slots.find((s) => s.info.uuid === uuid)!;
    slot.info.state = state;
    if (state === 'idle') this.#emitIdle();
  }

  serves(gpuClass: string): boolean {
    return this.#slots.some((s) => s.info.state !== 'quarantined' && s.info.classes.includes(gpuClass));
  }

  onIdle(listener: () => void): void {
    this.#idle.push(listener);
  }

  /** As a real slot: only a quarantined one is probed again; any other is answered as it is. */
  async reprobe(uuid: string): Promise<SlotInfo | undefined> {
    const slot = this.#slots.find((s) => s.info.uuid === uuid);
    if (slot === undefined) return undefined;
    this.reprobed.push(uuid);
    if (slot.info.state === 'quarantined') this.setState(uuid, this.reprobeOutcome);
    return this.slots().find((s) => s.uuid === uuid);
  }

  lease(gpuClass: string): SlotLease | undefined {
    if (this.#stopped) return undefined;
    const slot = this.#slots.find((s) => s.info.state === 'idle' && s.info.classes.includes(gpuClass));
    if (slot === undefined) return undefined;
    if (slot.running !== undefined) this.violations.push(`leased ${slot.info.uuid} while it ran ${slot.running}`);
    slot.info.state = 'busy';
    let used = false;
    let cancelRun: (() => void) | undefined;
    let cancelledEarly = false;
    const pool = this;
    return {
      info: { ...slot.info },
      run(
        id: string,
        job: RunJob,
        _salt: string,
        deadlines: Deadlines,
        hooks: RunHooks,
        extras?: JobExtras,
      ): Promise<SlotOutcome> {
        if (used) pool.violations.push(`lease of ${slot.info.uuid} run twice`);
        used = true;
        if (slot.running !== undefined)
          pool.violations.push(`${slot.info.uuid} ran ${id} while running ${slot.running}`);
        slot.running = id;
        const record: FakeRunRecord = {
          id,
          uuid: slot.info.uuid,
          startMs: performance.now(),
          endMs: undefined,
          deadlines,
          job,
          extras,
          outcome: undefined,
        };
        pool.runs.push(record);
        const script = pool.script(job as EvalJob, id, extras);
        return new Promise<SlotOutcome>((resolve) => {
          let timer: NodeJS.Timeout | undefined;
          const end = (outcome: SlotOutcome): void => {
            if (record.endMs !== undefined) return;
            clearTimeout(timer);
            pool.#enders.delete(id);
            record.endMs = performance.now();
            record.outcome = outcome;
            slot.running = undefined;
            slot.info.jobs++;
            // The slot is idle only after the outcome is delivered, as a real slot respawns its child first.
            setImmediate(() => {
              if (slot.info.state === 'busy') slot.info.state = 'idle';
              pool.#emitIdle();
            });
            resolve(outcome);
          };
          cancelRun = () => end({ kind: 'cancelled' });
          pool.#enders.set(id, end);
          if (cancelledEarly) return cancelRun();
          const phases = script.phases ?? ['compile', 'check'];
          for (const phase of phases) hooks.onPhase?.(phase);
          for (const p of script.progress ?? []) {
            hooks.onProgress?.(p);
            if (p.kind === 'case') for (const phase of phases) hooks.onPhase?.(phase);
          }
          if (Number.isFinite(script.delayMs)) timer = setTimeout(() => end(script.outcome), script.delayMs);
        });
      },
      cancel(): void {
        if (cancelRun !== undefined) cancelRun();
        else cancelledEarly = true;
      },
    };
  }

  /** Ends the run of job `id` now, with `outcome` (default: as if killed). */
  finish(id: string, outcome: SlotOutcome = { kind: 'cancelled' }): void {
    const end = this.#enders.get(id);
    if (end === undefined) throw new Error(`no run of ${id}`);
    end(outcome);
  }

  /** Jobs running now. */
  running(): string[] {
    return [...this.#enders.keys()];
  }

  async stop(graceMs: number): Promise<void> {
    this.#stopped = true;
    const deadline = Date.now() + graceMs;
    while (this.#enders.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    // What the real pool does past the grace: kill the children; the runs end without a report.
    for (const end of [...this.#enders.values()]) end({ kind: 'cancelled' });
  }

  #emitIdle(): void {
    for (const l of this.#idle) l();
  }
}
