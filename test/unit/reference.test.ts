// SPDX-License-Identifier: MIT
// lib/measure/reference.ts: matching a reference kernel's own arguments to the candidate's (by name, by order, and
// the mismatches that must be refused), and running references on a fake device.
import { describe, expect, it } from 'vitest';
import type { Kernel } from '../../lib/core/index.js';
import { parseArgSpecs } from '../../lib/measure/argspec.js';
import { prepareInputs } from '../../lib/measure/inputs.js';
import { checkIoFits, checkReference, matchReferenceIo, referenceOutputs } from '../../lib/measure/reference.js';
import { FakeDevice, fakeKernel, view } from './fake-device.js';

const io = (...specs: string[]) => parseArgSpecs(specs);
const outputsOf = (m: ReturnType<typeof matchReferenceIo>): [number, number][] => [...m.outputs.entries()];

describe('matchReferenceIo', () => {
  const candidate = io('x@ptr:f32[8]=uniform(-1,1)', 'y@ptr:f32[8]:out', 'a@f32=2', 'n@i32=8');

  it('maps the candidate onto itself when the reference has no io of its own', () => {
    const m = matchReferenceIo(candidate, candidate);
    expect(m.sources).toEqual([0, -1, -1, -1]);
    expect(outputsOf(m)).toEqual([[1, 1]]);
    expect([m.inputsBy, m.outputsBy]).toEqual(['name', 'name']);
    const unnamed = io('ptr:f32[8]=uniform(-1,1)', 'ptr:f32[8]=ones:out', 'ptr:f32[8]:out', 'i32=8');
    const u = matchReferenceIo(unnamed, unnamed);
    expect(u.sources).toEqual([0, 1, -1, -1]); // the in-place output starts from its own initial value
    expect(outputsOf(u)).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect([u.inputsBy, u.outputsBy]).toEqual(['order', 'order']);
  });

  it('matches by name a reference whose parameters come in another order', () => {
    const reference = io('y@ptr:f32[8]:out', 'n@i32=8', 'x@ptr:f32[8]:in', 'a@f32=2');
    const m = matchReferenceIo(candidate, reference);
    expect(m.sources).toEqual([-1, -1, 0, -1]); // the reference's x (its argument 2) reads the candidate's x
    expect(outputsOf(m)).toEqual([[1, 0]]); // the candidate's y is compared with the reference's argument 0
  });

  it("matches by order when names are missing, scalars being the reference's own", () => {
    const reference = io('i32=8', 'f32=2', 'ptr:f32[8]:in', 'ptr:f32[8]:out');
    const m = matchReferenceIo(io('ptr:f32[8]=uniform(-1,1)', 'ptr:f32[8]:out', 'f32=2', 'i32=8'), reference);
    expect(m.sources).toEqual([-1, -1, 0, -1]);
    expect(outputsOf(m)).toEqual([[1, 3]]);
    expect([m.inputsBy, m.outputsBy]).toEqual(['order', 'order']);
    // Some names on one side only: still by order, and the names that are there must agree.
    const partly = matchReferenceIo(candidate, io('i32=8', 'ptr:f32[8]:in', 'y@ptr:f32[8]:out'));
    expect(partly.sources).toEqual([-1, 0, -1]);
    expect(outputsOf(partly)).toEqual([[1, 2]]);
  });

  it('lets a named reference keep scratch outputs and ignore candidate inputs it does not read', () => {
    const cand = io('x@ptr:f32[8]=uniform(-1,1)', 'bias@ptr:f32[8]=zeros', 'y@ptr:f32[8]:out');
    const m = matchReferenceIo(cand, io('tmp@ptr:f32[64]:out', 'x@ptr:f32[8]:in', 'y@ptr:f32[8]:out'));
    expect(m.sources).toEqual([-1, 0, -1]);
    expect(outputsOf(m)).toEqual([[2, 2]]);
  });

  it("gives an in-place reference output its candidate's initial value", () => {
    const cand = io('x@ptr:f32[8]=uniform(-1,1)', 'y@ptr:f32[8]=uniform(-1,1):out');
    const m = matchReferenceIo(cand, io('y@ptr:f32[8]=zeros:out', 'x@ptr:f32[8]:in'));
    expect(m.sources).toEqual([1, 0]);
    expect(outputsOf(m)).toEqual([[1, 0]]);
  });

  it('refuses what cannot be matched, naming both sides', () => {
    const cases: [ReturnType<typeof io>, ReturnType<typeof io>, string][] = [
      [
        candidate,
        io('out@ptr:f32[8]:out', 'x@ptr:f32[8]:in'),
        "reference io: the candidate's output 'y' (argument 1) has no reference output named 'y' (there: 'out')",
      ],
      [
        candidate,
        io('y@ptr:f32[8]:out', 'z@ptr:f32[8]:in'),
        "reference io: the reference's input 'z' (argument 1) has no candidate input named 'z' (there: 'x')",
      ],
      [
        candidate,
        io('y@ptr:f16[8]:out', 'x@ptr:f32[8]:in'),
        "reference io: the reference's output 'y' (argument 0) is f16[8] " +
          "but the candidate's 'y' (argument 1) is f32[8]; " +
          'matched buffers need the same element type and length',
      ],
      [candidate, io('y@ptr:f32[8]:out', 'x@ptr:f32[4,2]:in'), ''], // same length, another shape: fine
      [
        io('ptr:f32[8]=ones', 'ptr:f32[8]:out'),
        io('ptr:f32[8]:in', 'ptr:f32[8]:in', 'ptr:f32[8]:out'),
        'reference io: the reference has 2 inputs but the candidate 1; name every input on both sides (x@ptr:...) to ' +
          'match them by name instead of by order',
      ],
      [
        io('ptr:f32[8]=ones', 'ptr:f32[8]:out', 'ptr:f32[8]:out'),
        io('ptr:f32[8]:in', 'ptr:f32[8]:out'),
        'reference io: the reference has 1 output but the candidate 2; ' +
          'name every output on both sides (x@ptr:...) to match them by name instead of by order',
      ],
      // inputs by name: see below
      [io('x@ptr:f32[8]=ones', 'ptr:f32[8]:out'), io('w@ptr:f32[8]:in', 'ptr:f32[8]:out'), ''],
      [
        io('ptr:f32[8]=ones', 'y@ptr:f32[8]:out'),
        io('ptr:f32[8]:in', 'z@ptr:f32[8]:out'),
        "reference io: the candidate's output 'y' (argument 1) has no reference output named 'y' (there: 'z')",
      ],
      [
        io('ptr:f32[8]=ones', 'y@ptr:f32[8]:out', 'ptr:f32[8]:out'),
        io('ptr:f32[8]:in', 'z@ptr:f32[8]:out', 'ptr:f32[8]:out'),
        "reference io: outputs are matched by order (not every one is named), and the reference's 'z' (argument 1) " +
          "would meet the candidate's 'y' (argument 1); name them alike",
      ],
      [
        io('ptr:f32[8]=ones', 'ptr:f32[8]:out'),
        io('ptr:f32[8]:in', 'ptr:f32[8]=zeros:out'),
        "reference io: the reference's output argument 1 starts from an initial value (=init) but the candidate's " +
          'argument 1 has none; give both the same init',
      ],
    ];
    for (const [cand, ref, message] of cases) {
      if (message === '') continue;
      expect(() => matchReferenceIo(cand, ref), message).toThrow(new TypeError(message));
    }
    expect(() => matchReferenceIo(candidate, io('y@ptr:f32[8]:out', 'x@ptr:f32[4,2]:in'))).not.toThrow();
    expect(() =>
      matchReferenceIo(io('x@ptr:f32[8]=ones', 'ptr:f32[8]:out'), io('w@ptr:f32[8]:in', 'ptr:f32[8]:out')),
    ).toThrow("reference io: the reference's input 'w' (argument 0) has no candidate input named 'w' (there: 'x')");
  });
});

describe('checkReference and checkIoFits', () => {
  const kernel = (signature: string[]) => ({ name: 'ref', signature }) as unknown as Kernel;
  const candidate = io('x@ptr:f32[8]=uniform(-1,1)', 'y@ptr:f32[8]:out', 'n@i32=8');

  it('takes a function as it is, and a kernel whose io fits its signature', () => {
    expect(checkReference(() => {}, candidate)).toBeUndefined();
    expect(
      checkReference({ kernel: kernel(['ptr', 'ptr', 'i32']), config: { grid: 1, block: 1 } }, candidate),
    ).toBeDefined();
    const swapped = {
      kernel: kernel(['i32', 'ptr', 'ptr']),
      config: { grid: 1, block: 1 },
      io: io('n@i32=8', 'y@ptr:f32[8]:out', 'x@ptr:f32[8]:in'),
    };
    expect(checkReference(swapped, candidate)!.sources).toEqual([-1, -1, 0]);
  });

  it('refuses a reference io that does not fit the reference kernel, and anything else', () => {
    const short = { kernel: kernel(['ptr', 'ptr', 'i32', 'f32']), config: { grid: 1, block: 1 }, io: candidate };
    expect(() => checkReference(short, candidate)).toThrow(
      new TypeError("reference.io declares 3 arguments but kernel 'ref' takes 4"),
    );
    expect(() =>
      checkReference({ kernel: kernel(['ptr', 'ptr', 'f32']), config: { grid: 1, block: 1 } }, candidate),
    ).toThrow(new TypeError("io[2] is i32 but parameter 2 of 'ref' is f32"));
    expect(() =>
      checkReference(
        { kernel: kernel(['ptr']), config: { grid: 1, block: 1 }, io: [{ kind: 'x' }] as never },
        candidate,
      ),
    ).toThrow(/for reference.io\[0\].kind/);
    expect(() => checkReference(42 as never, candidate)).toThrow(
      /a reference \{ kernel, config, io\? \} or a function/,
    );
    expect(() => checkIoFits(candidate, kernel(['ptr', 'i32', 'i32']))).toThrow(
      new TypeError("io[1] is a buffer but parameter 1 of 'ref' is i32"),
    );
  });
});

describe('referenceOutputs', () => {
  const candidate = io('x@ptr:f32[4]=uniform(-1,1)', 'y@ptr:f32[4]:out', 'a@f32=3', 'n@i32=4');
  const inputs = prepareInputs(candidate, 5n);
  const x = inputs.values[0] as Float32Array;

  it("runs a JavaScript reference on host copies of the candidate's arguments", async () => {
    const seen: unknown[] = [];
    const r = await referenceOutputs(
      (args) => {
        seen.push(...args);
        const [xs, ys, a] = args as [Float32Array, Float32Array, number];
        xs.forEach((v, i) => (ys[i] = a * v));
      },
      new FakeDevice().asDevice,
      candidate,
      inputs,
    );
    expect(seen.slice(2)).toEqual([3, 4]);
    expect(seen[0]).toEqual(x);
    expect(seen[0]).not.toBe(x); // a copy: the reference may scribble on it
    expect('outputs' in r && Array.from(r.outputs[1]!)).toEqual(Array.from(x, (v) => Math.fround(3 * v)));
    expect('outputs' in r && r.outputs[0]).toBeUndefined();
  });

  it(
    'runs a reference kernel in its own parameter order, ' + "its inputs from the candidate's, and frees its buffers",
    async () => {
      const device = new FakeDevice();
      // ref(n, y, a, x): y = a * x
      const k = fakeKernel(device, 'ref', ['i32', 'ptr', 'f32', 'ptr'], ([n, y, a, xs]) => {
        const out = view(Float32Array, y);
        const input = view(Float32Array, xs);
        for (let i = 0; i < (n as number); i++) out[i] = (a as number) * input[i]!;
      });
      const reference = {
        kernel: k as unknown as Kernel,
        config: { grid: 1, block: 1 },
        io: io('n@i32=4', 'y@ptr:f32[4]:out', 'a@f32=3', 'x@ptr:f32[4]:in'),
      };
      for (const zeroOnFree of [false, true]) {
        device.log.length = 0;
        const r = await referenceOutputs(reference, device.asDevice, candidate, inputs, zeroOnFree);
        expect('outputs' in r && Array.from(r.outputs[1]!)).toEqual(Array.from(x, (v) => Math.fround(3 * v)));
        expect(device.log.filter((e) => e.startsWith('dispose'))).toHaveLength(2);
        expect(device.log.filter((e) => e.startsWith('fill ')).length).toBe(zeroOnFree ? 3 : 1); // y starts zeroed
      }
    },
  );
});
