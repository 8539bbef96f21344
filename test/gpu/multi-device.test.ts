// SPDX-License-Identifier: MIT
// Two or more GPUs: device 1 from the main thread, from the Promise forms and from a worker_thread; an event of one
// device ordering a stream of the other; copies between devices, through host memory and then through peer access;
// `cudakit info`'s peer matrix. These skip, with the count, on a machine with one GPU (describeMultiGpu). The part
// that one GPU can check (copies within a device, peer access with itself) runs wherever there is a GPU.
//
// Order matters in this file: the copies through host memory run before any test enables peer access in this thread,
// and the kernel that dereferences the other device's memory runs last (were peer access wrong, it would fault, and a
// fault ends every later GPU call of the process).
import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';
import {
  CudaError,
  type DeviceArray,
  Device,
  Event,
  Program,
  type Stream,
  type TypedArrayConstructor,
  native,
} from '../../lib/index.js';
import { cli, describeGpu, describeMultiGpu } from '../helpers.js';

// scale: y[i] = a * x[i]. spin: about `cycles` clocks, then *flag = value (work observably still running, then done).
const KERNELS = `
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void spin(long long cycles, int* flag, int value) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  *flag = value;
}`;

function kernels(device: Device) {
  const module = device.loadModule(new Program(KERNELS).compile({ arch: device.arch }));
  return {
    module,
    scale: module.getKernel('scale', ['ptr', 'ptr', 'f32', 'i32']),
    spin: module.getKernel('spin', ['i64', 'ptr', 'i32']),
  };
}

/** Clocks for about `seconds` of spinning at the device's highest clock (longer at a lower one). */
const cycles = (device: Device, seconds: number): bigint => BigInt(Math.round(device.clockRateKHz * 1000 * seconds));

/** The buffer's contents, read on `stream` (for a pageable destination the copy is complete on return). */
const read = <T extends TypedArrayConstructor>(buffer: DeviceArray<T>, stream: Stream): InstanceType<T> =>
  buffer.copyToHost<InstanceType<T>>(undefined, { stream });

/** 0, 1, 2 ... plus `base`: a pattern that tells every element, and every buffer, apart. */
const pattern = (n: number, base: number): Float32Array => Float32Array.from({ length: n }, (_, i) => base + i);

const SELF_PEER =
  'Expected a device other than device 0 (peer access is between two devices) for other but received an object ' +
  'of type Device';

describeGpu('Multi-device API on any GPU', () => {
  it('copies within one device and says so', () => {
    const d = Device.get(0);
    using s = d.createStream();
    using a = d.allocArray(Float32Array, 1000).copyFromHost(pattern(1000, 7));
    using b = d.allocArray(Float32Array, 1010);
    expect(b.copyFrom(a)).toEqual({ via: 'device' });
    expect(b.copyFrom(a, { offset: 10, stream: s })).toEqual({ via: 'device' });
    s.synchronize();
    const out = b.copyToHost();
    expect([...out.subarray(0, 10)]).toEqual([...pattern(10, 7)]);
    expect([...out.subarray(10)]).toEqual([...pattern(1000, 7)]);
    using empty = d.alloc(0);
    expect(b.copyFrom(empty)).toEqual({ via: 'device' });
  });

  it('rejects peer access of a device with itself, and anything but a Device, before the driver is called', () => {
    const d = Device.get(0);
    expect(() => d.canAccessPeer(d)).toThrow(new RangeError(SELF_PEER));
    expect(() => d.enablePeerAccess(d)).toThrow(new RangeError(SELF_PEER));
    expect(() => d.canAccessPeer(0 as never)).toThrow(
      new TypeError('Expected a Device for other but received 0 of type number'),
    );
  });

  it('cudakit info prints the peer matrix only where there are two devices or more', async () => {
    const r = await cli(['info']);
    expect(r.code).toBe(0);
    expect(r.stdout.includes('peer access (row device → column device')).toBe(Device.count() >= 2);
  });
});

describeMultiGpu('Two GPUs', () => {
  const d0 = () => Device.get(0);
  const d1 = () => Device.get(1);

  it('sees two or more distinct devices', () => {
    expect(Device.count()).toBeGreaterThanOrEqual(2);
    const all = Device.all();
    expect(all.map((d) => d.ordinal)).toEqual(all.map((_, i) => i));
    expect(new Set(all.map((d) => d.uuid)).size).toBe(all.length);
    expect(new Set(all.map((d) => d.pciBusId)).size).toBe(all.length);
    expect(d1()).not.toBe(d0());
    expect(d1().ctx).not.toBe(d0().ctx); // each device its own primary context
  });

  it('allocates, launches and records events on device 1 from the main thread', () => {
    const d = d1();
    const k = kernels(d);
    const n = 1 << 20;
    using s = d.createStream();
    const used0 = d0().memoryInfo().poolUsedBytes;
    const used1 = d.memoryInfo().poolUsedBytes;
    using x = d.allocArray(Float32Array, n, { stream: s }).copyFromHost(pattern(n, 1), { stream: s });
    using y = d.allocArray(Float32Array, n, { stream: s });
    const start = s.record();
    k.scale.launch({ grid: n / 256, block: 256, stream: s }, x, y, 3, n);
    const end = s.record();
    expect(Event.elapsedMs(start, end)).toBeGreaterThan(0);
    expect(end.isDone).toBe(true);
    const out = read(y, s);
    s.synchronize();
    if (d.usesMemoryPools) {
      // The memory is device 1's: its pool grew by both buffers, device 0's did not.
      expect(d.memoryInfo().poolUsedBytes).toBeGreaterThanOrEqual(used1 + 2 * n * 4);
      expect(d0().memoryInfo().poolUsedBytes).toBeLessThanOrEqual(used0);
    }
    const expected = pattern(n, 1).map((v) => 3 * v);
    expect(out.every((v, i) => v === expected[i])).toBe(true);
    start.dispose();
    end.dispose();
    k.module.dispose();
  });

  it('runs the Promise forms on device 1: compileAsync, then event, stream and device waits', async () => {
    const d = d1();
    // NVRTC on a libuv pool thread (no cache, so the compile really runs there)
    const code = await new Program(KERNELS).compileAsync({ arch: d.arch, cache: false });
    using module = d.loadModule(code);
    const spin = module.getKernel('spin', ['i64', 'ptr', 'i32']);
    using s = d.createStream({ nonBlocking: true });
    using flag = d.allocArray(Int32Array, 1);
    flag.fill(0, { stream: s });
    const long = cycles(d, 0.2);

    spin.launch({ grid: 1, block: 1, stream: s }, long, flag, 7);
    const e = s.record({ timing: false });
    expect(e.isDone).toBe(false); // still spinning
    await e.synchronizeAsync();
    expect(e.isDone).toBe(true);
    expect(read(flag, s)[0]).toBe(7);

    spin.launch({ grid: 1, block: 1, stream: s }, long, flag, 8);
    expect(s.query()).toBe(false);
    await s.synchronizeAsync();
    expect(s.query()).toBe(true);
    expect(read(flag, s)[0]).toBe(8);

    spin.launch({ grid: 1, block: 1, stream: s }, long, flag, 9);
    await d.synchronizeAsync();
    expect(s.query()).toBe(true);
    expect(read(flag, s)[0]).toBe(9);

    // Waits on both devices at once, each resolved by its own device's work.
    const k0 = kernels(d0());
    using s0 = d0().createStream({ nonBlocking: true });
    using flag0 = d0().allocArray(Int32Array, 1);
    flag0.fill(0, { stream: s0 });
    k0.spin.launch({ grid: 1, block: 1, stream: s0 }, cycles(d0(), 0.2), flag0, 10);
    spin.launch({ grid: 1, block: 1, stream: s }, long, flag, 11);
    await Promise.all([s0.synchronizeAsync(), s.synchronizeAsync()]);
    expect([s0.query(), s.query()]).toEqual([true, true]);
    expect(read(flag0, s0)[0]).toBe(10);
    expect(read(flag, s)[0]).toBe(11);
    e.dispose();
    k0.module.dispose();
  });

  it('works on device 1 from a worker_thread, with copies from device 0', async () => {
    const code = `
      const { parentPort } = require('node:worker_threads');
      // the compiled package (npm run build:ts): worker threads do not inherit the TypeScript loader
      import('${new URL('../../dist/index.js', import.meta.url).href}').then(({ Device, Event, Program }) => {
        const d0 = Device.get(0);
        const d1 = Device.get(1);
        const n = 4096;
        const x = Float32Array.from({ length: n }, (_, i) => i + 1);
        const module = d1.loadModule(new Program(${JSON.stringify(KERNELS)}).compile({ arch: d1.arch }));
        const scale = module.getKernel('scale', ['ptr', 'ptr', 'f32', 'i32']);
        const s = d1.createStream();
        const dx = d1.allocArray(Float32Array, n, { stream: s }).copyFromHost(x, { stream: s });
        const dy = d1.allocArray(Float32Array, n, { stream: s });
        const start = s.record();
        scale.launch({ grid: n / 256, block: 256, stream: s }, dx, dy, 2, n);
        const end = s.record();
        const ms = Event.elapsedMs(start, end);
        const y = dy.copyToHost(undefined, { stream: s });
        s.synchronize();
        // device 0 -> device 1: through host memory first (this thread has not enabled peer access) ...
        const a0 = d0.allocArray(Float32Array, n).copyFromHost(x);
        const b1 = d1.allocArray(Float32Array, n);
        const viaHost = b1.copyFrom(a0).via;
        const fromHost = b1.copyToHost();
        // ... then directly, where the devices allow it (enabled twice: the second call does nothing)
        let viaPeer = null;
        let fromPeer = null;
        if (d1.canAccessPeer(d0)) {
          d1.enablePeerAccess(d0);
          d1.enablePeerAccess(d0);
          a0.copyFromHost(x.map((v) => -v));
          viaPeer = b1.copyFrom(a0).via;
          fromPeer = b1.copyToHost();
        }
        parentPort.postMessage({ uuid: d1.uuid, ms, y, viaHost, fromHost, viaPeer, fromPeer });
        // nothing is disposed: the worker's env cleanup releases it
      }).catch((e) => parentPort.postMessage({ error: String((e && e.stack) || e) }));
    `;
    type Result = {
      error?: string;
      uuid: string;
      ms: number;
      y: Float32Array;
      viaHost: string;
      fromHost: Float32Array;
      viaPeer: string | null;
      fromPeer: Float32Array | null;
    };
    const r = await new Promise<Result>((resolve, reject) => {
      const w = new Worker(code, { eval: true });
      w.once('message', (m) => {
        resolve(m as Result);
        void w.terminate();
      });
      w.once('error', reject);
    });
    expect(r.error).toBeUndefined();
    expect(r.uuid).toBe(d1().uuid);
    expect(r.ms).toBeGreaterThan(0);
    const x = pattern(4096, 1);
    expect(r.y.every((v, i) => v === 2 * x[i]!)).toBe(true);
    expect(r.viaHost).toBe('host');
    expect(r.fromHost.every((v, i) => v === x[i])).toBe(true);
    if (d1().canAccessPeer(d0())) {
      expect(r.viaPeer).toBe('peer');
      expect(r.fromPeer!.every((v, i) => v === -x[i]!)).toBe(true);
    } else {
      expect(r.viaPeer).toBeNull();
    }
  });

  it('orders a stream of device 1 behind an event of device 0', () => {
    const k0 = kernels(d0());
    const k1 = kernels(d1());
    using s0 = d0().createStream({ nonBlocking: true });
    using s1 = d1().createStream({ nonBlocking: true });
    using src0 = d0().allocArray(Int32Array, 1);
    using flag1 = d1().allocArray(Int32Array, 1);
    using dst1 = d1().allocArray(Int32Array, 1);
    src0.fill(0, { stream: s0 });
    flag1.fill(0, { stream: s1 });
    dst1.fill(0, { stream: s1 });
    s0.synchronize();
    s1.synchronize();
    k0.spin.launch({ grid: 1, block: 1, stream: s0 }, cycles(d0(), 0.3), src0, 42);
    const e0 = s0.record({ timing: false });
    s1.waitEvent(e0);
    k1.spin.launch({ grid: 1, block: 1, stream: s1 }, 0n, flag1, 1);
    const e1 = s1.record({ timing: false });
    expect(e0.isDone).toBe(false);
    expect(e1.isDone).toBe(false); // held behind device 0's spin
    dst1.copyFrom(src0, { stream: s1 }); // ordered after the wait: sees the 42 the spin writes at its end
    s1.synchronize();
    expect(e0.isDone).toBe(true);
    expect(read(flag1, s1)[0]).toBe(1);
    expect(read(dst1, s1)[0]).toBe(42);
    e0.dispose();
    e1.dispose();
    k0.module.dispose();
    k1.module.dispose();
  });

  it('copies between devices through host memory while peer access is not enabled, and says so', () => {
    for (const [from, to] of [
      [d0(), d1()],
      [d1(), d0()],
    ] as const) {
      expect(to.hasPeerAccess(from)).toBe(false); // nothing in this thread enabled it yet
      for (const n of [1000, 6 << 20]) {
        // 6M floats = 24 MiB: the staged path of large host copies
        using src = from.allocArray(Float32Array, n).copyFromHost(pattern(n, 100 * from.ordinal));
        using dst = to.allocArray(Float32Array, n + 10);
        expect(dst.copyFrom(src)).toEqual({ via: 'host' });
        expect(dst.copyFrom(src, { offset: 10 })).toEqual({ via: 'host' });
        const out = dst.copyToHost();
        const expected = pattern(n, 100 * from.ordinal);
        expect(out.subarray(0, 10).every((v, i) => v === expected[i])).toBe(true);
        expect(out.subarray(10).every((v, i) => v === expected[i])).toBe(true);
      }
      // On a stream of the destination: ordered after the stream's work (here, a fill the copy must overwrite)
      using s = to.createStream({ nonBlocking: true });
      using src = from.allocArray(Float32Array, 256).copyFromHost(pattern(256, 5));
      using dst = to.allocArray(Float32Array, 256);
      dst.fill(-1, { stream: s });
      expect(dst.copyFrom(src, { stream: s })).toEqual({ via: 'host' });
      s.synchronize();
      expect([...read(dst, s)]).toEqual([...pattern(256, 5)]);
      using other = from.createStream();
      expect(() => dst.copyFrom(src, { stream: other })).toThrow(
        new TypeError(
          `Expected a stream of device ${to.ordinal} (this buffer's) for options.stream but received a stream of ` +
            `device ${from.ordinal}`,
        ),
      );
    }
  });

  it('reports peer capability, enables peer access idempotently, and copies peer to peer once enabled', () => {
    const [a, b] = [d0(), d1()];
    const canAB = a.canAccessPeer(b);
    const canBA = b.canAccessPeer(a);
    // What the driver says of each direction (cuDeviceCanAccessPeer), asked through the raw layer.
    const driver = (from: Device, to: Device): boolean =>
      native().deviceCanAccessPeer(native().deviceGet(from.ordinal), native().deviceGet(to.ordinal));
    expect([canAB, canBA]).toEqual([driver(a, b), driver(b, a)]);
    using onA = a.allocArray(Float32Array, 6 << 20).copyFromHost(pattern(6 << 20, 3));
    using onB = b.allocArray(Float32Array, 6 << 20).copyFromHost(pattern(6 << 20, 9));

    // a may access b's memory: behind cudakit's back first (the raw layer), so enablePeerAccess meets
    // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED and must take it as done.
    if (canAB) {
      native().ctxEnablePeerAccess(a.ctx, b.ctx);
      a.enablePeerAccess(b);
      a.enablePeerAccess(b);
      let again: unknown;
      try {
        native().ctxEnablePeerAccess(a.ctx, b.ctx);
      } catch (e) {
        again = e;
      }
      expect(again).toBeInstanceOf(CudaError);
      expect((again as CudaError).code).toBe('CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED');
      // One direction only: into a's memory peer to peer, into b's still through the host.
      using toA = a.allocArray(Float32Array, 6 << 20);
      using toB = b.allocArray(Float32Array, 6 << 20);
      expect(toA.copyFrom(onB)).toEqual({ via: 'peer' });
      expect(toB.copyFrom(onA)).toEqual({ via: 'host' });
      const fromB = pattern(6 << 20, 9);
      expect(toA.copyToHost().every((v, i) => v === fromB[i])).toBe(true);
    } else {
      let error: unknown;
      try {
        a.enablePeerAccess(b);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CudaError);
      expect((error as CudaError).code).toBe('CUDA_ERROR_PEER_ACCESS_UNSUPPORTED');
      expect((error as CudaError).message).toMatch(/Remedy: .*canAccessPeer\(other\) is false/);
    }

    // b may access a's memory: the plain path.
    if (canBA) {
      b.enablePeerAccess(a);
      b.enablePeerAccess(a);
      expect(b.hasPeerAccess(a)).toBe(true);
      using s = b.createStream({ nonBlocking: true });
      using toB = b.allocArray(Float32Array, (6 << 20) + 16);
      toB.fill(0, { stream: s });
      expect(toB.copyFrom(onA, { stream: s, offset: 16 })).toEqual({ via: 'peer' });
      s.synchronize();
      const out = read(toB, s);
      const fromA = pattern(6 << 20, 3);
      expect(out.subarray(0, 16).every((v) => v === 0)).toBe(true);
      expect(out.subarray(16).every((v, i) => v === fromA[i])).toBe(true);
    } else {
      expect(() => b.enablePeerAccess(a)).toThrow(/CUDA_ERROR_PEER_ACCESS_UNSUPPORTED/);
      using toB = b.allocArray(Float32Array, 6 << 20);
      expect(toB.copyFrom(onA)).toEqual({ via: 'host' }); // still copies, through the host
    }
  });

  it('cudakit info lists every GPU and the peer matrix', async () => {
    const r = await cli(['info']);
    expect(r.code).toBe(0);
    const all = Device.all();
    expect(r.stdout).toContain(`· ${all.length} devices\n`);
    const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    for (const d of all) expect(r.stdout).toMatch(new RegExp(`^\\s*${d.ordinal}\\s+${escape(d.name)}\\s`, 'm'));
    const lines = r.stdout.split('\n');
    const head = lines.indexOf("peer access (row device → column device's memory)");
    expect(head).toBeGreaterThan(0);
    expect(lines[head + 1]!.split(/\s+/)).toEqual(['#', ...all.map((d) => String(d.ordinal))]);
    for (const from of all) {
      const cells = lines[head + 2 + from.ordinal]!.trim().split(/\s+/);
      expect(cells[0]).toBe(String(from.ordinal));
      for (const to of all) {
        const expected = from === to ? '—' : from.canAccessPeer(to) ? 'yes' : 'no';
        expect(cells[1 + to.ordinal], `${from.ordinal} → ${to.ordinal}`).toBe(expected);
      }
    }
  });

  // Last: were peer access not in effect for pool memory, this kernel would fault and end the file's GPU work.
  it("lets a kernel on device 1 read and write device 0's memory once peer access is enabled", (ctx) => {
    if (!d1().canAccessPeer(d0())) ctx.skip('device 1 cannot access device 0 memory on this machine');
    d1().enablePeerAccess(d0());
    const k1 = kernels(d1());
    const n = 1 << 16;
    using x0 = d0().allocArray(Float32Array, n).copyFromHost(pattern(n, 2)); // stream-ordered: device 0's pool
    using y0 = d0().allocArray(Float32Array, n);
    y0.fill(0);
    d0().synchronize();
    using s1 = d1().createStream();
    k1.scale.launch({ grid: n / 256, block: 256, stream: s1 }, x0, y0, 0.5, n);
    s1.synchronize();
    const expected = pattern(n, 2).map((v) => 0.5 * v);
    expect(y0.copyToHost().every((v, i) => v === expected[i])).toBe(true);
    k1.module.dispose();
  });
});
