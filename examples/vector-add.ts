// The main job: compile a kernel at run time, launch it, verify the result and time it. Without a GPU it does the
// part that needs none, compiling the kernel with NVRTC, says why it cannot run it and exits with status 2 (as
// `cudakit info` and `cudakit bench` do: scripts can test for a GPU with it); 1 means a wrong result.
import { Device, Event, Program, probe } from '../lib/index.js';

const source = `
extern "C" __global__ void vector_add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}`;

const p = probe();
if (!p.ok) {
  // probe()'s reasons, one a line (the driver's, NVRTC's), without the paths tried (`npx cudakit info` lists them).
  const [driver, ...more] = (p.reason ?? '').split('\n').map((line) => line.replace(/ \(tried: .*\)$/, ''));
  if (p.nvrtcVersion !== undefined) {
    // PTX: without a device there is no architecture to compile machine code for.
    const ptx = new Program(source, { name: 'vector_add.cu' }).compile({ target: 'ptx' });
    console.log(`vector_add compiles: NVRTC ${ptx.nvrtcVersion} made ${ptx.bytes.byteLength} bytes of PTX`);
  } else {
    console.error(`vector_add cannot be compiled here either: ${more.join('; ')}`);
  }
  console.error(`Running vector_add needs a machine with an NVIDIA GPU, and this one has none usable: ${driver}`);
  for (const line of (p.remedy ?? '').split('\n').filter((l) => l !== '')) console.error(`Remedy: ${line}`);
  process.exit(2);
}

const device = Device.get(0);
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
