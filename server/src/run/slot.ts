// SPDX-License-Identifier: MIT
// GpuSlot: the supervisor of one lane of a GPU (a GPU has one lane or more, whose jobs take turns on it: gpu-gate.ts).
// It keeps one worker child ready (Node up, cudakit loaded, NVRTC warm; its CUDA context too with context 'standby'),
// leases it to one job at a time, gives the job its turn on the GPU when it asks, times every phase of the job from
// the child's `phase` messages (the child cannot time itself out: a kernel that never ends blocks its event loop), and
// on a deadline, a cancel, a crash or a protocol error kills the child's process group, waits for the exit and for
// the GPU to drop the PID, and starts another. A slot is capacity only while a child that said `ready` is alive.
//
//   starting ──ready──▶ idle ──lease()──▶ busy ──report──▶ idle (warm: the same child)
//      │                 ▲                  ├──report──▶ restarting (process per job: the child exits)
//      │                 │                  └──deadline, cancel, crash, protocol error──▶ restarting (SIGKILL to
//      │                 │                        the group, the exit awaited, the GPU drops the PID)
//      │                 └───── a ready child (the pre-started one, or a new one) ◀──── restarting
//      └── 3 failed starts in a row ──▶ quarantined ◀── the GPU keeps a killed PID, or 3 failed starts ── restarting
//                                           └── reprobe() ──▶ starting
//
// Process per job (the default): the child exits after its job, and the next one is started while the job runs, so
// it is ready when the job ends. Warm: the child stays. A job's turn on the GPU ends once its child has exited.
import { setTimeout as sleep } from 'node:timers/promises';
import type { EvalPhase } from 'cudakit';
import {
  type ChildExit,
  type DeathGuard,
  WorkerChild,
  chooseDeathGuard,
  describeExit,
  describeMessage,
  workerScript,
} from './child.js';
import { type Containment, defaultContainment } from './containment.js';
import { GpuGate } from './gpu-gate.js';
import { JobClock } from './deadlines.js';
import { gpuReleasedBySmi } from './nvidia-smi.js';
import {
  type RunHooks,
  type SlotInfo,
  type SlotLease,
  type SlotOutcome,
  type SlotState,
  crashedOutcome,
} from './pool.js';
import type { ChildMessage, Deadlines, DeviceFacts, JobExtras, PythonRole, RunJob } from './protocol.js';
import { GPU_PHASES, WORKER_ENV, checkJobMessage, isChildMessage, workerStays } from './protocol.js';
import { PythonRelay, type PythonService } from './python-relay.js';
import { RestartCounts, killReasonOf } from './restarts.js';
import { type Isolation, SLOT_DEFAULTS, type SlotOptions, definedOnly } from './slot-options.js';

export type { Isolation, SlotOptions } from './slot-options.js';

/** How long a crashed child's stderr may take to drain after its exit. */
const STDERR_DRAIN_MS = 500;

type Phase = EvalPhase | 'profile';

interface LeaseRecord {
  used: boolean;
  cancelled: boolean;
}

interface ActiveJob {
  lease: LeaseRecord;
  id: string;
  child: WorkerChild;
  deadlines: Deadlines;
  hooks: RunHooks;
  phase: Phase | undefined;
  settled: boolean;
  clock: JobClock;
  /** Its turn on the GPU: not asked for, asked for and waited for, or come. */
  gpu: 'none' | 'waiting' | 'held';
  resolve: (outcome: SlotOutcome) => void;
  /** The job's Python runners (its reference's, its candidate's), each once the worker asked for it. */
  relays: Map<PythonRole, PythonRelay>;
  /** Its Python kernels, and whose builds they may reuse. */
  extras: JobExtras | undefined;
}

export class GpuSlot {
  readonly uuid: string;
  readonly #facts: DeviceFacts;
  readonly #classes: readonly string[];
  readonly #shared: boolean;
  readonly #isolation: Isolation;
  readonly #o: Required<
    Omit<
      SlotOptions,
      'facts' | 'classes' | 'shared' | 'isolation' | 'worker' | 'containment' | 'python' | 'gate' | 'context'
    >
  > & { worker: string | undefined; containment: Containment | undefined; python: PythonService | undefined };
  #state: SlotState = 'starting';
  #jobs = 0;
  readonly #restarts = new RestartCounts();
  #lastError: string | undefined;
  #failedStarts = 0;
  /** The child leases run on: ready, and idle or running a job. */
  #child: WorkerChild | undefined;
  /** Process per job: the next child, started while a job runs; undefined when it gave up (too many failed starts). */
  #spare: Promise<WorkerChild | undefined> | undefined;
  readonly #children = new Set<WorkerChild>();
  #lease: LeaseRecord | undefined;
  #active: ActiveJob | undefined;
  #stopping = false;
  /** Bumped by quarantine and stop: work begun before then drops what it started. */
  #epoch = 0;
  readonly #gate: GpuGate;
  /** The jobs that asked the gate for a turn and have not given it back, by worker (which may still hold the GPU). */
  readonly #gpuJobs = new Map<WorkerChild, string>();
  #guard: Promise<DeathGuard> | undefined;
  #started: Promise<void> | undefined;
  #reprobing: Promise<SlotInfo> | undefined;
  readonly #idleListeners = new Set<() => void>();
  /** Internal waiters for any change of state (whenNotBusy). */
  #stateWaiters: (() => void)[] = [];

  constructor(options: SlotOptions) {
    this.#facts = options.facts;
    this.uuid = options.facts.uuid;
    this.#classes = [...options.classes];
    this.#shared = options.shared ?? false;
    this.#isolation = options.isolation ?? 'process';
    this.#gate = options.gate ?? new GpuGate();
    this.#gate.onQuarantine((q, from) => from !== this && this.#quarantine(q.reason));
    const context = { [WORKER_ENV.context]: options.context ?? 'job' };
    this.#o = {
      ...SLOT_DEFAULTS,
      deathGuard: 'auto',
      gpuReleased: gpuReleasedBySmi,
      ...definedOnly(options),
      env: { ...options.env, ...context },
      worker: options.worker,
      containment: options.containment,
      python: options.python,
    };
  }

  /** What /v1/gpus shows. */
  info(): SlotInfo {
    return {
      uuid: this.uuid,
      name: this.#facts.name,
      arch: this.#facts.arch,
      classes: [...this.#classes],
      state: this.#state,
      jobs: this.#jobs,
      restarts: this.#restarts.total,
      restartsByReason: this.#restarts.byReason(),
      lastError: this.#lastError,
      shared: this.#shared,
      totalMemoryBytes: this.#facts.totalMemoryBytes,
      launch: this.#facts.launch,
    };
  }

  get state(): SlotState {
    return this.#state;
  }

  get classes(): readonly string[] {
    return this.#classes;
  }

  /** The parent-death guard its children run under (known after the first spawn). */
  async deathGuard(): Promise<DeathGuard['kind']> {
    return (await this.#resolveGuard()).kind;
  }

  /** The children alive now: the one leases run on, and any other (the pre-started one). For tests and debugging. */
  pids(): { current: number | undefined; others: { pid: number; ready: boolean }[] } {
    const others = [...this.#children]
      .filter((c) => c !== this.#child && c.exit === undefined && c.pid !== undefined)
      .map((c) => ({ pid: c.pid!, ready: c.isReady }));
    const current = this.#child?.exit === undefined ? this.#child?.pid : undefined;
    return { current, others };
  }

  /** Called (in a microtask) whenever the slot becomes idle. */
  onIdle(listener: () => void): void {
    this.#idleListeners.add(listener);
  }

  /** Starts the first child; resolves when it is ready or the slot is quarantined. */
  start(): Promise<void> {
    this.#started ??= this.#bringUp(undefined);
    return this.#started;
  }

  /** Leases the slot to one job when it is idle. */
  lease(): SlotLease | undefined {
    if (this.#state !== 'idle' || this.#stopping || this.#child === undefined) return undefined;
    if (this.#gate.quarantined !== undefined) return undefined;
    const record: LeaseRecord = { used: false, cancelled: false };
    this.#lease = record;
    this.#setState('busy');
    const info = (): SlotInfo => this.info();
    return {
      get info() {
        return info();
      },
      run: (id, job, seedSalt, deadlines, hooks, extras) =>
        this.#run(record, id, job, seedSalt, deadlines, hooks, extras),
      cancel: () => this.#cancel(record),
    };
  }

  /** Brings a quarantined slot back: the GPU must have dropped the PID it kept, then a child must start. */
  reprobe(): Promise<SlotInfo> {
    if (this.#state !== 'quarantined' || this.#stopping) return Promise.resolve(this.info());
    this.#reprobing ??= (async () => {
      const epoch = this.#epoch;
      this.#failedStarts = 0;
      this.#setState('starting');
      const held = this.#gate.quarantined?.heldPid;
      if (held !== undefined && !(await this.#released(held, 0))) {
        if (epoch === this.#epoch) this.#quarantine(`the GPU still lists the killed worker's PID ${held}`);
        return this.info();
      }
      this.#gate.clearQuarantine();
      await this.#bringUp(undefined);
      return this.info();
    })().finally(() => (this.#reprobing = undefined));
    return this.#reprobing;
  }

  /** Kills every child (a running job resolves 'cancelled'); resolves when they have exited. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#epoch++;
    if (this.#active !== undefined) void this.#kill(this.#active, () => ({ kind: 'cancelled' }), 'the slot stopped');
    else if (this.#lease !== undefined) this.#lease = undefined;
    await this.#guard?.catch(() => undefined); // a spawn waiting on it adds its child first
    for (let round = 0; round < 3 && this.#children.size > 0; round++) {
      const all = [...this.#children];
      for (const c of all) c.kill();
      await Promise.race([Promise.all(all.map((c) => c.exited)), sleep(this.#o.killWaitMs)]);
    }
    this.#child = undefined;
    this.#releaseGpu();
  }

  /** Resolves when the slot is not busy (the pool's drain). */
  async whenNotBusy(): Promise<void> {
    while (this.#state === 'busy') await new Promise<void>((resolve) => this.#stateWaiters.push(resolve));
  }

  // -------------------------------------------------------------------------------------------------------------
  // Children

  #resolveGuard(): Promise<DeathGuard> {
    this.#guard ??= chooseDeathGuard(this.#o.deathGuard);
    return this.#guard;
  }

  async #spawn(): Promise<WorkerChild> {
    const guard = await this.#resolveGuard();
    const child = new WorkerChild({
      script: workerScript('worker', this.#o.worker),
      uuid: this.uuid,
      isolation: this.#isolation,
      guard,
      env: this.#o.env,
      containment: this.#o.containment ?? defaultContainment(),
      startTimeoutMs: this.#o.startTimeoutMs,
      stderrTailChars: this.#o.stderrTailChars,
    });
    this.#children.add(child);
    void child.exited.then(() => this.#children.delete(child));
    return child;
  }

  /** A child that said `ready`, or undefined after maxFailedStarts failed starts in a row (or a stop/quarantine). */
  async #readyChild(): Promise<WorkerChild | undefined> {
    const epoch = this.#epoch;
    for (;;) {
      if (epoch !== this.#epoch) return undefined;
      let child: WorkerChild;
      try {
        child = await this.#spawn();
      } catch (e) {
        this.#lastError = `the worker could not be started: ${(e as Error).message}`;
        return undefined; // a setup problem (no such script): retrying cannot help
      }
      const r = await child.ready;
      if (epoch !== this.#epoch) {
        child.kill();
        return undefined;
      }
      if (r.ok) {
        this.#failedStarts = 0;
        return child;
      }
      await child.waitExit(this.#o.killWaitMs);
      this.#failedStarts++;
      this.#restarts.count('start-failed');
      const tail = lastLine(child.stderrTail());
      this.#lastError = `the worker did not start: ${r.reason}${tail === '' ? '' : ` (stderr: ${tail})`}`;
      if (this.#failedStarts >= this.#o.maxFailedStarts) return undefined;
      await sleep(this.#o.restartDelayMs);
    }
  }

  /** Makes a ready child current: the pre-started one when it made it, else a new one; quarantines when none starts. */
  async #bringUp(spare: Promise<WorkerChild | undefined> | undefined): Promise<void> {
    const epoch = this.#epoch;
    let child = spare === undefined ? undefined : await spare;
    const gaveUp = spare !== undefined && child === undefined;
    if (child?.exit !== undefined) {
      this.#restarts.count('spare-exited');
      this.#lastError = `the pre-started worker exited (${describeExit(child.exit)})`;
      child = undefined;
    }
    if (child === undefined && !gaveUp && epoch === this.#epoch) child = await this.#readyChild();
    if (epoch !== this.#epoch) {
      child?.kill();
      return;
    }
    if (child === undefined) {
      this.#quarantine(this.#lastError ?? 'the worker did not start');
      return;
    }
    const current = child;
    this.#child = current;
    current.onMessage = (m) => this.#idleMessage(current, m);
    current.onExit = (e) => this.#idleExit(current, e);
    this.#setState('idle');
  }

  /** A message from a child with no job: a protocol error; the child is replaced. */
  #idleMessage(child: WorkerChild, m: unknown): void {
    this.#idleLost(child, `protocol error from an idle worker: ${describeMessage(m)}`);
  }

  /** The current child died without a job. */
  #idleExit(child: WorkerChild, e: ChildExit): void {
    this.#idleLost(child, `the idle worker exited (${describeExit(e)})`);
  }

  /** Replaces the current child lost between jobs, unless a lease holds it (run() then reports it). */
  #idleLost(child: WorkerChild, reason: string): void {
    if (child !== this.#child || this.#active !== undefined || this.#lease !== undefined || this.#stopping) return;
    this.#child = undefined;
    child.onMessage = undefined;
    child.onExit = undefined;
    child.kill();
    this.#restarts.count('idle-exit');
    this.#lastError = reason;
    this.#setState('restarting');
    void child.exited.then(() => this.#replace(child, child.jobs > 0));
  }

  /** After a child is gone: waits for the GPU to drop its PID when it may hold it, then brings up the next child. */
  async #replace(old: WorkerChild, checkGpu: boolean): Promise<void> {
    const epoch = this.#epoch;
    const spare = this.#spare;
    this.#spare = undefined;
    if (checkGpu && old.pid !== undefined) {
      const released = await this.#released(old.pid, this.#o.releaseTimeoutMs);
      if (epoch !== this.#epoch) return;
      if (!released) {
        const why = `the GPU still lists the killed worker's PID ${old.pid} after ${this.#o.releaseTimeoutMs} ms`;
        this.#quarantine(why, old.pid);
        void spare?.then((c) => c?.kill());
        return;
      }
    }
    this.#releaseGpu(old); // the killed worker is gone from the GPU
    await this.#bringUp(spare);
  }

  async #released(pid: number, timeoutMs: number): Promise<boolean> {
    try {
      return await this.#o.gpuReleased(pid, this.uuid, timeoutMs);
    } catch {
      return false; // cannot tell: treated as held
    }
  }

  /**
   * Takes the GPU out of service, with every lane of it (the gate tells the others): a job another lane runs ends
   * 'cancelled' (the service's, not the kernel's), and its worker is killed.
   */
  #quarantine(reason: string, heldPid?: number): void {
    this.#epoch++;
    this.#lastError = reason;
    this.#child = undefined;
    const active = this.#active;
    this.#active = undefined;
    this.#lease = undefined;
    if (active !== undefined && !active.settled) {
      this.#settle(active);
      active.resolve({ kind: 'cancelled' });
    }
    for (const c of this.#children) c.kill();
    const spare = this.#spare;
    this.#spare = undefined;
    void spare?.then((c) => c?.kill());
    this.#releaseGpu();
    this.#setState('quarantined');
    this.#gate.quarantine({ reason, heldPid }, this);
  }

  /**
   * Gives back the turn on the GPU (or the wait for one) of `child`'s job, or of every job of this lane: the next
   * job's GPU work may begin.
   */
  #releaseGpu(child?: WorkerChild): void {
    for (const [c, id] of [...this.#gpuJobs]) {
      if (child !== undefined && c !== child) continue;
      this.#gpuJobs.delete(c);
      this.#gate.release(id);
    }
  }

  #setState(state: SlotState): void {
    const was = this.#state;
    this.#state = state;
    for (const wake of this.#stateWaiters.splice(0)) wake();
    if (state === 'idle' && was !== 'idle') {
      for (const listener of [...this.#idleListeners]) {
        queueMicrotask(() => {
          if (this.#state === 'idle') listener(); // a listener is never called for a slot no longer idle
        });
      }
    }
  }

  // -------------------------------------------------------------------------------------------------------------
  // Jobs

  #run(
    lease: LeaseRecord,
    id: string,
    job: RunJob,
    seedSalt: string,
    deadlines: Deadlines,
    hooks: RunHooks,
    extras: JobExtras | undefined,
  ): Promise<SlotOutcome> {
    if (lease.cancelled) return Promise.resolve({ kind: 'cancelled' });
    if (lease.used || lease !== this.#lease) return Promise.reject(new Error('a slot lease runs one job'));
    if (!(deadlines.jobMs > 0))
      return Promise.reject(new RangeError(`deadlines.jobMs must be > 0: ${deadlines.jobMs}`));
    lease.used = true;
    const child = this.#child;
    if (child === undefined || child.exit !== undefined) {
      const e = child?.exit ?? { code: null, signal: null };
      const reason = `the worker exited before it accepted the job (${describeExit(e)})`;
      this.#lastError = reason;
      this.#restarts.count('exit-before-job');
      this.#endJob(child, 'killed');
      const tail = child?.stderrTail() ?? '';
      return Promise.resolve(crashedOutcome(undefined, e, tail, reason));
    }
    return new Promise<SlotOutcome>((resolve) => {
      const active: ActiveJob = {
        lease,
        id,
        child,
        deadlines,
        hooks,
        phase: undefined,
        settled: false,
        clock: new JobClock(deadlines.jobMs, () => this.#expire(active, 'job', deadlines.jobMs)),
        gpu: 'none',
        resolve,
        relays: new Map(),
        extras,
      };
      this.#active = active;
      this.#jobs++;
      child.jobs++;
      child.onMessage = (m) => this.#message(active, m);
      child.onExit = () => void this.#crashed(active);
      child.send({ v: 1, t: 'job', id, job, seedSalt, deadlines, ...(extras === undefined ? {} : { extras }) });
      // Process per job: the next child starts now, so it is ready when this one is done.
      if (this.#isolation === 'process') this.#spare = this.#readyChild();
    });
  }

  #cancel(lease: LeaseRecord): void {
    if (lease !== this.#lease) return;
    const active = this.#active;
    if (active !== undefined && active.lease === lease) {
      void this.#kill(active, () => ({ kind: 'cancelled' }), 'the job was cancelled');
      return;
    }
    if (lease.used) return;
    lease.cancelled = true; // run() resolves 'cancelled' without touching the slot
    this.#lease = undefined;
    const child = this.#child;
    if (child?.exit !== undefined) this.#idleExit(child, child.exit);
    else this.#setState('idle');
  }

  #message(active: ActiveJob, m: unknown): void {
    if (active.settled) return;
    if (!isChildMessage(m)) return this.#protocolError(active, `not a protocol message: ${describeMessage(m)}`);
    const problem = checkJobMessage(m, active.id);
    if (problem !== undefined) return this.#protocolError(active, problem);
    switch (m.t) {
      case 'phase': {
        if (GPU_PHASES.has(m.phase) && active.gpu !== 'held') {
          return this.#protocolError(active, `the ${m.phase} phase began before the job's turn on the GPU`);
        }
        active.phase = m.phase;
        const limitMs = active.deadlines.phaseMs[m.phase];
        active.clock.phase(limitMs, () => this.#expire(active, 'phase', limitMs!));
        quietly(() => active.hooks.onPhase?.(m.phase));
        return;
      }
      case 'progress':
        quietly(() => active.hooks.onProgress?.(m.progress));
        return;
      case 'result':
        this.#settle(active);
        active.resolve({ kind: 'report', report: m.report, device: m.device });
        void this.#afterReport(active.child, !workerStays(m.report));
        return;
      case 'fatal': {
        const reason = `the worker failed: ${m.error.code}: ${m.error.message}`;
        void this.#kill(active, (c) => crashedOutcome(active.phase, c.exit, c.stderrTail(), reason), reason);
        return;
      }
      case 'ready':
        return this.#protocolError(active, 'a second ready');
      case 'gpu':
        return this.#askForGpu(active);
      case 'python': {
        if (m.op === 'start' && active.gpu !== 'held') {
          return this.#protocolError(active, "a Python runner asked for before the job's turn on the GPU");
        }
        const { runner } = m;
        let relay = active.relays.get(runner);
        if (relay === undefined) {
          const kernel = active.extras?.python?.[runner];
          const scope = active.extras?.buildScope;
          relay = new PythonRelay({
            python: this.#o.python,
            containment: this.#o.containment ?? defaultContainment(),
            emit: (event) =>
              void (active.settled || active.child.send({ v: 1, t: 'python', id: active.id, runner, event })),
            ...(kernel === undefined || scope === undefined ? {} : { build: { scope, gpu: this.#facts.arch, kernel } }),
          });
          active.relays.set(runner, relay);
        }
        return relay.handle(m.op, m.line);
      }
    }
  }

  /** The job asks for its turn on the GPU: its clock stops until the turn comes (JobClock), its last phase is over. */
  #askForGpu(active: ActiveJob): void {
    if (active.gpu !== 'none') return this.#protocolError(active, 'a second gpu message');
    active.gpu = 'waiting';
    active.clock.pause();
    this.#gpuJobs.set(active.child, active.id);
    this.#gate.request(active.id, () => {
      if (active.settled) return;
      active.gpu = 'held';
      active.clock.resume();
      active.child.send({ v: 1, t: 'gpu', id: active.id });
    });
  }

  #protocolError(active: ActiveJob, problem: string): void {
    const reason = `protocol error: ${problem}`;
    void this.#kill(active, (c) => crashedOutcome(active.phase, c.exit, c.stderrTail(), reason), reason);
  }

  #expire(active: ActiveJob, scope: 'phase' | 'job', limitMs: number): void {
    const phase = active.phase;
    const where = scope === 'job' ? 'the job' : `the ${phase} phase`;
    const reason = `${where} ran past its deadline of ${limitMs} ms`;
    void this.#kill(active, () => ({ kind: 'timeout', phase, limitMs, scope }), reason);
  }

  /** The job is decided: no more timers or messages count. */
  #settle(active: ActiveJob): void {
    active.settled = true;
    active.clock.stop();
    if (active.gpu === 'waiting') this.#releaseGpu(active.child); // it never had the GPU: its wait just ends
    for (const relay of active.relays.values()) relay.stop();
    active.child.onMessage = undefined;
    active.child.onExit = undefined;
  }

  /** Kills the job's child (its process group), waits for its exit, resolves the run, then replaces the child. */
  async #kill(active: ActiveJob, outcome: (child: WorkerChild) => SlotOutcome, reason: string): Promise<void> {
    if (active.settled) return;
    this.#settle(active);
    const { child } = active;
    child.kill();
    const exited = await child.waitExit(this.#o.killWaitMs);
    if (exited) await child.stdioClosed(STDERR_DRAIN_MS);
    this.#lastError = publicReason(active, reason);
    const result = outcome(child);
    this.#restarts.count(killReasonOf(result));
    active.resolve(result);
    this.#endJob(child, exited ? 'killed' : 'unkillable');
  }

  /** The child died during the job without a report. */
  async #crashed(active: ActiveJob): Promise<void> {
    if (active.settled) return;
    this.#settle(active);
    const { child } = active;
    child.kill(); // whatever it started
    await child.stdioClosed(STDERR_DRAIN_MS);
    const phase = active.phase;
    const where = phase === undefined ? "before the job's first phase" : `in the ${phase} phase`;
    const reason = `the worker died ${where} (${describeExit(child.exit!)})`;
    this.#lastError = publicReason(active, reason);
    this.#restarts.count('crash');
    active.resolve(crashedOutcome(phase, child.exit, child.stderrTail(), reason));
    this.#endJob(child, 'killed');
  }

  /**
   * After a report: a warm child stays (unless it ends: its context lost, or a problem with cases run, workerStays);
   * otherwise it exits and the next takes over.
   */
  async #afterReport(child: WorkerChild, ends: boolean): Promise<void> {
    this.#lease = undefined;
    this.#active = undefined;
    if (this.#stopping) return;
    if (this.#isolation === 'warm' && !ends && child.exit === undefined) {
      this.#releaseGpu(child); // an idle context stays, doing nothing
      child.onMessage = (m) => this.#idleMessage(child, m);
      child.onExit = (e) => this.#idleExit(child, e);
      this.#setState('idle');
      return;
    }
    this.#child = undefined;
    this.#setState('restarting');
    const epoch = this.#epoch;
    // The pre-started child takes over now, not once this one has exited: it begins on the CPU (validation, NVRTC),
    // and its GPU work waits for the turn this one gives back once it has exited (its CUDA context torn down). A
    // child that does not exit within the grace is killed, and the slot is quarantined when the GPU keeps it or it
    // cannot be killed.
    const spare = this.#spare;
    this.#spare = undefined;
    const nextReady = this.#bringUp(spare);
    if (await child.waitExit(this.#o.exitGraceMs)) {
      child.kill(); // anything it left running in its group
      this.#releaseGpu(child);
      return nextReady;
    }
    child.kill();
    const killed = await child.waitExit(this.#o.killWaitMs);
    await nextReady;
    if (epoch !== this.#epoch) return;
    if (!killed) {
      this.#quarantine(`worker ${child.pid} did not exit after SIGKILL`);
      return;
    }
    if (child.pid !== undefined && !(await this.#released(child.pid, this.#o.releaseTimeoutMs))) {
      if (epoch !== this.#epoch) return;
      const why = `the GPU still lists the killed worker's PID ${child.pid} after ${this.#o.releaseTimeoutMs} ms`;
      this.#quarantine(why, child.pid);
      return;
    }
    this.#releaseGpu(child);
  }

  /** After a kill or a crash: the lease is over; the slot replaces the child (or is quarantined or stopping). */
  #endJob(child: WorkerChild | undefined, how: 'killed' | 'unkillable'): void {
    this.#lease = undefined;
    this.#active = undefined;
    if (child === this.#child) this.#child = undefined;
    if (this.#stopping) return;
    if (how === 'unkillable') {
      this.#quarantine(`worker ${child?.pid} did not exit ${this.#o.killWaitMs} ms after SIGKILL`);
      return;
    }
    this.#setState('restarting');
    if (child === undefined) void this.#bringUp(undefined);
    else void this.#replace(child, child.jobs > 0);
  }
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}

/** Runs a caller's hook; its exception is the caller's, never the slot's. */
function quietly(f: () => void): void {
  try {
    f();
  } catch {
    // a hook that throws must not break supervision
  }
}

/** What the slot's lastError may say of a job's failure: `reason`, or only that a hidden case failed (RunHooks). */
function publicReason(active: ActiveJob, reason: string): string {
  let shows = true;
  quietly(() => (shows = active.hooks.showsDetails?.() !== false));
  return shows ? reason : "a job ended in a hidden case of its problem (what happened there is the job's own)";
}
