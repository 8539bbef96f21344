// SPDX-License-Identifier: MIT
// Large literals (a tensor's base64 in an argspec or in expected outputs) are stored once by their hash, not once per
// job: a client that sends the same 40 MB input with every candidate stores it once. A job's JSON keeps an empty
// string where each one was, and the places (JSON pointers) with their hashes are stored beside it, so a client
// cannot make the store substitute a literal into a place of its own choosing.
import { createHash } from 'node:crypto';

/** Strings from this many characters on are stored by hash. Source text is capped far below (SOURCE_CHARS_MAX). */
export const LITERAL_MIN_CHARS = 2 ** 20;

export interface Literal {
  /** Where in the job it was: a JSON pointer (RFC 6901), e.g. '/args/1/init/base64'. */
  path: string;
  /** sha256 of its text, hex. */
  hash: string;
  text: string;
}

function escapeToken(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function unescapeToken(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** The job's JSON with its large literals left out (empty strings in their places), and the literals. */
export function splitLiterals(job: unknown, minChars = LITERAL_MIN_CHARS): { json: string; literals: Literal[] } {
  const literals: Literal[] = [];
  const walk = (value: unknown, path: string): unknown => {
    if (typeof value === 'string') {
      if (value.length < minChars) return value;
      literals.push({ path, hash: createHash('sha256').update(value).digest('hex'), text: value });
      return '';
    }
    if (Array.isArray(value)) return value.map((v, i) => walk(v, `${path}/${i}`));
    if (typeof value === 'object' && value !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = walk(v, `${path}/${escapeToken(k)}`);
      return out;
    }
    return value;
  };
  if (!containsLongString(job, minChars)) return { json: JSON.stringify(job), literals };
  return { json: JSON.stringify(walk(job, '')), literals };
}

/** The job from `json` with each literal put back in its place. */
export function joinLiterals(json: string, literals: readonly Pick<Literal, 'path' | 'text'>[]): unknown {
  const job: unknown = JSON.parse(json);
  for (const { path, text } of literals) {
    const tokens = path.split('/').slice(1).map(unescapeToken);
    const last = tokens.pop();
    let parent: unknown = job;
    for (const token of tokens) parent = (parent as Record<string, unknown> | undefined)?.[token];
    if (last === undefined || typeof parent !== 'object' || parent === null || !(last in parent)) {
      throw new Error(`A stored literal's place ${path} is not in its job: the store is inconsistent`);
    }
    (parent as Record<string, unknown>)[last] = text;
  }
  return job;
}

/** Whether any string in `value` is `minChars` long or longer (most jobs have none: they are stored as they are). */
function containsLongString(value: unknown, minChars: number): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.length >= minChars) return true;
    } else if (typeof v === 'object' && v !== null) {
      for (const child of Object.values(v)) stack.push(child);
    }
  }
  return false;
}
