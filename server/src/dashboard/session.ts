// SPDX-License-Identifier: MIT
// Browser sessions for the dashboard. A browser cannot send a bearer header on a navigation, so the sign-in form
// exchanges a token for a session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
// it, which is what makes GET routes safe to accept it on), Secure over TLS. The cookie is stateless: the principal,
// its scopes and the expiry, signed with HMAC-SHA256, so every API process given the same secret accepts every
// other's cookies and nothing is stored. At each request the name must still be in the tokens file, and the cookie's
// scopes are cut to the ones its tokens have now, so removing a name's tokens ends its sessions. Forms that change
// something (sign-in, sign-out) carry a CSRF token: an HMAC of a random per-browser nonce kept in a cookie of its own
// (double submit, signed), so it works before there is a session and across processes too.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal, Scope, TokenEntry } from '../http/auth.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A dashboard page: a browser without a session is sent to the sign-in form instead of a 401. */
    page?: boolean;
  }
}

export const SESSION_COOKIE = 'cudakit_session';
export const CSRF_COOKIE = 'cudakit_csrf';
/** How long a session lasts from its sign-in. */
export const SESSION_TTL_MS = 12 * 3600 * 1000;
/** The shortest secret accepted: 256 bits, the HMAC's own strength. */
export const SESSION_SECRET_MIN_BYTES = 32;

/** The scopes a session may carry: the dashboard reads, and an admin reads every principal's jobs. */
const SESSION_SCOPES: readonly Scope[] = ['read', 'admin'];
const NONCE = /^[A-Za-z0-9_-]{22}$/;
/** A cookie longer than this is no cookie of ours (names are at most 64 characters). */
const COOKIE_VALUE_MAX_CHARS = 512;

export interface SessionOptions {
  /** The HMAC secret shared by every API process; default: random, so sessions last as long as the process. */
  secret?: string | Uint8Array | undefined;
  /** The tokens file's entries; undefined: no auth, hence no sessions. */
  tokens: readonly TokenEntry[] | undefined;
  /** Session lifetime, ms. Default SESSION_TTL_MS. */
  ttlMs?: number;
  /** Wall clock, ms. Default Date.now. */
  now?: () => number;
}

interface SessionPayload {
  /** The principal's name. */
  n: string;
  /** Its scopes at sign-in (of SESSION_SCOPES). */
  s: Scope[];
  /** Expiry, ms since the epoch. */
  e: number;
}

/** Issues and checks session cookies and CSRF tokens. */
export class Sessions {
  /** Whether there is anything to sign in to (a server without tokens has no sessions). */
  readonly enabled: boolean;
  readonly ttlMs: number;
  readonly #sessionKey: Buffer;
  readonly #csrfKey: Buffer;
  readonly #now: () => number;
  /** Each name's scopes, over all of its tokens. */
  readonly #scopes = new Map<string, Set<Scope>>();

  constructor(options: SessionOptions) {
    const secret = options.secret ?? randomBytes(SESSION_SECRET_MIN_BYTES);
    const bytes = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : Buffer.from(secret);
    if (bytes.length < SESSION_SECRET_MIN_BYTES) {
      throw new RangeError(
        `Expected a session secret of at least ${SESSION_SECRET_MIN_BYTES} bytes but received ${bytes.length}`,
      );
    }
    // One key per use, so a CSRF token can never pass for a session signature or the other way round.
    this.#sessionKey = createHmac('sha256', bytes).update('cudakit dashboard session v1').digest();
    this.#csrfKey = createHmac('sha256', bytes).update('cudakit dashboard csrf v1').digest();
    this.enabled = options.tokens !== undefined;
    this.ttlMs = options.ttlMs ?? SESSION_TTL_MS;
    this.#now = options.now ?? Date.now;
    for (const entry of options.tokens ?? []) {
      const scopes = this.#scopes.get(entry.name) ?? new Set<Scope>();
      for (const s of entry.scopes) scopes.add(s);
      this.#scopes.set(entry.name, scopes);
    }
  }

  /** A signed cookie value for a principal that just signed in. */
  issue(principal: Principal): string {
    const payload: SessionPayload = {
      n: principal.name,
      s: SESSION_SCOPES.filter((s) => principal.scopes.has(s)),
      e: this.#now() + this.ttlMs,
    };
    const body = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
    return `${body}.${this.#sign(body)}`;
  }

  /** The principal of a cookie value: signed by us, not expired, its name still holding the read scope. */
  verify(value: string): Principal | undefined {
    if (value.length > COOKIE_VALUE_MAX_CHARS) return undefined;
    const [body = '', mac = '', ...rest] = value.split('.');
    if (rest.length > 0 || !equalText(mac, this.#sign(body))) return undefined;
    let payload: Partial<SessionPayload>;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Partial<SessionPayload>;
    } catch {
      return undefined;
    }
    const { n: name, s: scopes, e: expiresMs } = payload;
    if (typeof name !== 'string' || !Array.isArray(scopes) || typeof expiresMs !== 'number') return undefined;
    if (expiresMs <= this.#now()) return undefined;
    const now = this.#scopes.get(name);
    if (now === undefined) return undefined;
    const kept = new Set(SESSION_SCOPES.filter((s) => scopes.includes(s) && now.has(s)));
    return kept.has('read') ? { name, scopes: kept } : undefined;
  }

  /** The session's principal on a GET or HEAD request (the only methods a cookie is good for), or undefined. */
  principalOf(request: FastifyRequest): Principal | undefined {
    if (!this.enabled || (request.method !== 'GET' && request.method !== 'HEAD')) return undefined;
    const value = cookiesOf(request).get(SESSION_COOKIE);
    return value === undefined ? undefined : this.verify(value);
  }

  /** Set-Cookie for a new session. */
  sessionCookie(request: FastifyRequest, value: string): string {
    return cookie(request, SESSION_COOKIE, value, Math.floor(this.ttlMs / 1000));
  }

  /** Set-Cookie that ends the session. */
  clearedSessionCookie(request: FastifyRequest): string {
    return cookie(request, SESSION_COOKIE, '', 0);
  }

  /** The CSRF token for this browser's forms; sets its nonce cookie when it has none yet. */
  csrfToken(request: FastifyRequest, reply: FastifyReply): string {
    let nonce = cookiesOf(request).get(CSRF_COOKIE);
    if (nonce === undefined || !NONCE.test(nonce)) {
      nonce = randomBytes(16).toString('base64url');
      void reply.header('set-cookie', cookie(request, CSRF_COOKIE, nonce, undefined));
    }
    return this.#csrf(nonce);
  }

  /** Whether a form's token is this browser's (its nonce cookie's HMAC). */
  checkCsrf(request: FastifyRequest, token: unknown): boolean {
    const nonce = cookiesOf(request).get(CSRF_COOKIE);
    if (nonce === undefined || !NONCE.test(nonce) || typeof token !== 'string') return false;
    return equalText(token, this.#csrf(nonce));
  }

  #sign(body: string): string {
    return createHmac('sha256', this.#sessionKey).update(body).digest('base64url');
  }

  #csrf(nonce: string): string {
    return createHmac('sha256', this.#csrfKey).update(nonce).digest('base64url');
  }
}

/** Compares two strings in time that depends on their length only. */
function equalText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The request's cookies (RFC 6265 pairs; the first of a repeated name wins, as browsers send the most specific). */
export function cookiesOf(request: FastifyRequest): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const pair of (request.headers.cookie ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    if (name !== '' && !cookies.has(name)) cookies.set(name, value);
  }
  return cookies;
}

/** A Set-Cookie value: host-only, the whole site, HttpOnly, SameSite=Strict, Secure when the request came over TLS. */
function cookie(request: FastifyRequest, name: string, value: string, maxAgeSeconds: number | undefined): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  const maxAge = maxAgeSeconds === undefined ? '' : `; Max-Age=${maxAgeSeconds}`;
  return `${name}=${value}; Path=/; HttpOnly; SameSite=Strict${maxAge}${secure}`;
}

/** Whether an unauthenticated request is a browser asking for a page: it gets the sign-in form, not a 401. */
export function wantsSignIn(request: FastifyRequest): boolean {
  return request.routeOptions.config.page === true && (request.headers.accept ?? '').includes('text/html');
}

/** A path on this site to return to after signing in, or '/' for anything else (no open redirect). */
export function localPath(next: unknown): string {
  if (typeof next !== 'string' || next.length > 1024) return '/';
  return /^\/(?![/\\])[\x21-\x7e]*$/.test(next) ? next : '/';
}

/** Where a page sends a browser without a session. */
export function signInLocation(request: FastifyRequest): string {
  const next = localPath(request.url);
  return next === '/' ? '/signin' : `/signin?next=${encodeURIComponent(next)}`;
}
