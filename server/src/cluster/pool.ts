// SPDX-License-Identifier: MIT
// The GPUs an API node sees: every live agent's slots, read from the registry the agents refresh in Redis (the API
// process has no GPU and leases none). /v1/gpus, admission (a class no GPU serves is a 400), readiness and the
// queue's positions read it; an agent that stops refreshing its entry drops out after `staleMs`.
import type { GpuPool, SlotInfo, SlotLease } from '../run/pool.js';
import type { AgentEntry, RedisClusterBus } from './bus.js';

export interface ClusterPoolOptions {
  bus: RedisClusterBus;
  /** How often the registry is read. Default 1000. */
  refreshMs?: number;
  /** An agent whose entry is older than this is gone. Default 10000. */
  staleMs?: number;
  /** The least time between two reads a refusal asks for (recheck). Default 250. */
  recheckMs?: number;
  now?: () => number;
}

/** A GPU seen this recently is taken to be re-announcing, not gone. */
const RECENT_GPU_MS = 60_000;
/** Retry-After while agents re-announce: twice their announcement period. */
const REANNOUNCE_RETRY_SECONDS = 2;
/** Retry-After when no agent has had a GPU for a while. */
const ABSENT_RETRY_SECONDS = 60;

export class ClusterPool implements GpuPool {
  readonly #o: ClusterPoolOptions;
  #agents: AgentEntry[] = [];
  #timer: NodeJS.Timeout | undefined;
  /** Why the registry could not be read (Redis down), if it could not. */
  #readError: string | undefined;
  #started: Promise<void> | undefined;
  /** When the registry last showed an agent with a GPU. */
  #gpuSeenAtMs = -Infinity;
  /** The registry read in flight, which concurrent rechecks share, and when the last one ended. */
  #recheck: Promise<void> | undefined;
  #recheckedAtMs = -Infinity;

  constructor(options: ClusterPoolOptions) {
    this.#o = options;
  }

  start(): Promise<void> {
    this.#started ??= (async () => {
      await this.refresh();
      this.#timer = setInterval(() => void this.refresh(), this.#o.refreshMs ?? 1000);
      this.#timer.unref();
    })();
    return this.#started;
  }

  /** Reads the registry now (the timer does it every refreshMs). */
  async refresh(): Promise<void> {
    const now = this.#o.now ?? Date.now;
    try {
      this.#agents = await this.#o.bus.agents(now(), this.#o.staleMs ?? 10_000);
      this.#readError = undefined;
      if (this.#agents.some((a) => a.slots.length > 0)) this.#gpuSeenAtMs = now();
    } catch (e) {
      // The last registry read stays: a Redis outage does not make the GPUs vanish from /v1/gpus.
      this.#readError = (e as Error).message;
    }
  }

  /**
   * Reads the registry now, before a refusal: shared by concurrent callers and at most one read per
   * `recheckMs`, so a burst of submissions with no agent costs Redis one read, not one each.
   */
  recheck(): Promise<void> {
    const now = this.#o.now ?? Date.now;
    if (this.#recheck !== undefined) return this.#recheck;
    if (now() - this.#recheckedAtMs < (this.#o.recheckMs ?? 250)) return Promise.resolve();
    this.#recheck = this.refresh().finally(() => {
      this.#recheckedAtMs = now();
      this.#recheck = undefined;
    });
    return this.#recheck;
  }

  /**
   * Agents re-announce every second: right after a Redis restart (which empties the registry), or while Redis cannot be
   * read, GPUs seen a moment ago are back within seconds. Where none was seen for a while, a person must start one.
   */
  get unavailableRetryAfterSeconds(): number {
    const now = this.#o.now ?? Date.now;
    const recently = now() - this.#gpuSeenAtMs < RECENT_GPU_MS;
    return recently || this.#readError !== undefined ? REANNOUNCE_RETRY_SECONDS : ABSENT_RETRY_SECONDS;
  }

  get unavailableReason(): string | undefined {
    if (this.#agents.some((a) => a.slots.length > 0)) return undefined;
    if (this.#readError !== undefined && this.#agents.length === 0) {
      return `the GPU registry in Redis cannot be read: ${this.#readError}`;
    }
    const reasons = this.#agents.map((a) => `${a.agentId}: ${a.unavailableReason ?? 'no GPU'}`);
    return reasons.length === 0 ? 'no GPU agent is connected' : `no agent has a GPU (${reasons.join('; ')})`;
  }

  /** The agents, as the registry showed them last. */
  agents(): AgentEntry[] {
    return this.#agents.map((a) => ({ ...a, slots: a.slots.map((s) => ({ ...s })) }));
  }

  slots(): SlotInfo[] {
    return this.#agents.flatMap((a) => a.slots.map((s) => ({ ...s, host: a.host })));
  }

  lease(): SlotLease | undefined {
    return undefined; // an API node runs nothing
  }

  serves(gpuClass: string): boolean {
    return this.#agents.some(
      (a) =>
        a.classes.includes(gpuClass) && a.slots.some((s) => s.state !== 'quarantined' && s.classes.includes(gpuClass)),
    );
  }

  onIdle(): void {}

  /** Asks the agent that has the GPU to probe it again; answers with its entry as the registry shows it next. */
  async reprobe(uuid: string): Promise<SlotInfo | undefined> {
    if (!this.slots().some((s) => s.uuid === uuid)) return undefined;
    this.#o.bus.requestReprobe(uuid);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await this.refresh();
    return this.slots().find((s) => s.uuid === uuid);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
  }
}
