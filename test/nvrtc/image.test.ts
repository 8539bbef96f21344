// Parameter layouts read from real NVRTC output (CUBIN and PTX), without a GPU.
import { expect, it } from 'vitest';
import { Program } from '../../lib/index.js';
import { cubinParams, imageParams, ptxParams } from '../../lib/core/image.js';
import { describeNvrtc } from '../helpers.js';

const SRC = `
struct Pair { char tag; double value; short small; };
extern "C" __global__ void mixed(char a, double b, Pair p, short c) {}
extern "C" __global__ void none() {}
extern "C" __global__ void vector_add(const float* a, const float* b, float* out, int n) {}
template <typename T> __global__ void scale(T* x, T a) {}
template __global__ void scale<double>(double*, double);`;
const expected = {
  mixed: [
    { offset: 0, size: 1 },
    { offset: 8, size: 8 },
    { offset: 16, size: 24 },
    { offset: 40, size: 2 },
  ],
  none: [],
  vector_add: [
    { offset: 0, size: 8 },
    { offset: 8, size: 8 },
    { offset: 16, size: 8 },
    { offset: 24, size: 4 },
  ],
  _Z5scaleIdEvPT_S0_: [
    { offset: 0, size: 8 },
    { offset: 8, size: 8 },
  ],
};

describeNvrtc('kernel parameters from module images', () => {
  const opts = { arch: 'sm_80', cache: false, cudaIncludes: false } as const;

  it('reads them from a CUBIN (.nv.info KPARAM_INFO)', () => {
    const cubin = new Program(SRC).compile(opts).bytes;
    for (const [name, params] of Object.entries(expected)) expect(cubinParams(cubin, name), name).toEqual(params);
    expect(cubinParams(cubin, 'missing')).toBeUndefined();
    expect(imageParams(cubin, 'mixed')).toEqual(expected.mixed);
  });

  it('matches whole kernel names only, and distrusts a list with an ordinal twice', () => {
    const cubin = new Program(SRC).compile(opts).bytes;
    expect(cubinParams(cubin, 'vector_ad')).toBeUndefined(); // a prefix of vector_add
    expect(cubinParams(cubin, 'mixedx')).toBeUndefined();
    // Every KPARAM_INFO record (format 4, attribute 0x17, 12 bytes) for ordinal 1 rewritten to ordinal 0.
    const dup = new Uint8Array(cubin);
    const dv = new DataView(dup.buffer);
    let rewritten = 0;
    for (let p = 0; p + 16 <= dup.length; p++) {
      if (dup[p] === 4 && dup[p + 1] === 0x17 && dv.getUint16(p + 2, true) === 12 && dv.getUint16(p + 8, true) === 1) {
        dv.setUint16(p + 8, 0, true);
        rewritten++;
      }
    }
    expect(rewritten).toBeGreaterThanOrEqual(3); // mixed, vector_add, scale<double>
    expect(cubinParams(dup, 'mixed')).toBeUndefined();
    expect(cubinParams(dup, 'vector_add')).toBeUndefined();
    expect(cubinParams(dup, 'none')).toEqual([]);
  });

  it('reads them from PTX', () => {
    const ptx = new Program(SRC).compile({ ...opts, target: 'ptx' });
    for (const [name, params] of Object.entries(expected)) expect(ptxParams(ptx.ptx, name), name).toEqual(params);
    expect(imageParams(ptx.bytes, 'vector_add')).toEqual(expected.vector_add);
    expect(ptxParams(ptx.ptx, 'missing')).toBeUndefined();
  });

  it('declines anything else', () => {
    expect(imageParams(new Uint8Array([1, 2, 3]), 'k')).toBeUndefined();
    expect(cubinParams(new Uint8Array(100).fill(0x7f), 'k')).toBeUndefined();
  });
});
