// SPDX-License-Identifier: MIT
// The cluster bus: what crosses processes in the distributed mode besides the queue. Job events (a client watching
// /events on one API node sees what an agent on another host stored) and cancels (DELETE on any API node reaches the
// agent that holds the job) go over Redis pub/sub; the GPU registry (which agents serve which GPUs, in what state)
// is a Redis hash each agent refreshes. Pub/sub is fire and forget: the store keeps every event, and a client that
// missed one reads it back by Last-Event-ID; a cancel lost with a dying Redis is sent again by the client's retry.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Redis, type RedisOptions } from 'ioredis';
import type { SlotInfo } from '../run/pool.js';
import { addressOf, Reachability } from '../reachability.js';
import type { JobBus } from '../schedule/queue.js';
import type { JobEvent } from '../store/store.js';

/** Redis keys and channels, one prefix for all: several deployments may share one Redis with their own prefixes. */
export function clusterKeys(prefix: string) {
  return {
    prefix,
    events: `${prefix}:events`,
    cancel: `${prefix}:cancel`,
    reprobe: `${prefix}:reprobe`,
    agents: `${prefix}:agents`,
    classes: `${prefix}:classes`,
    reconcilerLock: `${prefix}:reconciler`,
  };
}

export type ClusterKeys = ReturnType<typeof clusterKeys>;

/** One agent's entry in the GPU registry. */
export interface AgentEntry {
  agentId: string;
  host: string;
  pid: number;
  /** The GPU classes it takes jobs of. */
  classes: string[];
  slots: SlotInfo[];
  /** Why it has no GPU, when its probe found none. */
  unavailableReason: string | undefined;
  atMs: number;
}

/** ioredis options the service uses everywhere: BullMQ's workers need maxRetriesPerRequest null. */
export function redisOptions(extra: RedisOptions = {}): RedisOptions {
  return {
    maxRetriesPerRequest: null,
    // Reconnect fast and forever: a restarted Redis is picked up within a second.
    retryStrategy: (times) => Math.min(100 * times, 1000),
    lazyConnect: false,
    ...extra,
  };
}

/** How long connections must go without an error, after one is ready again, for Redis to count as reachable. */
const SETTLE_MS = 5000;

/**
 * Every Redis connection of this process to one URL (the bus's, the queue's, BullMQ's workers' and their blocking
 * duplicates), feeding one Reachability: each has an 'error' listener from its start, so ioredis never prints its
 * "Unhandled error event" with a stack; the first error makes Redis unreachable, and it is reachable again when every
 * live connection is ready (or one is and none has failed for SETTLE_MS: a connection left behind by its owner must
 * not keep the outage open).
 */
export class RedisConnections {
  static readonly #byUrl = new Map<string, RedisConnections>();
  readonly reachability: Reachability;
  readonly #clients = new Set<Redis>();
  #lastErrorMs = 0;

  private constructor(url: string) {
    this.reachability = new Reachability('Redis', addressOf(url, 6379));
  }

  /** This process's connections to `url`. */
  static of(url: string): RedisConnections {
    let connections = RedisConnections.#byUrl.get(url);
    if (connections === undefined) {
      connections = new RedisConnections(url);
      RedisConnections.#byUrl.set(url, connections);
    }
    return connections;
  }

  /** Watches `client` from now until it ends; returns it. */
  attach<T extends Redis>(client: T): T {
    this.#clients.add(client);
    client.on('error', (e: unknown) => {
      this.#lastErrorMs = Date.now();
      this.reachability.lost(e);
    });
    client.on('ready', () => this.#onReady());
    client.on('end', () => {
      this.#clients.delete(client);
      this.#onReady();
    });
    return client;
  }

  #onReady(): void {
    if (this.reachability.reachable === true) return;
    const live = [...this.#clients];
    if (live.length > 0 && live.every((c) => c.status === 'ready')) {
      this.reachability.reached();
      return;
    }
    if (!live.some((c) => c.status === 'ready')) return;
    const readyMs = Date.now();
    setTimeout(() => {
      if (this.#lastErrorMs < readyMs && this.#clients.size > 0) this.reachability.reached();
    }, SETTLE_MS).unref();
  }
}

/** An ioredis client whose duplicates (BullMQ's blocking connections) are watched as it is. */
class WatchedRedis extends Redis {
  readonly #connections: RedisConnections;

  constructor(url: string, options: RedisOptions, connections: RedisConnections) {
    super(url, options);
    this.#connections = connections;
    connections.attach(this);
  }

  override duplicate(override?: Partial<RedisOptions>): Redis {
    return this.#connections.attach(super.duplicate(override));
  }
}

/** A connection to `url`, watched with this process's others to it (RedisConnections): use it for every one. */
export function redisClient(url: string, options: RedisOptions): Redis {
  return new WatchedRedis(url, options, RedisConnections.of(url));
}

/** A cancel or reprobe message. */
interface Envelope {
  /** The process that published it. */
  from: string;
  id?: string;
}

export class RedisClusterBus implements JobBus {
  readonly nodeId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  readonly keys: ClusterKeys;
  readonly #publisher: Redis;
  readonly #subscriber: Redis;
  readonly #eventListeners = new Set<{ listener: (event: JobEvent) => void; wants: (jobId: string) => boolean }>();
  readonly #cancelListeners = new Set<(id: string) => void>();
  readonly #reprobeListeners = new Set<(uuid: string) => void>();
  #closed = false;

  constructor(url: string, prefix: string) {
    this.keys = clusterKeys(prefix);
    // Commands fail at once while Redis is down (an event is in the store; a cancel is retried by its client). Both
    // reconnect by themselves; their errors go to the log once per outage (RedisConnections), readiness reports it.
    this.#publisher = redisClient(url, redisOptions({ maxRetriesPerRequest: 1, enableOfflineQueue: false }));
    this.#subscriber = redisClient(url, redisOptions());
    void this.#subscriber.subscribe(this.keys.events, this.keys.cancel, this.keys.reprobe).catch(() => {});
    this.#subscriber.on('message', (channel: string, text: string) => this.#onMessage(channel, text));
  }

  /** The connection for plain commands (the registry, the reconciler's lock). */
  get redis(): Redis {
    return this.#publisher;
  }

  /**
   * On the events channel a message is `<from> <jobId> <event JSON>`: every API node receives every event, and most
   * are of jobs nobody there watches, which it drops without parsing them.
   */
  publishEvent(event: JobEvent): void {
    if (this.#closed) return;
    const message = `${this.nodeId} ${event.jobId} ${JSON.stringify(event)}`;
    this.#publisher.publish(this.keys.events, message).catch(() => {});
  }

  onEvent(listener: (event: JobEvent) => void, wants: (jobId: string) => boolean = () => true): void {
    this.#eventListeners.add({ listener, wants });
  }

  async requestCancel(id: string): Promise<void> {
    await this.#publisher.publish(this.keys.cancel, JSON.stringify({ from: this.nodeId, id }));
  }

  onCancel(listener: (id: string) => void): void {
    this.#cancelListeners.add(listener);
  }

  requestReprobe(uuid: string): void {
    this.#publish(this.keys.reprobe, { from: this.nodeId, id: uuid });
  }

  onReprobe(listener: (uuid: string) => void): void {
    this.#reprobeListeners.add(listener);
  }

  /** Writes this agent's registry entry (its heartbeat) and the classes it serves. */
  async announce(entry: AgentEntry): Promise<void> {
    await this.#publisher
      .multi()
      .hset(this.keys.agents, entry.agentId, JSON.stringify(entry))
      .sadd(this.keys.classes, ...(entry.classes.length === 0 ? ['any'] : entry.classes))
      .exec();
  }

  async withdraw(agentId: string): Promise<void> {
    await this.#publisher.hdel(this.keys.agents, agentId);
  }

  /** The registry's live entries: older than `staleMs` counts as gone (and is removed). */
  async agents(nowMs: number, staleMs: number): Promise<AgentEntry[]> {
    const all = await this.#publisher.hgetall(this.keys.agents);
    const live: AgentEntry[] = [];
    for (const [agentId, text] of Object.entries(all)) {
      let entry: AgentEntry | undefined;
      try {
        entry = JSON.parse(text) as AgentEntry;
      } catch {
        entry = undefined;
      }
      if (entry === undefined || nowMs - entry.atMs > staleMs) void this.#publisher.hdel(this.keys.agents, agentId);
      else live.push(entry);
    }
    return live.sort((a, b) => a.agentId.localeCompare(b.agentId));
  }

  /** Every GPU class any agent ever served (the stalled-job checkers run for each). */
  async classes(): Promise<string[]> {
    return (await this.#publisher.smembers(this.keys.classes)).sort();
  }

  async ping(): Promise<void> {
    await this.#publisher.ping();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#subscriber.disconnect();
    this.#publisher.disconnect();
  }

  #onEventMessage(text: string): void {
    const fromEnd = text.indexOf(' ');
    const idEnd = text.indexOf(' ', fromEnd + 1);
    if (fromEnd < 0 || idEnd < 0 || text.slice(0, fromEnd) === this.nodeId) return;
    const jobId = text.slice(fromEnd + 1, idEnd);
    let event: JobEvent | undefined;
    for (const { listener, wants } of this.#eventListeners) {
      if (!wants(jobId)) continue;
      try {
        event ??= JSON.parse(text.slice(idEnd + 1)) as JobEvent;
      } catch {
        return;
      }
      listener(event);
    }
  }

  #publish(channel: string, envelope: Envelope): void {
    if (this.#closed) return;
    this.#publisher.publish(channel, JSON.stringify(envelope)).catch(() => {});
  }

  #onMessage(channel: string, text: string): void {
    if (channel === this.keys.events) {
      this.#onEventMessage(text);
      return;
    }
    let envelope: Envelope;
    try {
      envelope = JSON.parse(text) as Envelope;
    } catch {
      return;
    }
    if (channel === this.keys.cancel && typeof envelope.id === 'string') {
      for (const l of this.#cancelListeners) l(envelope.id);
    } else if (channel === this.keys.reprobe && typeof envelope.id === 'string') {
      for (const l of this.#reprobeListeners) l(envelope.id);
    }
  }
}
