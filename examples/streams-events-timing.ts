// Two streams working at once, an event dependency between them, and GPU-side timing with events.
import { Device, Event, Program, probe } from '../lib/index.js';

if (!probe().ok) {
  console.log(`needs a CUDA GPU: ${probe().reason}`);
  process.exit(0);
}
const device = Device.get(0);
const src = `
extern "C" __global__ void busy(float* x, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f;
  x[i] = v;
}`;
using module = device.loadModule(new Program(src).compile());
const busy = module.getKernel('busy', ['ptr', 'i32', 'i32']);
const n = 1 << 14; // 64 blocks: each kernel leaves most SMs idle, so two streams can overlap
using a = device.allocArray(Float32Array, n);
using b = device.allocArray(Float32Array, n);
a.fill(1);
b.fill(1);
using s1 = device.createStream({ nonBlocking: true });
using s2 = device.createStream({ nonBlocking: true });
const cfg = { grid: n / 256, block: 256 };

function time(run: () => void, stream = s1): number {
  device.synchronize();
  const start = stream.record();
  run();
  const end = stream.record();
  const ms = Event.elapsedMs(start, end);
  start.dispose();
  end.dispose();
  return ms;
}

busy.launch({ ...cfg, stream: s1 }, a, n, 10); // first launch loads the kernel (lazy loading): keep it out of timings
const serial = time(() => {
  busy.launch({ ...cfg, stream: s1 }, a, n, 20000);
  busy.launch({ ...cfg, stream: s1 }, b, n, 20000);
});
const parallel = time(() => {
  const forked = s1.record({ timing: false });
  s2.waitEvent(forked); // s2 starts after everything s1 had so far
  busy.launch({ ...cfg, stream: s1 }, a, n, 20000);
  busy.launch({ ...cfg, stream: s2 }, b, n, 20000);
  const joined = s2.record({ timing: false });
  s1.waitEvent(joined); // s1's end event waits for s2's kernel too
  forked.dispose();
  joined.dispose();
});
console.log(`one stream: ${serial.toFixed(3)} ms, two streams: ${parallel.toFixed(3)} ms`);
await s1.synchronizeAsync();
console.log('both kernels done; a[0] =', a.copyToHost()[0]);
