// SPDX-License-Identifier: MIT
// A Python candidate through the worker's pipeline (src/run/worker/python-candidate.ts): the real runner on the CPU
// (CUDAKIT_RUNNER_DEVICE=cpu), where this host's Python has torch, checked by check() as a HostCandidate against a
// JavaScript reference, timed by the runner, re-checked. Each of the candidate's ways to cheat or fail gets its own
// verdict: a wrong value, an input it changed, an exception, a call that never returns, and a clock it patches.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type HostValue, PRESETS, parseArgSpecs } from 'cudakit';
import { childLink } from '../../src/run/python-runner.js';
import { RUNNER_PATH } from '../../src/run/python.js';
import type { PythonJob } from '../../src/run/protocol.js';
import { evaluatePythonCandidate } from '../../src/run/worker/python-candidate.js';
import { PythonReference } from '../../src/run/worker/python-reference.js';

const PYTHON = '/usr/bin/python3';
const torchHere = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { timeout: 60_000 }).status === 0;
if (!torchHere) console.log(`python candidate tests skipped: ${PYTHON} has no torch`);

const N = 256;
const IO = parseArgSpecs([`ptr:f32[${N}]=uniform(-1,1)`, `ptr:f32[${N}]=uniform(-1,1)`, `ptr:f32[${N}]:out`]);
const add = (args: HostValue[]): void => {
  const [a, b, out] = args as [Float32Array, Float32Array, Float32Array];
  for (let i = 0; i < N; i++) out[i] = a[i]! + b[i]!;
};
const RULE = { ...PRESETS.quick, minSamples: 10, maxSamples: 60, timeoutMs: 3000, warmupMinRuns: 1 };

const folders: string[] = [];
const candidates: PythonReference[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of candidates) c.close();
  for (const c of children) c.kill('SIGKILL');
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

/** The candidate `source` (a torch function `f(a, b)` of `dtype` tensors) in a runner of its own, on the CPU. */
function candidateOf(
  source: string,
  callTimeoutMs = 60_000,
  dtype: 'float32' | 'float16' = 'float32',
): PythonReference {
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-python-candidate-'));
  folders.push(dir);
  const child = spawn(PYTHON, ['-I', RUNNER_PATH, '--serve'], {
    cwd: dir,
    env: { PATH: '/usr/bin:/bin', CUDAKIT_RUNNER_DEVICE: 'cpu' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const spec: PythonJob['reference'] = {
    type: 'torch',
    source,
    metadata: { function_name: 'f' },
    launch: null,
    args: [
      { name: 'a', kind: 'tensor', dtype, shape: [N], role: 'input', from: 0 },
      { name: 'b', kind: 'tensor', dtype, shape: [N], role: 'input', from: 1 },
    ],
    outputs: [2],
  };
  children.push(child);
  const candidate = new PythonReference(childLink(child), dir, spec, {
    role: 'candidate',
    flushBytes: 1 << 20,
    callTimeoutMs,
  });
  candidates.push(candidate);
  return candidate;
}

const evaluateSource = (source: string, callTimeoutMs?: number) =>
  evaluatePythonCandidate({ name: 'f', io: IO, check: { trials: 2 }, rule: RULE }, candidateOf(source, callTimeoutMs), {
    reference: add,
    label: 'the JavaScript reference',
  });

describe.runIf(torchHere)('a Python candidate through the worker', () => {
  it('passes an honest kernel: checked, timed by the runner, re-checked', async () => {
    const r = await evaluateSource('def f(a, b):\n    return a + b\n');
    expect(r.error).toBeUndefined();
    expect(r.passed).toBe(true);
    expect(r.phases.map((p) => p.phase)).toEqual(['validate', 'load', 'check', 'time', 'recheck']);
    expect(r.check).toMatchObject({ reference: 'the JavaScript reference', passed: true });
    const check = r.check as { before: { trials: unknown[] }; afterTiming: { passed: boolean } };
    expect(check.before.trials).toHaveLength(2);
    expect(check.afterTiming.passed).toBe(true);
    expect(r.pythonCandidate).toMatchObject({ type: 'torch', entry: 'f', runtime: { device: 'cpu' } });
    expect(r.pythonCandidate.timing!.stats.median).toBeGreaterThan(0);
    expect(r.pythonCandidate.timing!.samples.length).toBeGreaterThanOrEqual(10);
  }, 120_000);

  it('gives float16 tensors their bits, and reads their outputs and inputs back as values', async () => {
    const io = parseArgSpecs([`ptr:f16[${N}]=uniform(-1,1)`, `ptr:f16[${N}]=uniform(-1,1)`, `ptr:f16[${N}]:out`]);
    const job = { name: 'f', io, check: { trials: 2 }, rule: RULE, skipTiming: true };
    const reference = { reference: add, label: 'the JavaScript reference' };
    const honest = await evaluatePythonCandidate(
      job,
      candidateOf('def f(a, b):\n    return a + b\n', 60_000, 'float16'),
      reference,
    );
    expect(honest.error).toBeUndefined();
    expect(honest.pythonCandidate.notTimed).toBe('timing.skip');
    const halving = 'def f(a, b):\n    c = a + b\n    b.mul_(0.5)\n    return c\n';
    const mutating = await evaluatePythonCandidate(job, candidateOf(halving, 60_000, 'float16'), reference);
    expect(mutating.error).toMatchObject({ code: 'input-modified' });
  }, 120_000);

  it('fails a wrong value, an entry point it cannot find, and an input changed under a right output', async () => {
    const wrong = await evaluateSource('def f(a, b):\n    return a - b\n');
    expect(wrong).toMatchObject({ passed: false, phase: 'check', error: { kind: 'verdict', code: 'mismatch' } });
    expect(wrong.pythonCandidate).toMatchObject({ timing: undefined, notTimed: 'the kernel did not pass its check' });
    const unloadable = await evaluateSource('def g(a, b):\n    return a + b\n');
    expect(unloadable).toMatchObject({ passed: false, phase: 'load', error: { code: 'ERR_PYTHON_KERNEL' } });
    expect(unloadable.error!.message).toMatch(/function_name 'f' is not a function of the source/);
    expect(unloadable.pythonCandidate.notTimed).toBe('its load phase failed');
    const mutating = await evaluateSource('def f(a, b):\n    c = a + b\n    a.zero_()\n    return c\n');
    expect(mutating).toMatchObject({ passed: false, phase: 'check', error: { code: 'input-modified' } });
    expect(mutating.error!.message).toMatch(/argument 0 \(an input\) changed/);
  }, 120_000);

  it('fails a kernel that raises with its exception and its own frames, and one that never returns', async () => {
    const raising = await evaluateSource('def f(a, b):\n    raise ValueError("boom")\n');
    expect(raising).toMatchObject({ passed: false, phase: 'check', error: { code: 'ERR_PYTHON_KERNEL' } });
    expect(raising.error!.message).toBe('the Python kernel failed running it: ValueError: boom (kernel.py:2 in f)');
    const hanging = await evaluateSource('import time\ndef f(a, b):\n    time.sleep(3600)\n', 2000);
    expect(hanging).toMatchObject({ passed: false, phase: 'check', error: { code: 'ERR_PYTHON_RUNNER_GONE' } });
    expect(hanging.error!.message).toMatch(/did not answer 'run' in 2000 ms/);
  }, 120_000);

  it("times with the clock bound before the kernel's import: patching time or torch's events is vain", async () => {
    // Each call sleeps 2 ms; the module replaces the clocks a naive harness would read with ones that barely move.
    const source = [
      'import time, torch',
      '_sleep = time.sleep',
      'time.perf_counter_ns = lambda: 0',
      'time.perf_counter = lambda: 0.0',
      'class Event:',
      '    def __init__(self, *a, **k): pass',
      '    def record(self, *a): pass',
      '    def synchronize(self): pass',
      '    def elapsed_time(self, other): return 0.001',
      'torch.cuda.Event = Event',
      'def f(a, b):',
      '    _sleep(0.002)',
      '    return a + b',
      '',
    ].join('\n');
    const r = await evaluateSource(source);
    expect(r.passed, JSON.stringify(r.error)).toBe(true);
    expect(r.pythonCandidate.timing!.stats.median).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
