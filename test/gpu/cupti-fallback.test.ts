// SPDX-License-Identifier: MIT
// Without CUPTI (here: CUDAKIT_CUPTI_PATH names a file that does not exist, set before anything loads CUPTI in this
// process), bench() times by events as it always did, and says why in the result's environment and its warnings.
import { expect, it } from 'vitest';
import { Device, Program, bench, cuptiStatus } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

process.env.CUDAKIT_CUPTI_PATH = '/nonexistent/libcupti.so.13';

describeGpu('the events timer, without CUPTI', () => {
  it('times by events, and the environment and a warning say why', async () => {
    const d = Device.get(0);
    const module = d.loadModule(
      new Program('extern "C" __global__ void touch(int* p) { p[threadIdx.x] += 1; }').compile(),
    );
    using buf = d.alloc(1024).fill(0);
    const r = await bench(module.getKernel('touch', ['ptr']), { grid: 1, block: 256 }, [buf], { preset: 'quick' });
    expect(r.timer).toBe('events');
    expect(r.samples.every((s) => s.gpuMs === s.eventMs)).toBe(true);
    const status = cuptiStatus();
    expect(status.available).toBe(false);
    expect(r.env.cupti).toEqual(status);
    // Under a CUDA tool (CUDA_INJECTION64_PATH set) or compute-sanitizer, CUPTI is not even looked for: the tool holds
    // it (scripts/gpu-check.sh runs this tier under the sanitizer with CUDAKIT_UNDER_SANITIZER=1).
    const sanitizer = process.env.CUDAKIT_UNDER_SANITIZER === '1';
    const tool = !sanitizer && process.env.CUDA_INJECTION64_PATH !== undefined;
    const why = tool
      ? /^a CUDA tool is attached \(CUDA_INJECTION64_PATH=.*\), and it holds CUPTI$/
      : sanitizer
        ? /^this process runs under compute-sanitizer, which holds CUPTI/
        : /^CUPTI \(libcupti\) could not be loaded; set CUDAKIT_CUPTI_PATH to it \(tried: \/nonexistent\/libcupti/;
    expect(r.env.cupti.available ? '' : r.env.cupti.reason).toMatch(why);
    const warning = tool
      ? /^timed by events: a CUDA tool is attached/
      : sanitizer
        ? /^timed by events: this process runs under compute-sanitizer/
        : /^timed by events: CUPTI \(libcupti\) could not/;
    expect(r.warnings.filter((w) => warning.test(w))).toHaveLength(1);
    expect(r.warnings.join('\n')).not.toContain('(tried:');
    module.dispose();
  });
});
