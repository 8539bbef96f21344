// CUDA graphs: capture a chain of small launches once, then replay it with one call.
import { Device, Event, Program, probe } from '../lib/index.js';

if (!probe().ok) {
  console.log(`needs a CUDA GPU: ${probe().reason}`);
  process.exit(0);
}
const device = Device.get(0);
using module = device.loadModule(
  new Program('extern "C" __global__ void step(float* x) { x[threadIdx.x] += 1.0f; }').compile(),
);
const step = module.getKernel('step', ['ptr']);
using x = device.allocArray(Float32Array, 256);
x.fill(0);
using stream = device.createStream();
const chain = 100;

function timeLaunches(): number {
  const start = stream.record();
  for (let i = 0; i < chain; i++) step.launch({ grid: 1, block: 256, stream }, x);
  const end = stream.record();
  const ms = Event.elapsedMs(start, end);
  start.dispose();
  end.dispose();
  return ms;
}

stream.beginCapture();
for (let i = 0; i < chain; i++) step.launch({ grid: 1, block: 256, stream }, x);
using graph = stream.endCapture();
using exec = graph.instantiate();
console.log(`captured ${graph.nodeCount} kernel nodes`);

timeLaunches(); // warm-up: the first launch loads the kernel
const direct = timeLaunches();
const start = stream.record();
exec.launch(stream);
const end = stream.record();
const replay = Event.elapsedMs(start, end);
start.dispose();
end.dispose();
console.log(
  `${chain} launches: ${(direct * 1000).toFixed(0)} µs one by one, ${(replay * 1000).toFixed(0)} µs as one graph`,
);
console.log('x[0] =', x.copyToHost()[0], `(expected ${3 * chain})`);
