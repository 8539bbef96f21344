// SPDX-License-Identifier: MIT
// probe() as a user sees it where the driver or NVRTC is missing or unusable. Each case runs probe() in a child
// process with the libraries forced through CUDAKIT_LIBCUDA_PATH / CUDAKIT_NVRTC_PATH, so it holds on every
// machine (machines with a GPU included) and this process's own driver state is never touched.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ProbeResult, native, nvrtcVersion } from '../../lib/index.js';
import { runScript } from '../child.js';

const dir = mkdtempSync(join(tmpdir(), 'cudakit-probe-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** probe() in a fresh process with these libraries forced, and the keys its result has. */
function probeWith(libcuda: string, nvrtc: string): { p: ProbeResult; keys: string[] } {
  const script = `
    import { probe } from './lib/index.ts';
    const p = probe();
    console.log(JSON.stringify({ p, keys: Object.keys(p) }));`;
  const run = runScript(script, {
    env: { ...process.env, CUDAKIT_LIBCUDA_PATH: libcuda, CUDAKIT_NVRTC_PATH: nvrtc },
  });
  expect(run.stderr).toBe(''); // probe() never throws, and says nothing on its own
  expect(run.status).toBe(0);
  return JSON.parse(run.stdout) as { p: ProbeResult; keys: string[] };
}

// The remedies a CudaError of the same codes gives (lib/core/errors.ts), which probe() passes on.
const DRIVER_REMEDY =
  'Install the NVIDIA driver (it provides libcuda.so.1), or point CUDAKIT_LIBCUDA_PATH at libcuda.so.1. ' +
  'In a container, run it with the GPU exposed (e.g. --gpus all).';
const NVRTC_REMEDY =
  'Install NVRTC (the CUDA toolkit, the nvidia-cuda-nvrtc pip wheel, or Debian non-free libnvrtc11.2), ' +
  'or point CUDAKIT_NVRTC_PATH at libnvrtc.so.';

const notFound = (path: string): string =>
  `${path}: ${path}: cannot open shared object file: No such file or directory`;

describe('probe()', () => {
  it('with neither library: not ok, no versions, and a reason per library naming the one path tried', () => {
    const libcuda = join(dir, 'missing', 'libcuda.so.1');
    const libnvrtc = join(dir, 'missing', 'libnvrtc.so.13');
    const { p, keys } = probeWith(libcuda, libnvrtc);
    expect(keys.sort()).toEqual(['deviceCount', 'driverVersion', 'nvrtcVersion', 'ok', 'reason', 'remedy']);
    expect(p).toEqual({
      ok: false,
      driverVersion: undefined,
      nvrtcVersion: undefined,
      deviceCount: 0,
      // An explicit path is the only one tried: no fallback to the default names.
      reason:
        'CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library (libcuda.so.1) could not be loaded. ' +
        `(tried: ${notFound(libcuda)})\n` +
        `NVRTC_NOT_FOUND: The NVRTC library (libnvrtc) could not be loaded. (tried: ${notFound(libnvrtc)})`,
      // What to do, one line per library, as the CudaError of each code says it.
      remedy: `${DRIVER_REMEDY}\n${NVRTC_REMEDY}`,
    });
  });

  it('with a file that is not a shared library: the loader error names the file', () => {
    const fake = join(dir, 'libcuda.so.1');
    writeFileSync(fake, 'not a shared library\n');
    const { p } = probeWith(fake, fake);
    expect(p.ok).toBe(false);
    expect(p.driverVersion).toBeUndefined();
    expect(p.nvrtcVersion).toBeUndefined();
    const lines = p.reason!.split('\n');
    expect(lines).toHaveLength(2);
    const dlerror = `\\(tried: ${fake}: ${fake}: (file too short|invalid ELF header)\\)$`;
    expect(lines[0]).toMatch(new RegExp(`^CUDA_DRIVER_NOT_FOUND: .* ${dlerror}`));
    expect(lines[1]).toMatch(new RegExp(`^NVRTC_NOT_FOUND: .* ${dlerror}`));
  });

  it('with a shared library that is neither: the driver is too old to use, NVRTC is not NVRTC', () => {
    // The C library this process runs on: a real shared library without cuGetProcAddress or nvrtcVersion.
    const report = process.report.getReport() as unknown as { sharedObjects: string[] };
    const libc = report.sharedObjects.find((s) => /\/libc\.so\.6$/.test(s));
    expect(libc, report.sharedObjects.join('\n')).toBeDefined();
    const { p } = probeWith(libc!, libc!);
    expect(p.ok).toBe(false);
    expect(p.deviceCount).toBe(0);
    expect(p.driverVersion).toBeUndefined();
    expect(p.nvrtcVersion).toBeUndefined();
    const [driver, nvrtc, ...rest] = p.reason!.split('\n');
    expect(driver).toBe(`CUDA_DRIVER_TOO_OLD: ${libc} has no cuGetProcAddress: the driver predates CUDA 11.3.`);
    expect(nvrtc!.startsWith(`NVRTC_NOT_FOUND: ${libc} is not an NVRTC library (no nvrtcVersion)`), nvrtc).toBe(true);
    expect(rest).toEqual([]);
    expect(p.remedy).toBe(`Update the NVIDIA driver, or avoid this call on this machine.\n${NVRTC_REMEDY}`);
  });

  // The NVRTC this process loaded, forced in the child: present NVRTC is reported by version and is no reason.
  const loaded = native().nvrtcStatus();
  const requireNvrtc = process.env.CUDAKIT_REQUIRE_NVRTC === '1' || process.env.CUDAKIT_REQUIRE_GPU === '1';
  it.skipIf(!loaded.loaded && !requireNvrtc)(
    'with NVRTC but no driver: the NVRTC version, and the driver as the only reason',
    () => {
      expect(loaded.loaded, `NVRTC is required here: ${loaded.message}`).toBe(true);
      const libcuda = join(dir, 'missing', 'libcuda.so.1');
      const { p } = probeWith(libcuda, loaded.path);
      expect(p).toEqual({
        ok: false,
        driverVersion: undefined,
        nvrtcVersion: nvrtcVersion(),
        deviceCount: 0,
        reason:
          'CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library (libcuda.so.1) could not be loaded. ' +
          `(tried: ${notFound(libcuda)})`,
        remedy: DRIVER_REMEDY,
      });
      expect(p.nvrtcVersion).toMatch(/^\d+\.\d+$/);
    },
  );
});
