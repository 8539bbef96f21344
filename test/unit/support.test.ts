// SPDX-License-Identifier: MIT
// test/support/, the code the tests share: its one wait throws on a timeout, naming what it waited for (a wait that
// ended quietly would let a test go on as if its condition held), and no test project picks up its files as tests.
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import config from '../../vitest.config.mjs';
import { until, untilIdle } from '../support/until.js';

describe('until', () => {
  it('resolves once the condition holds, sync or async', async () => {
    let n = 0;
    await until(() => ++n === 3, { pollMs: 1 });
    expect(n).toBe(3);
    await until(async () => Promise.resolve(true));
  });

  it('throws on a timeout, naming what it waited for: the words given, or else the condition', async () => {
    await expect(until(() => false, { timeoutMs: 20, what: 'the moon' })).rejects.toThrow(
      new Error('timed out after 20 ms waiting for the moon'),
    );
    const never = (): boolean => 1 + 1 === 3;
    await expect(until(never, { timeoutMs: 20 })).rejects.toThrow(/^timed out after 20 ms waiting for .*1 \+ 1 === 3/);
  });

  it('asks a `what` function at the timeout, so that the error shows the state then', async () => {
    let state = 'starting';
    const waiting = until(() => false, { timeoutMs: 30, what: () => `idle (it is ${state})` });
    state = 'busy';
    await expect(waiting).rejects.toThrow('waiting for idle (it is busy)');
    const slot = { state: 'quarantined', info: () => ({ state: 'quarantined', lastError: 'x' }) };
    await expect(untilIdle(slot, 20)).rejects.toThrow(
      'waiting for the slot to be idle: {"state":"quarantined","lastError":"x"}',
    );
  });
});

describe('test/support/ and server/test/support/ are not test folders', () => {
  it('hold no *.test.ts, and every project includes files of its own tier folders only', () => {
    for (const folder of ['../support/', '../../server/test/support/']) {
      const support = readdirSync(new URL(folder, import.meta.url), { recursive: true }).map(String);
      expect(support.filter((f) => /\.test\.[cm]?ts$/.test(f))).toEqual([]);
    }
    const includes = (config.test?.projects ?? []).flatMap((p) =>
      typeof p === 'object' && 'test' in p ? (p.test?.include ?? []) : [],
    );
    expect(includes.length).toBeGreaterThan(0);
    // The library's tiers are folders of test/; the server's files are all under server/test/, a tier by suffix.
    for (const glob of includes) expect(glob).toMatch(/^(test\/(?!support\/)[\w-]+|server\/test)\/.*\.test\.ts$/);
  });
});
