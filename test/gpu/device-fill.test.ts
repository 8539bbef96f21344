// SPDX-License-Identifier: MIT
// Inputs generated on the GPU (lib/measure/device-fill.ts) are the bytes JavaScript generates (inputs.ts) for the
// same specs and seed: every init kind and element type, buffers on the shared generator after others, a buffer
// with a seed of its own, sequences along the last dimension, and sequences that wrap in an integer type. A normal
// deviate's log and cos may differ from JavaScript's in a double's last bit: those are compared to within a few ulps
// of the element type, on the scale of the terms mean and std·z that make the value.
import { expect, it } from 'vitest';
import { Device, parseArgSpecs } from '../../lib/index.js';
import { DTYPE_INFO, fromDeviceBytes } from '../../lib/core/index.js';
import type { BufferArgSpec, InitSpec } from '../../lib/measure/argspec.js';
import { SPARSE_CHANGES, epochState, fillKernel, fillLaunch, sparsePositions } from '../../lib/measure/device-fill.js';
import { drawSources, initOf, prepareInputs } from '../../lib/measure/inputs.js';
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
      'fp8: rounded to nearest even, up to the largest finite value, subnormals',
      [
        `a@ptr:f8e4m3[${N}]=uniform(-448,448)`,
        `b@ptr:f8e5m2[${N}]=uniform(-57344,57344)`,
        `c@ptr:f8e4m3[${N}]=uniform(-0.02,0.02)`,
        `d@ptr:f8e5m2[${N}]=seq(-3e-5,1.7e-7)`,
        `e@ptr:f8e4m3[${N}]=randint(-20,20)`,
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

  it.each(['f32', 'f64', 'f16', 'bf16', 'f8e4m3', 'f8e5m2'] as const)(
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
      for (const [i, mean] of [
        [1, 2],
        [2, 0],
      ] as const) {
        const want = fromDeviceBytes(dtype, host.bytes[i]!) as Float32Array | Float64Array;
        const got = fromDeviceBytes(dtype, gpu.bytes[i]!) as Float32Array | Float64Array;
        // A last-bit difference of the double can move the rounded value by one step of the element type at most. In
        // f64 the double is the value: log and cos within 1 and 2 ulps (CUDA's documented bounds) and V8's within 1,
        // through sqrt and the products, keep mean + std·z within 8 ulps of its larger term.
        const eps = { f64: 2 ** -49, f32: 2 ** -23, f16: 2 ** -10, bf16: 2 ** -7, f8e4m3: 2 ** -3, f8e5m2: 2 ** -2 }[
          dtype
        ];
        let differing = 0;
        let worst = 0;
        for (let k = 0; k < N; k++) {
          if (got[k] === want[k]) continue;
          differing++;
          // Relative to the terms, not to the value: z's last bit moves mean + std·z by an ulp of the larger of |mean|
          // and |std·z|. Where std·z nearly cancels mean the value is far smaller than either: 2 + 3z below 2^-14
          // while an ulp of 3z ≈ -2 is 2^-52 (an H100 gave 2^-52 / 2^-14 = 2^-38 against the value). A wrong draw
          // index or formula moves it by a share of the terms, far beyond eps.
          const scale = Math.abs(mean) + Math.abs(want[k]! - mean);
          worst = Math.max(worst, Math.abs(got[k]! - want[k]!) / Math.max(scale, 2 ** -14));
        }
        expect(worst, `argument ${i}: relative difference`).toBeLessThanOrEqual(eps);
        // Most agree exactly: a wrong draw index or formula would differ nearly everywhere. A double differs more
        // often than its last bit flips a narrower type's rounding: V8's Math.log is not the correctly rounded value
        // for 7 % of these draws and Math.cos for 3 %, which alone makes 4 % of x and 6 % of y differ (Node 20
        // against a correctly rounded log and cos), whatever CUDA's own rounding adds.
        expect(differing, `argument ${i}: elements that differ`).toBeLessThan(dtype === 'f64' ? N / 5 : N / 100);
        expect(DTYPE_INFO[dtype].float).toBe(true);
      }
    },
  );
  it('a sparse fill writes the elements sparsePositions() names, with the values of its epoch, and no others', () => {
    const device = Device.get(0);
    const n = 100_003;
    const [spec] = parseArgSpecs([`x@ptr:f32[${n}]=uniform(-1,1)`]) as [BufferArgSpec];
    const init = initOf(spec) as Exclude<InitSpec, { kind: 'data' }>;
    const source = drawSources([spec], 42n)[0]!;
    const epochs = device.alloc(4);
    /** The buffer after a fill at `epoch`, all of it or `changes` elements, over `start`'s bytes. */
    const filled = (epoch: number, changes: number, start?: Uint8Array): Float32Array => {
      const buffer = device.alloc(4 * n);
      if (start !== undefined) buffer.copyFromHost(start);
      epochs.copyFromHost(new Uint32Array([epoch]));
      const launch = fillLaunch(buffer, spec, init, source, epochs.ptr, changes)!;
      fillKernel(device).launch(launch.config, ...launch.args);
      device.synchronize();
      const out = new Float32Array(buffer.copyToHost().buffer);
      buffer.dispose();
      return out;
    };
    const before = filled(7, 0);
    const after = filled(8, 0);
    const sparse = filled(8, SPARSE_CHANGES, new Uint8Array(before.buffer));
    const spots = new Set(sparsePositions(epochState(source.state, 8), source.first, n, SPARSE_CHANGES));
    expect(spots.size).toBeGreaterThan(SPARSE_CHANGES / 2);
    for (let i = 0; i < n; i++) {
      if (sparse[i] === (spots.has(i) ? after[i] : before[i])) continue;
      expect.fail(
        `element ${i}: ${sparse[i]}, want ${spots.has(i) ? `epoch 8's ${after[i]}` : `epoch 7's ${before[i]}`}`,
      );
    }
    epochs.dispose();
  });
});
