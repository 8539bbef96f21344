// SPDX-License-Identifier: MIT
// lib/core/module.ts over a stub native layer: the kernels a module hands out are disposed with it, and one disposed
// before it is no longer held by it (a long-lived module that makes kernels again and again must not keep them all).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Device } from '../../lib/core/device.js';
import type { Kernel } from '../../lib/core/kernel.js';
import { loadModule, type Module } from '../../lib/core/module.js';
import type { Native } from '../../lib/core/native.js';

const stub = vi.hoisted(() => ({ live: new Set<number>(), next: 0, unloads: 0 }));

vi.mock('../../lib/core/native.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/core/native.js')>();
  const fake: Partial<Native> = {
    moduleLoadData: () => [0x100n, ''],
    moduleUnload: () => void stub.unloads++,
    moduleGetFunction: () => 0x200n,
    funcGetParamInfo: () => [],
    kernelSlotCreate: () => {
      stub.live.add(++stub.next);
      return stub.next;
    },
    kernelSlotDestroy: (slot) => {
      if (!stub.live.delete(slot)) throw new Error(`slot ${slot} destroyed twice or never made`);
    },
  };
  return { ...real, getNative: () => fake as Native };
});

const device = { ctx: 1n } as unknown as Device;
// Not a CUBIN or PTX: the parameter list comes from funcGetParamInfo alone.
const image = new Uint8Array([1, 2, 3, 4]);

afterEach(() => {
  stub.live.clear();
  stub.unloads = 0;
});

/** V8's collector, for this test file only. */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** A kernel made and disposed in a frame of its own, so that no variable of the test's frame still holds it. */
function madeAndDisposed(m: Module): WeakRef<Kernel> {
  const k = m.getKernel('k', []);
  k.dispose();
  return new WeakRef(k);
}

describe('module kernels', () => {
  it('disposes the kernels still live with the module, and each slot exactly once', () => {
    const m = loadModule(device, image);
    const a = m.getKernel('k', []);
    const b = m.getKernel('k', []);
    m.getKernel('k', []);
    a.dispose();
    expect(stub.live.size).toBe(2);
    m.dispose();
    expect(stub.live.size).toBe(0); // the two left, without destroying a's slot again (the stub would throw)
    expect(stub.unloads).toBe(1);
    expect(() => b.launch({ grid: 1, block: 1 })).toThrow(/disposed/);
  });

  it('does not hold a kernel disposed before it, so the kernel can be collected', async () => {
    const gc = collector();
    const m: Module = loadModule(device, image);
    const refs = Array.from({ length: 3 }, () => madeAndDisposed(m));
    const kept = m.getKernel('k', []);
    // A WeakRef keeps its target until the current job ends: collect on a later turn.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(refs.map((r) => r.deref())).toEqual([undefined, undefined, undefined]);
    expect(stub.live.size).toBe(1);
    m.dispose();
    expect(stub.live.size).toBe(0);
    expect(() => kept.launch({ grid: 1, block: 1 })).toThrow(/disposed/);
  });
});
