// The README's tour, verbatim after the check for a GPU (the examples test runs it, so the README stays true).
import { Device, Event, Program, probe } from '../lib/index.js';

const p = probe();
if (!p.ok) {
  console.log(`needs a CUDA GPU: ${p.reason?.split('\n')[0]}`);
  process.exit(0);
}

const device = Device.get(0); // name, arch ('sm_90'), memoryInfo(), attribute('MAX_BLOCK_DIM_X') ...
const code = new Program(`
  extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
  }`).compile(); // CUBIN for this device; cached in memory and in ~/.cache/cudakit

using module = device.loadModule(code);
const saxpy = module.getKernel('saxpy', ['f32', 'ptr', 'ptr', 'i32']); // checked against the compiled kernel

const n = 1 << 20;
using x = device.allocArray(Float32Array, n).copyFromHost(new Float32Array(n).fill(1));
using y = device.allocArray(Float32Array, n).copyFromHost(new Float32Array(n).fill(2));
saxpy.launch({ grid: n / 256, block: 256 }, 3, x, y, n); // saxpy.launch(cfg, '3', ...) does not type-check
console.log(y.copyToHost()[0]); // 5

using stream = device.createStream({ nonBlocking: true });
const start = stream.record();
saxpy.launch({ grid: n / 256, block: 256, stream }, 3, x, y, n);
const end = stream.record();
await end.synchronizeAsync(); // the event loop stays free
console.log(Event.elapsedMs(start, end), 'ms');
