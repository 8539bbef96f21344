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
    // Under compute-sanitizer (CUDA_INJECTION64_PATH set) CUPTI is not even looked for: the tool holds it.
    const tool = process.env.CUDA_INJECTION64_PATH !== undefined;
    const why = tool
      ? /^a CUDA tool is attached \(CUDA_INJECTION64_PATH=.*\), and it holds CUPTI$/
      : /^CUPTI \(libcupti\) could not be loaded; set CUDAKIT_CUPTI_PATH to it \(tried: \/nonexistent\/libcupti/;
    expect(r.env.cupti.available ? '' : r.env.cupti.reason).toMatch(why);
    const warning = tool
      ? /^timed by events: a CUDA tool is attached/
      : /^timed by events: CUPTI \(libcupti\) could not/;
    expect(r.warnings.filter((w) => warning.test(w))).toHaveLength(1);
    expect(r.warnings.join('\n')).not.toContain('(tried:');
    module.dispose();
  });
});
