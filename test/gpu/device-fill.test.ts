// SPDX-License-Identifier: MIT
// Inputs generated on the GPU (lib/measure/device-fill.ts) are the bytes JavaScript generates (inputs.ts) for the
// same specs and seed: every init kind and element type, buffers on the shared generator after others, a buffer
// with a seed of its own, sequences along the last dimension, and sequences that wrap in an integer type. A normal
// deviate's log and cos may differ from JavaScript's in a double's last bit: those are compared to within a few ulps
// of the element type.
import { expect, it } from 'vitest';
import { Device, parseArgSpecs } from '../../lib/index.js';
import { DTYPE_INFO, fromDeviceBytes } from '../../lib/core/index.js';
import { prepareInputs } from '../../lib/measure/inputs.js';
import { describeGpu } from '../helpers.js';

const N = 100_003;

describeGpu('inputs generated on the GPU', () => {
  const cases: [string, string[]][] = [
    [
      'floats of every kind, on the shared generator one after another',
      [
        `a@ptr:f32[${N}]=uniform(-3,5)`,
        `b@ptr:f32[${N}]:out`,
        `c@ptr:f64[${N}]=uniform(0,1)`,
        `d@ptr:f32[${N}]=const(1.1)`,
        `e@ptr:f64[${N}]=randint(-7,9)`,
        `f@ptr:f32[${N}]:in`,
      ],
    ],
    [
      'half and bfloat16',
      [
        `a@ptr:f16[${N}]=uniform(-65504,65504)`,
        `b@ptr:bf16[${N}]=uniform(-1e30,1e30)`,
        `c@ptr:f16[${N}]=uniform(-1e-6,1e-6)`,
      ],
    ],
    [
      'integers: randint, sequences that wrap, constants, the default init',
      [
        `a@ptr:i8[${N}]=randint(-128,128)`,
        `b@ptr:i8[${N}]=seq(-5,3)`,
        `c@ptr:u16[${N}]=seq(0,7)`,
        `d@ptr:u16[${N}]:in`,
        `e@ptr:i32[${N}]=seq(7,-3)`,
        `f@ptr:u32[${N}]=seq(4294967000,1)`,
        `g@ptr:i64[${N}]=randint(-1000000,1000000)`,
        `h@ptr:u64[${N}]=seq(1e15,7)`,
        `i@ptr:u8[${N}]=const(200)`,
        `j@ptr:i32[${N}]:in`,
      ],
    ],
    [
      'a seed of its own, sequences along the last dimension, zeros and ones',
      [
        `a@ptr:f32[${N}]=uniform(-1,1,seed=7)`,
        `b@ptr:f32[${N}]=uniform(-1,1)`,
        `c@ptr:f32[101,990]=arange(along=last)`,
        `d@ptr:f64[101,990]=seq(0.5,0.25,along=last)`,
        `e@ptr:f32[${N}]=zeros`,
        `f@ptr:i32[${N}]=ones`,
        `g@ptr:f32[${N}]=uniform(2,3,seed=7):out`,
      ],
    ],
  ];

  it.each(cases)('%s: the same bytes as JavaScript', (_, specs) => {
    const device = Device.get(0);
    const io = parseArgSpecs(specs);
    for (const seed of [42n, 0xffffffffffffffffn]) {
      const host = prepareInputs(io, seed);
      const gpu = prepareInputs(io, seed, device);
      io.forEach((a, i) => {
        expect(gpu.bytes[i] === undefined, `argument ${i}`).toBe(host.bytes[i] === undefined);
        if (host.bytes[i] === undefined) return;
        expect(Buffer.from(gpu.bytes[i]!).equals(Buffer.from(host.bytes[i]!)), `argument ${i} (${specs[i]})`).toBe(
          true,
        );
      });
    }
  });

  it.each(['f32', 'f64', 'f16', 'bf16'] as const)(
    'normal deviates in %s: what JavaScript draws, to the last bits',
    (dtype) => {
      const device = Device.get(0);
      // After a uniform buffer, so the normal one starts N draws into the shared generator; then one more on it.
      const io = parseArgSpecs([
        `u@ptr:f32[${N}]=uniform(0,1)`,
        `x@ptr:${dtype}[${N}]=normal(2,3)`,
        `y@ptr:${dtype}[${N}]=normal(0,1)`,
      ]);
      const host = prepareInputs(io, 9n);
      const gpu = prepareInputs(io, 9n, device);
      expect(Buffer.from(gpu.bytes[0]!).equals(Buffer.from(host.bytes[0]!))).toBe(true);
      for (const i of [1, 2]) {
        const want = fromDeviceBytes(dtype, host.bytes[i]!) as Float32Array | Float64Array;
        const got = fromDeviceBytes(dtype, gpu.bytes[i]!) as Float32Array | Float64Array;
        // A last-bit difference of the double can move the rounded value by one step of the element type at most.
        const eps = dtype === 'f64' ? 2 ** -50 : dtype === 'f32' ? 2 ** -23 : dtype === 'f16' ? 2 ** -10 : 2 ** -7;
        let differing = 0;
        let worst = 0;
        for (let k = 0; k < N; k++) {
          if (got[k] === want[k]) continue;
          differing++;
          worst = Math.max(worst, Math.abs(got[k]! - want[k]!) / Math.max(Math.abs(want[k]!), 2 ** -14));
        }
        expect(worst, `argument ${i}: relative difference`).toBeLessThanOrEqual(eps);
        // Nearly all agree exactly: a wrong draw index or formula would differ nearly everywhere.
        expect(differing, `argument ${i}: elements that differ`).toBeLessThan(N / 100);
        expect(DTYPE_INFO[dtype].float).toBe(true);
      }
    },
  );
});
