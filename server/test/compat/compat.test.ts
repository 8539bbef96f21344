// SPDX-License-Identifier: MIT
// The original server's routes (server/src/compat/routes.ts, compat/jobs.ts): its own test requests (fixtures/compat/,
// as published) and their CUDA-reference variants (*.cuda-ref.json, ours) map to jobs validateJob accepts; a Python
// reference is a 400 naming its substitutes; its exact messages for num_trials, timeout and Triton; the IOContract →
// argspec table; answers for pass, fail, compile error, timeout, crash and runtime error from the fake pool's canned
// outcomes; the synchronous wait running out (500 with job_id, the job goes on); auth scopes; body limits; and a fuzz
// of the three POST routes (fast-check, bounded) that never gets a 5xx.
import { readFileSync, readdirSync } from 'node:fs';
import { deflateSync } from 'node:zlib';
import {
  quantile,
  summarize,
  validateJob,
  type BenchResult,
  type CheckResult,
  type EvalCompileFacts,
  type EvalJob,
  type EvalReport,
} from 'cudakit';
import fc from 'fast-check';
import { Value } from 'typebox/value';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { admissionProblems, DEFAULT_ADMISSION_LIMITS } from '../../src/submit/admission.js';
import type { App } from '../../src/http/shared.js';
import { runtimeStatsOf } from '../../src/compat/answers.js';
import { CompatClientError } from '../../src/compat/errors.js';
import { ENABLE_PYTHON, compareJob, evaluateJob, globalFunctions } from '../../src/compat/jobs.js';
import { splitBody } from '../../src/submit/fields.js';
import {
  CompareRequest,
  CompareResponse,
  EvaluationRequest,
  EvaluationResponse,
  JobErrorBody,
} from '../../src/compat/schemas.js';
import { H200_BENCH_ENV } from '../../../test/support/devices.js';
import { until } from '../../../test/support/until.js';
import { auth, closeApps, harness, keepApp, type Harness, type Who } from '../support/app-harness.js';
import { failedReport, passedReport, scriptByName, type FakeScript } from '../support/fake-pool.js';
import { evaluateBody, settled } from '../support/helpers.js';

const FIXTURES = new URL('../fixtures/compat/', import.meta.url);
const fixture = (file: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as Record<string, unknown>;
const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));
const ORIGINALS = files.filter((f) => !f.endsWith('.cuda-ref.json')).sort();
const VARIANTS = files.filter((f) => f.endsWith('.cuda-ref.json')).sort();

afterEach(closeApps);

function post(app: App, url: string, payload: unknown, who: Who = 'alice', headers: Record<string, string> = {}) {
  return app.inject({
    method: 'POST',
    url,
    headers: { ...auth(who), 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(payload),
  });
}

const NO_CACHE = { 'cache-control': 'no-cache, no-store, must-revalidate', pragma: 'no-cache', expires: '0' };

// ---------------------------------------------------------------------------------------------------------------
// Canned reports

/** A BenchResult over `gpuMs` (accepted) plus one rejected sample far above them. */
function bench(name: string, gpuMs: number[]): BenchResult {
  const accepted = gpuMs.map((g, i) => ({
    gpuMs: g,
    eventMs: g,
    launchUs: 3,
    clockMHz: 1980,
    inputSet: i % 4,
    rejected: false,
  }));
  return {
    name,
    mode: 'cold',
    preset: 'default',
    timer: 'events',
    samples: [...accepted, { gpuMs: 99, eventMs: 99, launchUs: 3, clockMHz: 900, inputSet: 0, rejected: true }],
    stats: summarize(gpuMs),
    rejected: 1,
    warmupRuns: 3,
    wallMs: 120,
    converged: true,
    stopReason: 'precision',
    clockMHz: 1980,
    env: H200_BENCH_ENV,
    warnings: [],
  };
}

const SAMPLES = Array.from({ length: 40 }, (_, i) => 0.01 + i * 0.0005);

function facts(kernel: string): EvalCompileFacts {
  return {
    kernel,
    loweredName: `_Z${kernel.length}${kernel}Pfi`,
    source: 'candidate.cu',
    target: 'cubin',
    arch: 'sm_90',
    nvrtcVersion: '13.0',
    compileMs: 20,
    cached: false,
    flags: ['--gpu-architecture=sm_90'],
    log: '',
    diagnostics: [],
  };
}

const CHECK = {
  passed: true,
  defence: undefined,
  trials: [{}, {}, {}, {}, {}],
  mismatches: [],
  error: undefined,
  nondeterministicElements: 0,
  nondeterministicBeyondTolerance: 0,
  summary: 'PASS: 5 trials',
  maxAbsError: 2.5e-7,
  maxRelError: 1e-6,
  toleranceUsed: 0.02,
  relNormError: 1e-7,
  matchedRatio: 1,
} as unknown as CheckResult;

const report = (o: EvalReport): FakeScript => ({
  delayMs: 5,
  outcome: { kind: 'report', report: o, device: undefined },
});

function timedReport(job: EvalJob): EvalReport {
  const name = job.name ?? job.kernel;
  const check = { reference: 'no reference', passed: true, requireDeterminism: false, before: CHECK };
  const extra: Partial<EvalReport> = { compile: { candidate: facts(job.kernel) }, check };
  if (job.compare === undefined) return passedReport(name, { ...extra, timing: bench(name, SAMPLES) });
  const a = bench(
    'ref',
    SAMPLES.map((x) => x * 2),
  );
  const b = bench(name, SAMPLES);
  const comparison = { a, b, speedup: 2, speedupLow: 1.9, speedupHigh: 2.1, verdict: 'FASTER' as const, rounds: 5 };
  return passedReport(name, { ...extra, comparison });
}

// ---------------------------------------------------------------------------------------------------------------

describe('the original server’s payloads', () => {
  it('are here: five compare requests with a PyTorch reference, and a CUDA-reference variant of each', () => {
    expect(ORIGINALS).toEqual([
      'gelu_activation.json',
      'matrix_multiply.json',
      'relu_activation.json',
      'sum_reduction.json',
      'vector_add.json',
    ]);
    expect(VARIANTS).toEqual(ORIGINALS.map((f) => f.replace(/\.json$/, '.cuda-ref.json')));
    for (const f of ORIGINALS) {
      const p = fixture(f) as { ref_kernel: { kernel_type: string }; custom_kernel: { kernel_type: string } };
      expect([p.ref_kernel.kernel_type, p.custom_kernel.kernel_type], f).toEqual(['torch', 'cuda']);
      expect(Value.Check(CompareRequest, p), f).toBe(true);
    }
  });

  it.each(VARIANTS)('%s parses and maps to a job validateJob and the admission accept', (file) => {
    const payload = fixture(file);
    const original = fixture(file.replace('.cuda-ref.json', '.json'));
    expect(Value.Check(CompareRequest, payload)).toBe(true);
    // Only the reference differs (and sum_reduction's launch gains its dynamic shared memory).
    const custom = structuredClone(original.custom_kernel) as { io: { launch: Record<string, unknown> } };
    if (file.startsWith('sum_reduction')) custom.io.launch.shared_mem_bytes = 1024;
    expect(payload.custom_kernel).toEqual(custom);
    expect({ ...payload, ref_kernel: undefined }).toEqual({
      ...original,
      custom_kernel: custom,
      ref_kernel: undefined,
    });

    const mapped = compareJob(Value.Default(CompareRequest, structuredClone(payload)) as CompareRequest);
    const { job, options } = splitBody(mapped.body);
    expect(admissionProblems(job, DEFAULT_ADMISSION_LIMITS)).toEqual([]);
    const valid = validateJob(job);
    expect(valid.compare, 'the CUDA reference is the timed baseline').toBeDefined();
    expect(valid.reference).toBeUndefined();
    expect(valid.check).toEqual({ atol: 0.01, rtol: 0.01 });
    expect(valid.timing).toEqual({ rule: { minSamples: payload.num_trials } });
    expect(options).toMatchObject({ timeoutSeconds: payload.timeout, maxQueueSeconds: 300, gpu: 'any' });
    expect(mapped.warnings).toEqual([]);
    if (file.startsWith('sum_reduction')) expect(valid.sharedMemBytes).toBe(1024);
  });

  it('maps vector_add exactly: names, dtypes, shapes, roles, inits, scalars, launch', () => {
    const mapped = compareJob(fixture('vector_add.cuda-ref.json') as CompareRequest);
    expect(mapped.body).toEqual({
      name: 'vector_add',
      source: expect.stringContaining('__global__ void vector_add(float* a'),
      kernel: 'vector_add',
      grid: [4, 1, 1],
      block: [256, 1, 1],
      args: [
        { kind: 'buffer', dtype: 'f32', shape: [1024], role: 'in', init: { kind: 'const', value: 2 }, name: 'a' },
        { kind: 'buffer', dtype: 'f32', shape: [1024], role: 'in', init: { kind: 'const', value: 3 }, name: 'b' },
        { kind: 'buffer', dtype: 'f32', shape: [1024], role: 'out', init: { kind: 'zeros' }, name: 'c' },
        { kind: 'scalar', type: 'i32', value: 1024, name: 'n' },
      ],
      compare: {
        source: expect.stringContaining('vector_add_ref'),
        kernel: 'vector_add_ref',
        name: 'vector_add_ref',
        grid: [4, 1, 1],
        block: [256, 1, 1],
      },
      check: { atol: 0.01, rtol: 0.01 },
      timing: { rule: { minSamples: 100 } },
      timeoutSeconds: 30,
      maxQueueSeconds: 300,
    });
  });

  it.each(VARIANTS)('%s answers 200 through POST /compare (fake GPU)', async (file) => {
    const { app } = await harness();
    const res = await post(app, '/compare', fixture(file));
    expect(res.statusCode, res.body).toBe(200);
    expect(Value.Check(CompareResponse, res.json())).toBe(true);
    expect(res.json()).toMatchObject({ status: 'success', kernel_exec_result: { compiled: true, correctness: true } });
  });

  it.each(ORIGINALS)('%s (a PyTorch reference) is a 400 naming the substitutes, on /compare and /', async (file) => {
    const { app } = await harness();
    for (const url of ['/compare', '/']) {
      const res = await post(app, url, fixture(file));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error:
          "kernel_type 'torch' needs Python, which this server does not run: give a 'cuda' reference kernel, " +
          `a registry problem, or expected outputs (${ENABLE_PYTHON})`,
        details: {
          kernel: 'ref_kernel',
          kernel_type: 'torch',
          supported: ['cuda'],
          enable: expect.stringContaining('--python PATH'),
          substitutes: [
            expect.stringContaining("ref_kernel with kernel_type 'cuda'"),
            expect.stringContaining('cudakit.expected'),
            expect.stringContaining('registry'),
          ],
        },
        status: 'client_error',
      });
      expect(res.headers).toMatchObject(NO_CACHE);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('IOContract → argspec', () => {
  const args = (list: unknown[], launch?: unknown): EvalJob['args'] =>
    evaluateJob(
      Value.Default(
        EvaluationRequest,
        evaluateBody({}, { io: { args: list, ...(launch ? { launch } : {}) } }),
      ) as never,
    ).body.args as EvalJob['args'];
  const tensor = (dtype: string, init?: unknown, role = 'input', shape: number[] = [2, 3]) => ({
    name: 't',
    type: 'tensor',
    role,
    tensor_spec: { shape, dtype, ...(init === undefined ? {} : { init }) },
  });
  const out = { name: 'o', type: 'tensor', role: 'output', tensor_spec: { shape: [4] } };
  const one = (spec: unknown) => args([spec, out])[0];

  it('maps every dtype (bool as a byte of 0 or 1; torch’s float8 names are cudakit’s additions)', () => {
    const dtypes = {
      float32: 'f32',
      float64: 'f64',
      float16: 'f16',
      bfloat16: 'bf16',
      float8_e4m3fn: 'f8e4m3',
      float8_e5m2: 'f8e5m2',
      int64: 'i64',
      int32: 'i32',
      int16: 'i16',
      int8: 'i8',
      uint8: 'u8',
      bool: 'u8',
    };
    for (const [theirs, ours] of Object.entries(dtypes)) {
      expect(one(tensor(theirs, { kind: 'zeros' }))).toMatchObject({ kind: 'buffer', dtype: ours, shape: [2, 3] });
    }
  });

  it('maps inits by the original’s rules, per dtype', () => {
    const init = (dtype: string, i: unknown) => (one(tensor(dtype, i)) as { init: unknown }).init;
    expect(init('float32', { kind: 'randn', seed: 7 })).toEqual({ kind: 'normal', mean: 0, std: 1, seed: 7 });
    // The original scales only when a mean is given.
    expect(init('float32', { kind: 'randn', std: 3 })).toEqual({ kind: 'normal', mean: 0, std: 1 });
    expect(init('float32', { kind: 'randn', mean: 2, std: 3 })).toEqual({ kind: 'normal', mean: 2, std: 3 });
    expect(init('float32', {})).toEqual({ kind: 'normal', mean: 0, std: 1 });
    expect(init('int32', { kind: 'randn' })).toEqual({ kind: 'randint', lo: -2147483648, hi: 2147483648 });
    expect(init('int64', { kind: 'randn' })).toEqual({ kind: 'randint', lo: -1_000_000, hi: 1_000_001 });
    expect(init('uint8', { kind: 'randn', seed: 1 })).toEqual({ kind: 'randint', lo: 0, hi: 256, seed: 1 });
    expect(init('bool', { kind: 'randn' })).toEqual({ kind: 'randint', lo: 0, hi: 2 });
    expect(init('float16', { kind: 'uniform', low: -1, high: 1 })).toEqual({ kind: 'uniform', lo: -1, hi: 1 });
    expect(init('float8_e5m2', { kind: 'randn' })).toEqual({ kind: 'normal', mean: 0, std: 1 });
    expect(init('float32', { kind: 'uniform' })).toEqual({ kind: 'uniform', lo: 0, hi: 1 });
    expect(init('int16', { kind: 'uniform', low: 5, high: 9 })).toEqual({ kind: 'randint', lo: 5, hi: 10 });
    expect(init('int16', { kind: 'uniform' })).toEqual({ kind: 'randint', lo: 0, hi: 101 });
    expect(init('float32', { kind: 'full', fill_value: 2.5 })).toEqual({ kind: 'const', value: 2.5 });
    expect(init('float32', { kind: 'full' })).toEqual({ kind: 'const', value: 0 });
    expect(init('bool', { kind: 'full', fill_value: 7 })).toEqual({ kind: 'const', value: 1 });
    expect(init('float32', { kind: 'ones' })).toEqual({ kind: 'ones' });
    expect(init('float32', { kind: 'arange', start: 1, step: 0.5 })).toEqual({
      kind: 'seq',
      start: 1,
      step: 0.5,
      along: 'last',
    });
    expect(init('int32', { kind: 'arange' })).toEqual({ kind: 'seq', start: 0, step: 1, along: 'last' });
  });

  it('maps literal data (zlib too), which brings its own dtype and shape', () => {
    const data = { data_b64: Buffer.from(new Float64Array([1, 2]).buffer).toString('base64'), dtype: 'float64' };
    expect(one({ name: 'x', type: 'tensor', tensor_spec: { data: { ...data, shape: [2] } } })).toEqual({
      kind: 'buffer',
      dtype: 'f64',
      shape: [2],
      role: 'in',
      init: { kind: 'data', base64: data.data_b64, compress: 'none' },
      name: 'x',
    });
    const zipped = { data_b64: Buffer.from(deflateSync(Buffer.alloc(4))).toString('base64'), compress: 'zlib' };
    expect(one({ name: 'x', type: 'tensor', tensor_spec: { data: zipped } })).toMatchObject({
      dtype: 'f32',
      length: 1,
      init: { kind: 'data', compress: 'zlib' },
    });
  });

  it('maps roles: input, output (poisoned without an init), inout (read-write); none marked: all compared', () => {
    expect(one(tensor('float32'))).toMatchObject({ role: 'in', init: { kind: 'zeros' } });
    expect(args([out])[0]).toEqual({ kind: 'buffer', dtype: 'f32', shape: [4], role: 'out', name: 'o' });
    expect(args([tensor('float32', undefined, 'inout')])[0]).toMatchObject({ role: 'out', init: { kind: 'zeros' } });
    expect(args([tensor('float32', { kind: 'ones' }, 'inout')])[0]).toMatchObject({
      role: 'out',
      init: { kind: 'ones' },
    });
    const job = evaluateJob(
      Value.Default(
        EvaluationRequest,
        evaluateBody({}, { io: { args: [tensor('float32', { kind: 'ones' })] } }),
      ) as never,
    );
    expect((job.body.args as unknown[])[0]).toMatchObject({ role: 'out', init: { kind: 'ones' } });
    expect(job.warnings).toEqual([expect.stringContaining('every tensor is compared')]);
  });

  it('maps scalars: int as i32 (i64 beyond), float as f32, bool; dtype picks another width', () => {
    const s = (a: Record<string, unknown>) => one({ name: 's', ...a });
    expect(s({ type: 'int', value: 7 })).toEqual({ kind: 'scalar', type: 'i32', value: 7, name: 's' });
    expect(s({ type: 'int', value: 2 ** 31 })).toMatchObject({ type: 'i64' });
    expect(s({ type: 'int', value: -(2 ** 31) })).toMatchObject({ type: 'i32' });
    expect(s({ type: 'int', value: 7, dtype: 'int64' })).toMatchObject({ type: 'i64' });
    expect(s({ type: 'float', value: 2 })).toEqual({ kind: 'scalar', type: 'f32', value: 2, name: 's' });
    expect(s({ type: 'float', value: 0.5, dtype: 'float64' })).toMatchObject({ type: 'f64' });
    expect(s({ type: 'bool', value: true })).toEqual({ kind: 'scalar', type: 'bool', value: true, name: 's' });
  });

  it('takes the original’s launch defaults, and shared_mem_bytes as an extension', () => {
    const job = evaluateJob(Value.Default(EvaluationRequest, evaluateBody({}, { io: { args: [out] } })) as never);
    expect(job.body).toMatchObject({ grid: [1, 1, 1], block: [256, 1, 1] });
    expect(job.body.sharedMemBytes).toBeUndefined();
    const smem = evaluateJob(
      Value.Default(
        EvaluationRequest,
        evaluateBody({}, { io: { args: [out], launch: { grid: { x: 2, y: 3 }, shared_mem_bytes: 4096 } } }),
      ) as never,
    );
    expect(smem.body).toMatchObject({ grid: [2, 3, 1], block: [256, 1, 1], sharedMemBytes: 4096 });
  });

  it('resolves the kernel: kernel_name (a C++ name: no rewriting), else the first __global__ function', () => {
    const source = `// __global__ void not_this(int* x)
template <int N> __global__ void __launch_bounds__(256) tiled(float* y) {}
__global__ void plain(float* y, int n) {}`;
    expect(globalFunctions(source)).toEqual(['tiled', 'plain']);
    const job = evaluateJob(
      Value.Default(EvaluationRequest, evaluateBody({}, { source_code: source, metadata: {} })) as never,
    );
    expect(job.body).toMatchObject({ kernel: 'tiled', source });
    expect(job.warnings).toEqual([expect.stringContaining("'tiled' is the first of 2 kernels")]);
    const named = evaluateJob(
      Value.Default(
        EvaluationRequest,
        evaluateBody({}, { metadata: { kernel_name: 'tiled<4>', name_expressions: ['tiled<4>'] } }),
      ) as never,
    );
    expect(named.body).toMatchObject({ kernel: 'tiled<4>', compile: { nameExpressions: ['tiled<4>'] } });
  });

  it('passes compiler_options on (the allow-list decides), dropping -O levels with a warning', () => {
    const job = evaluateJob(
      Value.Default(
        EvaluationRequest,
        evaluateBody({}, { metadata: { kernel_name: 'fill', compiler_options: ['-O3', '--use_fast_math'] } }),
      ) as never,
    );
    expect(job.body.compile).toEqual({ extraFlags: ['--use_fast_math'] });
    expect(job.warnings).toEqual([expect.stringContaining('-O3 dropped')]);
  });

  it('turns num_trials into the stopping rule’s minimum samples, capped by the preset', () => {
    const map = (extra: Record<string, unknown>) =>
      evaluateJob(Value.Default(EvaluationRequest, evaluateBody(extra)) as never).body.timing;
    expect(map({})).toEqual({ rule: { minSamples: 100 } });
    expect(map({ num_trials: 5000, cudakit: { timing: { preset: 'quick', mode: 'graph' } } })).toEqual({
      preset: 'quick',
      mode: 'graph',
      rule: { minSamples: 1000 },
    });
  });

  it('refuses what a CUDA kernel cannot take, naming the field', () => {
    const refuse = (kernel: Record<string, unknown>, field: string, message: RegExp) => {
      let error: unknown;
      try {
        evaluateJob(Value.Default(EvaluationRequest, evaluateBody({}, kernel)) as never);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CompatClientError);
      expect((error as CompatClientError).message).toMatch(message);
      expect((error as CompatClientError).details).toMatchObject({ field });
    };
    const io = (a: unknown) => ({ io: { args: [a, out] } });
    refuse({ metadata: { backend: 'nvcc' } }, 'kernel -> metadata -> backend', /NVRTC/);
    refuse({ metadata: { jitify: true } }, 'kernel -> metadata -> jitify', /jitify/);
    refuse(io({ name: 's', type: 'str', value: 'x' }), 'kernel -> io -> args -> 0 -> type', /'str'/);
    refuse(io({ name: 'k', type: 'int', value: 4, is_meta: true }), 'kernel -> io -> args -> 0 -> is_meta', /Triton/);
    refuse(io({ name: 'my-arg', type: 'int', value: 1 }), 'kernel -> io -> args -> 0 -> name', /C identifiers/);
    refuse(io({ name: 'n', type: 'int' }), 'kernel -> io -> args -> 0 -> value', /needs a value/);
    refuse(io({ name: 'n', type: 'int', value: 1.5 }), 'kernel -> io -> args -> 0 -> value', /an integer/);
    refuse(io({ name: 't', type: 'tensor' }), 'kernel -> io -> args -> 0 -> tensor_spec', /tensor_spec/);
    for (const dtype of ['complex64', 'constructor', 'toString', '__proto__']) {
      refuse(io(tensor(dtype)), 'kernel -> io -> args -> 0 -> tensor_spec -> dtype', /Unknown dtype/);
    }
    refuse(
      io({ name: 'n', type: 'int', value: 1, dtype: 'constructor' }),
      'kernel -> io -> args -> 0 -> dtype',
      /width/,
    );
    refuse(io(tensor('float32', { kind: 'eye' })), 'kernel -> io -> args -> 0 -> tensor_spec -> init -> kind', /eye/);
    refuse(
      io(tensor('float32', undefined, 'input', [4, 0])),
      'kernel -> io -> args -> 0 -> tensor_spec -> shape',
      /empty/,
    );
    refuse(io(tensor('float32', undefined, 'scratch')), 'kernel -> io -> args -> 0 -> role', /scratch/);
    refuse({ source_code: 'int x;', metadata: null }, 'kernel -> metadata -> kernel_name', /kernel_name is required/);
  });

  it("leaves launch sizes to the service's admission, which names the request's field", () => {
    const launch = { block: { x: 64, y: 32 }, grid: { x: 1, y: 1, z: 70_000 } };
    const job = evaluateJob(
      Value.Default(EvaluationRequest, evaluateBody({}, { io: { args: [out], launch } })) as never,
    );
    expect([job.body.block, job.body.grid]).toEqual([
      [64, 32, 1],
      [1, 1, 70_000],
    ]);
    const problems = admissionProblems(splitBody(job.body).job, DEFAULT_ADMISSION_LIMITS);
    expect(problems.map((p) => [job.fieldOf(p.path), /(\d+) (threads|blocks)/.exec(p.message)?.[0]])).toEqual([
      ['kernel -> io -> launch -> block', '1024 threads'],
      ['kernel -> io -> launch -> grid', '65535 blocks'],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('the original’s messages, verbatim', () => {
  it('num_trials and timeout bounds on the three POSTs (a torch reference is refused after them)', async () => {
    const { app } = await harness();
    const compare = fixture('vector_add.json');
    const cases: [Record<string, unknown>, string, Record<string, unknown>][] = [
      [{ num_trials: 0 }, 'num_trials must be at least 1', { num_trials: 0 }],
      [{ num_trials: 10001 }, 'num_trials cannot exceed 10000', { num_trials: 10001 }],
      [{ timeout: 4 }, 'timeout must be at least 5 seconds', { timeout: 4 }],
      [{ timeout: 601 }, 'timeout cannot exceed 600 seconds', { timeout: 601 }],
    ];
    for (const [extra, error, details] of cases) {
      for (const [url, body] of [
        ['/evaluate', evaluateBody(extra)],
        ['/compare', { ...compare, ...extra }],
        ['/', { ...compare, ...extra }],
      ] as const) {
        const res = await post(app, url, body);
        expect(res.statusCode, `${url} ${error}`).toBe(400);
        expect(res.json()).toEqual({ error, details, status: 'client_error' });
      }
    }
  });

  it('Triton kernels require io_contract to be specified', async () => {
    const { app } = await harness();
    const triton = { source_code: '@triton.jit\ndef k(x): pass', kernel_type: 'triton' };
    const evaluate = await post(app, '/evaluate', { kernel: triton });
    expect(evaluate.statusCode).toBe(400);
    expect(evaluate.json()).toEqual({
      error: 'Triton kernels require io_contract to be specified',
      details: { kernel_type: 'triton' },
      status: 'client_error',
    });
    const compare = await post(app, '/compare', { ref_kernel: triton, custom_kernel: evaluateBody().kernel });
    expect(compare.json()).toEqual({
      error: 'Triton kernels require io_contract to be specified',
      details: { kernel: 'ref_kernel', kernel_type: 'triton' },
      status: 'client_error',
    });
  });

  it('answers pydantic’s validation errors in the original’s shape', async () => {
    const { app } = await harness();
    const bad = async (url: string, body: unknown) => {
      const res = await post(app, url, body);
      expect(res.statusCode).toBe(400);
      const b = res.json() as { error: string; status: string; validation_errors: unknown[] };
      expect(b).toMatchObject({ error: 'Invalid request format', status: 'client_error' });
      return b.validation_errors;
    };
    expect(await bad('/evaluate', evaluateBody({}, { kernel_type: 'rust' }))).toEqual([
      {
        field: 'kernel -> kernel_type',
        message: "Input should be 'torch', 'torch_cuda', 'triton', 'cuda' or 'multi_kernel'",
        type: 'enum',
      },
    ]);
    expect(await bad('/evaluate', { num_trials: 5 })).toEqual([
      { field: 'kernel', message: 'Field required', type: 'missing' },
    ]);
    expect(await bad('/evaluate', evaluateBody({}, { colour: 'red' }))).toEqual([
      { field: 'kernel -> colour', message: 'Extra inputs are not permitted', type: 'extra_forbidden' },
    ]);
    expect(await bad('/evaluate', evaluateBody({ num_trials: '5' }))).toEqual([
      { field: 'num_trials', message: 'Input should be a valid integer', type: 'int_type' },
    ]);
    expect(await bad('/compare', { custom_kernel: evaluateBody().kernel })).toEqual([
      { field: 'ref_kernel', message: 'Field required', type: 'missing' },
    ]);
    const res = await app.inject({
      method: 'POST',
      url: '/evaluate',
      headers: { ...auth('alice'), 'content-type': 'application/json' },
      payload: '{"kernel":',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      error: 'Invalid request format',
      validation_errors: [{ type: 'json_invalid' }],
    });
    // Unknown top-level keys are ignored, as the original's request models do (its tests send "index").
    expect((await post(app, '/evaluate', evaluateBody({ index: 3 }))).statusCode).toBe(200);
  });

  it('refuses Python kernels and the legacy form, after the original’s own checks', async () => {
    const { app } = await harness();
    for (const kernelType of ['torch', 'torch_cuda', 'triton', 'multi_kernel']) {
      const res = await post(app, '/evaluate', evaluateBody({}, { kernel_type: kernelType }));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error:
          `kernel_type '${kernelType}' needs Python, which this server does not run: only 'cuda' kernels ` +
          `(CUDA C++, compiled with NVRTC) are evaluated here (${ENABLE_PYTHON})`,
        details: { kernel: 'kernel', kernel_type: kernelType, supported: ['cuda'], enable: ENABLE_PYTHON },
        status: 'client_error',
      });
    }
    const legacy = { ref_code: 'import torch', custom_code: 'import torch' };
    for (const url of ['/compare', '/']) {
      const res = await post(app, url, legacy);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        error: expect.stringMatching(/^The legacy \{ ref_code, custom_code \} form is Python/),
        details: { kernel: 'ref_code', kernel_type: 'torch', supported: ['cuda'] },
        status: 'client_error',
      });
      expect((await post(app, url, { ...legacy, num_trials: 0 })).json().error).toBe('num_trials must be at least 1');
    }
    // A CUDA kernel without io cannot be given its arguments.
    const noIo = await post(app, '/evaluate', evaluateBody({}, { io: null }));
    expect(noIo.json()).toEqual({
      error: 'CUDA kernels require io_contract to be specified',
      details: { kernel_type: 'cuda' },
      status: 'client_error',
    });
  });

  it('words validateJob’s and the admission’s problems with the request’s fields', async () => {
    const { app } = await harness();
    const flags = await post(
      app,
      '/evaluate',
      evaluateBody({}, { metadata: { kernel_name: 'fill', compiler_options: ['-I/etc'] } }),
    );
    expect(flags.statusCode).toBe(400);
    expect(flags.json()).toMatchObject({
      error: expect.stringContaining('-I/etc'),
      details: { problems: [{ field: 'kernel -> metadata -> compiler_options', path: 'job.compile.extraFlags[0]' }] },
      status: 'client_error',
    });
    const grid = await post(
      app,
      '/evaluate',
      evaluateBody({}, { io: { ...evaluateBody().kernel.io, launch: { grid: { x: 0 } } } }),
    );
    expect(grid.json()).toMatchObject({ details: { problems: [{ field: 'kernel -> io -> launch -> grid' }] } });
    // Reference inputs are matched to the candidate's by name: one the candidate lacks is a 400.
    const payload = fixture('vector_add.cuda-ref.json') as { ref_kernel: { io: { args: { name: string }[] } } };
    payload.ref_kernel.io.args[0]!.name = 'x';
    const ref = await post(app, '/compare', payload);
    expect(ref.statusCode).toBe(400);
    expect(ref.json().details.problems[0]).toMatchObject({ field: 'ref_kernel -> io -> args' });
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('answers', () => {
  async function evaluateWith(script: (job: EvalJob) => FakeScript, url = '/evaluate', body: unknown = evaluateBody()) {
    const h = await harness();
    h.pool.script = script;
    const res = await post(h.app, url, body);
    return { ...h, res, body: res.json() as Record<string, unknown> & { kernel_exec_result: Record<string, unknown> } };
  }

  it('a pass: runtime is the mean, runtime_stats over accepted samples, unrounded; cudakit’s extras', async () => {
    const { res, body, service } = await evaluateWith((job) => report(timedReport(job)));
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({ ...NO_CACHE, 'x-gpu-type': 'h200' });
    expect(Value.Check(EvaluationResponse, body)).toBe(true);
    const stats = summarize(SAMPLES);
    const sorted = [...SAMPLES].sort((a, b) => a - b);
    expect(body).toEqual({
      job_id: expect.stringMatching(/^ev_/),
      kernel_exec_result: {
        compiled: true,
        correctness: true,
        runtime: stats.mean,
        runtime_stats: {
          mean: stats.mean,
          std: stats.stdev,
          min: stats.min,
          max: stats.max,
          median: stats.median,
          percentile_95: quantile(sorted, 0.95),
          percentile_99: quantile(sorted, 0.99),
        },
        metadata: {
          gpu_id: 0,
          kernel_name: 'fill',
          kernel_type: 'cuda',
          gpu_type: 'h200',
          cuda_version: '13.0',
          profiling_method: 'cudakit-cold',
          cudakit: {
            verdict: 'PASSED',
            evaluation_id: body.job_id,
            median_ms: stats.median,
            ci_low_ms: stats.ciLow,
            ci_high_ms: stats.ciHigh,
            mode: 'cold',
            preset: 'default',
            check: { trials: 5, defence: null, max_abs_error: 2.5e-7, tolerance_used: 0.02 },
            warnings: [],
          },
        },
      },
      pod_name: expect.any(String),
      pod_ip: expect.any(String),
      status: 'success',
      gpu_type: 'h200',
    });
    expect((body.kernel_exec_result.runtime_stats as { max: number }).max).toBeLessThan(99); // the rejected one is out
    // The job is the v1 API's too.
    const v1 = await service.get(body.job_id as string);
    expect(v1).toMatchObject({ status: 'succeeded', verdict: 'PASSED', principal: 'alice' });
  });

  it('a compare: ref_runtime from the baseline, the speedup and its interval', async () => {
    const { res, body } = await evaluateWith(
      (job) => report(timedReport(job)),
      '/compare',
      fixture('vector_add.cuda-ref.json'),
    );
    expect(res.statusCode).toBe(200);
    expect(Value.Check(CompareResponse, body)).toBe(true);
    expect(body.ref_runtime).toEqual(
      runtimeStatsOf(
        bench(
          'ref',
          SAMPLES.map((x) => x * 2),
        ),
      ),
    );
    expect(body.kernel_exec_result).toMatchObject({
      compiled: true,
      correctness: true,
      metadata: { cudakit: { speedup: 2, speedup_ci: [1.9, 2.1], compare_verdict: 'FASTER' } },
    });
  });

  it('a wrong kernel: 200 success, correctness false, the verdict and cudakit’s summary', async () => {
    const { res, body } = await evaluateWith(() => ({
      delayMs: 5,
      outcome: {
        kind: 'report',
        report: {
          ...failedReport(
            'fill',
            {
              kind: 'verdict',
              code: 'mismatch',
              defence: 'mismatch',
              message: 'FAIL (mismatch) in trial 0: 3 of 32 elements differ; first: argument 0[4] = 0, expected 1',
            },
            'check',
          ),
          compile: { candidate: facts('fill') },
        },
        device: undefined,
      },
    }));
    expect(res.statusCode).toBe(200);
    expect(body).toMatchObject({ status: 'success' });
    expect(body.kernel_exec_result).toMatchObject({
      compiled: true,
      correctness: false,
      runtime: 0,
      validation_error:
        'INCORRECT: FAIL (mismatch) in trial 0: 3 of 32 elements differ; first: argument 0[4] = 0, expected 1',
      metadata: { cudakit: { verdict: 'INCORRECT' } },
    });
    expect(body.kernel_exec_result).not.toHaveProperty('runtime_stats');
    expect(body.kernel_exec_result).not.toHaveProperty('compilation_error');
  });

  it('a compile error: compiled false, the one line and NVRTC’s log in compilation_error', async () => {
    const log = 'candidate.cu(1): error: expected a ";"\n\n1 error detected in the compilation of "candidate.cu".';
    const { body } = await evaluateWith(() =>
      report(
        failedReport(
          'fill',
          {
            kind: 'compile',
            code: 'NVRTC_ERROR_COMPILATION',
            kernel: 'candidate',
            log,
            message:
              'nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION (6) compiling candidate.cu: candidate.cu:1: ' +
              'expected a ";"\n  options: --gpu-architecture=sm_90',
          },
          'compile',
        ),
      ),
    );
    expect(body.kernel_exec_result).toMatchObject({
      compiled: false,
      correctness: false,
      compilation_error:
        'COMPILE_ERROR: nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION (6) compiling candidate.cu: ' +
        `candidate.cu:1: expected a ";"\n${log}`,
      metadata: { cudakit: { verdict: 'COMPILE_ERROR' } },
    });
    expect(body.kernel_exec_result).not.toHaveProperty('validation_error');
  });

  it('a timeout: the kernel’s verdict (200), not a hung request', async () => {
    const { res, body } = await evaluateWith(() => ({
      delayMs: 5,
      outcome: { kind: 'timeout', phase: 'check', limitMs: 30_000, scope: 'phase' },
    }));
    expect(res.statusCode).toBe(200);
    expect(body.kernel_exec_result).toMatchObject({
      compiled: true,
      correctness: false,
      validation_error: 'TIMEOUT: killed after 30 s in phase check',
      metadata: { cudakit: { verdict: 'TIMEOUT', check: null } },
    });
    const compiling = await evaluateWith(() => ({
      delayMs: 5,
      outcome: { kind: 'timeout', phase: 'compile', limitMs: 60_000, scope: 'phase' },
    }));
    expect(compiling.body.kernel_exec_result).toMatchObject({
      compiled: false,
      compilation_error: 'TIMEOUT: killed after 60 s in phase compile',
    });
  });

  it('a crash mid-phase: CRASHED (200); a worker lost outside a job: the original’s 500 with job_id', async () => {
    // The fake pool's scripts: a SIGSEGV in the check, and a worker that exits before it takes the job.
    const crash = await evaluateWith((job) => scriptByName({ ...job, name: 'crash' }));
    expect(crash.res.statusCode).toBe(200);
    expect(crash.body.kernel_exec_result).toMatchObject({
      compiled: true,
      correctness: false,
      validation_error: 'CRASHED: the worker died (signal SIGSEGV) in phase check',
    });
    const lost = await evaluateWith((job) => scriptByName({ ...job, name: 'crash-outside' }));
    expect(lost.res.statusCode).toBe(500);
    expect(Value.Check(JobErrorBody, lost.body)).toBe(true);
    expect(lost.body).toEqual({
      kernel_exec_result: {},
      ref_runtime: {},
      pod_name: expect.any(String),
      pod_ip: expect.any(String),
      status: 'error',
      error: 'WORKER_FAILED: the worker exited before the job (exit code 1)',
      compilation_method: 'cudakit',
      job_id: expect.stringMatching(/^ev_/),
    });
  });

  it('a runtime error: RUNTIME_ERROR with the driver code, sticky, and where', async () => {
    const { body } = await evaluateWith(() =>
      report({
        ...failedReport(
          'fill',
          {
            kind: 'cuda',
            code: 'CUDA_ERROR_ILLEGAL_ADDRESS',
            kernel: 'candidate',
            api: 'cuStreamSynchronize',
            result: 700,
            sticky: true,
            defence: 'fault',
            message:
              'FAIL (fault) in trial 0: CUDA_ERROR_ILLEGAL_ADDRESS; the CUDA context is lost: restart the process',
          },
          'check',
        ),
        compile: { candidate: facts('fill') },
      }),
    );
    expect(body.kernel_exec_result).toMatchObject({
      compiled: true,
      correctness: false,
      validation_error: 'RUNTIME_ERROR: CUDA_ERROR_ILLEGAL_ADDRESS (sticky) in trial 0 (cuStreamSynchronize)',
    });
  });

  it('a queue timeout (no GPU free in cudakit.max_queue_seconds): the original’s 500 with job_id', async () => {
    const h = await harness();
    h.pool.script = () => ({ delayMs: Infinity, outcome: { kind: 'cancelled' } });
    const blocker = (
      await post(h.app, '/v1/evaluations', {
        source: 'x',
        kernel: 'k',
        grid: 1,
        block: 1,
        args: ['ptr:f32[4]:out'],
        check: { skip: true },
      })
    ).json().id;
    await until(() => h.pool.running().length === 1);
    const res = await post(h.app, '/evaluate', evaluateBody({ cudakit: { max_queue_seconds: 1 } }));
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({
      status: 'error',
      error: "QUEUE_TIMEOUT: No GPU of class 'any' was free within 1 s",
      job_id: expect.stringMatching(/^ev_/),
    });
    h.pool.finish(blocker);
  });

  it('without a GPU: 503 after the body is found valid (400 first)', async () => {
    const { app } = await harness({ unavailableReason: 'CUDA_DRIVER_NOT_FOUND: libcuda.so.1 could not be loaded' });
    expect((await post(app, '/evaluate', evaluateBody({ timeout: 2 }))).statusCode).toBe(400);
    const res = await post(app, '/evaluate', evaluateBody());
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ error: expect.stringContaining('CUDA_DRIVER_NOT_FOUND'), status: 'error' });
    expect(res.headers['retry-after']).toBeUndefined(); // no driver: waiting brings no GPU
  });
});

describe('the synchronous wait', () => {
  it('runs out with the original’s 500 and job_id; the job goes on, readable at /job/{id} and /v1', async () => {
    const { app, pool, service } = await harness({ compatSyncWaitMs: () => 1000 });
    pool.script = () => ({ delayMs: Infinity, outcome: { kind: 'cancelled' } });
    const res = await post(app, '/evaluate', evaluateBody());
    expect(res.statusCode).toBe(500);
    const body = res.json() as { job_id: string; error: string };
    expect(body).toMatchObject({
      status: 'error',
      kernel_exec_result: {},
      error: expect.stringMatching(/^Job timed out after 1 seconds; it goes on: GET \/job\/ev_/),
      job_id: expect.stringMatching(/^ev_/),
    });
    const id = body.job_id;
    const job = await app.inject({ method: 'GET', url: `/job/${id}`, headers: auth('alice') });
    expect(job.json()).toEqual({ job_id: id, status: 'submitted', created_at: expect.any(Number), error: null });
    expect(Math.abs(job.json().created_at * 1000 - Date.now())).toBeLessThan(60_000);
    expect((await service.get(id))!.status).toBe('running');
    pool.finish(id, { kind: 'report', report: passedReport('fill'), device: undefined });
    await settled(service, id);
    expect((await app.inject({ method: 'GET', url: `/job/${id}`, headers: auth('alice') })).json()).toMatchObject({
      status: 'completed',
      error: null,
    });
    const v1 = await app.inject({ method: 'GET', url: `/v1/evaluations/${id}`, headers: auth('alice') });
    expect(v1.json()).toMatchObject({ id, status: 'succeeded', verdict: 'PASSED' });
  });

  it('waits maxQueueSeconds + timeout + 10 s by default', async () => {
    const waits: number[] = [];
    const { app } = await harness({
      compatSyncWaitMs: (job) => {
        waits.push((job.maxQueueSeconds + job.timeoutSeconds + 10) * 1000);
        return 5000;
      },
    });
    await post(app, '/evaluate', evaluateBody({ timeout: 30, cudakit: { max_queue_seconds: 60 } }));
    expect(waits).toEqual([100_000]);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('auth, /health, /job, /stats, /admin/cleanup-jobs', () => {
  it('takes the v1 scopes: submit for the POSTs, read for the GETs, admin for /admin/*', async () => {
    const { app } = await harness();
    const none = await app.inject({ method: 'POST', url: '/evaluate', payload: evaluateBody() });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ error: 'Authorization: Bearer <token> is required', status: 'error' });
    expect(none.headers['www-authenticate']).toBe('Bearer realm="cudakit"');
    const viewer = await post(app, '/compare', fixture('vector_add.cuda-ref.json'), 'viewer');
    expect(viewer.statusCode).toBe(403);
    expect(viewer.json()).toEqual({ error: "This token lacks the 'submit' scope", status: 'error' });
    for (const url of ['/health', '/stats']) {
      expect((await app.inject({ method: 'GET', url })).statusCode).toBe(401);
      expect((await app.inject({ method: 'GET', url, headers: auth('viewer') })).statusCode).toBe(200);
    }
    const cleanup = (who: Who) => app.inject({ method: 'POST', url: '/admin/cleanup-jobs', headers: auth(who) });
    expect((await cleanup('alice')).statusCode).toBe(403);
    expect((await cleanup('alice')).json()).toEqual({ error: "This token lacks the 'admin' scope", status: 'error' });
    expect((await cleanup('root')).json()).toEqual({ status: 'cleanup_completed', deleted: 0 });
    // The v1 summary stays open, at its new path.
    expect((await app.inject({ method: 'GET', url: '/v1/health' })).json()).toEqual({
      status: 'ok',
      gpus: 1,
      reason: null,
      python: [],
    });
  });

  it('GET /job/{id}: the original’s shape; 404 for unknown ids and for other principals’ jobs', async () => {
    const { app } = await harness();
    const id = (await post(app, '/evaluate', evaluateBody())).json().job_id as string;
    const get = (who: Who, jobId = id) => app.inject({ method: 'GET', url: `/job/${jobId}`, headers: auth(who) });
    expect((await get('alice')).json()).toEqual({
      job_id: id,
      status: 'completed',
      created_at: expect.any(Number),
      error: null,
    });
    expect((await get('root')).statusCode).toBe(200);
    for (const [who, jobId] of [
      ['bob', id],
      ['alice', 'nope'],
      ['alice', '6f1c1d1e-0000-4000-8000-000000000000'],
    ] as const) {
      const res = await get(who, jobId);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: `Job ${jobId} not found`, status: 'error' });
    }
  });

  it('GET /health and /stats: the original’s shapes, from the store and the runs since start', async () => {
    const { app, service } = await harness();
    for (const name of ['pass', 'incorrect']) {
      const res = await post(app, '/evaluate', evaluateBody({}, { metadata: { kernel_name: name } }));
      expect(res.statusCode).toBe(200);
    }
    await until(() => service.slots().every((s) => s.state === 'idle'));
    const health = (await app.inject({ method: 'GET', url: '/health', headers: auth('alice') })).json();
    expect(health).toEqual({
      status: 'healthy',
      job_stats: { total_jobs: 2, by_status: { completed: 2 }, average_age: expect.any(Number) },
      gpu_manager: { available_gpus: 1 },
    });
    expect(health.job_stats.average_age).toBeGreaterThanOrEqual(0);
    expect(health.job_stats.average_age).toBeLessThan(60);
    const stats = (await app.inject({ method: 'GET', url: '/stats', headers: auth('alice') })).json();
    expect(Object.keys(stats).sort()).toEqual(
      ['compilation_metrics', 'gpu_utilization', 'job_stats', 'profiling_metrics', 'throughput', 'timestamp'].sort(),
    );
    expect(stats.job_stats).toMatchObject({ total_jobs: 2, by_status: { completed: 2 } });
    expect(stats.compilation_metrics).toMatchObject({ total_compilations: 2, failed_compilations: 0 });
    expect(stats.profiling_metrics).toMatchObject({ correctness_passed: 1, correctness_failed: 1 });
    expect(stats.gpu_utilization).toMatchObject({ gpu_acquisitions: 2, gpu_releases: 2, active_sessions: 0 });
    expect(stats.throughput).toMatchObject({ total_requests: 2, completed_requests: 2, failed_requests: 0 });
    expect(Math.abs(stats.timestamp * 1000 - Date.now())).toBeLessThan(60_000);
  });

  it('POST /admin/cleanup-jobs deletes finished jobs older than five minutes', async () => {
    let nowMs = Date.now() - 10 * 60 * 1000;
    const { app, service } = await harness({ now: () => nowMs });
    const old = (await post(app, '/evaluate', evaluateBody())).json().job_id as string;
    nowMs = Date.now();
    const fresh = (await post(app, '/evaluate', evaluateBody())).json().job_id as string;
    const res = await app.inject({ method: 'POST', url: '/admin/cleanup-jobs', headers: auth('root') });
    expect(res.json()).toEqual({ status: 'cleanup_completed', deleted: 1 });
    expect(await service.get(old)).toBeUndefined();
    expect(await service.get(fresh)).toBeDefined();
  });

  it('bodies: 64 MiB where tensors go, else 1 MiB (413 in the original’s shape); not JSON: 415', async () => {
    const { app } = await harness();
    const headers = { ...auth('alice'), 'content-type': 'application/json' };
    for (const url of ['/evaluate', '/compare', '/']) {
      const res = await app.inject({ method: 'POST', url, headers, payload: Buffer.alloc(64 * 2 ** 20 + 1, 0x20) });
      expect(res.statusCode).toBe(413);
      expect(res.json()).toMatchObject({ details: { code: 'FST_ERR_CTP_BODY_TOO_LARGE' }, status: 'client_error' });
    }
    const admin = { ...auth('root'), 'content-type': 'application/json' };
    const big = await app.inject({
      method: 'POST',
      url: '/admin/cleanup-jobs',
      headers: admin,
      payload: Buffer.alloc(2 ** 20 + 1, 0x20),
    });
    expect(big.statusCode).toBe(413);
    // Every type but JSON, text/plain included (a JSON text sent as text/plain too): 415, in the original's shape.
    for (const type of ['application/xml', 'text/plain', 'text/plain; charset=utf-8']) {
      for (const url of ['/evaluate', '/compare']) {
        const text = await app.inject({
          method: 'POST',
          url,
          headers: { ...auth('alice'), 'content-type': type },
          payload: JSON.stringify(evaluateBody()),
        });
        expect(text.statusCode, `${type} ${url}`).toBe(415);
        expect(text.json()).toMatchObject({
          details: { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' },
          status: 'client_error',
        });
      }
    }
    const v1 = await app.inject({
      method: 'POST',
      url: '/v1/evaluations',
      headers: { ...auth('alice'), 'content-type': 'text/plain' },
      payload: JSON.stringify({ source: 'x', kernel: 'k', grid: 1, block: 1, args: ['ptr:f32[4]:out'] }),
    });
    expect(v1.statusCode).toBe(415);
    expect(v1.json()).toMatchObject({ code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' });
  });

  it('shares the submission budget with POST /v1/evaluations (429 in the original’s shape)', async () => {
    const { app } = await harness({ submitsPerMinute: 2 });
    expect((await post(app, '/evaluate', evaluateBody())).statusCode).toBe(200);
    expect(
      (await post(app, '/v1/evaluations', { source: 'x', kernel: 'k', grid: 1, block: 1, args: ['ptr:f32[4]:out'] }))
        .statusCode,
    ).toBe(202);
    const third = await post(app, '/compare', fixture('vector_add.cuda-ref.json'));
    expect(third.statusCode).toBe(429);
    expect(third.json()).toEqual({ error: expect.stringContaining('More than 2 submissions'), status: 'error' });
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('fuzz: the compatible POSTs never answer 5xx', () => {
  let h: Harness;
  /** The server's last error log line: what a 500 would be explained by. */
  let logged = '';
  beforeAll(async () => {
    h = await harness({
      limits: { maxQueuedPerPrincipal: 100_000, maxQueued: 100_000 },
      submitsPerMinute: 1_000_000,
      logger: { level: 'error', stream: { write: (line: string) => (logged = line) } },
    });
    h.pool.script = () => ({
      delayMs: 1,
      outcome: { kind: 'report', report: passedReport('fuzz'), device: undefined },
    });
    keepApp(h); // kept for the whole describe
  });
  afterAll(async () => {
    h.service.close();
    await h.app.close();
  });

  async function check(url: string, payload: string): Promise<void> {
    const res = await h.app.inject({
      method: 'POST',
      url,
      headers: { ...auth('alice'), 'content-type': 'application/json' },
      payload,
    });
    const what = `${url} ${payload.slice(0, 2000)} → ${res.body.slice(0, 300)} ${logged}`;
    expect(res.statusCode, what).toBeLessThan(500);
    const b = res.json() as Record<string, unknown>;
    expect(typeof b.status).toBe('string');
    if (res.statusCode >= 400) expect(typeof b.error).toBe('string');
  }

  /** Every path to a value inside `v`. */
  function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
    if (typeof v !== 'object' || v === null) return [at];
    const keys = Array.isArray(v) ? v.map((_, i) => i) : Object.keys(v);
    return [at, ...keys.flatMap((k) => paths((v as Record<string | number, unknown>)[k], [...at, k]))];
  }

  function mutate(base: unknown, edits: [number, unknown][]): unknown {
    let doc = structuredClone(base);
    for (const [pick, value] of edits) {
      const all = paths(doc);
      const path = all[pick % all.length]!;
      if (path.length === 0) {
        doc = value;
        continue;
      }
      const parent = path.slice(0, -1).reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], doc);
      (parent as Record<string | number, unknown>)[path[path.length - 1]!] = value;
    }
    return doc;
  }

  const hostile = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.constantFrom(
      '',
      '__proto__',
      'constructor',
      'toString',
      'torch',
      'cuda',
      -1,
      0,
      2 ** 31,
      1e308,
      -0,
      null,
      [],
      {},
      true,
      'zlib',
      'inout',
    ),
  );
  const bases = [evaluateBody(), ...VARIANTS.map(fixture), ...ORIGINALS.map(fixture)];

  it('mutated payloads and random JSON, on /evaluate, /compare and /', async () => {
    const started = performance.now();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/evaluate', '/compare', '/'),
        fc.nat(bases.length - 1),
        fc.array(fc.tuple(fc.nat(), hostile), { minLength: 1, maxLength: 3 }),
        async (url, base, edits) => check(url, JSON.stringify(mutate(bases[base], edits))),
      ),
      { numRuns: 250 },
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/evaluate', '/compare', '/'), fc.jsonValue({ maxDepth: 4 }), async (url, v) =>
        check(url, JSON.stringify(v) ?? 'null'),
      ),
      { numRuns: 100 },
    );
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});
