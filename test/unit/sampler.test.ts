// SPDX-License-Identifier: MIT
// lib/core/sampler.ts over a stub native layer and a fake device: what bench() asks of native/bench.cc (the spec of
// every batch), bound launches that keep the launch attributes, graph capture and the helper kernels.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BenchSpec, Native } from '../../lib/core/native.js';
import type { Device, Kernel, LaunchConfig } from '../../lib/core/index.js';

const stub = vi.hoisted(() => ({
  specs: [] as BenchSpec[],
  launched: [] as number[],
  limits: [] as [number, number][],
  failLimit: false,
}));

vi.mock('../../lib/core/native.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/core/native.js')>();
  const fake: Partial<Native> = {
    memHostAlloc: () => new ArrayBuffer(8),
    memHostGetDevicePointer: () => 0xf1a6n,
    ctxSetLimit: (_ctx, limit, value) => {
      if (stub.failLimit) throw new Error('no persisting L2');
      stub.limits.push([limit, Number(value)]);
    },
    benchSamples: (spec) => {
      stub.specs.push(spec);
      // sample i: gpuMs = i + 1 (the empty pair: 200 − i, so the median is 100), launchUs = 2, clockMHz = 1500
      const out = new Float64Array(spec.order.length * 3);
      spec.order.forEach((_, i) => out.set([spec.empty === true ? 200 - i : i + 1, 2, 1500], i * 3));
      return out;
    },
    launchKernel: (slot) => void stub.launched.push(slot),
    driverGetVersion: () => 12080,
  };
  return { ...real, getNative: () => fake as Native };
});

vi.mock('../../lib/core/program.js', () => ({
  Program: class {
    constructor(readonly source: string) {}
    compile() {
      return { compiled: true };
    }
  },
}));

// Imported after the mocks are declared (vi.mock is hoisted; this import sees the stubs).
const { BoundLaunch, Sampler } = await import('../../lib/core/sampler.js');

interface FakeKernel {
  handle: bigint;
  launches: [LaunchConfig, unknown[]][];
  launch(config: LaunchConfig, ...args: unknown[]): void;
}

function fakeDevice() {
  const log: string[] = [];
  const helper = (handle: bigint): FakeKernel => {
    const k: FakeKernel = { handle, launches: [], launch: (config, ...args) => void k.launches.push([config, args]) };
    return k;
  };
  const kernels = new Map<string, FakeKernel>();
  const stream = {
    handle: 0x5ea0n,
    synchronize: () => void log.push('synchronize'),
    beginCapture: (o: unknown) => void log.push(`beginCapture ${JSON.stringify(o)}`),
    endCapture: () => {
      log.push('endCapture');
      return {
        instantiate: () => {
          log.push('instantiate');
          return { handle: 0x9a9n, dispose: () => void log.push('exec dispose') };
        },
        dispose: () => void log.push('graph dispose'),
      };
    },
  };
  let ptr = 0x1000n;
  const device = {
    log,
    kernels,
    stream,
    ctx: 0xc7n,
    multiprocessorCount: 4,
    l2CacheBytes: 1024,
    loadModule: () => ({
      getKernel: (name: string) => {
        const k = helper(BigInt(kernels.size + 1));
        kernels.set(name, k);
        return k;
      },
    }),
    createStream: (o: unknown) => {
      log.push(`createStream ${JSON.stringify(o)}`);
      return stream;
    },
    alloc: (bytes: number) => {
      const b = { ptr, byteLength: bytes, fill: () => b };
      ptr += 0x1000n;
      return b;
    },
  };
  return device;
}

/** A kernel whose bindLaunch records what it was asked to bind. */
function boundKernel(device: ReturnType<typeof fakeDevice>) {
  let next = 40;
  const k = {
    device,
    bound: [] as { config: LaunchConfig; args: readonly unknown[]; released: boolean }[],
    bindLaunch(config: LaunchConfig, args: readonly unknown[]) {
      const record = { config, args, released: false };
      k.bound.push(record);
      return { slot: next++, release: () => void (record.released = true) };
    },
  };
  return k;
}

afterEach(() => {
  stub.specs = [];
  stub.launched = [];
  stub.limits = [];
  stub.failLimit = false;
});

describe('Sampler', () => {
  it('is made once per device: its own non-blocking stream, 2 × L2 to flush, no persisting L2 lines', () => {
    const device = fakeDevice();
    const s = Sampler.for(device as unknown as Device);
    expect(Sampler.for(device as unknown as Device)).toBe(s);
    expect(s.stream).toBe(device.stream);
    expect(device.log).toEqual(['createStream {"nonBlocking":true}']);
    expect(stub.limits).toEqual([[6, 0]]); // CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0
    expect([...device.kernels.keys()]).toEqual([
      'cudakit_block',
      'cudakit_clock_probe',
      'cudakit_flush',
      'cudakit_copy',
      'cudakit_idle',
    ]);
    stub.failLimit = true;
    expect(() => Sampler.for(fakeDevice() as unknown as Device)).not.toThrow(); // devices without persisting L2
  });

  it('binds the launch kernel.launch() would make, on its own stream, launch attributes kept', () => {
    const device = fakeDevice();
    const s = Sampler.for(device as unknown as Device);
    const k = boundKernel(device);
    const config: LaunchConfig = { grid: 8, block: 64, sharedMemBytes: 128, cooperative: true, clusterDim: [2, 1, 1] };
    const b = s.bind(k as unknown as Kernel, config, [1n, 2]);
    expect(b).toBeInstanceOf(BoundLaunch);
    expect(k.bound[0]!.config).toEqual({ ...config, stream: s.stream });
    expect(k.bound[0]!.args).toEqual([1n, 2]);
    b.launch();
    expect(stub.launched).toEqual([b.slot]);
    b.release();
    expect(k.bound[0]!.released).toBe(true);
    expect(() => s.bind(k as unknown as Kernel, config, 'x' as never)).toThrow(TypeError);
  });

  it('takes samples natively: one batch spec per call, the samples in order', () => {
    const device = fakeDevice();
    const s = Sampler.for(device as unknown as Device);
    const k = boundKernel(device);
    const launches = [
      s.bind(k as unknown as Kernel, { grid: 1, block: 1 }, []),
      s.bind(k as unknown as Kernel, { grid: 1, block: 1 }, []),
    ];
    const samples = s.take({ launches, order: [1, 0, 1], flushL2: true });
    expect(samples).toEqual([
      { gpuMs: 1, launchUs: 2, clockMHz: 1500 },
      { gpuMs: 2, launchUs: 2, clockMHz: 1500 },
      { gpuMs: 3, launchUs: 2, clockMHz: 1500 },
    ]);
    expect(stub.specs[0]).toMatchObject({
      ctx: 0xc7n,
      stream: 0x5ea0n,
      slots: [launches[0]!.slot, launches[1]!.slot],
      order: [1, 0, 1],
      flush: true,
      graph: 0n,
      empty: false,
      noBlock: false,
      flushVectors: 2048 / 16,
      flushBlocks: 16,
      probeBlocks: 4,
      flagDev: 0xf1a6n,
      timeoutNs: 5e9,
      blockFn: 1n,
      probeFn: 2n,
      flushFn: 3n,
    });
    s.take({ launches, order: [0], flushL2: false, hold: false });
    expect(stub.specs[1]).toMatchObject({ flush: false, noBlock: true });
    s.take({ graph: { handle: 0x9a9n } as never, order: [0, 0], flushL2: false });
    expect(stub.specs[2]).toMatchObject({ slots: [], graph: 0x9a9n, empty: false });
  });

  it('refuses launches bound by another sampler', () => {
    const a = Sampler.for(fakeDevice() as unknown as Device);
    const otherDevice = fakeDevice();
    const b = Sampler.for(otherDevice as unknown as Device);
    const foreign = b.bind(boundKernel(otherDevice) as unknown as Kernel, { grid: 1, block: 1 }, []);
    expect(() => a.take({ launches: [foreign], order: [0], flushL2: false })).toThrow(
      /Expected launches bound by this device's sampler for launches\[\]/,
    );
    expect(stub.specs).toHaveLength(0);
  });

  it('measures the empty event pair once: the median of 200', () => {
    const s = Sampler.for(fakeDevice() as unknown as Device);
    expect(s.eventOverheadMs()).toBe(101); // 200 − i for i = 0..199, sorted: the 101st smallest
    expect(s.eventOverheadMs()).toBe(101);
    expect(stub.specs).toHaveLength(1);
    expect(stub.specs[0]).toMatchObject({ empty: true, slots: [], flush: false });
    expect(stub.specs[0]!.order).toHaveLength(200);
  });

  it('captures rotating launches into a graph on its stream, and ends a capture a failure broke', () => {
    const device = fakeDevice();
    const s = Sampler.for(device as unknown as Device);
    const k = boundKernel(device);
    const launches = [0, 1, 2].map(() => s.bind(k as unknown as Kernel, { grid: 1, block: 1 }, []));
    const exec = s.capture(launches, 5);
    expect(exec.handle).toBe(0x9a9n);
    expect(stub.launched).toEqual([0, 1, 2, 0, 1].map((i) => launches[i]!.slot));
    expect(device.log.slice(1)).toEqual([
      'beginCapture {"mode":"threadLocal"}',
      'endCapture',
      'instantiate',
      'graph dispose',
    ]);
    device.log.length = 0;
    const broken = Object.assign(Object.create(launches[0]!) as (typeof launches)[0], {
      launch: () => {
        throw new Error('refused');
      },
    });
    expect(() => s.capture([broken], 2)).toThrow('refused');
    expect(device.log).toEqual(['beginCapture {"mode":"threadLocal"}', 'endCapture', 'graph dispose']);
  });

  it('runs the helper kernels for the peak bandwidth on its stream, 8 blocks per SM, over 16-byte vectors', () => {
    const device = fakeDevice();
    const s = Sampler.for(device as unknown as Device);
    const a = device.alloc(4096);
    const b = device.alloc(4096);
    s.copyByKernel(a as never, b as never, 4096);
    s.readByKernel(a as never, 4096);
    const config = { grid: 32, block: 256, stream: s.stream };
    expect(device.kernels.get('cudakit_copy')!.launches).toEqual([[config, [a.ptr, b.ptr, 256n]]]);
    const [[readConfig, [src, vectors]]] = device.kernels.get('cudakit_flush')!.launches as [[LaunchConfig, unknown[]]];
    expect([readConfig, src, vectors]).toEqual([config, a.ptr, 256n]);
  });

  it('reads the driver version as major.minor', () => {
    expect(Sampler.for(fakeDevice() as unknown as Device).driverVersion).toBe('12.8');
  });
});
