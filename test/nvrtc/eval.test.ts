// SPDX-License-Identifier: MIT
// evaluate() as far as NVRTC alone takes it: compiling comes before anything touches the GPU, so a job that does
// not compile is reported (phase 'compile', NVRTC's diagnostics) on a machine without one, given compile.arch.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Device, type EvalJob, evaluate } from '../../lib/index.js';
import { describeNvrtc, machine } from '../helpers.js';

// Any architecture NVRTC knows serves without a GPU; with one, the device's own, so that the code also loads.
const ARCH = machine.ok ? Device.get(0).arch : 'sm_80';

const BAD = 'extern "C" __global__ void k(float* x) {\n  x[0] = y;\n}\n';
const GOOD = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n';
const base = (more: Partial<EvalJob>): EvalJob => ({
  source: GOOD,
  kernel: 'k',
  grid: 1,
  block: 32,
  args: ['ptr:f32[32]:out'],
  compile: { arch: ARCH, cache: false },
  ...more,
});

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cudakit-eval-'));
  writeFileSync(join(dir, 'scale.h'), '#define SCALE 2.0f\n');
  writeFileSync(
    join(dir, 'with-header.cu'),
    '#include "scale.h"\nextern "C" __global__ void k(float* x) { x[threadIdx.x] = SCALE; }\n',
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeNvrtc('evaluate(): compile', () => {
  it('reports a kernel that does not compile, with the diagnostics, and touches no GPU', async () => {
    const phases: string[] = [];
    const report = await evaluate(base({ source: BAD }), {
      onProgress: (p) => p.kind === 'phase' && phases.push(p.phase),
    });
    expect(report).toMatchObject({
      name: 'k',
      passed: false,
      phase: 'compile',
      check: undefined,
      timing: undefined,
      compile: {},
    });
    expect(report.error).toMatchObject({
      kind: 'compile',
      code: 'NVRTC_ERROR_COMPILATION',
      kernel: 'candidate',
      source: 'candidate.cu',
      api: 'nvrtcCompileProgram',
    });
    expect(report.error!.diagnostics).toEqual([
      expect.objectContaining({
        file: 'candidate.cu',
        line: 2,
        severity: 'error',
        message: 'identifier "y" is undefined',
      }),
    ]);
    expect(report.error!.log).toContain('identifier "y" is undefined');
    expect(report.error!.flags).toContain(`--gpu-architecture=${ARCH}`);
    expect(report.error!.message).toMatch(
      /^nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION \(6\) compiling candidate\.cu: candidate\.cu:2:/,
    );
    expect(phases).toEqual(['validate', 'compile']);
    expect(report.phases.map((p) => p.phase)).toEqual(['validate', 'compile']);
  });

  it('names the kernel that failed: a reference or a compare baseline', async () => {
    const ref = await evaluate(base({ reference: { source: { text: BAD, name: 'ref.cu' }, kernel: 'k' } }));
    expect(ref.error).toMatchObject({ kind: 'compile', kernel: 'reference', source: 'ref.cu' });
    expect(ref.compile.candidate).toBeDefined(); // the candidate compiled before it
    const baseline = await evaluate(base({ compare: { source: BAD, kernel: 'k' } }));
    expect(baseline.error).toMatchObject({ kind: 'compile', kernel: 'baseline', source: 'baseline.cu' });
  });

  it("records the compile facts: flags, log, warnings and a C++ kernel's mangled name", async () => {
    const source =
      '#warning from the source\ntemplate <typename T> __global__ void scale(T* x, T s) { x[threadIdx.x] *= s; }\n';
    const report = await evaluate(
      base({
        source,
        kernel: 'scale<float>',
        args: ['ptr:f32[32]=ones:out', 'f32=2'],
        check: { skip: true },
        timing: { skip: true },
      }),
    );
    const facts = report.compile.candidate!;
    expect(facts).toMatchObject({
      kernel: 'scale<float>',
      loweredName: '_Z5scaleIfEvPT_S0_',
      source: 'candidate.cu',
      target: 'cubin',
      arch: ARCH,
      cached: false,
    });
    expect(facts.compileMs).toBeGreaterThan(0);
    expect(facts.flags).toContain(`--gpu-architecture=${ARCH}`);
    expect(facts.diagnostics).toEqual([expect.objectContaining({ severity: 'warning', line: 1 })]);
    expect(report.warnings).toEqual([
      expect.stringMatching(/^candidate\.cu:1: warning: #warning directive: from the source$/),
    ]);
    if (machine.ok) {
      expect(report.passed).toBe(true);
      expect(facts.registers).toBeGreaterThan(0);
      expect(facts.spillBytes).toBe(0);
    } else {
      // Compiled without the GPU; loading needs one.
      expect(report).toMatchObject({ passed: false, phase: 'load' });
      expect(report.error!.kind).toMatch(/^(cuda|exception)$/);
      expect(facts.registers).toBeUndefined();
    }
  });

  it('reads a file source relative to baseDir, with its own directory on the include path', async () => {
    const job = base({ source: { file: 'with-header.cu' }, check: { skip: true }, timing: { skip: true } });
    const report = await evaluate(job, { baseDir: dir });
    expect(report.compile.candidate).toMatchObject({ source: 'with-header.cu' });
    expect(report.compile.candidate!.flags).toContain(`--include-path=${dir}`);
    expect(report.phase).toBe(machine.ok ? undefined : 'load');

    const missing = await evaluate(base({ source: { file: 'nothere.cu' } }), { baseDir: dir });
    expect(missing).toMatchObject({
      phase: 'compile',
      error: { kind: 'exception', code: 'ENOENT', kernel: 'candidate' },
    });
  });

  it.skipIf(machine.ok)(
    'without a GPU and without compile.arch, fails for the missing GPU, with its remedy',
    async () => {
      const report = await evaluate(base({ compile: { cache: false } }));
      expect(report).toMatchObject({ phase: 'compile', error: { kind: 'cuda', kernel: 'candidate' } });
      expect(report.error!.message).toMatch(/^evaluate\(\): compile for the GPU's arch \(no compile\.arch\): /);
      expect(report.error!.message).toContain('\n  Remedy: ');
      expect(report.compile).toEqual({}); // NVRTC did not run
    },
  );

  it('waits for its turn on the GPU (waitForGpu) after compile, before load; not after a bad compile', async () => {
    const steps: string[] = [];
    const onProgress = (p: { kind: string; phase?: string }) => p.kind === 'phase' && steps.push(p.phase!);
    const waitForGpu = () => {
      steps.push('wait');
      return new Promise<void>((resolve) => setTimeout(resolve, 30));
    };
    const job = base({ check: { skip: true }, timing: { skip: true } });
    const report = await evaluate(job, { onProgress, waitForGpu });
    expect(steps).toEqual(['validate', 'compile', 'wait', 'load']);
    // The wait is in no phase: load's time starts once the GPU is this job's (without a GPU, load fails at once).
    if (!machine.ok) expect(report.phases.find((p) => p.phase === 'load')!.ms).toBeLessThan(30);
    expect(report.phase).toBe(machine.ok ? undefined : 'load');

    steps.length = 0;
    const bad = await evaluate(base({ source: BAD }), { onProgress, waitForGpu });
    expect(bad.phase).toBe('compile');
    expect(steps).toEqual(['validate', 'compile']);

    const refused = await evaluate(job, { waitForGpu: () => Promise.reject(new Error('the slot was stopped')) });
    expect(refused).toMatchObject({ passed: false, phase: 'load', error: { message: 'the slot was stopped' } });
    await expect(evaluate(job, { waitForGpu: 1 as never })).rejects.toThrow(/options\.waitForGpu/);
  });
});
