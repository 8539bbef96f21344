import { expect, it } from 'vitest';
import { Device, Event, Program } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

// Spins for about `cycles` clocks, then writes `value` to `flag`: work that is observably still running, then done.
const SPIN = `
extern "C" __global__ void spin(long long cycles, int* flag, int value) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  *flag = value;
}`;

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

  it('synchronize / synchronizeAsync / re-record wait for the work before the event', async () => {
    const m = d().loadModule(new Program(SPIN).compile());
    const spin = m.getKernel('spin', ['i64', 'ptr', 'i32']);
    const cycles = BigInt(Math.round(d().clockRateKHz * 1000 * 0.1)); // ~0.1 s at the max clock
    // Non-blocking: reading the flag on the legacy stream does not wait for this stream's work
    using s = d().createStream({ nonBlocking: true });
    using flag = d().allocArray(Int32Array, 1);
    flag.fill(0, { stream: s });
    spin.launch({ grid: 1, block: 1, stream: s }, cycles, flag, 1);
    const e = s.record({ timing: false });
    expect(e.isDone).toBe(false); // the spin is still running
    e.synchronize();
    expect(e.isDone).toBe(true);
    expect(flag.copyToHost()[0]).toBe(1); // written by the spin before the event
    spin.launch({ grid: 1, block: 1, stream: s }, cycles, flag, 2);
    e.record();
    expect(e.isDone).toBe(false); // re-recorded behind new work
    await e.synchronizeAsync();
    expect(e.isDone).toBe(true);
    expect(flag.copyToHost()[0]).toBe(2);
    expect(() => Event.elapsedMs(e, e)).toThrow(/timing/);
    e.dispose();
    e.dispose();
    expect(() => e.isDone).toThrow(/disposed/);
    m.dispose();
  });
});
