import { expect, it } from 'vitest';
import { CudaError, Device, Program } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

describeGpu('Graph', () => {
  it('captures launches and copies, then replays them', () => {
    const d = Device.get(0);
    const m = d.loadModule(new Program('extern "C" __global__ void inc(int* x) { x[threadIdx.x] += 1; }').compile());
    const inc = m.getKernel('inc', ['ptr']);
    using x = d.allocArray(Int32Array, 32);
    x.fill(0);
    d.synchronize();
    using s = d.createStream();
    s.beginCapture();
    for (let i = 0; i < 10; i++) inc.launch({ grid: 1, block: 32, stream: s }, x);
    const graph = s.endCapture();
    expect(graph.nodeCount).toBe(10);
    const exec = graph.instantiate();
    graph.dispose();
    expect(x.copyToHost()[0]).toBe(0); // captured, not run
    for (let r = 0; r < 5; r++) exec.launch(s);
    s.synchronize();
    expect([...x.copyToHost()].every((v) => v === 50)).toBe(true);
    exec.dispose();
    exec.dispose();
    m.dispose();
  });

  it('reports what cannot be captured as a CudaError, and the stream stays usable', () => {
    const d = Device.get(0);
    using s = d.createStream();
    using buf = d.allocArray(Float32Array, 4);
    s.beginCapture();
    let err: unknown;
    try {
      buf.copyToHost(); // a synchronous copy on the legacy stream is illegal during a global capture
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CudaError);
    expect(() => s.endCapture()).toThrow(CudaError);
    // Out of capture: work on the stream runs (a fill still being captured would leave the buffer as it was)
    buf.fill(2.5, { stream: s });
    s.synchronize();
    expect(s.query()).toBe(true);
    expect([...buf.copyToHost()]).toEqual([2.5, 2.5, 2.5, 2.5]);
    // ... and so does a kernel launched on it
    const m = d.loadModule(
      new Program('extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }').compile(),
    );
    m.getKernel('twice', ['ptr']).launch({ grid: 1, block: 4, stream: s }, buf);
    s.synchronize();
    expect([...buf.copyToHost()]).toEqual([5, 5, 5, 5]);
    m.dispose();
  });
});
