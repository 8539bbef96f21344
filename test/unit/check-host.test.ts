// SPDX-License-Identifier: MIT
// check() of a HostCandidate (lib/measure/check.ts): a candidate computed outside cudakit's launches, called on host
// arrays with the trial's inputs and poisoned outputs, checked with every defence that applies off the GPU, on the
// host alone (no device: the inputs are generated here, the references are JavaScript).
import { describe, expect, it } from 'vitest';
import { type HostValue, check } from '../../lib/index.js';
import { parseArgSpecs } from '../../lib/measure/argspec.js';

const IO = parseArgSpecs(['ptr:f32[64]=uniform(-1,1)', 'ptr:f32[64]=uniform(-1,1)', 'ptr:f32[64]:out', 'i32=64']);
const hostOf = (host: (args: HostValue[]) => void): { host: (args: HostValue[]) => void } => ({ host });
/** out = a + b, the reference and the honest candidate alike. */
const add = (args: HostValue[]): void => {
  const [a, b, out, n] = args as [Float32Array, Float32Array, Float32Array, number];
  for (let i = 0; i < n; i++) out[i] = a[i]! + b[i]!;
};

describe('check() of a host candidate', () => {
  it('passes an honest candidate, with the inputs and the poisoned outputs a JavaScript reference gets', async () => {
    const seen: string[] = [];
    const r = await check(
      {
        host: (args) => {
          const out = args[2] as Float32Array;
          seen.push(`${args.length} ${out.constructor.name} ${Number.isNaN(out[0]) ? 'poisoned' : 'written'}`);
          add(args);
        },
      },
      add,
      IO,
      { trials: 3 },
    );
    expect(r.passed).toBe(true);
    expect(r.trials).toHaveLength(3);
    expect(r.nondeterministicElements).toBe(0); // its second run on the first trial's inputs
    expect(seen).toEqual(Array(4).fill('4 Float32Array poisoned'));
  });

  it('fails a wrong value, an input it changed, and a run that differs from the first', async () => {
    const wrong = await check(
      hostOf((args) => void ((add(args), args[2] as Float32Array)[5]! += 1)),
      add,
      IO,
    );
    expect(wrong).toMatchObject({ passed: false, defence: 'mismatch' });
    expect(wrong.mismatches[0]).toMatchObject({ arg: 2, index: 5 });

    const mutating = await check(
      hostOf((args) => void ((add(args), args[0] as Float32Array)[3] = 0)),
      add,
      IO,
    );
    expect(mutating).toMatchObject({ passed: false, defence: 'input-modified' });
    expect(mutating.trials[0]!.detail).toBe('argument 0 (an input) changed at element 3');

    let calls = 0;
    const flaky = await check(
      hostOf((args) => void ((add(args), args[2] as Float32Array)[7]! += calls++)),
      add,
      IO,
    );
    expect(flaky).toMatchObject({ passed: false, defence: 'nondeterministic' });
  });

  it('without a reference, fails an output it left unwritten, and one it wrote only into a new array', async () => {
    const partial = await check(
      hostOf((args) => void (args[2] as Float32Array).fill(1, 0, 60)),
      null,
      IO,
    );
    expect(partial).toMatchObject({ passed: false, defence: 'unwritten', referenceFree: true });
    // Replacing the list's array writes nothing into the one the check reads.
    const replaced = await check(
      {
        host: (args) => {
          args[2] = new Float32Array(64).fill(1);
        },
      },
      null,
      IO,
    );
    expect(replaced).toMatchObject({ passed: false, defence: 'unwritten' });
    const whole = await check(
      hostOf((args) => void (args[2] as Float32Array).fill(1)),
      null,
      IO,
    );
    expect(whole).toMatchObject({ passed: true, referenceFree: true });
  });

  it('gives f16 outputs as Float32Array and reads them back rounded to f16', async () => {
    const io = parseArgSpecs(['ptr:f16[32]=uniform(-1,1)', 'ptr:f16[32]:out']);
    const copy = (args: HostValue[]): void => (args[1] as Float32Array).set(args[0] as Float32Array);
    expect(await check({ host: copy }, copy, io)).toMatchObject({ passed: true });
    const off = await check(
      hostOf((args) => void ((copy(args), args[1] as Float32Array)[0]! += 0.5)),
      copy,
      io,
    );
    expect(off.defence).toBe('mismatch');
  });

  it('rejects with what the candidate throws, and refuses io without an output before calling it', async () => {
    await expect(
      check(
        {
          host: () => {
            throw new Error('the runtime failed');
          },
        },
        add,
        IO,
      ),
    ).rejects.toThrow('the runtime failed');
    let called = false;
    const noOutput = parseArgSpecs(['ptr:f32[4]=uniform(-1,1)']);
    await expect(check({ host: () => void (called = true) }, null, noOutput)).rejects.toThrow(/no output buffer/);
    expect(called).toBe(false);
  });
});
