// SPDX-License-Identifier: MIT
// lib/core/function.ts: a KernelFunction over a stub native layer: attributes, limits, occupancy and the compiled
// parameter list, read without a signature.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KernelFunction } from '../../lib/core/function.js';
import { INTERNAL } from '../../lib/core/lifetime.js';
import type { Module } from '../../lib/core/module.js';
import type { Native } from '../../lib/core/native.js';

const stub = vi.hoisted(() => ({
  paramInfo: null as [number, number][] | null,
  paramCount: undefined as number | undefined,
  attributeReads: 0,
  setAttributes: [] as [number, number][],
  occupancy: [] as [number, number][],
}));

vi.mock('../../lib/core/native.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/core/native.js')>();
  // CUfunction_attribute: 0 max threads, 1 shared, 2 const, 3 local, 4 regs, 5 ptx, 6 binary, 8 max dynamic shared
  const attributes: Record<number, number> = { 0: 768, 1: 1024, 2: 64, 3: 0, 4: 40, 5: 80, 6: 90, 8: 48 * 1024 };
  const fake: Partial<Native> = {
    funcGetParamInfo: (_ctx, _fn, count) => {
      stub.paramCount = count;
      return stub.paramInfo;
    },
    funcGetAttribute: (_ctx, _fn, id) => {
      stub.attributeReads++;
      return attributes[id] ?? 0;
    },
    funcSetAttribute: (_ctx, _fn, id, value) => void stub.setAttributes.push([id, value]),
    occupancyMaxActiveBlocksPerMultiprocessor: (_ctx, _fn, blockSize, smem) => {
      stub.occupancy.push([blockSize, smem]);
      return 3;
    },
    occupancyMaxPotentialBlockSize: () => [264, 512],
  };
  return { ...real, getNative: () => fake as Native };
});

function fakeModule(disposed = false): Module {
  return {
    disposed,
    device: {
      ctx: 1n,
      limits: { maxThreadsPerBlock: 1024, maxSharedMemoryPerBlockOptinBytes: 227 * 1024 },
    },
  } as unknown as Module;
}

const fn = (module = fakeModule(), fromImage?: { offset: number; size: number }[]) =>
  new KernelFunction(INTERNAL, module, 0x77n, 'saxpy', fromImage);

afterEach(() => {
  stub.paramInfo = null;
  stub.paramCount = undefined;
  stub.attributeReads = 0;
  stub.setAttributes = [];
  stub.occupancy = [];
});

describe('KernelFunction', () => {
  it('is made by module.getFunction(name) only', () => {
    expect(() => new (KernelFunction as unknown as new () => unknown)()).toThrow(
      'KernelFunction objects cannot be constructed directly; use module.getFunction(name)',
    );
  });

  it('reads nothing from the driver until asked (lazy loading stays lazy)', () => {
    const f = fn();
    expect(f.name).toBe('saxpy');
    expect(f.handle).toBe(0x77n);
    expect(stub.attributeReads).toBe(0);
    expect(String(f)).toBe('KernelFunction(saxpy)');
  });

  it('reads every attribute once', () => {
    const f = fn();
    expect(f.attributes).toEqual({
      maxThreadsPerBlock: 768,
      sharedSizeBytes: 1024,
      constSizeBytes: 64,
      localSizeBytes: 0,
      numRegs: 40,
      ptxVersion: 80,
      binaryVersion: 90,
      maxDynamicSharedSizeBytes: 48 * 1024,
    });
    const reads = stub.attributeReads;
    void f.attributes;
    expect(stub.attributeReads).toBe(reads);
  });

  it(
    'takes the parameter list from the driver, else from the image, ' +
      'asking the driver about as many as the image has',
    () => {
      stub.paramInfo = [
        [0, 8],
        [8, 8],
        [16, 4],
        [20, 4],
      ];
      expect(fn(fakeModule(), [{ offset: 0, size: 8 }]).parameters()).toEqual([
        { offset: 0, size: 8 },
        { offset: 8, size: 8 },
        { offset: 16, size: 4 },
        { offset: 20, size: 4 },
      ]);
      expect(stub.paramCount).toBe(1);
      stub.paramInfo = null;
      const f = fn(fakeModule(), [
        { offset: 0, size: 8 },
        { offset: 8, size: 4 },
      ]);
      expect(f.parameters()).toEqual([
        { offset: 0, size: 8 },
        { offset: 8, size: 4 },
      ]);
      expect(stub.paramCount).toBe(2);
      const list = f.parameters()!;
      list[0]!.size = 99; // a copy: the caller cannot change what the next call returns
      expect(f.parameters()![0]!.size).toBe(8);
      expect(fn().parameters()).toBeUndefined();
      expect(stub.paramCount).toBe(-1);
    },
  );

  it('reports occupancy, validating the block size against the lower of the device and kernel limits', () => {
    const f = fn();
    expect(f.maxActiveBlocksPerMultiprocessor(256, 1024)).toBe(3);
    expect(stub.occupancy).toEqual([[256, 1024]]);
    expect(() => f.maxActiveBlocksPerMultiprocessor(1024)).toThrow(
      new RangeError('Expected an integer in [1, 768] for blockSize but received 1024 of type number'),
    );
    expect(() => f.maxActiveBlocksPerMultiprocessor('x' as unknown as number)).toThrow(TypeError);
    expect(() => f.maxActiveBlocksPerMultiprocessor(32, -1)).toThrow(RangeError);
    expect(f.suggestedBlockSize()).toEqual({ blockSize: 512, minGridSize: 264 });
  });

  it('raises its dynamic shared memory limit up to the opt-in limit', () => {
    const f = fn();
    f.setMaxDynamicSharedMemory(100 * 1024);
    expect(stub.setAttributes).toEqual([[8, 100 * 1024]]);
    expect(f.attributes.maxDynamicSharedSizeBytes).toBe(100 * 1024);
    expect(() => f.setMaxDynamicSharedMemory(228 * 1024)).toThrow(RangeError);
  });

  it('is unusable once its module is unloaded', () => {
    const f = fn(fakeModule(true));
    expect(() => f.handle).toThrow("Kernel function 'saxpy' has been disposed and can no longer be used");
    expect(() => f.attributes).toThrow(/has been disposed/);
    expect(() => f.parameters()).toThrow(/has been disposed/);
  });
});
