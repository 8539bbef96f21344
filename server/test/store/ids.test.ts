// SPDX-License-Identifier: MIT
// Job ids: 'ev_' + a ULID, sortable as strings by creation time, strictly increasing within one millisecond and when
// the clock steps back, with the spec's encoding (checked against its published example).
import { describe, expect, it } from 'vitest';
import { createUlidFactory, isJobId, jobIdTimeMs, newJobId } from '../../src/store/ids.js';

const bytes = (value: number) => () => new Uint8Array(10).fill(value);

describe('ULIDs', () => {
  it("encodes time as the spec's example does (1469918176385 → 01ARYZ6S41)", () => {
    expect(createUlidFactory(bytes(0))(1469918176385)).toBe('01ARYZ6S41' + '0'.repeat(16));
    expect(createUlidFactory(bytes(0xff))(0)).toBe('0'.repeat(10) + 'Z'.repeat(16));
    expect(createUlidFactory(bytes(0))(2 ** 48 - 1)).toBe('7ZZZZZZZZZ' + '0'.repeat(16));
  });

  it('counts up within one millisecond, so ids made in it sort in the order they were made', () => {
    const ulid = createUlidFactory(bytes(0));
    const ids = Array.from({ length: 40 }, () => ulid(1000));
    expect(ids[0]!.slice(10)).toBe('0'.repeat(16));
    expect(ids[33]!.slice(10)).toBe('0'.repeat(14) + '11'); // 33 = 1·32 + 1, carried into the next character
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('sorts by time first, whatever the random part of each millisecond', () => {
    let fill = 0xff;
    const ulid = createUlidFactory(() => new Uint8Array(10).fill((fill = 0xff - fill))); // 0x00, 0xff, 0x00 ...
    const ids = [ulid(5), ulid(6), ulid(7), ulid(8)];
    expect([...ids].sort()).toEqual(ids);
  });

  it('stays increasing when the clock steps back, on the last time it saw', () => {
    const ulid = createUlidFactory(bytes(0));
    const later = ulid(2000);
    const earlier = ulid(1000);
    expect(earlier > later).toBe(true);
    expect(earlier.slice(0, 10)).toBe(later.slice(0, 10));
  });

  it('refuses a time outside [0, 2^48) and a millisecond with more than 2^80 ids', () => {
    const ulid = createUlidFactory(bytes(0));
    for (const t of [-1, 1.5, 2 ** 48, Number.NaN]) expect(() => ulid(t)).toThrow(RangeError);
    const full = createUlidFactory(bytes(0xff));
    full(7);
    expect(() => full(7)).toThrow('ULID random part overflowed within millisecond 7: more than 2^80 ids in it');
    expect(full(8)).toBe('0000000008' + 'Z'.repeat(16)); // the next millisecond starts afresh
  });
});

describe('job ids', () => {
  it("are 'ev_' + 26 Crockford base32 characters, and give back their time", () => {
    const atMs = Date.UTC(2026, 10, 23, 12, 30);
    const id = newJobId(atMs);
    expect(id).toMatch(/^ev_[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    expect(isJobId(id)).toBe(true);
    expect(jobIdTimeMs(id)).toBe(atMs);
    expect(jobIdTimeMs(newJobId())).toBeLessThanOrEqual(Date.now());
  });

  it('made by the process in one millisecond, sort in order', () => {
    const ids = Array.from({ length: 1000 }, () => newJobId(1_700_000_000_000));
    expect([...ids].sort()).toEqual(ids);
  });

  it('are told apart from what is not one', () => {
    const id = newJobId(0);
    for (const bad of [id.toLowerCase(), 'EV_' + id.slice(3), `job_${id.slice(3)}`, id + '0', id.slice(0, -1)]) {
      expect(isJobId(bad), bad).toBe(false);
    }
    expect(isJobId(`ev_8${id.slice(4)}`)).toBe(false); // past 2^48 ms
    expect(isJobId(`${id.slice(0, -1)}U`)).toBe(false); // U, I, L, O are not in the alphabet
    expect(isJobId(42)).toBe(false);
    expect(() => jobIdTimeMs('ev_nope')).toThrow(
      new RangeError("Expected a job id ('ev_' + 26 base32 characters) but received 'ev_nope'"),
    );
  });
});
