// SPDX-License-Identifier: MIT
// The sampler's helper kernels compile without the toolkit's headers, and their parameters are what the sampler's
// signatures say (what getKernel checks on a GPU), for the architectures NVRTC offers here.
import { expect, it } from 'vitest';
import { Program, supportedArchs } from '../../lib/index.js';
import { layoutOf } from '../../lib/core/args.js';
import { cubinParams } from '../../lib/core/image.js';
import { SAMPLER_KERNELS, SAMPLER_SOURCE } from '../../lib/core/sampler.js';
import { describeNvrtc } from '../helpers.js';

describeNvrtc('sampler helper kernels', () => {
  it('compile, and every kernel takes the parameters its signature lists', () => {
    const archs = supportedArchs().filter((a) => a >= 70);
    expect(archs.length).toBeGreaterThan(0);
    for (const arch of [archs[0]!, archs[archs.length - 1]!]) {
      const code = new Program(SAMPLER_SOURCE, { name: 'cudakit_bench.cu' }).compile({
        arch: `sm_${arch}`,
        cudaIncludes: false,
        cache: false,
      });
      for (const [name, signature] of Object.values(SAMPLER_KERNELS)) {
        const params = cubinParams(code.bytes, name);
        expect(params, `${name} on sm_${arch}`).toBeDefined();
        expect(
          params!.map((p) => p.size),
          `${name} on sm_${arch}`,
        ).toEqual(signature.map((p) => layoutOf(p, name).size));
      }
    }
  });
});
