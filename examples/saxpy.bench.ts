// SPDX-License-Identifier: MIT
// A benchmark spec: `cudakit bench examples/saxpy.bench.ts` compiles the kernel, checks it against the JavaScript
// reference below on seeded random inputs, then times it. Options on the command line override the fields
// (`--mode hot`, `--preset quick`, `--json saxpy.json`). Run directly, `tsx examples/saxpy.bench.ts` does the same.
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchSpec } from '../lib/cli/main.js';

const n = 1 << 24;

const spec: BenchSpec = {
  name: 'saxpy',
  source: `
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}`,
  kernel: 'saxpy',
  grid: Math.ceil(n / 256),
  block: 256,
  // y is read and written: an init plus :out makes it both an input and an output.
  args: ['f32=2.5', `ptr:f32[${n}]=uniform(-1,1)`, `ptr:f32[${n}]=uniform(-1,1):out`, `i32=${n}`],
  // Host copies of the arguments, in order; the reference writes the expected y in place. The sum is taken in
  // double and rounded once on the store, as the GPU's fused multiply-add does.
  reference: (args) => {
    const [a, x, y, len] = args as [number, Float32Array, Float32Array, number];
    for (let i = 0; i < len; i++) y[i] = a * x[i]! + y[i]!;
  },
  bytes: 12 * n, // x read, y read and written: 3 floats per element
};

export default spec;

// Run as a script, it benchmarks itself. No top-level await: the CLI imports this module while main() runs.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  void import('../lib/cli/main.js')
    .then(({ main }) => main(['bench', fileURLToPath(import.meta.url)]))
    .then((code) => (process.exitCode = code));
}
