// SPDX-License-Identifier: MIT
// prepareInputs() with a device, without a GPU: the fill kernel (device-fill.ts) is replaced by JavaScript's own
// generator writing into the scratch buffer, so what is checked is the buffer's life: one scratch per generated
// argument, its bytes returned, and zeroed (then waited for) before it is freed, whatever the caller's zeroOnFree,
// so a warm worker leaves no job's inputs in memory.
import { describe, expect, it, vi } from 'vitest';
import { Device, type DeviceBuffer } from '../../lib/core/index.js';
import { type BufferArgSpec, type InitSpec, parseArgSpecs } from '../../lib/measure/argspec.js';
import type { DrawSource } from '../../lib/measure/device-fill.js';
import { generateBytes, prepareInputs } from '../../lib/measure/inputs.js';
import { createRng } from '../../lib/measure/random.js';
import { type FakeBuffer, FakeDevice } from './fake-device.js';

vi.mock('../../lib/measure/device-fill.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../lib/measure/device-fill.js')>()),
  // What the kernel computes, for a buffer on a generator of its own from draw 0 (the only case below).
  fillOnDevice: (target: DeviceBuffer, spec: BufferArgSpec, init: InitSpec, source: DrawSource) => {
    if (source.first !== 0n) throw new Error('the stand-in fill draws from the start only');
    (target as unknown as FakeBuffer).memory.set(generateBytes(spec, init, createRng(source.state)));
  },
}));

describe('prepareInputs on a device', () => {
  it('generates into a scratch buffer per argument, and zeroes it before freeing it', () => {
    const fake = new FakeDevice();
    // An instance of Device for prepareInputs' check, whose memory is the fake's.
    const device = Object.assign(Object.create(Device.prototype) as Device, {
      alloc: (bytes: number) => fake.alloc(bytes),
    });
    const io = parseArgSpecs(['x@ptr:f32[64]=uniform(-1,1,seed=3)', 'y@ptr:f32[64]:out', 'n@i32=64']);
    const inputs = prepareInputs(io, 5n, device);
    expect(inputs.bytes).toEqual(prepareInputs(io, 5n).bytes); // the bytes JavaScript generates here
    expect(fake.buffers).toHaveLength(1); // x's scratch: none for the pure output or the scalar
    expect(fake.log).toEqual(['fill 0', 'synchronize', 'dispose 0']);
    expect(fake.buffers[0]!.memory.every((b) => b === 0)).toBe(true);
  });
});
