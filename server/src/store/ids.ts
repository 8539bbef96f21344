// SPDX-License-Identifier: MIT
// Job ids: 'ev_' + a ULID (https://github.com/ulid/spec): 48 bits of milliseconds, then 80 random bits, in Crockford's
// base32 (26 characters). The alphabet is in ASCII order, so ids sort by creation time as plain strings: in SQLite's
// BINARY collation, in JavaScript's `<`, in a listing's cursor. Ids made in the same millisecond (or after the clock
// stepped back) increment the previous id's random part, so one process never makes two ids out of order.
import { randomBytes } from 'node:crypto';

export const JOB_ID_PREFIX = 'ev_';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_CHARS = 10;
const RANDOM_CHARS = 16;
const MAX_TIME_MS = 2 ** 48 - 1;
const RANDOM_LIMIT = 1n << 80n;
const JOB_ID = new RegExp(`^${JOB_ID_PREFIX}[0-7][${ALPHABET}]{${TIME_CHARS + RANDOM_CHARS - 1}}$`);

/** Makes ULIDs: `ulid(nowMs)`, strictly increasing across calls of one factory. */
export type UlidFactory = (nowMs?: number) => string;

/**
 * A monotonic ULID factory. `random(10)` gives the 80 random bits of each new millisecond (crypto's by default; a
 * test passes its own to pin them).
 */
export function createUlidFactory(random: (bytes: number) => Uint8Array = randomBytes): UlidFactory {
  let lastTimeMs = -1;
  let lastRandom = 0n;
  return (nowMs = Date.now()) => {
    if (!Number.isInteger(nowMs) || nowMs < 0 || nowMs > MAX_TIME_MS) {
      throw new RangeError(`Expected an integer in [0, 2^48) for nowMs but received ${String(nowMs)}`);
    }
    if (nowMs > lastTimeMs) {
      lastTimeMs = nowMs;
      lastRandom = BigInt('0x' + Buffer.from(random(10)).toString('hex'));
    } else {
      // Same millisecond, or the clock went back: stay on the last time and count up, as the spec's monotonic mode.
      lastRandom += 1n;
      if (lastRandom >= RANDOM_LIMIT) {
        throw new Error(`ULID random part overflowed within millisecond ${lastTimeMs}: more than 2^80 ids in it`);
      }
    }
    return encode(BigInt(lastTimeMs), TIME_CHARS) + encode(lastRandom, RANDOM_CHARS);
  };
}

function encode(value: bigint, chars: number): string {
  let text = '';
  for (let i = 0; i < chars; i++) {
    text = ALPHABET[Number(value & 31n)]! + text;
    value >>= 5n;
  }
  return text;
}

const processUlid = createUlidFactory();

/** A new job id, 'ev_' + a ULID of `nowMs` (the job's createdAt, so the id and the record agree). */
export function newJobId(nowMs: number = Date.now()): string {
  return JOB_ID_PREFIX + processUlid(nowMs);
}

/** Whether `value` has the form of a job id (the API's check of a path parameter before it asks the store). */
export function isJobId(value: unknown): value is string {
  return typeof value === 'string' && JOB_ID.test(value);
}

/** The millisecond a job id was made in. */
export function jobIdTimeMs(id: string): number {
  if (!isJobId(id)) {
    throw new RangeError(`Expected a job id ('ev_' + 26 base32 characters) but received '${String(id).slice(0, 40)}'`);
  }
  let timeMs = 0;
  for (const char of id.slice(JOB_ID_PREFIX.length, JOB_ID_PREFIX.length + TIME_CHARS)) {
    timeMs = timeMs * 32 + ALPHABET.indexOf(char);
  }
  return timeMs;
}
