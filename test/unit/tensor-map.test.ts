// SPDX-License-Identifier: MIT
// TensorMap over a stub native layer: every rule of cuTensorMapEncodeTiled checked before the driver is called, each
// refusal naming its rule; what reaches the driver (enum values, packed strides, the address with its offset); the
// map as a kernel argument (128 bytes, aligned to 64) and nowhere else.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TENSOR_MAP_PARAM, layoutOf } from '../../lib/core/args.js';
import type { DeviceBuffer } from '../../lib/core/memory.js';
import type { Native } from '../../lib/core/native.js';
import { TensorMap, type TensorMapTiledOptions } from '../../lib/core/tensor-map.js';

const calls = vi.hoisted(() => [] as unknown[][]);

vi.mock('../../lib/core/native.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/core/native.js')>();
  const fake: Partial<Native> = {
    tensorMapEncodeTiled: (...args: unknown[]) => {
      calls.push(args);
      return new Uint8Array(128).fill(7).buffer;
    },
  };
  return { ...real, getNative: () => fake as Native };
});

afterEach(() => void calls.splice(0));

/** A stand-in for device memory: the map needs its address and size alone. */
const memory = (byteLength: number, ptr = 0x7f0000000000n) => ({ ptr, byteLength }) as unknown as DeviceBuffer;
const MATRIX: TensorMapTiledOptions = { dtype: 'f32', dims: [1024, 512], box: [32, 64] };

describe('TensorMap.tiled', () => {
  it('encodes a packed row-major matrix: CUDA enum values, strides from the dims, the address with its offset', () => {
    const map = TensorMap.tiled(memory(1024 * 512 * 4 + 256), { ...MATRIX, swizzle: '128B', offsetBytes: 256 });
    expect(calls).toEqual([[7, 0x7f0000000100n, [1024, 512], [4096], [32, 64], [1, 1], 0, 3, 0, 0]]);
    expect(map.bytes).toHaveLength(128);
    expect(map.layout).toMatchObject({ stridesBytes: [4096], elementBytes: 4, boxBytes: 32 * 64 * 4 });
    expect(String(map)).toBe('TensorMap(f32 [1024, 512], box [32, 64], swizzle 128B)');
    TensorMap.tiled(memory(64 * 3 * 2), { dtype: 'f8e4m3', dims: [64, 3], box: [16, 1], oobFill: 'zero' });
    expect(calls[1]![0]).toBe(0); // TMA moves fp8 as u8
  });

  it.each<[string, Partial<TensorMapTiledOptions>, RegExp]>([
    ['a rank above 5', { dims: [2, 2, 2, 2, 2, 2], box: [4, 1, 1, 1, 1, 1] }, /rank of 1 to 5/],
    ['a dimension of 0', { dims: [1024, 0] }, /\[1, 4294967296\] for options\.dims\[1\]/],
    [
      'a stride not a multiple of 16',
      { stridesBytes: [4100] },
      /multiple of 16 bytes .* for options\.stridesBytes\[0\]/,
    ],
    ['a packed stride not a multiple of 16', { dims: [3, 512], box: [4, 1] }, /pad the rows/],
    ['a box over 256', { box: [32, 512] }, /\[1, 256\] for options\.box\[1\]/],
    ['an inner box not a multiple of 16 bytes', { box: [3, 64] }, /multiple of 16 bytes.*12 B/],
    ['an inner box wider than its swizzle', { box: [64, 8], swizzle: '128B' }, /at most 128 bytes with swizzle/],
    ['an element stride of 9', { elementStrides: [1, 9] }, /\[1, 8\] for options\.elementStrides\[1\]/],
    ['interleave below rank 3', { interleave: '16B' }, /at least 3 with interleave/],
    ['a NaN fill of integers', { dtype: 'i32', oobFill: 'nan' }, /'nan' is for floating point/],
    ['a tensor larger than its memory', { dims: [1024, 1024] }, /within the memory's 2097152 bytes/],
    ['an unknown swizzle', { swizzle: '256B' as never }, /options\.swizzle/],
    ['an unknown option', { boxDim: [32, 64] } as never, /Unknown option options\.boxDim/],
  ])('refuses %s before the driver, naming the rule', (_what, change, message) => {
    expect(() => TensorMap.tiled(memory(1024 * 512 * 4), { ...MATRIX, ...change })).toThrow(message);
    expect(calls).toEqual([]);
  });

  it('wants 32-byte swizzle and alignment with 32-byte interleave, and an address aligned to 16', () => {
    const dims = [8, 4, 4];
    const base = { dtype: 'f32', dims, box: [8, 4, 4], interleave: '32B' } as const;
    expect(() => TensorMap.tiled(memory(4096), base)).toThrow(/'32B' with interleave '32B'/);
    expect(() => TensorMap.tiled(memory(4096, 0x1010n), { ...base, swizzle: '32B' })).toThrow(
      /multiple of 32 bytes for the tensor address/,
    );
    expect(() => TensorMap.tiled(memory(4096), { ...MATRIX, dims: [16, 4], offsetBytes: 8 })).toThrow(
      /multiple of 16 bytes for the tensor address .*0x7f0000000008/,
    );
    expect(TensorMap.tiled(memory(4096), { ...base, swizzle: '32B' }).layout.stridesBytes).toEqual([32, 128]);
  });

  it('is a kernel argument of a 128-byte parameter aligned to 64, its bytes as they are', () => {
    const map = TensorMap.tiled(memory(1024 * 512 * 4), MATRIX);
    const layout = layoutOf(TENSOR_MAP_PARAM, 'args[0]');
    expect([layout.size, layout.align]).toEqual([128, 64]);
    const dv = new DataView(new ArrayBuffer(256));
    layout.write(dv, 64, map);
    expect(new Uint8Array(dv.buffer, 64, 128)).toEqual(new Uint8Array(128).fill(7));
    const wrong = layoutOf({ bytes: 128, align: 16 }, 'args[1]');
    expect(() => wrong.write(dv, 0, map)).toThrow(/128 bytes aligned to 64 for a TensorMap/);
  });
});
