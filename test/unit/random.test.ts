// SPDX-License-Identifier: MIT
// lib/measure/random.ts: splitmix64 against Vigna's reference outputs, the fast generator bit for bit against it,
// and normal deviates.
import { describe, expect, it } from 'vitest';
import { createRng, normal, splitmix64 } from '../../lib/measure/random.js';

const GAMMA = 0x9e3779b97f4a7c15n;

describe('splitmix64 and createRng', () => {
  it('matches the reference splitmix64 outputs', () => {
    expect(splitmix64(0n)).toBe(0xe220a8397b1dcdafn);
    // Vigna's splitmix64.c seeded with 1234567: the k-th output is splitmix64(seed + k·γ)
    const outputs = [0n, 1n, 2n].map((k) => splitmix64(1234567n + k * GAMMA));
    expect(outputs).toEqual([6457827717110365317n, 3203168211198807973n, 9817491932198370423n]);
    expect(splitmix64(-1n)).toBe(splitmix64((1n << 64n) - 1n)); // the state is taken mod 2^64
    expect(() => splitmix64(1 as unknown as bigint)).toThrow(TypeError);
  });

  it('is bit-identical to the BigInt splitmix64 for every draw', () => {
    for (const seed of [0n, 1n, 0xffffffffn, (1n << 64n) - 1n, 0x123456789abcdefn]) {
      const rng = createRng(seed);
      for (let k = 0n; k < 3000n; k++) {
        const expected = Number(splitmix64(seed + k * GAMMA) >> 11n) / 2 ** 53; // top 53 bits
        expect(rng()).toBe(expected);
      }
    }
    // First draw for seed 0: 0xE220A8397B1DCDAF / 2^64 = 15573... / 18446... ≈ 0.88331
    expect(createRng(0)()).toBeCloseTo(0.8833108, 7);
  });

  it('is deterministic and seed-sensitive', () => {
    const draw = (seed: number | bigint, n: number) => {
      const rng = createRng(seed);
      return Array.from({ length: n }, rng);
    };
    expect(draw(42, 100)).toEqual(draw(42, 100));
    expect(draw(1, 10)).toEqual(draw(1n, 10));
    expect(draw(-1, 10)).toEqual(draw((1n << 64n) - 1n, 10)); // negative seeds are two's complement mod 2^64
    const other = draw(43, 100);
    expect(draw(42, 100).filter((x, i) => x === other[i])).toHaveLength(0);
  });

  it('draws roughly uniform floats in [0, 1)', () => {
    const rng = createRng(2024);
    const n = 100_000;
    const buckets = new Array<number>(10).fill(0);
    let sum = 0;
    let squares = 0;
    for (let i = 0; i < n; i++) {
      const x = rng();
      expect(x >= 0 && x < 1).toBe(true);
      sum += x;
      squares += x * x;
      buckets[Math.floor(x * 10)]! += 1;
    }
    const mean = sum / n;
    // Mean 1/2 with standard error √(1/12/n) ≈ 0.0009; variance 1/12 ≈ 0.0833
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.005);
    expect(Math.abs(squares / n - mean * mean - 1 / 12)).toBeLessThan(0.002);
    // χ² over 10 equal buckets, 9 degrees of freedom: 27.88 is the 99.9 % point
    const chiSquare = buckets.reduce((acc, count) => acc + (count - n / 10) ** 2 / (n / 10), 0);
    expect(chiSquare).toBeLessThan(27.88);
  });

  it('rejects seeds that are not integers', () => {
    expect(() => createRng(1.5)).toThrow(RangeError);
    expect(() => createRng(Number.NaN)).toThrow(RangeError);
    expect(() => createRng(2 ** 60)).toThrow(RangeError); // not a safe integer: pass a bigint
    expect(() => createRng('1' as unknown as number)).toThrow(TypeError);
  });
});

describe('normal', () => {
  it('draws standard normal deviates from two uniform draws each', () => {
    const rng = createRng(7);
    const n = 50_000;
    let sum = 0;
    let squares = 0;
    let beyond2 = 0;
    for (let i = 0; i < n; i++) {
      const x = normal(rng);
      expect(Number.isFinite(x)).toBe(true);
      sum += x;
      squares += x * x;
      if (Math.abs(x) > 2) beyond2++;
    }
    // Mean 0 (standard error 1/√n ≈ 0.0045), variance 1, P(|x| > 2) ≈ 4.55 %
    expect(Math.abs(sum / n)).toBeLessThan(0.025);
    expect(Math.abs(squares / n - 1)).toBeLessThan(0.03);
    expect(Math.abs(beyond2 / n - 0.0455)).toBeLessThan(0.006);
  });

  it('uses exactly two draws per deviate, so a seeded sequence is reproducible', () => {
    let calls = 0;
    const inner = createRng(3);
    const counting = (): number => {
      calls++;
      return inner();
    };
    normal(counting);
    normal(counting);
    expect(calls).toBe(4);
    const a = createRng(11);
    const b = createRng(11);
    expect([normal(a), normal(a)]).toEqual([normal(b), normal(b)]);
  });

  it('stays finite when the uniform draw is 0', () => {
    const zeros = (): number => 0;
    expect(Math.abs(normal(zeros))).toBe(0); // √(−2 ln 1)·cos 0 = (−)0
  });
});
