import { expect, it } from 'vitest';
import { Device, Program } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

describeGpu('Program on a device', () => {
  it("defaults arch to the current device's", () => {
    const code = new Program('extern "C" __global__ void k() {}').compile({ cache: false });
    expect(code.arch).toBe(Device.get(0).arch);
    expect(code.target).toBe('cubin');
  });

  it("finds CUDA's own headers (cuda_fp16.h, cuda_bf16.h) and runs half-precision code", () => {
    const src = `
      #include <cuda_fp16.h>
      #include <cuda_bf16.h>
      extern "C" __global__ void halves(const __half* a, __nv_bfloat16* b, float* out) {
        out[threadIdx.x] = __half2float(a[threadIdx.x]) + __bfloat162float(b[threadIdx.x]);
      }`;
    const d = Device.get(0);
    const m = d.loadModule(new Program(src).compile({ cache: false }));
    const k = m.getKernel('halves', ['ptr', 'ptr', 'ptr']);
    using a = d.allocArray(Uint16Array, 4);
    using b = d.allocArray(Uint16Array, 4);
    using out = d.allocArray(Float32Array, 4);
    a.copyFromHost(new Uint16Array([0x3c00, 0x4000, 0x3800, 0xbc00])); // 1, 2, 0.5, -1
    b.copyFromHost(new Uint16Array([0x3f80, 0x3f80, 0x4000, 0x4040])); // 1, 1, 2, 3
    k.launch({ grid: 1, block: 4 }, a, b, out);
    expect([...out.copyToHost()]).toEqual([2, 3, 2.5, 2]);
    m.dispose();
  });
});
