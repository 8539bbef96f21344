// Time a kernel from a script: check it against a JavaScript reference, then benchmark it cold with rotating
// inputs, and print a mitata-style report.
import { Device, Program, bench, check, formatResult, inputSets, parseArgSpecs, probe } from '../lib/index.js';

if (!probe().ok) {
  console.log(`needs a CUDA GPU: ${probe().reason}`);
  process.exit(0);
}
const device = Device.get(0);
using module = device.loadModule(
  new Program(`
  extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
  }`).compile(),
);
const saxpy = module.getKernel('saxpy', ['f32', 'ptr', 'ptr', 'i32']);
const n = 1 << 24;
const config = { grid: n / 256, block: 256 };
// y is read and written: an output with an initial value (":out" after its init)
const io = parseArgSpecs(['f32=2.5', `ptr:f32[${n}]=uniform(-1,1)`, `ptr:f32[${n}]=uniform(-1,1):out`, `i32=${n}`]);
const reference = (args: unknown[]): void => {
  const [a, x, y] = args as [number, Float32Array, Float32Array];
  for (let i = 0; i < y.length; i++) y[i] = Math.fround(Math.fround(a * x[i]!) + y[i]!);
};

const verdict = await check({ kernel: saxpy, config }, reference, io, { trials: 3 });
console.log(verdict.summary);
if (!verdict.passed) process.exit(1);

const sets = inputSets(device, io);
const result = await bench(saxpy, config, sets.args, { bytes: 3 * 4 * n, flops: 2 * n });
sets.dispose();
console.log(formatResult(result, { color: process.stdout.isTTY }));
