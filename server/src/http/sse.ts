// SPDX-License-Identifier: MIT
// Server-sent events, opened in one place for every route that streams (GET /v1/evaluations/:id/events, the
// dashboard's /v1/stream): the 200 with its no-cache headers, the reconnect delay, heartbeat comment lines, an end
// whichever side ends it; and the follow of a job's events (stored, then live, each once and in order) that the v1
// stream and the MCP tools' progress both read. Below the route modules, as http/shared.ts is.
import type { FastifyReply } from 'fastify';
import type { EvalService } from '../service.js';
import type { JobEvent } from '../store/store.js';

/** How long an EventSource waits before it reconnects, ms: the `retry:` line every stream opens with. */
const RECONNECT_MS = 2000;

export interface EventStreamOptions {
  /** Comment lines on an idle stream, ms, so that proxies and clients keep it open. */
  heartbeatMs: number;
  /** The stream ends after this long (the browser reconnects at once), ms. Default: only when a side ends it. */
  maxMs?: number | undefined;
}

/** An open event stream: what a route writes to it, and how it learns that it ended. */
export interface EventStream {
  /** One event, `data` a single line (JSON); `id` is what a client resumes from (Last-Event-ID). */
  send(event: string, data: string, id?: number): void;
  /** Ends the stream; nothing is written after it. Once only: a second call does nothing. */
  close(): void;
  /** Runs `listener` once the stream ends, whichever side ended it (the route, the client, a server close). */
  onClose(listener: () => void): void;
  readonly closed: boolean;
}

/**
 * Takes the reply over from Fastify and opens an event stream on it. Errors (a 404, a 503) must be thrown before:
 * once open, the answer is a 200. A server close ends it too (buildApp's forceCloseConnections closes the socket).
 */
export function openEventStream(reply: FastifyReply, options: EventStreamOptions): EventStream {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // nginx would otherwise buffer the stream and hand it over in pieces.
    'x-accel-buffering': 'no',
  });
  res.write(`retry: ${RECONNECT_MS}\n\n`);
  const listeners: (() => void)[] = [];
  let closed = false;
  const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), options.heartbeatMs);
  const lifetime = options.maxMs === undefined ? undefined : setTimeout(() => stream.close(), options.maxMs);
  const stream: EventStream = {
    get closed() {
      return closed;
    },
    send(event, data, id) {
      if (closed) return;
      res.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${data}\n\n`);
    },
    close() {
      if (closed) return;
      closed = true;
      clearInterval(heartbeat);
      clearTimeout(lifetime);
      for (const listener of listeners.splice(0)) listener();
      res.end();
    },
    onClose(listener) {
      if (closed) listener();
      else listeners.push(listener);
    },
  };
  res.on('close', () => stream.close());
  return stream;
}

export interface FollowOptions {
  /** Events up to this sequence number are not delivered (a resumed stream's Last-Event-ID). Default 0. */
  afterSeq?: number;
  /**
   * When the stored events cannot be read: 'stop' delivers nothing more (a resumable stream must not skip them: its
   * client comes back for them after the end), 'live' goes on with the live ones (progress, a courtesy).
   */
  ifStoreFails: 'stop' | 'live';
}

export interface JobEventFollow {
  /** Settles once the stored events and those that came meanwhile are delivered; rejects if the store failed. */
  caughtUp: Promise<void>;
  /** Ends the follow: nothing is delivered after it. */
  stop(): void;
}

/**
 * Hands `deliver` a job's events after `afterSeq`, each once and in order: those stored, then the live ones.
 * Subscribed before the stored events are read, so that none falls in between (the job may be under way).
 */
export function followJobEvents(
  service: EvalService,
  id: string,
  options: FollowOptions,
  deliver: (e: JobEvent) => void,
): JobEventFollow {
  let lastSeq = options.afterSeq ?? 0;
  let replaying = true;
  let stopped = false;
  const early: JobEvent[] = [];
  const send = (e: JobEvent): void => {
    if (stopped || e.seq <= lastSeq) return;
    lastSeq = e.seq;
    deliver(e);
  };
  const unsubscribe = service.subscribe(id, (e) => (replaying ? early.push(e) : send(e)));
  const stop = (): void => {
    stopped = true;
    unsubscribe();
  };
  const caughtUp = (async () => {
    try {
      for (const e of await service.store.events(id, lastSeq)) send(e);
    } catch (e) {
      if (options.ifStoreFails === 'stop') {
        stop();
        throw e;
      }
    }
    replaying = false;
    for (const e of early.sort((a, b) => a.seq - b.seq)) send(e);
  })();
  return { caughtUp, stop };
}
