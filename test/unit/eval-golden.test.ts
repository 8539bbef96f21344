// SPDX-License-Identifier: MIT
// The golden shapes of `cudakit bench` (test/golden/): the shape functions themselves, and the goldens against output
// captured from the CLI before evaluate() replaced its pipeline (test/golden/captured/). test/gpu/cli.test.ts holds
// real runs of the same command lines against the same goldens.
import { describe, expect, it } from 'vitest';
import { type Shape, jsonShape, mergeShapes, outputLines, shapeDiff } from '../golden/shape.js';
import { GOLDEN_CASES, golden, goldenLines } from '../support/cli-golden.js';

const captured = (name: string): string => golden(`captured/${name}`);

describe('golden output of cudakit bench, against captured runs', () => {
  it.each(GOLDEN_CASES.map((c) => c.name))('%s: --json has the golden shape', (name) => {
    const shape = JSON.parse(golden(`${name}.shape.json`)) as Shape;
    expect(shapeDiff(jsonShape(JSON.parse(captured(`${name}.json`))), shape)).toEqual([]);
  });

  it.each(GOLDEN_CASES.map((c) => `${c.name}.${c.stream}.txt`))(
    '%s: the human output has the golden line structure',
    (name) => {
      expect(outputLines(captured(name))).toEqual(goldenLines(name));
    },
  );
});

describe('jsonShape and shapeDiff', () => {
  const golden: Shape = {
    name: 'string',
    'defence?': 'string',
    stats: { median: 'number' },
    samples: [{ gpuMs: 'number', rejected: 'boolean' }],
    mismatches: [{ expected: 'number|string' }],
  };
  const value = {
    name: 'saxpy',
    stats: { median: 0.06 },
    samples: [{ gpuMs: 1, rejected: false }],
    mismatches: [{ expected: '5' }],
  };

  it('gives keys and leaf types, merging array elements', () => {
    expect(jsonShape(value)).toEqual({
      mismatches: [{ expected: 'string' }],
      name: 'string',
      samples: [{ gpuMs: 'number', rejected: 'boolean' }],
      stats: { median: 'number' },
    });
    expect(jsonShape([{ a: 1 }, { a: 'x', b: true }])).toEqual([{ a: 'number|string', 'b?': 'boolean' }]);
    expect(jsonShape([])).toEqual([]);
    expect(mergeShapes({ a: 'number' }, { 'a?': 'number' })).toEqual({ 'a?': 'number' });
  });

  it('passes a conforming value: optional keys absent, null for a number, empty arrays', () => {
    expect(shapeDiff(jsonShape(value), golden)).toEqual([]);
    expect(
      shapeDiff(jsonShape({ ...value, defence: 'mismatch', stats: { median: null }, samples: [] }), golden),
    ).toEqual([]);
  });

  it('names every departure with its path', () => {
    const { stats: _stats, ...noStats } = value;
    expect(shapeDiff(jsonShape({ ...noStats, extra: 1 }), golden)).toEqual([
      '$.stats: missing',
      '$.extra: not in the golden ("number")',
    ]);
    expect(shapeDiff(jsonShape({ ...value, samples: [{ gpuMs: '1', rejected: false }] }), golden)).toEqual([
      '$.samples[].gpuMs: expected number, got string',
    ]);
    expect(shapeDiff(jsonShape({ ...value, samples: [{ gpuMs: 1, rejected: false }, { gpuMs: 1 }] }), golden)).toEqual([
      '$.samples[].rejected: missing in some elements',
    ]);
    expect(shapeDiff(jsonShape({ ...value, stats: [1] }), golden)).toEqual([
      '$.stats: expected an object, got an array',
    ]);
    expect(shapeDiff(jsonShape({ ...value, mismatches: [{ expected: true }] }), golden)).toEqual([
      '$.mismatches[].expected: expected number|string, got boolean',
    ]);
  });
});

describe('outputLines', () => {
  it('keeps the structure and drops the measured values', () => {
    const text = [
      'saxpy (cold, quick)',
      '  median ±CI (min … max)  1.20 ms ±12.3%  (999.0 µs … 2.50 s)',
      '  histogram (min … p99)   ▁▂▃ █',
      '  samples                 12 accepted · 0 rejected · 3 warmup · stopped: timeout (not converged) · 10.00 s wall',
      '  clock                   not measured',
      '  throughput              4400.1 GB/s · at the measured peak bandwidth (100.2% ± 0.5%)',
      '  device                  NVIDIA H100 80GB HBM3 (sm_90)',
      "  ⚠ stopped by 'timeout' before the precision target was met",
      '  b.cu:k is about as fast as a.cu:k: 1.00× (95% CI 0.99 … 1.01) → SAME',
      '  b is 1.20× slower than a (95% CI 1.19 … 1.21) → SLOWER',
      '',
    ].join('\n');
    expect(outputLines(text)).toEqual([
      'saxpy (cold, quick)',
      '  median ±CI (min … max)  <time> ±#%  (<time> … <time>)',
      '  histogram (min … p99)   <histogram>',
      '  samples                 # accepted · # rejected · # warmup · stopped: <reason> · <time> wall',
      '  clock                   <clock>',
      '  throughput              # GB/s · <share of peak>',
      '  device                  <device>',
      '  b.cu:k <faster|slower|same> a.cu:k <CI> → <verdict>',
      '  b <faster|slower|same> a <CI> → <verdict>',
    ]);
    expect(outputLines('')).toEqual([]);
  });
});
