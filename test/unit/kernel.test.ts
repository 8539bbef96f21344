// SPDX-License-Identifier: MIT
// lib/core/kernel.ts: a Kernel over a stub native layer, so launch validation, the slot header (launch attributes
// included) and argument packing are tested without a GPU.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ParamInfo } from '../../lib/core/image.js';
import { KernelFunction } from '../../lib/core/function.js';
import type { Signature } from '../../lib/core/args.js';
import { Kernel, type LaunchConfig } from '../../lib/core/kernel.js';
import { INTERNAL } from '../../lib/core/lifetime.js';
import type { Module } from '../../lib/core/module.js';
import type { Native } from '../../lib/core/native.js';
import { Stream } from '../../lib/core/stream.js';
import type { Device } from '../../lib/core/device.js';
import { CudaError } from '../../lib/core/errors.js';

const stub = vi.hoisted(() => ({
  paramInfo: null as [number, number][] | null,
  buffer: undefined as ArrayBuffer | undefined,
  offsets: [] as number[],
  launches: 0,
  exLaunches: 0,
  slots: 0,
  destroyFails: false,
}));

vi.mock('../../lib/core/native.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/core/native.js')>();
  const fake: Partial<Native> = {
    funcGetParamInfo: () => stub.paramInfo,
    kernelSlotCreate: (_ctx, _fn, buffer, offsets) => {
      stub.buffer = buffer;
      stub.offsets = offsets;
      return ++stub.slots;
    },
    kernelSlotDestroy: () => {},
    funcGetAttribute: (_ctx, _fn, id) => (id === 0 ? 1024 : id === 8 ? 48 * 1024 : 0),
    funcSetAttribute: () => {},
    launchKernel: () => void stub.launches++,
    launchKernelEx: () => void stub.exLaunches++,
    streamDestroy: () => {
      if (stub.destroyFails) throw new Error('cuStreamDestroy failed');
    },
  };
  return { ...real, getNative: () => fake as Native };
});

const fakeModule = {
  device: {
    ctx: 1n,
    limits: {
      maxThreadsPerBlock: 1024,
      maxGridDim: [2 ** 31 - 1, 65535, 65535],
      maxBlockDim: [1024, 1024, 64],
      maxSharedMemoryPerBlockOptinBytes: 227 * 1024,
    },
  },
} as unknown as Module;
const fakeStream = { handle: 0x5000n } as unknown as Stream;

/** A Stream over the stub native layer: its handle throws once it is disposed, as a real one's does. */
function stubStream(handle: bigint): Stream {
  return new Stream(INTERNAL, fakeModule.device as unknown as Device, handle, true, false, 0);
}

function stubKernel<const S extends Signature>(signature: S, fromImage?: ParamInfo[]): Kernel<S> {
  return new Kernel(INTERNAL, fakeModule, 2n, 'k', signature, fromImage);
}

describe('launch options', () => {
  const known = 'known options: grid, block, sharedMemBytes, stream, cooperative, clusterDim';

  it('rejects unknown keys with the known ones and a suggestion, before the driver is called', () => {
    const k = stubKernel(['ptr', 'i32']);
    const launch = k.launch.bind(k) as (...a: unknown[]) => void;
    const before = stub.launches;
    expect(() => launch({ grid: 1, block: 1, sharedMemByte: 1024 }, 0n, 1)).toThrow(
      new TypeError(`Unknown launch option 'sharedMemByte' (did you mean 'sharedMemBytes'?); ${known}`),
    );
    expect(() => launch({ grid: 1, block: 1, streams: fakeStream }, 0n, 1)).toThrow(
      new TypeError(`Unknown launch option 'streams' (did you mean 'stream'?); ${known}`),
    );
    expect(() => launch({ grid: 1, block: 1, foo: undefined }, 0n, 1)).toThrow(
      new TypeError(`Unknown launch option 'foo'; ${known}`),
    );
    expect(() => launch({ grid: 1, block: 1, blockDim: 32 }, 0n, 1)).toThrow(/'blockDim' \(did you mean 'block'\?\)/);
    expect(() => launch({ grid: 1, block: 1, cluster: [2, 1, 1] }, 0n, 1)).toThrow(/did you mean 'clusterDim'/);
    expect(() => launch({ grid: 1, block: 1, Stream: fakeStream }, 0n, 1)).toThrow(/did you mean 'stream'/);
    expect(() => launch({ grid: 1, block: 1, id: 1 }, 0n, 1)).toThrow(
      new TypeError(`Unknown launch option 'id'; ${known}`),
    );
    // Also when the argument count is wrong: the option is the first thing reported.
    expect(() => launch({ grid: 1, block: 1, strem: fakeStream }, 0n)).toThrow(/Unknown launch option 'strem'/);
    expect(stub.launches).toBe(before);
  });

  it('catches a key added to a config object after it was launched with', () => {
    const k = stubKernel(['ptr', 'i32']);
    const cfg: Record<string, unknown> = { grid: 1, block: 1 };
    const launch = k.launch.bind(k) as (...a: unknown[]) => void;
    const before = stub.launches;
    launch(cfg, 0n, 1);
    launch(cfg, 0n, 1);
    cfg.sharedMemByte = 1024;
    expect(() => launch(cfg, 0n, 1)).toThrow(/Unknown launch option 'sharedMemByte'/);
    delete cfg.sharedMemByte;
    cfg.sharedMemBytes = 1024;
    launch(cfg, 0n, 1);
    expect(stub.launches).toBe(before + 3);
    expect(new Uint32Array(stub.buffer!, 0, 8)[6]).toBe(1024);
  });

  it('validates shared memory again after setMaxDynamicSharedMemory, a negative size included', () => {
    const k = stubKernel(['ptr']);
    const before = stub.launches;
    k.launch({ grid: 1, block: 1, sharedMemBytes: 1024 }, 0n);
    expect(() => k.launch({ grid: 1, block: 1, sharedMemBytes: 100 * 1024 }, 0n)).toThrow(RangeError);
    k.setMaxDynamicSharedMemory(100 * 1024);
    expect(() => k.launch({ grid: 1, block: 1, sharedMemBytes: -1 }, 0n)).toThrow(RangeError);
    k.launch({ grid: 1, block: 1, sharedMemBytes: 100 * 1024 }, 0n);
    expect(stub.launches).toBe(before + 2);
    expect(new Uint32Array(stub.buffer!, 0, 8)[6]).toBe(100 * 1024);
  });

  it('launches a correct config, writing the header and the arguments into the slot buffer', () => {
    const k = stubKernel(['ptr', { struct: ['f32', 'f32x2', 'i32'] }, 'f32x4', 'i32']);
    const before = stub.launches;
    k.launch(
      { grid: [3, 2], block: 128, sharedMemBytes: 256, stream: fakeStream },
      0xabc0n,
      [1.5, [2, 3], 4],
      [5, 6, 7, 8],
      9,
    );
    expect(stub.launches).toBe(before + 1);
    const buf = stub.buffer!;
    expect([...new Uint32Array(buf, 0, 7)]).toEqual([3, 2, 1, 128, 1, 1, 256]);
    expect(new BigUint64Array(buf, 0, 8)[4]).toBe(0x5000n);
    // Offsets from the signature (no driver or image information): ptr 0, struct 8 (align 8), float4 32, int 48.
    expect(stub.offsets).toEqual([0, 8, 32, 48]);
    const dv = new DataView(buf, 64);
    expect(dv.getBigUint64(0, true)).toBe(0xabc0n);
    expect([dv.getFloat32(8, true), dv.getFloat32(16, true), dv.getFloat32(20, true), dv.getInt32(24, true)]).toEqual([
      1.5, 2, 3, 4,
    ]);
    expect([32, 36, 40, 44].map((o) => dv.getFloat32(o, true))).toEqual([5, 6, 7, 8]);
    expect(dv.getInt32(48, true)).toBe(9);
  });

  it('accepts every known option, cooperative and clusterDim included', () => {
    const k = stubKernel([]);
    const before = stub.launches;
    const config = {
      grid: 2,
      block: 32,
      sharedMemBytes: 0,
      stream: fakeStream,
      cooperative: false,
      clusterDim: [2, 1, 1],
    } as const;
    expect(Object.keys(config)).toEqual(known.replace('known options: ', '').split(', '));
    k.launch(config);
    // Known keys set to undefined mean their defaults (plain JavaScript callers write this).
    const launch = k.launch.bind(k) as (...a: unknown[]) => void;
    launch({ ...config, cooperative: true, clusterDim: undefined });
    launch({ grid: 1, block: 1, stream: undefined, sharedMemBytes: undefined });
    expect(stub.launches).toBe(before + 3);
  });

  it('validates bindLaunch configs the same way', () => {
    const k = stubKernel(['ptr', 'i32']);
    expect(() => k.bindLaunch({ grid: 1, block: 1, sharedMemByte: 1024 } as never, [0n, 1])).toThrow(
      new TypeError(`Unknown launch option 'sharedMemByte' (did you mean 'sharedMemBytes'?); ${known}`),
    );
    expect(() => k.bindLaunch({ grid: 1, block: 1, streams: fakeStream } as never, [0n, 1])).toThrow(
      /'streams' \(did you mean 'stream'\?\)/,
    );
    const bound = k.bindLaunch({ grid: 4, block: 32, stream: fakeStream }, [0n, 7]);
    expect(new DataView(stub.buffer!, 64).getInt32(8, true)).toBe(7);
    bound.release();
  });
});

describe('frozen launch configs', () => {
  const header = (): number[] => [...new Uint32Array(stub.buffer!, 0, 7)];
  const streamHandle = (): bigint => new BigUint64Array(stub.buffer!, 0, 5)[4]!;

  /** A kernel whose device counts the reads of its limits: every checked write of an array grid reads them. */
  function watchedKernel(signature: Signature): { kernel: Kernel; checks: () => number } {
    let reads = 0;
    const limits = (fakeModule.device as unknown as { limits: object }).limits;
    const device = {
      ctx: 1n,
      get limits() {
        reads++;
        return limits;
      },
    };
    const module = { device } as unknown as Module;
    return { kernel: new Kernel(INTERNAL, module, 2n, 'k', signature), checks: () => reads };
  }

  it('are checked at the first two launches in a row and kept after, writing only the arguments', () => {
    const { kernel: k, checks } = watchedKernel(['i32']);
    const config = Object.freeze({ grid: Object.freeze([3, 2] as const), block: 128, stream: stubStream(0x5000n) });
    const before = stub.launches;
    k.launch(config, 1);
    k.launch(config, 2);
    const seen = checks();
    expect(seen).toBeGreaterThan(0);
    for (let i = 3; i <= 10; i++) k.launch(config, i);
    expect(checks()).toBe(seen);
    expect(stub.launches).toBe(before + 10);
    expect(header()).toEqual([3, 2, 1, 128, 1, 1, 0]);
    expect(streamHandle()).toBe(0x5000n);
    expect(new DataView(stub.buffer!, 64).getInt32(0, true)).toBe(10);
  });

  it('are checked again after another config was launched with, and the header follows each launch', () => {
    const { kernel: k, checks } = watchedKernel([]);
    const a = Object.freeze({ grid: Object.freeze([4] as const), block: 64, stream: fakeStream });
    for (let i = 0; i < 3; i++) k.launch(a);
    k.launch({ grid: [8], block: 32, sharedMemBytes: 512 });
    expect(header()).toEqual([8, 1, 1, 32, 1, 1, 512]);
    expect(streamHandle()).toBe(0n);
    const seen = checks();
    k.launch(a);
    expect(checks()).toBeGreaterThan(seen);
    expect(header()).toEqual([4, 1, 1, 64, 1, 1, 0]);
    expect(streamHandle()).toBe(0x5000n);
  });

  it('are checked at every launch when seen through a Proxy, or with a prototype of their own', () => {
    const grid = Object.freeze([2, 2] as const);
    const proxied = new Proxy(Object.freeze({ grid, block: 1 }), {});
    const derived = Object.freeze(Object.assign(Object.create({ sharedMemBytes: 0 }) as object, { grid, block: 1 }));
    for (const config of [proxied, derived] as LaunchConfig[]) {
      const { kernel: k, checks } = watchedKernel([]);
      const counts: number[] = [];
      for (let i = 0; i < 4; i++) {
        k.launch(config);
        counts.push(checks());
      }
      // every launch checks the grid again (its limits read), the first also the block
      expect(counts.slice(1).map((n, i) => n - counts[i]!)).toEqual([1, 1, 1]);
    }
  });

  it('are not kept when a launch could read them differently: a dimension array not frozen, a getter', () => {
    const k = stubKernel([]);
    const grid: [number, number] = [2, 2];
    const withArray = Object.freeze({ grid, block: 1 });
    k.launch(withArray);
    k.launch(withArray);
    grid[1] = 5;
    k.launch(withArray);
    expect(header().slice(0, 3)).toEqual([2, 5, 1]);
    let blocks = 16;
    const withGetter = Object.freeze({
      grid: 1,
      get block() {
        return blocks;
      },
    });
    k.launch(withGetter);
    k.launch(withGetter);
    blocks = 1024;
    k.launch(withGetter);
    expect(header().slice(3, 6)).toEqual([1024, 1, 1]);
    blocks = 1025;
    expect(() => k.launch(withGetter)).toThrow(RangeError);
    // a frozen array whose element is a getter
    let y = 2;
    const elements = Object.freeze(
      Object.defineProperty([4, 0], 1, { get: () => y, enumerable: true }) as unknown as readonly [number, number],
    );
    const withGetterElement = Object.freeze({ grid: elements, block: 1 });
    k.launch(withGetterElement);
    k.launch(withGetterElement);
    y = 70000;
    expect(() => k.launch(withGetterElement)).toThrow(RangeError);
    y = 7;
    k.launch(withGetterElement);
    expect(header().slice(0, 3)).toEqual([4, 7, 1]);
  });

  it('are kept again after setMaxDynamicSharedMemory, and after another config failed its checks', () => {
    const { kernel: k, checks } = watchedKernel([]);
    const a = Object.freeze({ grid: Object.freeze([4] as const), block: 64 });
    const keptAfter = (launches: number): boolean => {
      for (let i = 0; i < launches; i++) k.launch(a);
      const seen = checks();
      k.launch(a);
      return checks() === seen;
    };
    expect(keptAfter(2)).toBe(true);
    k.setMaxDynamicSharedMemory(64 * 1024);
    expect(keptAfter(1)).toBe(true);
    expect(() => k.launch({ grid: 0, block: 1 })).toThrow(RangeError);
    expect(keptAfter(2)).toBe(true);
  });

  it('fail the launch once their stream is disposed, and after setMaxDynamicSharedMemory are checked again', () => {
    const k = stubKernel([]);
    const stream = stubStream(0x6000n);
    const config = Object.freeze({ grid: 1, block: 1, sharedMemBytes: 40 * 1024, stream });
    for (let i = 0; i < 3; i++) k.launch(config);
    const before = stub.launches;
    stream.dispose();
    expect(() => k.launch(config)).toThrow(/^Stream has been disposed/);
    expect(() => k.launch(config)).toThrow(/^Stream has been disposed/);
    const live = Object.freeze({ ...config, stream: stubStream(0x7000n) });
    for (let i = 0; i < 3; i++) k.launch(live);
    k.setMaxDynamicSharedMemory(32 * 1024);
    expect(() => k.launch(live)).toThrow(RangeError);
    k.setMaxDynamicSharedMemory(64 * 1024);
    k.launch(live);
    expect(stub.launches).toBe(before + 4);
    expect(streamHandle()).toBe(0x7000n);
  });

  it('are checked again after any stream is disposed, and kept again after that check', () => {
    const { kernel: k, checks } = watchedKernel([]);
    const config = Object.freeze({ grid: Object.freeze([4] as const), block: 64, stream: stubStream(0x6000n) });
    for (let i = 0; i < 3; i++) k.launch(config);
    const kept = checks();
    k.launch(config);
    expect(checks()).toBe(kept);
    stubStream(0x7000n).dispose(); // not the config's: a kernel does not know which streams its config names
    k.launch(config);
    const checkedAgain = checks();
    expect(checkedAgain).toBeGreaterThan(kept);
    k.launch(config);
    k.launch(config);
    expect(checks()).toBe(checkedAgain);
    expect(streamHandle()).toBe(0x6000n);
  });

  it('fail the launch once their stream is disposed, also when destroying it threw', () => {
    const k = stubKernel([]);
    const stream = stubStream(0x6000n);
    const config = Object.freeze({ grid: 1, block: 1, stream });
    for (let i = 0; i < 3; i++) k.launch(config);
    stub.destroyFails = true;
    try {
      expect(() => stream.dispose()).toThrow('cuStreamDestroy failed');
    } finally {
      stub.destroyFails = false;
    }
    expect(stream.disposed).toBe(true);
    expect(() => k.launch(config)).toThrow(/^Stream has been disposed/);
  });

  it('are checked at every launch when their stream is not a Stream: its handle may change', () => {
    const k = stubKernel([]);
    let handle = 0x6000n;
    const streamLike = {
      get handle() {
        return handle;
      },
    } as unknown as Stream;
    const config = Object.freeze({ grid: 1, block: 1, stream: streamLike });
    for (let i = 0; i < 3; i++) k.launch(config);
    handle = 0x7000n;
    k.launch(config);
    expect(streamHandle()).toBe(0x7000n);
  });

  it('fail the launch once the kernel is disposed', () => {
    const k = stubKernel([]);
    const config = Object.freeze({ grid: 1, block: 1 });
    for (let i = 0; i < 3; i++) k.launch(config);
    const before = stub.launches;
    k.dispose();
    expect(() => k.launch(config)).toThrow("Kernel 'k' has been disposed and can no longer be used");
    expect(stub.launches).toBe(before);
  });
});

describe('signature checks against the compiled parameters', () => {
  afterEach(() => {
    stub.paramInfo = null;
  });

  it('says how to describe a float2 member when the sizes differ by alignment', () => {
    stub.paramInfo = [[0, 24]]; // struct S { float a; float2 b; int c; }
    expect(() => stubKernel([{ struct: ['f32', 'f32', 'f32', 'i32'] }])).toThrow(
      new TypeError(
        "Parameter 0 of kernel 'k' is 24 bytes but the signature says { struct: [f32, f32, f32, i32] } (16 bytes) " +
          '(alignment: CUDA aligns float2 to 8 bytes and float4 to 16; ' +
          "if the struct holds a float2/float4, describe that member as 'f32x2'/'f32x4' " +
          '(likewise i32x2, f64x2, ...), and if it is declared __align__(N), give the struct align: N)',
      ),
    );
    const k = stubKernel([{ struct: ['f32', 'f32x2', 'i32'] }]);
    expect(k.signature).toEqual([{ struct: ['f32', 'f32x2', 'i32'] }]);
  });

  it('names the __align__(N) that gives the compiled size', () => {
    // struct __align__(16) S { float a; }: 16 bytes; from the image when the driver cannot tell.
    expect(() =>
      stubKernel(
        ['ptr', { struct: ['f32'] }],
        [
          { offset: 0, size: 8 },
          { offset: 16, size: 16 },
        ],
      ),
    ).toThrow(
      new RegExp(
        /is 16 bytes but the signature says \{ struct: \[f32\] \} \(4 bytes\) /.source +
          /\(alignment: .*declared __align__\(16\), give the struct align: 16\)$/.source,
      ),
    );
    expect(
      stubKernel(
        ['ptr', { struct: ['f32'], align: 16 }],
        [
          { offset: 0, size: 8 },
          { offset: 16, size: 16 },
        ],
      ).signature,
    ).toHaveLength(2);
  });

  it('adds no alignment advice where alignment cannot explain the difference', () => {
    stub.paramInfo = [[0, 4]];
    expect(() => stubKernel(['f64'])).toThrow(
      new TypeError("Parameter 0 of kernel 'k' is 4 bytes but the signature says f64 (8 bytes)"),
    );
    stub.paramInfo = [[0, 12]];
    expect(() => stubKernel([{ struct: ['f32', 'i32'] }])).toThrow(/\(8 bytes\)$/);
  });
});

describe('launch attributes in the slot header', () => {
  /** Header words: 7 the flags (bit 0 cooperative), 10..12 the cluster dimensions (native/common.h). */
  const attributes = (buffer: ArrayBuffer): number[] => {
    const u32 = new Uint32Array(buffer, 0, 16);
    return [u32[7]!, u32[10]!, u32[11]!, u32[12]!];
  };

  it('writes cooperative and clusterDim into the header and launches through the one slot launch', () => {
    const k = stubKernel(['i32']);
    const [plain, ex] = [stub.launches, stub.exLaunches];
    k.launch({ grid: 4, block: 32, cooperative: true }, 1);
    expect(attributes(stub.buffer!)).toEqual([1, 0, 0, 0]);
    k.launch({ grid: 4, block: 32, clusterDim: 2 }, 1);
    expect(attributes(stub.buffer!)).toEqual([0, 2, 1, 1]);
    k.launch({ grid: [4, 2], block: 32, cooperative: true, clusterDim: [2, 2] }, 1);
    expect(attributes(stub.buffer!)).toEqual([1, 2, 2, 1]);
    // Native code reads the header: cuLaunchKernelEx with attributes, cuLaunchKernel without; JS calls one function.
    expect([stub.launches - plain, stub.exLaunches - ex]).toEqual([3, 0]);
  });

  it('clears them for the next launch without them, so an ordinary launch stays a plain cuLaunchKernel', () => {
    const k = stubKernel(['i32']);
    k.launch({ grid: 4, block: 32, cooperative: true, clusterDim: [2, 1, 1] }, 1);
    k.launch({ grid: 4, block: 32 }, 1);
    expect(attributes(stub.buffer!)).toEqual([0, 0, 0, 0]);
    (k.launch as (...a: unknown[]) => void)({ grid: 4, block: 32, cooperative: false, clusterDim: undefined }, 1);
    expect(attributes(stub.buffer!)).toEqual([0, 0, 0, 0]);
  });

  it('rejects a bad clusterDim before anything is written or launched', () => {
    const k = stubKernel(['i32']);
    k.launch({ grid: 4, block: 32, clusterDim: [2, 1, 1] }, 1);
    const before = stub.launches;
    const launch = k.launch.bind(k) as (...a: unknown[]) => void;
    expect(() => launch({ grid: 4, block: 32, clusterDim: [2, 0] }, 1)).toThrow(
      new RangeError('Expected an integer in [1, 4294967295] for clusterDim.y but received 0 of type number'),
    );
    expect(() => launch({ grid: 4, block: 32, clusterDim: 'x' }, 1)).toThrow(TypeError);
    expect(stub.launches).toBe(before);
    expect(attributes(stub.buffer!)).toEqual([0, 2, 1, 1]); // the last good launch's, not half of a bad one
  });

  it('binds exactly the header launch() writes: grid, block, shared memory, stream and attributes', () => {
    const k = stubKernel(['ptr', 'i32']);
    const config: LaunchConfig = {
      grid: [6, 2],
      block: [64, 2],
      sharedMemBytes: 512,
      stream: fakeStream,
      cooperative: true,
      clusterDim: [2, 1, 1],
    };
    k.launch(config, 0x10n, 5);
    const launched = new Uint8Array(stub.buffer!.slice(0));
    const bound = k.bindLaunch(config, [0x10n, 5]);
    expect(new Uint8Array(stub.buffer!)).toEqual(launched);
    bound.release();
    const plain = k.bindLaunch({ grid: 1, block: 1 }, [0n, 0]);
    expect(attributes(stub.buffer!)).toEqual([0, 0, 0, 0]);
    plain.release();
  });

  it('validates bound launches with the same messages as launch()', () => {
    const k = stubKernel(['ptr', 'i32']);
    const bind = (config: unknown, args: unknown[]) => () => k.bindLaunch(config as LaunchConfig, args);
    const launch = (config: unknown, args: unknown[]) => () => (k.launch as (...a: unknown[]) => void)(config, ...args);
    const cases: [unknown, unknown[]][] = [
      [{ grid: 1, block: 2048 }, [0n, 1]],
      [{ grid: 1, block: 1, sharedMemBytes: 1 << 20 }, [0n, 1]],
      [{ grid: 0, block: 1 }, [0n, 1]],
      [{ grid: 1, block: 1, clusterDim: [0] }, [0n, 1]],
      [{ grid: 1, block: 1 }, [0n]],
      [{ grid: 1, block: 1 }, [0n, 'x']],
      [null, [0n, 1]],
    ];
    for (const [config, args] of cases) {
      let expected: unknown;
      try {
        launch(config, args)();
      } catch (e) {
        expected = e;
      }
      expect(expected, JSON.stringify(config)).toBeInstanceOf(Error);
      expect(bind(config, args)).toThrow(expected as Error);
    }
  });
});

describe('a Kernel is a KernelFunction', () => {
  it('shares its attributes, limits and parameter list', () => {
    stub.paramInfo = [
      [0, 8],
      [8, 4],
    ];
    const k = stubKernel(['ptr', 'i32']);
    expect(k).toBeInstanceOf(KernelFunction);
    expect(k.parameters()).toEqual([
      { offset: 0, size: 8 },
      { offset: 8, size: 4 },
    ]);
    expect(k.attributes.maxThreadsPerBlock).toBe(1024);
    expect(k.attributes.maxDynamicSharedSizeBytes).toBe(48 * 1024);
    stub.paramInfo = null;
  });

  it('is unusable once disposed, and says so', () => {
    const k = stubKernel(['i32']);
    k.dispose();
    expect(() => k.handle).toThrow("Kernel 'k' has been disposed and can no longer be used");
    expect(() => k.attributes).toThrow(/has been disposed/);
    expect(() => k.launch({ grid: 1, block: 1 }, 1)).toThrow(/has been disposed/);
    expect(() => k.bindLaunch({ grid: 1, block: 1 }, [1])).toThrow(/has been disposed/);
    k.dispose(); // idempotent
  });
});

describe('after a sticky error', () => {
  // Last in this file: a sticky CudaError marks the process's context lost for good.
  it('a kept launch config fails before the driver is called', () => {
    const k = stubKernel([]);
    const config = Object.freeze({ grid: 1, block: 1 });
    for (let i = 0; i < 3; i++) k.launch(config);
    const before = stub.launches;
    const lost = new CudaError({
      code: 'CUDA_ERROR_ILLEGAL_ADDRESS',
      api: 'cuStreamSynchronize',
      result: 700,
      explanation: 'x',
    });
    expect(lost.sticky).toBe(true);
    expect(() => k.launch(config)).toThrow(
      expect.objectContaining({ code: 'CUDA_ERROR_ILLEGAL_ADDRESS', api: 'cuLaunchKernel', name: 'CudaError' }),
    );
    expect(stub.launches).toBe(before);
  });
});
