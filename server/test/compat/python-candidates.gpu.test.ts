// SPDX-License-Identifier: MIT
// Python candidates on a GPU with --python: a Triton kernel, a torch_cuda kernel (load_inline, built cold in the job's
// folder) and a multi_kernel function as /compare's custom_kernel against the original's PyTorch reference, and as
// /evaluate's kernel; then the ways a candidate fails or cheats, each with its own answer: one that never returns
// (TIMEOUT, and the GPU serves the next job), one that raises, one that writes its input, one that patches torch's
// events and the runner's own module (its timing unmoved), one that reads a host file or connects to loopback
// (the sandbox refuses both). Needs what python.gpu.test.ts needs (root, a Python with torch and Triton).
import { createServer, type Server } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeGpu } from '../../../test/helpers.js';
import { type PythonService, startPythonService } from '../support/python-service.js';

const FIXTURES = new URL('../fixtures/compat/', import.meta.url);
const N = 1 << 20;
const SPEC = { shape: [N], dtype: 'float32' };
const INPUTS = [
  { name: 'a', type: 'tensor', role: 'input', tensor_spec: { ...SPEC, init: { kind: 'randn' } } },
  { name: 'b', type: 'tensor', role: 'input', tensor_spec: { ...SPEC, init: { kind: 'randn' } } },
];
const OUT = { name: 'c', type: 'tensor', role: 'output', tensor_spec: SPEC };

const TRITON = `
import triton
import triton.language as tl

@triton.jit
def add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)
`;

const TORCH_CUDA = `
from torch.utils.cpp_extension import load_inline

CUDA = r'''
__global__ void add_k(const float* a, const float* b, float* c, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
torch::Tensor add(torch::Tensor a, torch::Tensor b) {
  auto c = torch::empty_like(a);
  long n = a.numel();
  add_k<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
  return c;
}
'''
ext = load_inline(name="cudakit_add", cpp_sources="torch::Tensor add(torch::Tensor a, torch::Tensor b);",
                  cuda_sources="#include <ATen/cuda/CUDAContext.h>\\n" + CUDA, functions=["add"])

def custom_kernel(a, b):
    return ext.add(a, b)
`;

/** /compare: `custom` against the original vector_add payload's PyTorch reference (a + b). */
function compare(custom: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const payload = JSON.parse(readFileSync(new URL('vector_add.json', FIXTURES), 'utf8')) as Record<string, any>;
  payload.ref_kernel.io.args = INPUTS;
  return { ...payload, custom_kernel: custom, num_trials: 20, timeout: 240, ...extra };
}

const torchCandidate = (body: string): Record<string, unknown> => ({
  source_code: `import torch\n\ndef custom_kernel(a, b):\n${body}\n`,
  kernel_type: 'torch',
  metadata: { function_name: 'custom_kernel' },
  io: { args: [...INPUTS, OUT] },
});

interface Answer {
  kernel_exec_result: {
    compiled: boolean;
    correctness: boolean;
    runtime: number;
    validation_error?: string;
    compilation_error?: string;
    metadata: { kernel_type: string; cudakit: { verdict: string } };
  };
  ref_runtime?: { mean: number };
}

describeGpu('Python candidates (--python)', () => {
  let python: PythonService | undefined;
  let server: Server | undefined;
  let port = 0;
  let secretDir = '';
  const connections: string[] = [];

  beforeAll(async () => {
    python = await startPythonService('python candidate GPU tests');
    server = createServer((socket) => {
      connections.push(String(socket.remoteAddress));
      socket.end('secret');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    // A folder the sandbox hides: the service's own temporary folders are (pythonHidden).
    secretDir = mkdtempSync(join(tmpdir(), 'cudakit-secret-'));
    writeFileSync(join(secretDir, 'secret.txt'), 'secret');
  }, 180_000);

  afterAll(async () => {
    await python?.close();
    server?.close();
    rmSync(secretDir, { recursive: true, force: true });
  });

  async function post(url: string, payload: unknown): Promise<Answer> {
    const res = await python!.app!.inject({ method: 'POST', url, payload: payload as object });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Answer;
  }
  const skip = (): boolean => python?.app === undefined;

  it.each([
    [
      'triton',
      {
        source_code: TRITON,
        kernel_type: 'triton',
        metadata: { kernel_name: 'add' },
        io: {
          args: [
            ...INPUTS,
            OUT,
            { name: 'n', type: 'int', value: N },
            { name: 'BLOCK', type: 'int', value: 1024, is_meta: true },
          ],
          launch: { grid: { x: N / 1024 } },
        },
      },
    ],
    [
      'torch_cuda',
      { source_code: TORCH_CUDA, kernel_type: 'torch_cuda', metadata: { function_name: 'custom_kernel' } },
    ],
    [
      'multi_kernel',
      {
        source_code:
          'import torch\n\ndef run(a, b):\n    c = torch.add(a, b)\n    return torch.relu(c) - torch.relu(-c)\n',
        kernel_type: 'multi_kernel',
        metadata: { entry_point: 'run' },
      },
    ],
  ])(
    'a %s custom_kernel against the PyTorch reference: compiled, correct, both timed',
    async (type, kernel) => {
      if (skip()) return;
      const custom = { io: { args: [...INPUTS, OUT] }, ...kernel };
      const answer = await post('/compare', compare(custom));
      const r = answer.kernel_exec_result;
      expect(r, JSON.stringify(answer)).toMatchObject({ compiled: true, correctness: true });
      expect(r.metadata.kernel_type).toBe(type);
      expect(r.runtime).toBeGreaterThan(0);
      expect(answer.ref_runtime!.mean).toBeGreaterThan(0);
    },
    400_000,
  );

  it('a torch_cuda kernel posted again loads the build its first job kept: no rebuild', async () => {
    if (skip()) return;
    // What the kernel returns says whether its build was kept (a + b + 1) or made (a + b); a kept build that
    // ninja made again raises. So the first job passes against a + b, the second only against a + b + 1.
    const source = TORCH_CUDA.replace('name="cudakit_add"', 'name="cudakit_add_kept"')
      .replace(
        'from torch.utils.cpp_extension import load_inline',
        [
          'import os, time',
          'from torch.utils.cpp_extension import load_inline',
          'folder = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "cudakit_add_kept")',
          'kept = os.path.exists(os.path.join(folder, "kept"))',
          'began = time.time()',
        ].join('\n'),
      )
      .replace(
        'def custom_kernel(a, b):\n    return ext.add(a, b)',
        [
          'if kept and os.path.getmtime(ext.__file__) >= began:',
          '    raise RuntimeError("the kept build was built again")',
          'open(os.path.join(folder, "kept"), "w").close()',
          '',
          'def custom_kernel(a, b):',
          '    return ext.add(a, b) + (1 if kept else 0)',
        ].join('\n'),
      );
    expect(source).toContain('+ (1 if kept else 0)');
    const custom = { source_code: source, kernel_type: 'torch_cuda', metadata: { function_name: 'custom_kernel' } };
    const withReference = (body: string) => {
      const payload = compare({ io: { args: [...INPUTS, OUT] }, ...custom }) as Record<string, any>;
      const model = 'class Model(torch.nn.Module):\n    def forward(self, a, b):';
      payload.ref_kernel.source_code = `import torch\n\n${model}\n${body}\n`;
      return payload;
    };
    const made = (await post('/compare', withReference('        return a + b'))).kernel_exec_result;
    expect(made, JSON.stringify(made)).toMatchObject({ compiled: true, correctness: true });
    const kept = (await post('/compare', withReference('        return a + b + 1'))).kernel_exec_result;
    expect(kept, JSON.stringify(kept)).toMatchObject({ compiled: true, correctness: true });
  }, 600_000);

  it('a torch custom_kernel against a CUDA ref_kernel: checked by it (not timed), right and wrong', async () => {
    if (skip()) return;
    const ref = {
      source_code:
        'extern "C" __global__ void add_ref(const float* a, const float* b, float* c, int n) {\n' +
        '  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n' +
        '    c[i] = a[i] + b[i];\n' +
        '}\n',
      kernel_type: 'cuda',
      metadata: { kernel_name: 'add_ref' },
      io: {
        args: [...INPUTS, OUT, { name: 'n', type: 'int', value: N }],
        launch: { grid: { x: 256 }, block: { x: 256 } },
      },
    };
    const right = (await post('/compare', { ...compare(torchCandidate('    return a + b')), ref_kernel: ref }))
      .kernel_exec_result;
    expect(right, JSON.stringify(right)).toMatchObject({ compiled: true, correctness: true });
    const wrong = (await post('/compare', { ...compare(torchCandidate('    return a - b')), ref_kernel: ref }))
      .kernel_exec_result;
    expect(wrong, JSON.stringify(wrong)).toMatchObject({ correctness: false });
    expect(wrong.validation_error).toMatch(/mismatch|INCORRECT/);
  }, 240_000);

  it('a torch kernel on /evaluate: checked reference-free and timed', async () => {
    if (skip()) return;
    const payload = { kernel: torchCandidate('    return a + b'), num_trials: 20, timeout: 120 };
    const r = (await post('/evaluate', payload)).kernel_exec_result;
    expect(r, JSON.stringify(r)).toMatchObject({ compiled: true, correctness: true });
    expect(r.runtime).toBeGreaterThan(0);
  }, 240_000);

  it.each([
    ['computes something else', '    return a - b', /mismatch|INCORRECT/],
    ['raises', '    raise ValueError("candidate broke")', /ValueError: candidate broke/],
    ['writes its input', '    c = a + b\n    a.zero_()\n    return c', /input|INPUT_MODIFIED/],
    [
      'reads a host file the sandbox hides',
      `    open(${JSON.stringify(join('SECRET_DIR', 'secret.txt'))}).read()\n    return a + b`,
      /FileNotFoundError/,
    ],
  ])(
    'a candidate that %s is incorrect, and says why',
    async (_, body, message) => {
      if (skip()) return;
      const answer = await post('/compare', compare(torchCandidate(body.replace('SECRET_DIR', secretDir))));
      const r = answer.kernel_exec_result;
      expect(r, JSON.stringify(r)).toMatchObject({ correctness: false });
      expect(`${r.validation_error ?? ''} ${r.compilation_error ?? ''}`).toMatch(message);
    },
    240_000,
  );

  it('a candidate that connects to loopback reaches nothing: no connection is made', async () => {
    if (skip()) return;
    const body =
      `    import socket\n    try:\n        socket.create_connection(("127.0.0.1", ${port}), timeout=2).recv(10)\n` +
      `        return a - b\n    except OSError:\n        return a + b`;
    const r = (await post('/compare', compare(torchCandidate(body)))).kernel_exec_result;
    expect(r, JSON.stringify(r)).toMatchObject({ correctness: true });
    expect(connections).toEqual([]);
  }, 240_000);

  it('a candidate that patches torch.cuda.Event and the runner’s module is timed as an honest one', async () => {
    if (skip()) return;
    const honest = (await post('/compare', compare(torchCandidate('    return a + b')))).kernel_exec_result;
    const patch =
      '    import sys\n    torch.cuda.Event.elapsed_time = lambda self, end: 1e-6\n' +
      '    for m in list(sys.modules.values()):\n' +
      '        if getattr(m, "__name__", "").startswith(("cudakit", "__main__")):\n' +
      '            for name in ("time_batch", "cuda_event_timer", "torch_event_timer", "cpu_timer"):\n' +
      '                if hasattr(m, name): setattr(m, name, lambda *x, **k: None)\n' +
      '    return a + b';
    const cheat = (await post('/compare', compare(torchCandidate(patch)))).kernel_exec_result;
    expect(honest.correctness).toBe(true);
    // Either its timing stands (the runner's clock was bound before its import) or the job is refused.
    if (cheat.correctness) expect(cheat.runtime).toBeGreaterThan(honest.runtime / 3);
    else expect(cheat.validation_error).toBeTruthy();
  }, 240_000);

  it('a candidate that never returns: TIMEOUT, and the GPU serves the next job', async () => {
    if (skip()) return;
    const hang = compare(torchCandidate('    import time\n    while True:\n        time.sleep(1)'), { timeout: 20 });
    const r = (await post('/compare', hang)).kernel_exec_result;
    expect(r, JSON.stringify(r)).toMatchObject({ correctness: false });
    expect(r.validation_error).toMatch(/^TIMEOUT/);
    const next = (await post('/compare', compare(torchCandidate('    return a + b')))).kernel_exec_result;
    expect(next).toMatchObject({ correctness: true });
  }, 240_000);
});
