// SPDX-License-Identifier: MIT
// <cudakit/tensor_map.h> through NVRTC alone: a Program that names it gets it, one that does not is left as it is,
// and a TMA kernel that takes two `const __grid_constant__ CUtensorMap` compiles, each map a parameter of 128 bytes
// aligned to 64, for sm_90 with the TMA's PTX instructions.
import { expect, it } from 'vitest';
import { Program, TENSOR_MAP_HEADER, TENSOR_MAP_HEADER_NAME, nvrtcVersion } from '../../lib/index.js';
import { describeNvrtc } from '../helpers.js';
import { TMA_TILE_COPY } from '../support/kernels.js';

describeNvrtc('<cudakit/tensor_map.h>', () => {
  it('is an in-memory header of a Program that names it, and of no other', () => {
    expect(new Program(TMA_TILE_COPY).headers[TENSOR_MAP_HEADER_NAME]).toBe(TENSOR_MAP_HEADER);
    expect(new Program('extern "C" __global__ void k() {}').headers).toEqual({});
    const own = new Program(TMA_TILE_COPY, { headers: { [TENSOR_MAP_HEADER_NAME]: '// mine' } });
    expect(own.headers[TENSOR_MAP_HEADER_NAME]).toBe('// mine');
  });

  const ptxOf = (arch: 'sm_80' | 'sm_90') =>
    new TextDecoder().decode(
      new Program(TMA_TILE_COPY, { name: 'tma.cu' }).compile({ arch, target: 'ptx', cache: false }).bytes,
    );

  it('declares CUtensorMap as the driver has it: a kernel parameter of 128 bytes aligned to 64', () => {
    const ptx = ptxOf('sm_80'); // the TMA's operations are left out below sm_90; the parameters stay
    expect(ptx).toMatch(/\.param \.align 64 \.b8 tile_copy_param_0\[128\]/);
    expect(ptx).toMatch(/\.param \.align 64 \.b8 tile_copy_param_1\[128\]/);
  });

  // The TMA's instructions are PTX ISA 8.0 (CUDA 12.0): an older NVRTC's assembler does not know them.
  const major = Number(nvrtcVersion().split('.')[0]);
  it.skipIf(major < 12)(
    `compiles a TMA kernel for sm_90: bulk tensor copies and mbarriers (NVRTC 12 or later; this is ${nvrtcVersion()})`,
    () => {
      const ptx = ptxOf('sm_90');
      expect(ptx).toContain('cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes');
      expect(ptx).toContain('cp.async.bulk.tensor.2d.global.shared::cta.bulk_group');
      expect(ptx).toContain('mbarrier.try_wait.parity.shared::cta.b64');
      expect(ptx).toContain('prefetch.tensormap');
    },
  );
});
