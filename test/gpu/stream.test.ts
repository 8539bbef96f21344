import { expect, it } from 'vitest';
import { Device, Program, Stream, native } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

// Spins for about `cycles` clocks: makes work take long enough to observe ordering and overlap.
const SPIN = `
extern "C" __global__ void spin(long long cycles, int* flag, int value) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  if (flag) *flag = value;
}`;

describeGpu('Stream', () => {
  const d = () => Device.get(0);
  const spin = () => d().loadModule(new Program(SPIN).compile()).getKernel('spin', ['i64', 'ptr', 'i32']);

  it('creates streams with options and validates them', () => {
    const { least, greatest } = d().streamPriorityRange();
    expect(greatest).toBeLessThanOrEqual(least);
    using s = d().createStream({ nonBlocking: true, priority: greatest });
    expect(s.nonBlocking).toBe(true);
    expect(s.priority).toBe(greatest);
    // A driver handle of its own: not the legacy default stream's 0, and not another live stream's
    using other = d().createStream();
    expect(s.handle).not.toBe(0n);
    expect(other.handle).not.toBe(0n);
    expect(other.handle).not.toBe(s.handle);
    expect(native().streamQuery(d().ctx, s.handle)).toBe(true); // the raw layer takes it as a live, idle stream
    expect(() => d().createStream({ priority: least + 1 })).toThrow(RangeError);
    expect(() => d().createStream({ nonBlocking: 1 } as never)).toThrow(TypeError);
    expect(d().defaultStream.handle).toBe(0n);
  });

  it('query() and synchronize() follow the work', () => {
    const k = spin();
    using s = d().createStream();
    using flag = d().allocArray(Int32Array, 1);
    flag.fill(0, { stream: s });
    k.launch({ grid: 1, block: 1, stream: s }, 200_000_000n, flag, 5); // ~0.1 s
    expect(s.query()).toBe(false);
    s.synchronize();
    expect(s.query()).toBe(true);
    expect(flag.copyToHost()[0]).toBe(5);
    k.module.dispose();
  });

  it('synchronizeAsync resolves after the work, without blocking the event loop', async () => {
    const k = spin();
    using s = d().createStream({ nonBlocking: true });
    using flag = d().allocArray(Int32Array, 1);
    flag.fill(0, { stream: s });
    k.launch({ grid: 1, block: 1, stream: s }, 400_000_000n, flag, 9); // ~0.2 s
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    await s.synchronizeAsync();
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(5);
    expect(s.query()).toBe(true);
    expect(flag.copyToHost()[0]).toBe(9);
    // many concurrent waits, each resolved
    await Promise.all(Array.from({ length: 50 }, () => s.synchronizeAsync()));
    k.module.dispose();
  });

  it('waitEvent orders work across streams', () => {
    const k = spin();
    using a = d().createStream({ nonBlocking: true });
    using b = d().createStream({ nonBlocking: true });
    using flag = d().allocArray(Int32Array, 1);
    using copy = d().allocArray(Int32Array, 1);
    flag.fill(0, { stream: a });
    a.synchronize();
    k.launch({ grid: 1, block: 1, stream: a }, 100_000_000n, flag, 77);
    const done = a.record({ timing: false });
    b.waitEvent(done);
    expect(copy.copyFrom(flag, { stream: b })).toEqual({ via: 'device' });
    b.synchronize();
    expect(copy.copyToHost()[0]).toBe(77);
    done.dispose();
    k.module.dispose();
  });

  it('dispose is idempotent and the default stream is never destroyed', () => {
    const s = d().createStream();
    s.dispose();
    s.dispose();
    expect(() => s.handle).toThrow(/disposed/);
    expect(() => s.synchronize()).toThrow(/disposed/);
    d().defaultStream.dispose();
    d().defaultStream.synchronize();
    expect(() => new (Stream as never as new () => Stream)()).toThrow(/createStream/);
  });
});
