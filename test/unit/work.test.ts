// SPDX-License-Identifier: MIT
// Function targets (lib/measure/work.ts) without a GPU, over a native layer that records every call: bench(work) and
// compare() refuse each bad target and option with a TypeError or RangeError before any driver call, check()'s guard
// refuses a function target, and WorkSampler takes a sample in the order docs/benchmarking.md gives (flush, hold,
// clock probe, start event, the call, stop event, clock probe, release) on a fake device.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Native } from '../../lib/core/native.js';
import { Device, Kernel, type LaunchConfig, type Stream } from '../../lib/core/index.js';
import { bench } from '../../lib/measure/bench.js';
import { compare } from '../../lib/measure/compare.js';
import { WorkSampler, refuseWorkCandidate } from '../../lib/measure/work.js';

const stub = vi.hoisted(() => ({
  /** Every native call, by name, in order. */
  calls: [] as string[],
  /** What the fake device, stream and events were asked to do, in order. */
  log: [] as string[],
  /** The spin kernel's flag, as the harness allocated it: [0] release, [1] timed out. */
  flag: new Int32Array(2),
  /** What the clock probes wrote: start ns, start clock, end ns, end clock. */
  probe: [0n, 0n, 2000n, 3000n],
}));

// Only the harness's host-mapped flag is served; any other native call is recorded and fails.
vi.mock('../../lib/core/native.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/core/native.js')>();
  const served: Partial<Record<keyof Native, (...args: never[]) => unknown>> = {
    memHostAlloc: (_ctx: bigint, bytes: number) => {
      const b = new ArrayBuffer(bytes);
      stub.flag = new Int32Array(b);
      return b;
    },
    memHostGetDevicePointer: () => 0xf1a6n,
  };
  const fake = new Proxy(
    {},
    {
      get: (_target, key) => {
        if (typeof key !== 'string') return undefined;
        return (...args: never[]) => {
          stub.calls.push(key);
          const f = served[key as keyof Native];
          if (f === undefined) throw new Error(`driver call ${key}`);
          return f(...args);
        };
      },
    },
  );
  return { ...real, getNative: () => fake as Native };
});

vi.mock('../../lib/core/program.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../lib/core/program.js')>()),
  Program: class {
    constructor(readonly source: string) {}
    compile(options: unknown) {
      stub.log.push(`compile ${JSON.stringify(options)}`);
      return { compiled: true };
    }
  },
}));

vi.mock('../../lib/core/event.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../lib/core/event.js')>()),
  Event: class {
    static elapsedMs(start: { name: string }, stop: { name: string }): number {
      stub.log.push(`elapsedMs ${start.name} ${stop.name}`);
      return 0.25;
    }
  },
}));

afterEach(() => {
  stub.calls = [];
  stub.log = [];
});

const work = (stream: Stream): void => void stream;
const deviceNumbered = (ordinal: number): Device =>
  Object.assign(Object.create(Device.prototype) as Device, { ordinal });
const kernelOn = (device: Device): Kernel =>
  Object.assign(Object.create(Kernel.prototype) as Kernel, { device, name: 'k' });
const config: LaunchConfig = { grid: 1, block: 1 };
const WORK = 'a function (stream) => void that enqueues GPU work and returns';
const TARGET =
  'a kernel target { kernel, config, args, name? }, a function target { work, name? } or a function (stream) => void';

describe('bench() of a function target', () => {
  it.each([
    ['an async function', [async () => {}], new TypeError(`Expected ${WORK} for work but received an async function`)],
    [
      'a bad mode',
      [work, { mode: 'warm' }],
      new TypeError("Expected 'cold', 'hot' or 'graph' for options.mode but received 'warm' of type string"),
    ],
    [
      'a device that is not a Device',
      [work, { device: 0 }],
      new TypeError('Expected a Device (Device.get(ordinal)) for options.device but received 0 of type number'),
    ],
    [
      'a negative byte count',
      [work, { bytes: -1 }],
      new RangeError('Expected a positive number for options.bytes but received -1 of type number'),
    ],
    [
      'an unknown preset',
      [work, { preset: 'fast' }],
      new TypeError("Expected 'quick', 'default' or 'rigorous' for options.preset but received 'fast' of type string"),
    ],
    [
      'a misspelt option',
      [work, { inputSet: 4 }],
      new TypeError(
        'Unknown option options.inputSet; known options: mode, preset, rule, inputSets, bytes, flops, name, ' +
          'onProgress, device, timer',
      ),
    ],
    [
      'a launch configuration and arguments',
      [work, config, []],
      new TypeError(
        'Expected bench(work, options) for a function target but received 3 arguments: a function encloses its own ' +
          'buffers and launch configurations',
      ),
    ],
    [
      'neither a kernel nor a function',
      ['saxpy', config, []],
      new TypeError(
        "Expected a Kernel (module.getKernel()), or a function target in its place for kernel but received 'saxpy' " +
          'of type string',
      ),
    ],
  ])('refuses %s before any driver call', async (_what, args, error) => {
    await expect((bench as (...a: unknown[]) => Promise<unknown>)(...args)).rejects.toThrow(error);
    await expect((bench as (...a: unknown[]) => Promise<unknown>)(...args)).rejects.toBeInstanceOf(error.constructor);
    expect(stub.calls).toEqual([]);
  });

  it('refuses a kernel on another device than options.device, before any driver call', async () => {
    const k = kernelOn(deviceNumbered(0));
    await expect(bench(k, config, [], { device: deviceNumbered(1) })).rejects.toThrow(
      new RangeError(
        "Expected device 0 (the kernel's own) or none for options.device but received device 1: a kernel runs on " +
          'the device its module is loaded on',
      ),
    );
    expect(stub.calls).toEqual([]);
  });

  it('reaches the driver with a valid function target: device 0 is looked up first', async () => {
    await expect(bench(work, { preset: 'quick', mode: 'graph' })).rejects.toThrow('driver call deviceGetCount');
    expect(stub.calls).toEqual(['deviceGetCount']);
  });
});

describe('compare() with function targets', () => {
  const kernelTarget = { kernel: kernelOn(deviceNumbered(0)), config, args: [] };
  it.each([
    ['a number', [5, work], new TypeError(`Expected ${TARGET} for a but received 5 of type number`)],
    ['null', [work, null], new TypeError(`Expected ${TARGET} for b but received null`)],
    [
      'work that is not a function',
      [work, { work: 'x' }],
      new TypeError(`Expected ${WORK} for b.work but received 'x' of type string`),
    ],
    [
      'a function target with a launch configuration',
      [{ work, config }, work],
      new TypeError('Unknown option a.config; known options: work, name'),
    ],
    [
      'a name that is not a string',
      [{ work, name: 7 }, work],
      new TypeError('Expected a string for a.name but received 7 of type number'),
    ],
    [
      'a kernel target without a Kernel',
      [work, { kernel: {}, config, args: [] }],
      new TypeError(
        'Expected a Kernel (module.getKernel()), or a function target in its place for b.kernel but received an ' +
          'object of type Object',
      ),
    ],
    [
      "a kernel target's name that is not a string",
      [kernelTarget, { ...kernelTarget, name: 3 }],
      new TypeError('Expected a string for b.name but received 3 of type number'),
    ],
  ])('refuses %s before any driver call', async (_what, [a, b], error) => {
    await expect(compare(a as never, b as never)).rejects.toThrow(error);
    expect(stub.calls).toEqual([]);
  });

  it('refuses bad rounds and a device that is not the kernel target’s, before any driver call', async () => {
    await expect(compare(work, work, { rounds: 0 })).rejects.toThrow(
      new RangeError('Expected an integer in [1, 50] for options.rounds but received 0 of type number'),
    );
    await expect(compare(work, kernelTarget, { device: deviceNumbered(2) })).rejects.toThrow(
      /^Expected device 0 \(the kernel's own\) or none for options\.device but received device 2/,
    );
    expect(stub.calls).toEqual([]);
  });

  it('reaches the driver with two valid function targets: device 0 is looked up first', async () => {
    await expect(compare(work, { work, name: 'again' }, { preset: 'quick' })).rejects.toThrow(
      'driver call deviceGetCount',
    );
    expect(stub.calls).toEqual(['deviceGetCount']);
  });
});

describe("check()'s candidate", () => {
  it('is refused as a function target, with what to do instead', () => {
    const refused =
      'Expected a kernel target { kernel, config } for candidate but received a function target: check() launches ' +
      'the candidate on seeded inputs of its own, which a function that encloses its buffers cannot take; check ' +
      'the kernels the function launches, or compare what it writes with a reference yourself';
    expect(() => refuseWorkCandidate(work)).toThrow(new TypeError(refused));
    expect(() => refuseWorkCandidate({ work, name: 'w' })).toThrow(new TypeError(refused));
    expect(() => refuseWorkCandidate({ kernel: kernelOn(deviceNumbered(0)), config })).not.toThrow();
    expect(stub.calls).toEqual([]);
  });
});

/** A Sampler as WorkSampler uses it: a device (kernels, a probe buffer), its stream (events, capture) and a flush. */
function fakeSampler() {
  const log = stub.log;
  let events = 0;
  const stream = {
    handle: 0x5ea0n,
    record: () => {
      const e = { name: `event${events++}`, record: () => void log.push(`record ${e.name}`) };
      return e;
    },
    synchronize: () => void log.push(`synchronize (flag ${stub.flag[0]})`),
    beginCapture: (o: unknown) => void log.push(`beginCapture ${JSON.stringify(o)}`),
    endCapture: () => {
      log.push('endCapture');
      return {
        instantiate: () => {
          log.push('instantiate');
          return { handle: 0x9a9n };
        },
        dispose: () => void log.push('graph dispose'),
      };
    },
  };
  const kernel = (name: string) => ({
    launch: (c: LaunchConfig, ...args: unknown[]) =>
      void log.push(`${name} grid ${String(c.grid)} block ${String(c.block)}: ${args.map(String).join(', ')}`),
  });
  const device = {
    contextHandle: 0xc7n,
    multiprocessorCount: 4,
    loadModule: () => ({ getKernel: (name: string) => kernel(name) }),
    alloc: (bytes: number) => ({
      ptr: 0x1000n,
      bytes,
      copyToHost: (dst: BigUint64Array) => {
        dst.set(stub.probe);
        return dst;
      },
    }),
  };
  return { device, stream, flushL2: () => void log.push('flushL2') };
}

describe('WorkSampler', () => {
  const made = () => {
    const w = WorkSampler.for(fakeSampler() as never);
    stub.log.length = 0;
    return w;
  };
  const traced = (s: Stream): void => void stub.log.push(`work on 0x${s.handle.toString(16)} (flag ${stub.flag[0]})`);

  it('is made once per device, from the harness kernels, with a host-mapped flag', () => {
    const sampler = fakeSampler();
    const w = WorkSampler.for(sampler as never);
    expect(WorkSampler.for(sampler as never)).toBe(w);
    expect(w.stream).toBe(sampler.stream);
    expect(stub.log).toEqual(['compile {"cudaIncludes":false}']);
    expect(stub.calls).toEqual(['memHostAlloc', 'memHostGetDevicePointer']);
  });

  it('takes a cold sample: flush, hold, probe, start, the call, stop, probe, release, then reads it', () => {
    const samples = made().take(traced, 1, true, true);
    expect(stub.log).toEqual([
      'flushL2',
      `cudakit_block grid 1 block 1: ${0xf1a6}, 1000000000`,
      `cudakit_clock_probe grid 4 block 1: ${0x1000}`,
      'record event0',
      'work on 0x5ea0 (flag 0)', // the call enqueues while the spin kernel holds the stream
      'record event1',
      `cudakit_clock_probe grid 4 block 1: ${0x1010}`,
      'synchronize (flag 1)', // released before the wait
      'elapsedMs event0 event1',
    ]);
    expect(samples).toEqual([{ gpuMs: 0.25, launchUs: expect.any(Number), clockMHz: 1500 }]);
    expect(samples[0]!.launchUs).toBeGreaterThanOrEqual(0);
  });

  it('takes hot samples without the flush, and unheld samples without the spin kernel', () => {
    made().take(traced, 2, false, false);
    expect(stub.log.filter((l) => l.startsWith('flush') || l.startsWith('cudakit_block'))).toEqual([]);
    expect(stub.log.filter((l) => l.startsWith('work on'))).toHaveLength(2);
  });

  it('releases the stream when the work throws or returns a Promise, and reports that', () => {
    const w = made();
    expect(() =>
      w.take(
        () => {
          throw new Error('boom');
        },
        1,
        false,
        true,
      ),
    ).toThrow('boom');
    expect(stub.flag[0]).toBe(1);
    stub.flag[0] = 0;
    expect(() => w.take((() => Promise.resolve()) as never, 1, false, true)).toThrow(
      new TypeError(`Expected ${WORK} for work but received a function that returned a Promise`),
    );
    expect(stub.flag[0]).toBe(1);
    expect(stub.log.some((l) => l.startsWith('synchronize'))).toBe(false);
  });

  it("raises the sampler's time-out when the spin kernel gave up", () => {
    const w = made();
    const timedOut = (s: Stream): void => {
      traced(s);
      stub.flag[1] = 1; // as the spin kernel marks it
    };
    let error: unknown;
    try {
      w.take(timedOut, 1, false, true);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'CUDAKIT_BENCH_TIMEOUT' });
    expect((error as Error).message).toMatch(/^the benchmark's blocking kernel timed out: the work waited for its/);
  });

  it('captures calls into a graph on its stream, and ends a capture the work broke', () => {
    const w = made();
    const exec = w.capture(traced, 3);
    expect(exec.handle).toBe(0x9a9n);
    expect(stub.log).toEqual([
      'beginCapture {"mode":"threadLocal"}',
      ...Array<string>(3).fill('work on 0x5ea0 (flag 0)'),
      'endCapture',
      'instantiate',
      'graph dispose',
    ]);
    stub.log.length = 0;
    const broken = (): void => {
      throw new Error('not capturable');
    };
    expect(() => w.capture(broken, 2)).toThrow('not capturable');
    expect(stub.log).toEqual(['beginCapture {"mode":"threadLocal"}', 'endCapture', 'graph dispose']);
  });
});
