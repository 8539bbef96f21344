// SPDX-License-Identifier: MIT
// Whether this process reaches a server it depends on (the distributed mode's Redis and PostgreSQL), as one state per
// server that every connection to it feeds. The log says when the server stops being reachable and when it is again,
// once per change, as one JSON record through the server's logger: an outage of a minute is two lines, not a stack
// trace per connection and per reconnection attempt.

/** The part of the server's logger (pino's, or main.ts's stand-in until the app exists) used here. */
export interface ReachabilityLog {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** 'host:port' of a redis:// or postgres:// URL (the scheme's port when none is given); the URL's password never. */
export function addressOf(url: string, defaultPort: number): string {
  try {
    const u = new URL(url);
    // PostgreSQL also takes its host in the query string (?host=/run/postgresql for a socket).
    const host = u.hostname !== '' ? u.hostname : (u.searchParams.get('host') ?? 'localhost');
    return `${host}:${u.port !== '' ? u.port : String(defaultPort)}`;
  } catch {
    return '(an address that is not a URL)';
  }
}

/** The short text of a connection error: its code and message, never its stack. */
export function describeError(e: unknown): string {
  if (e instanceof AggregateError && e.errors.length > 0) return describeError(e.errors[0]);
  if (!(e instanceof Error)) return String(e);
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' && !e.message.includes(code) ? `${code}: ${e.message}` : e.message;
}

export class Reachability {
  /** 'Redis at 127.0.0.1:6379': what the log and /readyz call it. */
  readonly name: string;
  readonly #service: string;
  readonly #address: string;
  #state: 'unknown' | 'reachable' | 'unreachable' = 'unknown';
  log: ReachabilityLog | undefined;

  constructor(service: 'Redis' | 'PostgreSQL', address: string, log?: ReachabilityLog) {
    this.#service = service;
    this.#address = address;
    this.name = `${service} at ${address}`;
    this.log = log;
  }

  /** false once a connection failed, until one works again; undefined before the first of either. */
  get reachable(): boolean | undefined {
    return this.#state === 'unknown' ? undefined : this.#state === 'reachable';
  }

  /** What /readyz says of it while it cannot be reached. */
  get unreachableReason(): string {
    return `${this.name} is not reachable`;
  }

  /** A connection failed: logged if the server was reachable (or not known yet). */
  lost(error: unknown): void {
    if (this.#state === 'unreachable') return;
    this.#state = 'unreachable';
    const record = { service: this.#service, address: this.#address, error: describeError(error) };
    this.log?.error(record, this.unreachableReason);
  }

  /**
   * A connection works: logged if the server was unreachable, at warn rather than info so that a log filtered to
   * warnings shows the end of an outage beside its start.
   */
  reached(): void {
    const was = this.#state;
    this.#state = 'reachable';
    if (was === 'unreachable') {
      this.log?.warn({ service: this.#service, address: this.#address }, `${this.name} is reachable again`);
    }
  }
}
