// SPDX-License-Identifier: MIT
// A job's events, as both sides of the queue write them: each job's writes are stored in the order they happened
// (one promise tail per job), every stored event goes to this process's subscribers and, through the cluster bus, to
// the other processes'; a job's end is stored once (a PASSED problem job's result then on its leaderboard,
// leaderboard.ts) and then told to the finish listeners, a run's start to the start listeners. The long-poll
// (waitForEnd) waits on these events.
import type { FinishOutcome } from '../judge/outcome.js';
import type { Verdict } from '../judge/verdict.js';
import { entryOfEnd, settleConfirmation } from './leaderboard.js';
import type { JobBus } from './queue.js';
import { TERMINAL, type JobEvent, type JobStore } from '../store/store.js';

/** The subset of pino's logger the service uses. */
export interface ServiceLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLog: ServiceLog = { info() {}, warn() {}, error() {} };

/** What the metrics see of a job that reached its end. */
export interface FinishedJob {
  id: string;
  status: 'succeeded' | 'failed' | 'cancelled';
  verdict: Verdict | undefined;
  gpu: string;
  /** From the lease to the end; undefined for a job that never ran. */
  runMs: number | undefined;
  /** The worker's phases and how long each took, when it reported. */
  phases?: ReadonlyArray<{ phase: string; ms: number }>;
}

/** What the metrics see of a job that started: its GPU class and how long it was queued. */
export interface StartedJob {
  id: string;
  gpu: string;
  queueWaitMs: number;
}

export interface JobEventsConfig {
  store: JobStore;
  /** Where events go to the other processes (the distributed mode). */
  bus: JobBus | undefined;
  now: () => number;
  log: ServiceLog;
}

export class JobEvents {
  readonly #store: JobStore;
  readonly #bus: JobBus | undefined;
  readonly #now: () => number;
  readonly #log: ServiceLog;
  /** Per job: the tail of its event writes, so events are stored and sent in the order they happened. */
  readonly #tails = new Map<string, Promise<unknown>>();
  readonly #subscribers = new Map<string, Set<(event: JobEvent) => void>>();
  readonly #finishListeners = new Set<(job: FinishedJob) => void>();
  readonly #startListeners = new Set<(job: StartedJob) => void>();

  constructor(config: JobEventsConfig) {
    this.#store = config.store;
    this.#bus = config.bus;
    this.#now = config.now;
    this.#log = config.log;
  }

  /** Runs `write` after the job's earlier writes (errors are logged: an event lost is not a job lost). */
  after(id: string, write: () => Promise<unknown>): Promise<unknown> {
    const tail = (this.#tails.get(id) ?? Promise.resolve())
      .then(write)
      .catch((e: unknown) => this.#log.warn({ err: e, id }, 'event write failed'));
    this.#tails.set(id, tail);
    void tail.finally(() => {
      if (this.#tails.get(id) === tail) this.#tails.delete(id);
    });
    return tail;
  }

  /** Stores and delivers an event after the job's earlier ones; resolves once it is stored (or its write failed). */
  event(id: string, type: JobEvent['type'], data: unknown): Promise<unknown> {
    return this.after(id, async () => {
      const event = await this.#store.appendEvent({ jobId: id, type, data, atMs: this.#now() });
      this.deliver(event);
      this.#bus?.publishEvent(event);
    });
  }

  /** Hands a stored event to this process's subscribers (its own, or another process's through the bus). */
  deliver(event: JobEvent): void {
    for (const l of this.#subscribers.get(event.jobId) ?? []) {
      try {
        l(event);
      } catch (e) {
        this.#log.warn({ err: e, id: event.jobId }, 'event listener failed');
      }
    }
  }

  /** Whether this process has a subscriber to the job's events. */
  watched(id: string): boolean {
    return this.#subscribers.has(id);
  }

  /** Resolves when the job's writes so far are done (never rejects). */
  async written(id: string): Promise<void> {
    await this.#tails.get(id)?.catch(() => {});
  }

  /** Resolves when every job's writes so far are done. */
  async allWritten(): Promise<void> {
    await Promise.allSettled([...this.#tails.values()]);
  }

  /**
   * Stores a job's end (once: a second finish of a job changes nothing) and sends its 'done' event. `run`: what ran
   * it: the phases the worker reported; `confirms`, the job whose leaderboard entry it re-ran
   * (ServiceOptions.confirms); `shared`, whether its GPU was shared (a MIG slice, or other processes on it).
   */
  async finish(
    id: string,
    gpu: string,
    runMs: number | undefined,
    outcome: FinishOutcome,
    run: { phases?: FinishedJob['phases']; confirms?: string | undefined; shared?: boolean } = {},
  ): Promise<boolean> {
    const { phases, confirms, shared = false } = run;
    await this.written(id); // its phase writes first
    // On its board with its end, before its 'done': a client that saw the end finds the board up to date. A re-run
    // that confirms an entry is never an entry itself, and a timing on a shared GPU goes on no board: it compares
    // with nothing timed on a whole one.
    const entry =
      confirms === undefined && !shared
        ? await entryOfEnd(this.#store, id, outcome).catch((e: unknown) => {
            this.#log.error({ err: e, id }, 'the result could not be read for its leaderboard: it ends off the board');
            return undefined;
          })
        : undefined;
    const finished = await this.#store.finish(id, entry === undefined ? outcome : { ...outcome, entry });
    if (!finished) return false;
    if (confirms !== undefined && shared) {
      this.#log.warn({ id, confirms }, 'a re-run on a shared GPU confirms nothing: its entry stays as it was');
    } else if (confirms !== undefined) {
      await settleConfirmation(this.#store, id).then(
        (c) => {
          if (c?.kind === 'disagreed')
            this.#log.warn({ id, confirms, why: c.why }, 'a re-run did not confirm an entry');
          else if (c !== undefined) this.#log.info({ id, confirms, result: c.kind }, 'a leaderboard re-run ended');
        },
        (e: unknown) => this.#log.warn({ err: e, id }, 'the leaderboard could not settle the re-run'),
      );
    }
    const { status, verdict } = outcome;
    void this.event(id, 'done', { status, verdict: verdict ?? null, error: outcome.error ?? null });
    for (const l of this.#finishListeners)
      l({ id, status, verdict, gpu, runMs, ...(phases === undefined ? {} : { phases }) });
    return true;
  }

  /** Tells the start listeners that a run started. */
  started(job: StartedJob): void {
    for (const l of this.#startListeners) l(job);
  }

  /**
   * Resolves when the job is finished (or gone), or after `timeoutMs`, or when `signal` aborts: the long-poll. The
   * caller reads the record afterwards.
   */
  async waitForEnd(id: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    await new Promise<void>((resolve) => {
      let settled = false;
      const done = (): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        unsubscribe();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      const unsubscribe = this.subscribe(id, (e) => {
        if (e.type === 'done') done();
      });
      signal?.addEventListener('abort', done);
      // Subscribed first, then checked: an end between the two cannot be missed.
      this.#store.get(id).then(
        (r) => {
          if (r === undefined || TERMINAL.has(r.status)) done();
        },
        () => done(),
      );
    });
  }

  /** Live events of a job, as they are stored. Returns the unsubscribe function. */
  subscribe(id: string, listener: (event: JobEvent) => void): () => void {
    let set = this.#subscribers.get(id);
    if (set === undefined) this.#subscribers.set(id, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#subscribers.get(id) === set) this.#subscribers.delete(id);
    };
  }

  onFinished(listener: (job: FinishedJob) => void): void {
    this.#finishListeners.add(listener);
  }

  onStarted(listener: (job: StartedJob) => void): void {
    this.#startListeners.add(listener);
  }
}
