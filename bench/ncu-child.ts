// SPDX-License-Identifier: MIT
// Run under Nsight Compute by bench/harness.ts and test/gpu/bench.test.ts: plain launches of the copy kernel, or of
// the spin kernel (no blocking kernel: ncu serializes kernels, so a kernel that waits on the host would only time out).
//   ncu ... node --import tsx bench/ncu-child.ts <MiB> <launches>
//   ncu ... node --import tsx bench/ncu-child.ts spin <µs> <launches>
import { Device, Program } from '../lib/index.js';

export const COPY_SOURCE = `
extern "C" __global__ void copy(const float4* __restrict__ in, float4* __restrict__ out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = in[i];
}`;

/** Spins for `ns` nanoseconds of %globaltimer: a kernel of a known length, whatever the clock. */
export const SPIN_SOURCE = `
extern "C" __global__ void spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}`;

export function copyConfig(device: Device): { grid: number; block: number } {
  return { grid: 8 * device.multiprocessorCount, block: 256 };
}

if (process.env.CUDAKIT_NCU_CHILD === '1' && process.argv[2] === 'spin') {
  const ns = BigInt(Math.round(Number(process.argv[3] ?? '20') * 1000));
  const launches = Number(process.argv[4] ?? '6');
  const device = Device.get(0);
  using module = device.loadModule(new Program(SPIN_SOURCE).compile());
  const spin = module.getKernel('spin', ['u64']);
  for (let i = 0; i < launches; i++) {
    spin.launch({ grid: 1, block: 1 }, ns);
    device.synchronize();
  }
} else if (process.env.CUDAKIT_NCU_CHILD === '1') {
  const mib = Number(process.argv[2] ?? '64');
  const launches = Number(process.argv[3] ?? '6');
  const device = Device.get(0);
  using module = device.loadModule(new Program(COPY_SOURCE).compile());
  const copy = module.getKernel('copy', ['ptr', 'ptr', 'i64']);
  const bytes = mib * 2 ** 20;
  using a = device.alloc(bytes).fill(1);
  using b = device.alloc(bytes);
  for (let i = 0; i < launches; i++) {
    copy.launch(copyConfig(device), a, b, bytes / 16);
    device.synchronize();
  }
}
