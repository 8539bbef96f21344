// The main job: compile a kernel at run time, launch it, verify the result and time it.
import { Device, Event, Program, probe } from '../lib/index.js';

const p = probe();
if (!p.ok) {
  console.log(`cudakit needs a CUDA GPU for this example: ${p.reason}`);
  process.exit(0);
}

const device = Device.get(0);
const source = `
extern "C" __global__ void vector_add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}`;

const code = new Program(source, { name: 'vector_add.cu' }).compile(); // cubin for this device, cached on disk
using module = device.loadModule(code);
const kernel = module.getKernel('vector_add', ['ptr', 'ptr', 'ptr', 'i32']);

const n = 1 << 24;
const a = Float32Array.from({ length: n }, () => Math.random());
const b = Float32Array.from({ length: n }, () => Math.random());
using da = device.allocArray(Float32Array, n).copyFromHost(a);
using db = device.allocArray(Float32Array, n).copyFromHost(b);
using out = device.allocArray(Float32Array, n);

const config = { grid: Math.ceil(n / 256), block: 256 };
kernel.launch(config, da, db, out, n);
const result = out.copyToHost();
let wrong = 0;
for (let i = 0; i < n; i++) if (result[i] !== Math.fround(a[i]! + b[i]!)) wrong++;
console.log(`${device.name}: vector_add of ${n} floats: ${wrong === 0 ? 'correct' : `${wrong} WRONG`}`);

using stream = device.createStream();
const times: number[] = [];
for (let rep = 0; rep < 50; rep++) {
  const start = stream.record();
  kernel.launch({ ...config, stream }, da, db, out, n);
  const end = stream.record();
  times.push(Event.elapsedMs(start, end));
  start.dispose();
  end.dispose();
}
times.sort((x, y) => x - y);
const median = times[times.length >> 1]!;
const gbps = (3 * 4 * n) / (median * 1e-3) / 1e9;
console.log(`median ${(median * 1000).toFixed(1)} µs over ${times.length} runs, ${gbps.toFixed(0)} GB/s`);
process.exitCode = wrong === 0 ? 0 : 1;
