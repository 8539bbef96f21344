// SPDX-License-Identifier: MIT
// TensorMap on a GPU of sm_90 or later: maps encoded by the driver, passed to a TMA kernel as
// `const __grid_constant__ CUtensorMap`, the tiles loaded, doubled and stored, over a tensor of whole tiles and one
// whose last tiles cross its edge (zeros read outside it, nothing written there).
import { expect, it } from 'vitest';
import { Device, Program, TENSOR_MAP_PARAM, TensorMap } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';
import { TMA_TILE_COPY } from '../support/kernels.js';

describeGpu('TensorMap', () => {
  const d = () => Device.get(0);
  const tma = () => d().computeCapability.major >= 9;

  it('encodes maps a TMA kernel copies tiles with, over a tensor whose edge cuts its tiles too', (ctx) => {
    if (!tma()) return ctx.skip(`the TMA needs sm_90 or later; this GPU is ${d().arch}`);
    const m = d().loadModule(new Program(TMA_TILE_COPY, { name: 'tma.cu' }).compile({ cache: false }));
    const k = m.getKernel('tile_copy', [TENSOR_MAP_PARAM, TENSOR_MAP_PARAM]);
    for (const [cols, rows] of [
      [96, 64], // whole tiles
      [80, 48], // the last column and row of tiles cross the edge
    ] as const) {
      using src = d().allocArray(Float32Array, cols * rows);
      using dst = d().allocArray(Float32Array, cols * rows);
      const input = Float32Array.from({ length: cols * rows }, (_, i) => i % 1000);
      src.copyFromHost(input);
      dst.fill(0);
      const options = { dtype: 'f32', dims: [cols, rows], box: [32, 32] } as const;
      const a = TensorMap.tiled(src, options);
      const b = TensorMap.tiled(dst, options);
      expect(a.layout.stridesBytes).toEqual([cols * 4]);
      k.launch({ grid: [Math.ceil(cols / 32), Math.ceil(rows / 32)], block: 128 }, a, b);
      d().synchronize();
      expect(dst.copyToHost()).toEqual(input.map((x) => 2 * x));
    }
    m.dispose();
  });
});
