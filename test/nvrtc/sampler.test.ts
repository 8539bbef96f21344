// SPDX-License-Identifier: MIT
// The sampler's helper kernels and the input fill kernel compile without the toolkit's headers, and their parameters
// are what their signatures say (what getKernel checks on a GPU), for the architectures NVRTC offers here.
import { expect, it } from 'vitest';
import { Program, supportedArchs } from '../../lib/index.js';
import { layoutOf } from '../../lib/core/args.js';
import { cubinParams } from '../../lib/core/image.js';
import { SAMPLER_KERNELS, SAMPLER_SOURCE } from '../../lib/core/sampler.js';
import { FILL_KERNEL, FILL_SOURCE } from '../../lib/measure/device-fill.js';
import { describeNvrtc } from '../helpers.js';

describeNvrtc('sampler helper kernels', () => {
  it.each([
    ['the sampler', SAMPLER_SOURCE, Object.values(SAMPLER_KERNELS)],
    ['the input fill', FILL_SOURCE, [FILL_KERNEL]],
  ] as const)('%s: compiles, and every kernel takes the parameters its signature lists', (_, source, kernels) => {
    const archs = supportedArchs().filter((a) => a >= 70);
    expect(archs.length).toBeGreaterThan(0);
    for (const arch of [archs[0]!, archs[archs.length - 1]!]) {
      const code = new Program(source, { name: 'helpers.cu' }).compile({
        arch: `sm_${arch}`,
        cudaIncludes: false,
        cache: false,
      });
      expect(code.log, `warnings on sm_${arch}`).toBe('');
      for (const [name, signature] of kernels) {
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
