// SPDX-License-Identifier: MIT
// Bearer tokens. The tokens file holds no tokens, only their sha256: one `name:sha256hex[:scopes]` line per token
// (scopes a comma list of submit, read, admin; default submit,read), '#' comments and blank lines ignored. The name
// is the principal: it owns the jobs submitted with the token and keys the rate limits and queue caps. Several lines
// may share a name (a token being rotated). Without a tokens file every request is the principal 'local' with every
// scope, which is why main.ts refuses to listen anywhere but on loopback then.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

export const SCOPES = ['submit', 'read', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export interface Principal {
  name: string;
  scopes: ReadonlySet<Scope>;
}

export interface TokenEntry {
  name: string;
  /** sha256 of the token, 32 bytes. */
  digest: Buffer;
  scopes: readonly Scope[];
}

/** The principal of a server without tokens (loopback only). */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({ name: 'local', scopes: new Set<Scope>(SCOPES) });

/** What a principal's name is written as: letters, digits, '_', '.', '@' and '-', 64 at most. */
export const PRINCIPAL_PATTERN = /^[A-Za-z0-9_.@-]{1,64}$/;
const DIGEST = /^[0-9a-fA-F]{64}$/;
/** RFC 6750's b64token, bounded. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]{1,512}=*) *$/i;

/** The sha256 hex of a token: what its line in the tokens file holds. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Parses a tokens file's text.
 *
 * @throws Error naming the file and line of the first malformed entry.
 */
export function parseTokens(text: string, file: string): TokenEntry[] {
  const entries: TokenEntry[] = [];
  const seen = new Set<string>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const where = `${file}:${i + 1}`;
    const [name = '', digest = '', scopeList, ...rest] = line.split(':');
    if (rest.length > 0 || !PRINCIPAL_PATTERN.test(name)) {
      throw new Error(`${where}: expected 'name:sha256hex[:scopes]' with a name of [A-Za-z0-9_.@-] (1 to 64)`);
    }
    if (!DIGEST.test(digest)) {
      throw new Error(`${where}: expected the token's sha256 as 64 hex digits after '${name}:' (not the token)`);
    }
    const scopes = scopeList === undefined ? ['submit', 'read'] : scopeList.split(',').map((s) => s.trim());
    for (const s of scopes) {
      if (!(SCOPES as readonly string[]).includes(s)) {
        throw new Error(`${where}: unknown scope '${s}'; scopes are ${SCOPES.join(', ')}`);
      }
    }
    const key = digest.toLowerCase();
    if (seen.has(key)) throw new Error(`${where}: this token's digest is already on an earlier line`);
    seen.add(key);
    entries.push({ name, digest: Buffer.from(key, 'hex'), scopes: scopes as Scope[] });
  });
  if (entries.length === 0) throw new Error(`${file}: no tokens (a tokens file with none would lock every client out)`);
  return entries;
}

export function loadTokens(file: string): TokenEntry[] {
  return parseTokens(readFileSync(file, 'utf8'), file);
}

/** Verifies bearer tokens against the entries, comparing digests in constant time. */
export class TokenVerifier {
  readonly #entries: readonly TokenEntry[];

  constructor(entries: readonly TokenEntry[]) {
    this.#entries = entries;
  }

  /** The token in an Authorization header value, or undefined when there is none or it is not a bearer token. */
  static bearerOf(header: string | undefined): string | undefined {
    return header === undefined ? undefined : BEARER.exec(header)?.[1];
  }

  /** The principal of a token, or undefined. Every entry is compared, so the time does not say which one matched. */
  verify(token: string): Principal | undefined {
    const digest = createHash('sha256').update(token, 'utf8').digest();
    let found: TokenEntry | undefined;
    for (const entry of this.#entries) {
      if (timingSafeEqual(digest, entry.digest) && found === undefined) found = entry;
    }
    return found === undefined ? undefined : { name: found.name, scopes: new Set(found.scopes) };
  }
}
