// Two reductions, a naive one (shared-memory tree) and one with warp shuffles: both checked against a JavaScript
// reference, then compared in interleaved rounds.
import { Device, Program, check, compare, formatComparison, formatResult, parseArgSpecs, probe } from '../lib/index.js';

if (!probe().ok) {
  console.log(`needs a CUDA GPU: ${probe().reason}`);
  process.exit(0);
}
const device = Device.get(0);
// Each block reduces 2 × 256 elements to one partial sum.
using module = device.loadModule(
  new Program(`
  extern "C" __global__ void reduce_naive(const float* in, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * 512 + threadIdx.x;
    float v = (i < n ? in[i] : 0.0f) + (i + 256 < n ? in[i + 256] : 0.0f);
    s[threadIdx.x] = v;
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
      if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
  }
  extern "C" __global__ void reduce_shuffle(const float* in, float* out, int n) {
    __shared__ float warps[8];
    int i = blockIdx.x * 512 + threadIdx.x;
    float v = (i < n ? in[i] : 0.0f) + (i + 256 < n ? in[i + 256] : 0.0f);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
      v = threadIdx.x < 8 ? warps[threadIdx.x] : 0.0f;
      for (int o = 4; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
      if (threadIdx.x == 0) out[blockIdx.x] = v;
    }
  }`).compile(),
);
const n = 1 << 24;
const blocks = n / 512;
const config = { grid: blocks, block: 256 };
const naive = module.getKernel('reduce_naive', ['ptr', 'ptr', 'i32']);
const shuffle = module.getKernel('reduce_shuffle', ['ptr', 'ptr', 'i32']);
const io = parseArgSpecs([`ptr:f32[${n}]=uniform(-1,1)`, `ptr:f32[${blocks}]:out`, `i32=${n}`]);
const reference = (args: unknown[]): void => {
  const [x, out] = args as [Float32Array, Float32Array];
  for (let b = 0; b < out.length; b++) {
    let sum = 0;
    for (let k = 0; k < 512; k++) sum += x[b * 512 + k]!;
    out[b] = sum;
  }
};
for (const k of [naive, shuffle]) {
  const r = await check({ kernel: k, config }, reference, io, { trials: 3, atol: 1e-4, rtol: 1e-4 });
  console.log(`${k.name}: ${r.summary}`);
  if (!r.passed) process.exit(1);
}
using x = device
  .allocArray(Float32Array, n)
  .copyFromHost(Float32Array.from({ length: n }, () => Math.random() * 2 - 1));
using out = device.allocArray(Float32Array, blocks);
const result = await compare(
  { kernel: naive, config, args: [x, out, n], name: 'naive' },
  { kernel: shuffle, config, args: [x, out, n], name: 'warp shuffle' },
  { bytes: 4 * n },
);
console.log(formatResult(result.a));
console.log(formatResult(result.b));
console.log(formatComparison(result));
