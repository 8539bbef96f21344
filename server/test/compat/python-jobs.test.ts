// SPDX-License-Identifier: MIT
// A Python reference on the compatible routes (src/compat/python-jobs.ts): the original server's five payloads, as
// they are, map to the CUDA candidate's job plus a PythonJob whose inputs are the candidate's input buffers (by name,
// else in order) and whose outputs stand for its output buffers; io the mapping cannot follow is a 400 naming the
// field; and through POST /compare on a server with a Python (fake GPUs), the job reaches its worker with its Python
// reference, while a server without one refuses it as before.
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CompatClientError } from '../../src/compat/errors.js';
import { compareJob } from '../../src/compat/jobs.js';
import type { CompareRequest } from '../../src/compat/schemas.js';
import { auth, harness } from '../support/app-harness.js';
import { COMPAT_FIXTURES, PYTHON, compatFixture } from '../support/compat-fixtures.js';
import { H200 } from '../support/fake-pool.js';

const ORIGINALS = readdirSync(COMPAT_FIXTURES).filter((f) => /^[a-z_]+\.json$/.test(f));
const fixture = compatFixture;

/** Where each payload's reference inputs come from (the candidate's argument indices), and its outputs' places. */
const MAPPED: Record<string, { from: number[]; outputs: number[] }> = {
  'vector_add.json': { from: [0, 1], outputs: [2] }, // a, b by name
  'matrix_multiply.json': { from: [0, 1], outputs: [2] }, // A, B by name
  'relu_activation.json': { from: [0], outputs: [1] }, // x: input, in order
  'gelu_activation.json': { from: [0], outputs: [1] },
  'sum_reduction.json': { from: [0], outputs: [1] },
};

describe('a Python reference on the compatible routes', () => {
  it.each(ORIGINALS)('%s maps to the CUDA job and a Python reference on its inputs', (file) => {
    const payload = fixture(file);
    const job = compareJob(payload, { python: true });
    expect(job.body).not.toHaveProperty('compare');
    expect(job.body).not.toHaveProperty('reference');
    expect(job.body).toMatchObject({
      kernel: (payload.custom_kernel.metadata as { kernel_name: string }).kernel_name,
      check: { atol: 0.01 },
    });
    const ref = job.python!.reference!;
    expect(ref).toMatchObject({ type: 'torch', source: payload.ref_kernel.source_code, metadata: {}, launch: null });
    expect(ref.args.map((a) => a.from)).toEqual(MAPPED[file]!.from);
    expect(ref.outputs).toEqual(MAPPED[file]!.outputs);
    expect(ref.args.every((a) => a.kind === 'tensor' && a.role === 'input' && a.dtype === 'float32')).toBe(true);
  });

  it('is refused without a Python, as before', () => {
    expect(() => compareJob(fixture('vector_add.json'))).toThrow(/kernel_type 'torch' needs Python/);
  });

  it.each([
    [
      'no io',
      (p: CompareRequest) => void (p.ref_kernel.io = null),
      'ref_kernel -> io',
      /needs io here: its input tensors' names and shapes/,
    ],
    [
      'an input of another size',
      (p: CompareRequest) => void (p.ref_kernel.io!.args[0]!.tensor_spec!.shape = [1023]),
      'ref_kernel -> io -> args -> 0',
      /'a' \(float32\[1023\]\) takes custom_kernel's 'a', which is f32 × 1024: give them the same dtype and size/,
    ],
    [
      'an input of another dtype',
      (p: CompareRequest) => void (p.ref_kernel.io!.args[1]!.tensor_spec!.dtype = 'float64'),
      'ref_kernel -> io -> args -> 1',
      /'b' \(float64\[1024\]\) takes custom_kernel's 'b', which is f32 × 1024/,
    ],
    [
      'more inputs than the candidate has',
      (p: CompareRequest) =>
        void p.ref_kernel.io!.args.push({
          name: 'z',
          type: 'tensor',
          role: 'input',
          tensor_spec: { shape: [1024], dtype: 'float32' },
        }),
      'ref_kernel -> io -> args -> 2',
      /input 'z' has no input tensor of custom_kernel to take its bytes from/,
    ],
    [
      'an unknown role',
      (p: CompareRequest) => void (p.ref_kernel.io!.args[0]!.role = 'sideways'),
      'ref_kernel -> io -> args -> 0 -> role',
      /Unknown role 'sideways'/,
    ],
  ])('refuses %s, naming the field', (_, change, field, message) => {
    const p = fixture('vector_add.json');
    change(p);
    const e = (() => {
      try {
        compareJob(p, { python: true });
      } catch (x) {
        return x;
      }
      return undefined;
    })() as CompatClientError;
    expect(e).toBeInstanceOf(CompatClientError);
    expect(e.message).toMatch(message);
    expect(e.details).toMatchObject({ field });
  });

  it('keeps scalars as values, metadata by its known keys, and a Triton launch', () => {
    const p = fixture('vector_add.json');
    p.ref_kernel.kernel_type = 'triton';
    p.ref_kernel.metadata = { kernel_name: 'add', secret: 'dropped' };
    p.ref_kernel.io!.args.push({ name: 'BLOCK', type: 'int', value: 256, is_meta: true });
    p.ref_kernel.io!.launch = { grid: { x: 4 }, num_warps: 4 };
    const ref = compareJob(p, { python: true }).python!.reference!;
    expect(ref.metadata).toEqual({ kernel_name: 'add' });
    expect(ref.launch).toEqual({ grid: { x: 4, y: 1, z: 1 }, num_warps: 4 });
    expect(ref.args[2]).toEqual({ name: 'BLOCK', kind: 'scalar', dtype: 'int', value: 256, role: 'input', meta: true });
  });

  it('reaches the worker through POST /compare on a server with a Python, and its answer says it ran', async () => {
    const { app, pool } = await harness({ gpus: [{ ...H200, python: PYTHON }] });
    const res = await app.inject({
      method: 'POST',
      url: '/compare',
      headers: auth('alice'),
      payload: fixture('vector_add.json'),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'success', kernel_exec_result: { compiled: true } });
    expect(pool.runs).toHaveLength(1);
    expect(pool.runs[0]!.extras?.python?.reference).toMatchObject({ type: 'torch', outputs: [2] });
    // Not a client's field: the same body on /v1 with a 'python' key is refused as an unknown field.
    const v1 = await app.inject({
      method: 'POST',
      url: '/v1/evaluations',
      headers: auth('alice'),
      payload: { source: 'x', kernel: 'k', grid: 1, block: 1, args: [], python: { reference: {} } },
    });
    expect(v1.statusCode).toBe(400);
  });
});
