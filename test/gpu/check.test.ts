import { expect, it } from 'vitest';
import { parseArgSpecs } from '../../lib/argspec.js';
import { check, inputSets } from '../../lib/check.js';
import { bench } from '../../lib/bench.js';
import { Device, Program } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

const SRC = `
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void skips_tail(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 7) y[i] = a * x[i];
}
extern "C" __global__ void writes_input(float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = a * x[i]; if (i == 3) x[i] = 0.0f; }
}
extern "C" __global__ void out_of_bounds(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) y[i] = a * x[i < n ? i : 0];
}
extern "C" __global__ void racy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + (float)(clock64() & 1);
}
extern "C" __global__ void zeros(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.0f;
}
extern "C" __global__ void scale_ref(const float* x, float* y, float a, int n) {
  for (int i = 0; i < n; i++) y[i] = a * x[i];
}`;

describeGpu('check', () => {
  const n = 4099;
  const io = parseArgSpecs([`ptr:f32[${n}]=uniform(-2,2)`, `ptr:f32[${n}]:out`, 'f32=1.5', `i32=${n}`]);
  const cfg = { grid: Math.ceil(n / 256), block: 256 };
  const jsRef = (args: unknown[]): void => {
    const [x, y, a] = args as [Float32Array, Float32Array, number];
    for (let i = 0; i < x.length; i++) y[i] = Math.fround(a * x[i]!);
  };
  const setup = () => {
    const m = Device.get(0).loadModule(new Program(SRC).compile());
    const k = (name: string) => m.getKernel(name, ['ptr', 'ptr', 'f32', 'i32']);
    return { m, k };
  };

  it('passes a correct kernel against a JS reference and against a reference kernel', async () => {
    const { m, k } = setup();
    const r = await check({ kernel: k('scale'), config: cfg }, jsRef, io);
    expect(r.passed).toBe(true);
    expect(r.trials.length).toBe(5);
    expect(r.matchedRatio).toBe(1);
    expect(r.maxAbsError).toBe(0);
    expect(r.nondeterministicElements).toBe(0);
    expect(new Set(r.trials.map((t) => t.seed)).size).toBe(5);
    const viaKernel = await check({ kernel: k('scale'), config: cfg }, { kernel: k('scale_ref'), config: { grid: 1, block: 1 } }, io, { trials: 2 });
    expect(viaKernel.passed).toBe(true);
    m.dispose();
  });

  it.each([
    ['skips_tail', 'unwritten'],
    ['writes_input', 'input-modified'],
    ['out_of_bounds', 'out-of-bounds'],
    ['zeros', 'all-zero'],
  ])('catches %s as %s', async (name, defence) => {
    const { m, k } = setup();
    const r = await check({ kernel: k(name), config: cfg }, jsRef, io);
    expect(r.passed).toBe(false);
    expect(r.defence).toBe(defence);
    expect(r.summary).toContain(`FAIL (${defence})`);
    m.dispose();
  });

  it('reports nondeterminism, and fails on it when asked', async () => {
    const { m, k } = setup();
    const loose = await check({ kernel: k('racy'), config: cfg }, jsRef, io, { atol: 1.01, rtol: 0 });
    expect(loose.passed).toBe(true);
    expect(loose.nondeterministicElements).toBeGreaterThan(0);
    const strict = await check({ kernel: k('racy'), config: cfg }, jsRef, io, { atol: 1.01, rtol: 0, requireDeterminism: true });
    expect(strict.defence).toBe('nondeterministic');
    m.dispose();
  });

  it('rejects io that does not match the kernel', async () => {
    const { m, k } = setup();
    await expect(check({ kernel: k('scale'), config: cfg }, jsRef, io.slice(0, 3))).rejects.toThrow(/io declares 3 arguments/);
    await expect(check({ kernel: k('scale'), config: cfg }, jsRef, parseArgSpecs(['ptr:f32[4]=ones', 'ptr:f32[4]=ones', 'f32=1', 'i32=4']))).rejects.toThrow(/no output buffer/);
    m.dispose();
  });

  it('re-checks the outputs of every rotating input set after timing', async () => {
    const { m, k } = setup();
    const sets = inputSets(Device.get(0), io);
    await bench(k('scale'), cfg, sets.args, { preset: 'quick', mode: 'hot' });
    const ok = await sets.verify(jsRef);
    expect(ok.passed).toBe(true);
    expect(ok.trials.length).toBe(4);
    sets.dispose();
    m.dispose();
  });
});
