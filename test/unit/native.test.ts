// SPDX-License-Identifier: MIT
// lib/core/native.ts: the object every native call goes through.
import { describe, expect, it } from 'vitest';
import { runScript } from '../child.js';

describe('the native layer object', () => {
  it('has fast properties, unlike the addon exports it copies, so a method lookup is not a hash probe', () => {
    // V8's own predicate, in a child process: it needs --allow-natives-syntax, which this process was not started with.
    const r = runScript(
      `
      import { createRequire } from 'node:module';
      import { getNative } from './lib/core/native.ts';
      const exports = createRequire(import.meta.url)('node-gyp-build')('.');
      const n = getNative();
      console.log(JSON.stringify({
        copied: n !== exports && Object.keys(n).length === Object.keys(exports).length,
        exportsFast: %HasFastProperties(exports),
        nativeFast: %HasFastProperties(n),
      }));
    `,
      { nodeFlags: ['--allow-natives-syntax'] },
    );
    expect(r.status, r.stderr).toBe(0);
    // exportsFast is false on Node 20 (why the copy is made); a V8 that keeps the exports fast is fine too.
    const seen = JSON.parse(r.stdout.trim()) as { copied: boolean; exportsFast: boolean; nativeFast: boolean };
    expect(seen.copied).toBe(true);
    expect(seen.nativeFast).toBe(true);
  });
});

describe('launchKernel, a plain N-API callback', () => {
  // In a child with the driver made unloadable (CUDAKIT_LIBCUDA_PATH), so that a live slot's launch reaches the
  // driver lookup and fails there on any machine; the slot's handles are never given to a driver.
  const r = runScript(
    `
    import { getNative } from './lib/core/native.ts';
    import { CudaError } from './lib/core/errors.ts';
    const n = getNative();
    const outcome = (f) => {
      try { return { returned: String(f()) }; }
      catch (e) { return { name: e.constructor.name, code: e.code, api: e.api, message: e.message }; }
    };
    const slot = n.kernelSlotCreate(1n, 2n, new ArrayBuffer(64), []);
    const seen = {
      nop: outcome(() => n.nop()),
      live: outcome(() => n.launchKernel(slot)),
      liveIsCudaError: (() => { try { n.launchKernel(slot); } catch (e) { return e instanceof CudaError; } })(),
      noArgument: outcome(() => n.launchKernel()),
      string: outcome(() => n.launchKernel(String(slot))),
      unknown: outcome(() => n.launchKernel(slot + 1000)),
    };
    n.kernelSlotDestroy(slot);
    seen.destroyed = outcome(() => n.launchKernel(slot));
    console.log(JSON.stringify(seen));
  `,
    { env: { ...process.env, CUDAKIT_LIBCUDA_PATH: '/nonexistent/libcuda.so.1' } },
  );
  const seen = JSON.parse(r.stdout.trim() || '{}') as Record<string, Record<string, string>>;

  it('returns undefined from nop()', () => {
    expect(r.status, r.stderr).toBe(0);
    expect(seen.nop).toEqual({ returned: 'undefined' });
  });

  it('throws the CudaError of the call that failed, and the process goes on', () => {
    expect(seen.live).toMatchObject({ name: 'CudaError', code: 'CUDA_DRIVER_NOT_FOUND', api: 'cuCtxGetCurrent' });
    expect(seen.liveIsCudaError).toBe(true);
  });

  it('throws a RangeError for anything but a live slot: none, a string, an unknown id, a destroyed one', () => {
    for (const key of ['noArgument', 'string', 'unknown', 'destroyed']) {
      expect(seen[key], key).toEqual({ name: 'RangeError', message: 'not a live kernel launch slot' });
    }
  });
});
