import { expect, it } from 'vitest';
import { Device, Event, Program } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

describeGpu('Event', () => {
  const d = () => Device.get(0);

  it('times GPU work with elapsedMs', () => {
    const src =
      'extern "C" __global__ void spin(long long c) { long long s = clock64(); while (clock64() - s < c) {} }';
    const m = d().loadModule(new Program(src).compile());
    const k = m.getKernel('spin', ['i64']);
    using s = d().createStream();
    const clockHz = d().clockRateKHz * 1000;
    const start = s.record();
    k.launch({ grid: 1, block: 1, stream: s }, BigInt(Math.round(clockHz * 0.02))); // ~20 ms at the max clock
    const end = s.record();
    const ms = Event.elapsedMs(start, end);
    expect(ms).toBeGreaterThan(15);
    expect(ms).toBeLessThan(200);
    expect(end.isDone).toBe(true);
    start.dispose();
    end.dispose();
    m.dispose();
  });

  it('synchronize / synchronizeAsync / re-record', async () => {
    using s = d().createStream();
    const e = s.record({ timing: false });
    e.synchronize();
    await e.synchronizeAsync();
    e.record();
    await e.synchronizeAsync();
    expect(e.isDone).toBe(true);
    expect(() => Event.elapsedMs(e, e)).toThrow(/timing/);
    e.dispose();
    e.dispose();
    expect(() => e.isDone).toThrow(/disposed/);
  });
});
