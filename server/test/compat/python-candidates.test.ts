// SPDX-License-Identifier: MIT
// A Python candidate on the compatible routes (src/compat/python-jobs.ts, jobs.ts): /evaluate's kernel or /compare's
// custom_kernel of kernel_type torch, torch_cuda, triton or multi_kernel, on a server started with --python. Its job's
// arguments are its tensors (seeded and poisoned as a CUDA kernel's), its PythonJob's candidate takes each tensor's
// bytes from them and keeps its scalars; a Python ref_kernel takes its inputs from the candidate's by name. A server
// without a Python refuses it as before and says how to enable it; so does io the mapping cannot follow. Through the
// routes (fake GPUs), the job reaches its worker with both Python kernels and is never compiled by NVRTC.
import { prepareJob } from 'cudakit';
import { describe, expect, it } from 'vitest';
import { CompatClientError } from '../../src/compat/errors.js';
import { compareJob, evaluateJob } from '../../src/compat/jobs.js';
import type { CompareRequest, EvaluationRequest, KernelCode } from '../../src/compat/schemas.js';
import { admissionProblems } from '../../src/submit/admission.js';
import { auth, harness } from '../support/app-harness.js';
import { PYTHON, compatFixture } from '../support/compat-fixtures.js';
import { H200 } from '../support/fake-pool.js';

const fixture = compatFixture;

/** vector_add's payload with a Triton custom_kernel: a, b, out (role output), n and BLOCK (a constexpr). */
function tritonCompare(): CompareRequest {
  const p = fixture('vector_add.json');
  const spec = { shape: [1024], dtype: 'float32' };
  p.custom_kernel = {
    source_code: 'import triton\n@triton.jit\ndef add(a, b, out, n, BLOCK: tl.constexpr):\n    pass\n',
    kernel_type: 'triton',
    metadata: { kernel_name: 'add' },
    io: {
      args: [
        { name: 'a', type: 'tensor', role: 'input', tensor_spec: { ...spec, init: { kind: 'randn' } } },
        { name: 'b', type: 'tensor', role: 'input', tensor_spec: { ...spec, init: { kind: 'randn' } } },
        { name: 'out', type: 'tensor', role: 'output', tensor_spec: spec },
        { name: 'n', type: 'int', value: 1024 },
        { name: 'BLOCK', type: 'int', value: 256, is_meta: true },
      ],
      launch: { grid: { x: 4 }, num_warps: 4 },
    },
  } as KernelCode;
  return p;
}

function evaluateTorch(): EvaluationRequest {
  const p = fixture('vector_add.json');
  const kernel: KernelCode = {
    ...p.ref_kernel,
    io: {
      args: [
        ...p.ref_kernel.io!.args,
        { name: 'c', type: 'tensor', role: 'output', tensor_spec: { shape: [1024], dtype: 'float32' } },
      ],
    },
  };
  return { kernel, num_trials: 10, timeout: 60 } as EvaluationRequest;
}

const thrown = (f: () => unknown): CompatClientError => {
  try {
    f();
  } catch (e) {
    if (e instanceof CompatClientError) return e;
    throw e;
  }
  throw new Error('expected a CompatClientError');
};

describe('a Python candidate on the compatible routes', () => {
  it('maps /compare: its tensors are the job’s args, its scalars its own, the reference’s inputs its by name', () => {
    const job = compareJob(tritonCompare(), { python: true });
    expect(job.body).toMatchObject({ name: 'add', kernel: 'add', check: { atol: 0.01, rtol: 0.01 } });
    const args = job.body.args as { name: string; role: string; init?: { kind: string } }[];
    expect(args.map((a) => [a.name, a.role])).toEqual([
      ['a', 'in'],
      ['b', 'in'],
      ['out', 'out'],
    ]);
    expect(args[2]!.init).toBeUndefined(); // poisoned: an element it never writes is caught
    const { candidate, reference } = job.python!;
    expect(candidate).toMatchObject({ type: 'triton', metadata: { kernel_name: 'add' }, outputs: [2] });
    expect(candidate!.launch).toEqual({ grid: { x: 4, y: 1, z: 1 }, num_warps: 4 });
    expect(candidate!.args.map((a) => a.from)).toEqual([0, 1, 2, undefined, undefined]);
    expect(candidate!.args[4]).toMatchObject({ name: 'BLOCK', kind: 'scalar', value: 256, meta: true });
    expect(reference).toMatchObject({ type: 'torch', outputs: [2] });
    expect(reference!.args.map((a) => a.from)).toEqual([0, 1]);
  });

  it('maps /evaluate: reference-free, or against cudakit.expected', () => {
    const job = evaluateJob(evaluateTorch(), { python: true });
    expect(job.python).toEqual({ candidate: expect.objectContaining({ type: 'torch', outputs: [2] }) });
    expect(job.body).not.toHaveProperty('reference');
    const request = evaluateTorch();
    request.cudakit = { expected: { c: { data_b64: Buffer.alloc(4096).toString('base64'), dtype: 'float32' } } };
    expect(evaluateJob(request, { python: true }).body.reference).toEqual({
      expected: { c: { base64: Buffer.alloc(4096).toString('base64'), compress: 'none' } },
    });
  });

  it('is refused without a Python, saying how to enable it', () => {
    const e = thrown(() => evaluateJob(evaluateTorch()));
    expect(e.message).toMatch(/kernel_type 'torch' needs Python/);
    expect(e.details).toMatchObject({ enable: expect.stringMatching(/--python PATH/) });
    const p = tritonCompare();
    p.ref_kernel = fixture('vector_add.cuda-ref.json').ref_kernel;
    expect(thrown(() => compareJob(p)).message).toMatch(/kernel_type 'triton' needs Python/);
  });

  it.each([
    [
      'no declared output',
      (k: KernelCode) => void k.io!.args.splice(2, 1),
      'custom_kernel -> io -> args',
      /role 'output'/,
    ],
    [
      'no io',
      (k: KernelCode) => {
        k.kernel_type = 'torch';
        k.io = null;
      },
      'custom_kernel -> io',
      /needs io here/,
    ],
    [
      'a name Python cannot pass',
      (k: KernelCode) => void (k.io!.args[0]!.name = 'a-b'),
      'custom_kernel -> io -> args -> 0 -> name',
      /Python identifiers/,
    ],
    [
      'a scalar without a value',
      (k: KernelCode) => void (k.io!.args[3]!.value = null),
      'custom_kernel -> io -> args -> 3 -> value',
      /needs a value/,
    ],
  ])('refuses %s, naming the field', (_, change, field, message) => {
    const p = tritonCompare();
    change(p.custom_kernel);
    const e = thrown(() => compareJob(p, { python: true }));
    expect(e.message).toMatch(message);
    expect(e.details).toMatchObject({ field });
  });

  it('checks it against a CUDA reference (its own io and launch), not timed, and refuses one without io', () => {
    const p = tritonCompare();
    p.ref_kernel = fixture('vector_add.cuda-ref.json').ref_kernel;
    // Matched to the candidate's buffers by name; its output starts poisoned, as the candidate's does.
    p.ref_kernel.io!.args[2]!.name = 'out';
    delete p.ref_kernel.io!.args[2]!.tensor_spec!.init;
    const job = compareJob(p, { python: true });
    expect(job.python).toEqual({ candidate: expect.objectContaining({ type: 'triton' }) });
    expect(job.body.reference).toMatchObject({
      kernel: 'vector_add_ref',
      grid: [4, 1, 1],
      block: [256, 1, 1],
      args: [{ name: 'a' }, { name: 'b' }, { name: 'out' }, { name: 'n' }],
    });
    expect(job.warnings).toEqual([expect.stringMatching(/^ref_runtime is not measured/)]);
    // The job the worker gets is one the library takes: the reference's buffers match the candidate's.
    const jobKeys = ['name', 'source', 'kernel', 'grid', 'block', 'args', 'check', 'timing', 'reference'];
    const plain = Object.fromEntries(Object.entries(job.body).filter(([k]) => jobKeys.includes(k)));
    expect(prepareJob(plain)).not.toBeInstanceOf(Array);
    delete p.ref_kernel.io;
    const e = thrown(() => compareJob(p, { python: true }));
    expect(e.message).toMatch(/CUDA kernels require io_contract/);
  });

  it('leaves a torch_cuda candidate’s #include lines to its contained build, still scans a CUDA kernel’s', () => {
    const source = '# include the extension\nsrc = """#include "/etc/passwd"\n"""\n';
    const job = { source, kernel: 'k', grid: [1, 1, 1], block: [1, 1, 1], args: [] };
    const limits = { maxDeviceBytes: 1 << 30, maxInputBytes: 1 << 30 } as never;
    expect(admissionProblems(job, limits, { pythonCandidate: true })).toEqual([]);
    expect(admissionProblems(job, limits).map((p) => p.path)).toEqual(['job.source']);
  });

  it('reaches the worker through POST /compare and /evaluate with its Python kernels, compiled by none', async () => {
    const { app, pool } = await harness({ gpus: [{ ...H200, python: PYTHON }] });
    const post = (url: string, payload: object) => app.inject({ method: 'POST', url, headers: auth('alice'), payload });
    const compare = await post('/compare', tritonCompare());
    expect(compare.statusCode, compare.body).toBe(200);
    const body = compare.json();
    expect(body).toMatchObject({ status: 'success', kernel_exec_result: { metadata: { kernel_type: 'triton' } } });
    expect(pool.runs[0]!.extras?.python).toMatchObject({ candidate: { type: 'triton' }, reference: { type: 'torch' } });
    const evaluate = await post('/evaluate', evaluateTorch());
    expect(evaluate.statusCode, evaluate.body).toBe(200);
    expect(pool.runs[1]!.extras?.python).toEqual({ candidate: expect.objectContaining({ type: 'torch' }) });
    const cudaRef = tritonCompare();
    cudaRef.ref_kernel = fixture('vector_add.cuda-ref.json').ref_kernel;
    cudaRef.ref_kernel.io!.args[2]!.name = 'out';
    delete cudaRef.ref_kernel.io!.args[2]!.tensor_spec!.init;
    const checked = await post('/compare', cudaRef);
    expect(checked.statusCode, checked.body).toBe(200);
    expect(pool.runs[2]!.extras?.python).toEqual({ candidate: expect.objectContaining({ type: 'triton' }) });
    expect((pool.runs[2]!.job as { reference?: { kernel?: string } }).reference?.kernel).toBe('vector_add_ref');
  });

  it('shows the Python it serves in /v1/health, by its versions alone (it answers anyone: no path)', async () => {
    const { app } = await harness({
      gpus: [
        { ...H200, python: PYTHON },
        { ...H200, uuid: 'GPU-2', python: PYTHON },
      ],
    });
    const health = (await app.inject({ method: 'GET', url: '/v1/health' })).json();
    expect(health.python).toEqual([{ python: '3.12.3', torch: '2.11.0+cu130', triton: '3.6.0', cudaVersion: '13.0' }]);
    expect(JSON.stringify(health)).not.toContain(PYTHON.path);
  });
});
