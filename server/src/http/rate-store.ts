// SPDX-License-Identifier: MIT
// The submission budget's counter in one process (the distributed mode counts in Redis). @fastify/rate-limit's own
// in-memory store answers every request with its one counter object, read after the request's await: requests that
// reach the check in one event-loop turn all read the turn's last count, so a burst past the budget got none of its
// submissions taken. Here each request gets its own count, as the Redis store gives it.
import type { FastifyRateLimitStore } from '@fastify/rate-limit';

/** Principals whose windows are kept; the least recently counted one is dropped beyond it. */
const MAX_KEYS = 5000;

interface Window {
  count: number;
  startMs: number;
}

export class CountingStore implements FastifyRateLimitStore {
  readonly #windows = new Map<string, Window>();

  incr(
    key: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindowMs: number,
  ): void {
    const nowMs = Date.now();
    const w = this.#live(key, timeWindowMs, nowMs) ?? { count: 0, startMs: nowMs };
    w.count++;
    this.#windows.delete(key); // most recently counted last
    this.#windows.set(key, w);
    if (this.#windows.size > MAX_KEYS) this.#windows.delete(this.#windows.keys().next().value!);
    callback(null, { current: w.count, ttl: w.startMs + timeWindowMs - nowMs });
  }

  read(
    key: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindowMs: number,
  ): void {
    const nowMs = Date.now();
    const w = this.#live(key, timeWindowMs, nowMs);
    callback(
      null,
      w === undefined ? { current: 0, ttl: 0 } : { current: w.count, ttl: w.startMs + timeWindowMs - nowMs },
    );
  }

  /** The key's window while it lasts, else undefined. */
  #live(key: string, timeWindowMs: number, nowMs: number): Window | undefined {
    const w = this.#windows.get(key);
    return w !== undefined && w.startMs + timeWindowMs > nowMs ? w : undefined;
  }

  /** A budget of its own (app.rateLimit() makes one for the submission budget). */
  child(): CountingStore {
    return new CountingStore();
  }
}
