import { expect, it, vi } from 'vitest';
import {
  Device,
  DeviceBuffer,
  Program,
  bench,
  check,
  fromFp8Bits,
  inputSets,
  parseArgSpecs,
  toFp8Bits,
} from '../../lib/index.js';
import { describeGpu } from '../helpers.js';
import { runScript } from '../child.js';

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
}
// Every block adds a·x[i] to every y[i] without atomics: blocks running at once lose each other's updates, and which
// ones are lost changes from run to run (the sleep between the load and the store widens the window).
extern "C" __global__ void lost_updates(const float* x, float* y, float a, int n) {
  volatile float* v = y;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float old = v[i];
    __nanosleep(64 * (blockIdx.x % 8));
    v[i] = old + a * x[i];
  }
}
// A correct kernel with another parameter order, as a reference matched by name.
extern "C" __global__ void scale_swapped(int n, float* y, float a, const float* x) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i];
}
extern "C" __global__ void writes_inf(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = i == 5 ? __int_as_float(0x7f800000) : a * x[i];
}
// Right to 1e-7 of itself, far inside f32's tolerance (1e-4 + 1e-4·|ref|), but whether the 1e-7 is added depends on
// the SM clock when the thread reads it (every bit of it, through a multiplicative hash): over a million elements two
// runs differ in their bits.
extern "C" __global__ void jitter(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = a * x[i];
    bool add = ((unsigned long long)clock64() * 0x9E3779B97F4A7C15ULL) >> 63;
    y[i] = v + (add ? 1e-7f * fabsf(v) : 0.0f);
  }
}
// Right for its first 20 launches, wrong (negated) after: state kept between launches in a __device__ counter of the
// blocks run so far, launch k's blocks counting k·gridDim.x up to (k + 1)·gridDim.x - 1 (launches on one stream run
// one after the other).
__device__ unsigned long long blocks_run;
extern "C" __global__ void decays(const float* x, float* y, float a, int n) {
  __shared__ unsigned long long launch;
  if (threadIdx.x == 0) launch = atomicAdd(&blocks_run, 1ULL) / gridDim.x;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = launch < 20 ? a * x[i] : -a * x[i];
}`;

// Planted faults: each runs in its own process, because a sticky error destroys the CUDA context of the process.
const FAULTS = `
extern "C" __device__ void __assertfail(const char*, const char*, unsigned, const char*, size_t);
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void illegal_address(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ((float*)0x10)[i] = a * x[i];
}
extern "C" __global__ void traps(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 7) __trap();
  if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void asserts(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 7) __assertfail("i != 7", "check.cu", 1, "asserts", 1);
  if (i < n) y[i] = a * x[i];
}`;

interface FaultRun {
  status: number | null;
  stderr: string;
  out: {
    passed: boolean;
    defence: string;
    error: { code: string; api: string; result: number; sticky: boolean } | null;
    trials: number;
    summary: string;
    referenceCalls: number;
    lost: { code: string; api: string } | null;
    usable: boolean;
  };
}

/**
 * check() in a child process: `candidate` against `reference` ('js' for a JavaScript reference, else a kernel name),
 * launched with `config` (JSON). Prints the verdict as JSON on its last stdout line, then whether the GPU still works.
 */
function checkInChild(
  candidate: string,
  reference: string,
  config = '{ grid: Math.ceil(n / 256), block: 256 }',
): FaultRun {
  const script = `
    import { Device, Program, check, contextLostBy, parseArgSpecs } from './lib/index.ts';
    const d = Device.get(0);
    const m = d.loadModule(new Program(${JSON.stringify(FAULTS)}).compile());
    const k = (name) => m.getKernel(name, ['ptr', 'ptr', 'f32', 'i32']);
    const n = 4099;
    const io = parseArgSpecs(['ptr:f32[' + n + ']=uniform(-2,2)', 'ptr:f32[' + n + ']:out', 'f32=1.5', 'i32=' + n]);
    let referenceCalls = 0;
    const js = ([x, y, a]) => { referenceCalls++; for (let i = 0; i < x.length; i++) y[i] = Math.fround(a * x[i]); };
    const reference = ${
      reference === 'js' ? 'js' : `{ kernel: k('${reference}'), config: { grid: Math.ceil(n / 256), block: 256 } }`
    };
    const r = await check({ kernel: k('${candidate}'), config: ${config} }, reference, io);
    let usable = true;
    try { d.alloc(16).dispose(); } catch { usable = false; }
    console.log(JSON.stringify({
      passed: r.passed, defence: r.defence, error: r.error ?? null, trials: r.trials.length, summary: r.summary,
      referenceCalls, lost: contextLostBy() ?? null, usable,
    }));
  `;
  const r = runScript(script);
  // A device-side assert prints its message to stdout first: the verdict is the last line.
  const last = r.stdout.trim().split('\n').pop() ?? '';
  let out: FaultRun['out'];
  try {
    out = JSON.parse(last) as FaultRun['out'];
  } catch {
    throw new Error(`the child printed no verdict (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
  return { status: r.status, stderr: r.stderr, out };
}

// Under compute-sanitizer the planted faults would be (correctly) reported as memcheck errors, and a race needs the
// real concurrency its instrumentation changes.
const unsanitized = process.env.CUDAKIT_UNDER_SANITIZER === '1' ? it.skip : it;

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
    const viaKernel = await check(
      { kernel: k('scale'), config: cfg },
      { kernel: k('scale_ref'), config: { grid: 1, block: 1 } },
      io,
      { trials: 2 },
    );
    expect(viaKernel.passed).toBe(true);
    m.dispose();
  });

  it('runs a reference kernel after the candidate in even trials, before it (zeroed when freed) in odd', async () => {
    const { m, k } = setup();
    const order: string[] = [];
    const spy = (name: string) => {
      const kernel = k(name);
      const launch = kernel.launch.bind(kernel);
      kernel.launch = ((...a: Parameters<typeof launch>) => (order.push(name), launch(...a))) as typeof kernel.launch;
      return kernel;
    };
    const candidate = spy('scale');
    const reference = spy('scale_ref');
    const fill = vi.spyOn(DeviceBuffer.prototype, 'fill');
    /** check() over `trials` trials (zeroOnFree off); resolves how many device buffers it set to zero. */
    const zeroFills = async (trials: number): Promise<number> => {
      fill.mockClear();
      const ref = { kernel: reference, config: { grid: 1, block: 1 } };
      const r = await check({ kernel: candidate, config: cfg }, ref, io, { trials, determinism: false });
      expect(r.passed, r.summary).toBe(true);
      return fill.mock.calls.filter(([v]) => v === 0).length;
    };
    try {
      const [one, two, three] = [await zeroFills(1), await zeroFills(2), await zeroFills(3)];
      const [c, ref] = ['scale', 'scale_ref'];
      expect(order).toEqual([c, ref, ...[c, ref, ref, c], ...[c, ref, ref, c, c, ref]]);
      // Trial 1 (the reference first) zeroes the reference's two buffers as it frees them; trial 2 (after it) none.
      expect(two - one - (three - two)).toBe(2);
    } finally {
      fill.mockRestore();
      m.dispose();
    }
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
    const strict = await check({ kernel: k('racy'), config: cfg }, jsRef, io, {
      atol: 1.01,
      rtol: 0,
      requireDeterminism: true,
    });
    expect(strict.defence).toBe('nondeterministic');
    m.dispose();
  });

  it('rejects io that does not match the kernel', async () => {
    const { m, k } = setup();
    await expect(check({ kernel: k('scale'), config: cfg }, jsRef, io.slice(0, 3))).rejects.toThrow(
      /io declares 3 arguments/,
    );
    await expect(
      check(
        { kernel: k('scale'), config: cfg },
        jsRef,
        parseArgSpecs(['ptr:f32[4]=ones', 'ptr:f32[4]=ones', 'f32=1', 'i32=4']),
      ),
    ).rejects.toThrow(/no output buffer/);
    m.dispose();
  });

  unsanitized('fails a kernel whose output depends on a race beyond the tolerance, by default', async () => {
    const { m, k } = setup();
    const blocks = 256;
    const lost = { kernel: k('lost_updates'), config: { grid: blocks, block: 256 } };
    const io2 = parseArgSpecs([`ptr:f32[${n}]=uniform(-2,2)`, `ptr:f32[${n}]=zeros:out`, 'f32=1.5', `i32=${n}`]);
    const sum = (args: unknown[]): void => {
      const [x, y, a] = args as [Float32Array, Float32Array, number];
      for (let i = 0; i < x.length; i++) y[i] = blocks * Math.fround(a * x[i]!);
    };
    const r = await check(lost, sum, io2);
    expect(r.passed).toBe(false);
    expect(r.defence).toBe('nondeterministic'); // ahead of the mismatch the lost updates also cause
    expect(r.nondeterministicBeyondTolerance).toBeGreaterThan(0);
    expect(r.nondeterministicElements).toBeGreaterThanOrEqual(r.nondeterministicBeyondTolerance!);
    expect(r.summary).toMatch(
      new RegExp(
        /^FAIL \(nondeterministic\) in trial 0: \d+ elements? differed between two runs on the same inputs, /.source +
          /\d+ beyond tolerance; first: argument 1\[\d+\] = /.source,
      ),
    );
    expect(r.mismatches[0]!.arg).toBe(1);
    m.dispose();
  });

  unsanitized(
    'passes by default when two runs differ only within the tolerance, with a note; requireDeterminism fails it',
    async () => {
      const { m, k } = setup();
      const count = 1 << 20;
      const jitter = { kernel: k('jitter'), config: { grid: count / 256, block: 256 } };
      const io2 = parseArgSpecs([
        `ptr:f32[${count}]=uniform(-2,2)`,
        `ptr:f32[${count}]:out`,
        'f32=1.5',
        `i32=${count}`,
      ]);
      const loose = await check(jitter, jsRef, io2, { trials: 2 });
      expect(loose.passed, loose.summary).toBe(true);
      expect(loose.nondeterministicBeyondTolerance).toBe(0);
      expect(loose.nondeterministicElements).toBeGreaterThan(0);
      expect(loose.summary).toMatch(
        new RegExp(
          /^PASS: 2 trials, worst element at [\d.]+% of its tolerance \(.*\); /.source +
            /\d+ elements? differed between two runs on the same inputs, all within tolerance /.source +
            /\(allowed unless requireDeterminism\)$/.source,
        ),
      );
      expect(loose.summary).toContain(`; ${loose.nondeterministicElements} element`);
      const strict = await check(jitter, jsRef, io2, { trials: 2, requireDeterminism: true });
      expect(strict.passed).toBe(false);
      expect(strict.defence).toBe('nondeterministic');
      expect(strict.nondeterministicElements).toBeGreaterThan(0);
      expect(strict.nondeterministicBeyondTolerance).toBe(0);
      expect(strict.trials[0]!.defence).toBe('nondeterministic');
      expect(strict.summary).toMatch(
        new RegExp(
          /^FAIL \(nondeterministic\) in trial 0: \d+ elements? differed bitwise between two runs on the same /.source +
            /inputs \(requireDeterminism\), all within tolerance; first: argument 1\[\d+\] = /.source,
        ),
      );
      m.dispose();
    },
  );

  it('still throws for argument errors and for a JavaScript reference that throws', async () => {
    const { m, k } = setup();
    await expect(check({ kernel: k('scale'), config: { grid: 0, block: 256 } }, jsRef, io)).rejects.toThrow(RangeError);
    const broken = (): void => {
      throw new Error('bug in the reference');
    };
    await expect(check({ kernel: k('scale'), config: cfg }, broken, io)).rejects.toThrow('bug in the reference');
    const again = await check({ kernel: k('scale'), config: cfg }, jsRef, io, { trials: 1 }); // nothing left behind
    expect(again.passed).toBe(true);
    m.dispose();
  });

  it('re-checks the outputs of every rotating input set after timing', async () => {
    const { m, k } = setup();
    const sets = inputSets(Device.get(0), io);
    await bench(k('scale'), cfg, sets.args, { preset: 'quick', mode: 'hot' });
    const ok = await sets.verify(jsRef);
    expect(ok.passed).toBe(true);
    expect(ok.trials.length).toBe(4);
    expect(ok.summary).toMatch(/^PASS after timing: 4 input sets re-checked, worst element at 0% of its tolerance/);
    sets.dispose();
    m.dispose();
  });

  it('fails the re-check after timing for a kernel that is right at first and wrong when repeated', async () => {
    const { m, k } = setup();
    const decays = { kernel: k('decays'), config: cfg };
    // check() launches it 3 times here (2 trials and the second run on the first trial's inputs): all right
    const before = await check(decays, jsRef, io, { trials: 2 });
    expect(before.passed, before.summary).toBe(true);
    expect(before.nondeterministicElements).toBe(0);
    // Timing launches it thousands of times: the outputs the timed launches leave are wrong
    const sets = inputSets(Device.get(0), io);
    const timed = await bench(decays.kernel, cfg, sets.args, { preset: 'quick', mode: 'hot' });
    expect(timed.warmupRuns + timed.samples.length).toBeGreaterThan(20);
    const after = await sets.verify(jsRef);
    expect(after.passed).toBe(false);
    expect(after.defence).toBe('mismatch');
    expect(after.trials).toHaveLength(4);
    expect(after.trials.every((t) => !t.passed && t.defence === 'mismatch')).toBe(true);
    expect(after.summary).toBe('FAIL after timing (mismatch) in input set 0');
    const first = after.mismatches[0]!;
    expect(first.arg).toBe(1);
    expect(first.actual).toBe(-(first.expected as number)); // negated: written by a launch after the 20th
    sets.dispose();
    m.dispose();
  });
});

describeGpu('check: fp8 buffers and scalars (cuda_fp8.h)', () => {
  // y = a·x in e4m3 and e5m2, converted as CUDA converts (round to nearest even, saturated), against a JavaScript
  // reference that rounds with toFp8Bits: bit for bit where both round the same product.
  const FP8 = String.raw`
#include <cuda_fp8.h>
extern "C" __global__ void scale8(const __nv_fp8_e4m3* x, __nv_fp8_e5m2* y, __nv_fp8_e4m3 a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __nv_fp8_e5m2(float(x[i]) * float(a));
}`;
  it('passes a kernel on e4m3 inputs, e5m2 outputs and an e4m3 scalar against a JavaScript reference', async () => {
    const n = 5000;
    const io = parseArgSpecs([`ptr:f8e4m3[${n}]=uniform(-400,400)`, `ptr:f8e5m2[${n}]:out`, 'f8e4m3=3', `i32=${n}`]);
    const m = Device.get(0).loadModule(new Program(FP8).compile());
    const k = m.getKernel('scale8', ['ptr', 'ptr', 'f8e4m3', 'i32']);
    const reference = (args: unknown[]): void => {
      const [x, y, a] = args as [Float32Array, Float32Array, number];
      for (let i = 0; i < x.length; i++) y[i] = fromFp8Bits('f8e5m2', toFp8Bits('f8e5m2', Math.fround(x[i]! * a)));
    };
    const r = await check({ kernel: k, config: { grid: Math.ceil(n / 256), block: 256 } }, reference, io);
    expect(r.passed, r.summary).toBe(true);
    expect(r.maxAbsError).toBe(0);
    // A kernel that writes e4m3 bits where e5m2 is declared is caught.
    const wrong = String.raw`
#include <cuda_fp8.h>
extern "C" __global__ void scale8(const __nv_fp8_e4m3* x, __nv_fp8_e4m3* y, __nv_fp8_e4m3 a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __nv_fp8_e4m3(float(x[i]) * float(a));
}`;
    const m2 = Device.get(0).loadModule(new Program(wrong).compile());
    const bad = await check(
      {
        kernel: m2.getKernel('scale8', ['ptr', 'ptr', 'f8e4m3', 'i32']),
        config: { grid: Math.ceil(n / 256), block: 256 },
      },
      reference,
      io,
      { trials: 1 },
    );
    expect(bad.passed).toBe(false);
    m.dispose();
    m2.dispose();
  });
});

describeGpu('check: without a reference, a reference in another order, zeroOnFree', () => {
  const n = 4099;
  const io = parseArgSpecs([`x@ptr:f32[${n}]=uniform(-2,2)`, `y@ptr:f32[${n}]:out`, 'a@f32=1.5', `n@i32=${n}`]);
  const cfg = { grid: Math.ceil(n / 256), block: 256 };
  const jsRef = (args: unknown[]): void => {
    const [x, y, a] = args as [Float32Array, Float32Array, number];
    for (let i = 0; i < x.length; i++) y[i] = Math.fround(a * x[i]!);
  };
  const setup = () => {
    const m = Device.get(0).loadModule(new Program(SRC).compile());
    const k = (name: string) => m.getKernel(name, ['ptr', 'ptr', 'f32', 'i32']);
    const swapped = m.getKernel('scale_swapped', ['i32', 'ptr', 'f32', 'ptr']);
    return { m, k, swapped };
  };
  const swappedIo = parseArgSpecs([`n@i32=${n}`, `y@ptr:f32[${n}]:out`, 'a@f32=1.5', `x@ptr:f32[${n}]:in`]);

  it('passes a correct kernel without a reference', async () => {
    const { m, k } = setup();
    const r = await check({ kernel: k('scale'), config: cfg }, null, io);
    expect(r.passed, r.summary).toBe(true);
    expect(r.referenceFree).toBe(true);
    expect(r.trials).toHaveLength(5);
    expect(r.nondeterministicElements).toBe(0);
    expect(r.summary).toMatch(/^PASS without a reference: 5 trials; outputs fully written and finite/);
    m.dispose();
  });

  it.each([
    [
      'skips_tail',
      'unwritten',
      /^FAIL \(unwritten\) in trial 0: argument 1: 7 of 4099 elements never written \(first: element 4092\)$/,
    ],
    [
      'out_of_bounds',
      'out-of-bounds',
      /^FAIL \(out-of-bounds\) in trial 0: argument 1: a write [0-3] bytes after its buffer$/,
    ],
    [
      'writes_input',
      'input-modified',
      /^FAIL \(input-modified\) in trial 0: argument 0 \(an input\) changed at element 3$/,
    ],
    [
      'writes_inf',
      'non-finite',
      new RegExp(
        /^FAIL \(non-finite\) in trial 0: argument 1: 1 of 4099 elements NaN or infinite /.source +
          /\(first: element 5 = Infinity\)$/.source,
      ),
    ],
  ])('catches %s as %s without a reference', async (name, defence, summary) => {
    const { m, k } = setup();
    const r = await check({ kernel: k(name), config: cfg }, null, io);
    expect(r.passed).toBe(false);
    expect(r.defence).toBe(defence);
    expect(r.referenceFree).toBe(true);
    expect(r.summary).toMatch(summary);
    m.dispose();
  });

  it('matches a reference kernel with another parameter order by name', async () => {
    const { m, k, swapped } = setup();
    const reference = { kernel: swapped, config: { grid: 32, block: 256 }, io: swappedIo };
    const good = await check({ kernel: k('scale'), config: cfg }, reference, io);
    expect(good.passed, good.summary).toBe(true);
    expect(good.maxAbsError).toBe(0);
    const bad = await check({ kernel: k('skips_tail'), config: cfg }, reference, io, { trials: 1 });
    expect(bad.defence).toBe('unwritten');
    // After timing too: inputSets().verify() matches it the same way.
    const sets = inputSets(Device.get(0), io);
    await bench(k('scale'), cfg, sets.args, { preset: 'quick', mode: 'hot' });
    const after = await sets.verify(reference);
    expect(after.passed, after.summary).toBe(true);
    sets.dispose();
    // Names that do not match are refused before anything runs.
    const misnamed = {
      ...reference,
      io: parseArgSpecs([`n@i32=${n}`, `out@ptr:f32[${n}]:out`, 'a@f32=1.5', `x@ptr:f32[${n}]:in`]),
    };
    await expect(check({ kernel: k('scale'), config: cfg }, misnamed, io)).rejects.toThrow(
      "reference io: the candidate's output 'y' (argument 1) has no reference output named 'y' (there: 'out')",
    );
    m.dispose();
  });

  it(
    'zeroes every device buffer before freeing it with zeroOnFree ' + '(check, a reference kernel, inputSets)',
    async () => {
      const { m, k, swapped } = setup();
      // What each buffer holds at the moment it is freed.
      const freed: Uint8Array[] = [];
      const dispose = DeviceBuffer.prototype.dispose;
      const spy = vi.spyOn(DeviceBuffer.prototype, 'dispose').mockImplementation(function (this: DeviceBuffer) {
        if (!this.disposed && this.byteLength > 0) freed.push(this.copyToHost());
        dispose.call(this);
      });
      const zeroed = (): boolean => freed.length > 0 && freed.every((bytes) => bytes.every((b) => b === 0));
      try {
        const reference = { kernel: swapped, config: { grid: 32, block: 256 }, io: swappedIo };
        for (const zeroOnFree of [false, true]) {
          freed.length = 0;
          const r = await check({ kernel: k('scale'), config: cfg }, reference, io, { trials: 2, zeroOnFree });
          expect(r.passed, r.summary).toBe(true);
          // Per trial: the candidate's two buffers (x, y, each with its guard zones), the reference's two, and the
          // scratch buffer prepareInputs() generates x in on the GPU (device-fill.ts), zeroed whatever zeroOnFree says.
          expect(freed.length).toBe(2 * (2 + 2 + 1));
          expect(zeroed()).toBe(zeroOnFree); // without it the inputs, outputs and guard zones are still there
        }
        freed.length = 0;
        const sets = inputSets(Device.get(0), io, 42, { zeroOnFree: true });
        await bench(k('scale'), cfg, sets.args, { preset: 'quick', mode: 'hot' });
        expect((await sets.verify(jsRef)).passed).toBe(true);
        freed.length = 0;
        sets.dispose();
        expect(freed.length).toBe(4 * 2);
        expect(zeroed()).toBe(true);
      } finally {
        spy.mockRestore();
        m.dispose();
      }
    },
  );
});

describeGpu('check: kernel faults are verdicts', () => {
  unsanitized(
    'a candidate that makes an illegal address fails with defence fault; nothing more touches the GPU',
    () => {
      const r = checkInChild('illegal_address', 'js');
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(r.out).toMatchObject({ passed: false, defence: 'fault', trials: 1, referenceCalls: 0, usable: false });
      expect(r.out.error).toMatchObject({ code: 'CUDA_ERROR_ILLEGAL_ADDRESS', result: 700, sticky: true });
      expect(r.out.error!.api).toMatch(/^cu\w+Synchronize$/);
      expect(r.out.summary).toMatch(
        new RegExp(
          /^FAIL \(fault\) in trial 0: cu\w+ failed: CUDA_ERROR_ILLEGAL_ADDRESS \(700\): [^\n]+; /.source +
            /the CUDA context is lost: restart the process to use the GPU again$/.source,
        ),
      );
      expect(r.out.lost).toMatchObject({ code: 'CUDA_ERROR_ILLEGAL_ADDRESS' });
    },
  );

  unsanitized('a candidate that calls __trap() fails with defence fault, sticky', () => {
    const r = checkInChild('traps', 'js');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.out).toMatchObject({ passed: false, defence: 'fault', trials: 1, referenceCalls: 0 });
    expect(['CUDA_ERROR_LAUNCH_FAILED', 'CUDA_ERROR_ILLEGAL_INSTRUCTION']).toContain(r.out.error!.code);
    expect(r.out.error!.sticky).toBe(true);
  });

  unsanitized('a candidate whose device assert fires fails with defence fault, CUDA_ERROR_ASSERT', () => {
    const r = checkInChild('asserts', 'js');
    expect(r.status).toBe(0);
    expect(r.out).toMatchObject({ passed: false, defence: 'fault', trials: 1, referenceCalls: 0 });
    expect(r.out.error).toMatchObject({ code: 'CUDA_ERROR_ASSERT', sticky: true });
    expect(r.out.summary).toMatch(/^FAIL \(fault\) in trial 0: cu\w+ failed: CUDA_ERROR_ASSERT/);
  });

  unsanitized('a reference kernel that faults fails with defence reference-fault', () => {
    const r = checkInChild('scale', 'illegal_address');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.out).toMatchObject({ passed: false, defence: 'reference-fault', trials: 1 });
    expect(r.out.error).toMatchObject({ code: 'CUDA_ERROR_ILLEGAL_ADDRESS', sticky: true });
    expect(r.out.summary).toMatch(
      new RegExp(
        /^FAIL \(reference-fault\) in trial 0: the reference kernel failed: /.source +
          /cu\w+ failed: CUDA_ERROR_ILLEGAL_ADDRESS .*; the CUDA context is lost/.source,
      ),
    );
  });

  it('a launch the driver refuses is a fault too, not sticky: the GPU stays usable', () => {
    // A cooperative grid must fit on the device at once: a million blocks cannot.
    const r = checkInChild('scale', 'js', '{ grid: 1 << 20, block: 1024, cooperative: true }');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.out).toMatchObject({
      passed: false,
      defence: 'fault',
      trials: 1,
      referenceCalls: 0,
      lost: null,
      usable: true,
    });
    expect(r.out.error).toMatchObject({ code: 'CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE', sticky: false });
    expect(r.out.error!.api).toMatch(/^cuLaunch/);
    expect(r.out.summary).toMatch(
      /^FAIL \(fault\) in trial 0: cuLaunch\w* failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE/,
    );
    expect(r.out.summary).not.toContain('context is lost');
  });
});
