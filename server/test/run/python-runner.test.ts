// SPDX-License-Identifier: MIT
// The Python runner's protocol, from the Node side (src/run/python-runner.ts): a scripted runner (a link that answers
// as told) for every way a hostile runner can break the protocol; then the real runner (server/python/
// cudakit_runner.py --serve) on the CPU, with the original server's five torch references, where this host's Python
// has torch (without it those tests skip and say why).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PythonRunner, RunnerError, type RunnerLink, childLink, tensorFileName } from '../../src/run/python-runner.js';
import { RUNNER_PATH } from '../../src/run/python.js';

const dirs: string[] = [];
function folder(): string {
  const d = mkdtempSync(join(tmpdir(), 'cudakit-runner-test-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const READY = { v: 1, t: 'ready', pid: 1, python: '3.11.2', torch: '2.11.0', device: 'cuda', timer: 'cuda-events' };

/** A runner that answers each command with what `answer` returns for it (undefined: no answer). */
function scripted(answer: (m: Record<string, unknown>) => unknown[] | undefined): {
  link: RunnerLink;
  sent: Record<string, unknown>[];
  emit: (line: string) => void;
} {
  let onLine: (line: string) => void = () => {};
  const sent: Record<string, unknown>[] = [];
  const link: RunnerLink = {
    send: (line) => {
      const m = JSON.parse(line) as Record<string, unknown>;
      sent.push(m);
      queueMicrotask(() => {
        for (const a of answer(m) ?? []) onLine(typeof a === 'string' ? a : JSON.stringify(a));
      });
    },
    onLine: (l) => (onLine = l),
    onClose: () => {},
  };
  queueMicrotask(() => onLine(JSON.stringify(READY)));
  return { link, sent, emit: (line) => onLine(line) };
}

const LOAD = [{ type: 'torch', source: 'x', metadata: null, launch: null }, [], 1000] as const;

describe('the Python runner client, against a runner that breaks the protocol', () => {
  it("reads the runner's facts from its ready line, and refuses a ready without them", async () => {
    const ok = new PythonRunner(scripted(() => undefined).link, folder());
    await expect(ok.ready).resolves.toEqual({
      pid: 1,
      python: '3.11.2',
      torch: '2.11.0',
      device: 'cuda',
      timer: 'cuda-events',
    });
    let onLine: (line: string) => void = () => {};
    const link: RunnerLink = { send: () => {}, onLine: (l) => (onLine = l), onClose: () => {} };
    const bad = new PythonRunner(link, folder());
    onLine(JSON.stringify({ ...READY, timer: 'my-own-clock' }));
    await expect(bad.ready).rejects.toMatchObject({ kind: 'answer', message: /a 'ready' without its facts/ });
  });

  it('fails a command on a line that is not a message, and trusts the runner for nothing after it', async () => {
    const s = scripted((m) => (m.t === 'load' ? ['Traceback (most recent call last):'] : undefined));
    const r = new PythonRunner(s.link, folder());
    await expect(r.load(...LOAD)).rejects.toMatchObject({ kind: 'answer', phase: 'load' });
    await expect(r.load(...LOAD)).rejects.toMatchObject({ kind: 'gone' });
  });

  it("refuses files outside the job's folder, in a command and in an answer", async () => {
    const dir = folder();
    const s = scripted((m) => [
      {
        v: 1,
        t: 'ran',
        id: m.id,
        outputs: [{ file: '../../etc/passwd', dtype: 'uint8', shape: [16] }],
        inputsAfter: {},
        ms: 1,
      },
    ]);
    const r = new PythonRunner(s.link, dir);
    await expect(r.run({ a: 'a.bin' }, '/tmp/out', 1000)).rejects.toMatchObject({
      kind: 'answer',
      message: /'\/tmp\/out' is not a file in the job's folder/,
    });
    await expect(r.run({ a: 'a.bin' }, 'out', 1000)).rejects.toMatchObject({
      kind: 'answer',
      message: /'..\/..\/etc\/passwd' is not a file in the job's folder/,
    });
    expect(() => r.writeTensor('../escape.bin', new Uint8Array(4))).toThrow(/not a file in the job's folder/);
    expect(existsSync(join(dir, '..', 'escape.bin'))).toBe(false);
  });

  it('reads an output only at the size its dtype and shape make', async () => {
    const dir = folder();
    const s = scripted((m) => [
      { v: 1, t: 'ran', id: m.id, outputs: [{ file: 'o0.bin', dtype: 'float32', shape: [4] }], inputsAfter: {}, ms: 1 },
    ]);
    const r = new PythonRunner(s.link, dir);
    writeFileSync(join(dir, 'o0.bin'), new Uint8Array(12)); // three floats, not four
    const ran = await r.run({}, 'out', 1000);
    expect(() => r.readTensor(ran.outputs[0]!)).toThrow(/o0.bin holds 12 bytes, not 16/);
    writeFileSync(join(dir, 'o0.bin'), new Uint8Array(16));
    expect(r.readTensor(ran.outputs[0]!)).toHaveLength(16);
  });

  it.each([
    ['ends before it starts', [0, 5], [1, 4], /sample 1 ends before it starts/],
    ['overlaps the previous one', [0, 0.5], [1, 2], /sample 1 starts before 0 ended/],
    ['is negative', [-1, 2], [1, 3], /without 2 starts and ends/],
    ['adds up to more than the batch took', [0, 10_000], [9_999, 20_000], /add up to 19999.000 ms, more than/],
  ])('refuses timestamps where a sample %s', async (_, startsMs, endsMs, message) => {
    const s = scripted((m) => [{ v: 1, t: 'timed', id: m.id, startsMs, endsMs, wallMs: 1 }]);
    const r = new PythonRunner(s.link, folder());
    await expect(r.time(2, 0, true, 1000)).rejects.toMatchObject({ kind: 'answer', phase: 'time', message });
  });

  it('takes timestamps in order that fit in the wall time it saw', async () => {
    const s = scripted((m) => [{ v: 1, t: 'timed', id: m.id, startsMs: [0, 0.002], endsMs: [0.001, 0.003] }]);
    const r = new PythonRunner(s.link, folder());
    const b = await r.time(2, 0, true, 1000);
    expect(b.startsMs).toEqual([0, 0.002]);
    expect(b.observedWallMs).toBeGreaterThanOrEqual(0.002);
  });

  it("passes a kernel's error on with its type and traceback, and goes on serving", async () => {
    let calls = 0;
    const s = scripted((m) =>
      calls++ === 0
        ? [
            {
              v: 1,
              t: 'error',
              id: m.id,
              phase: 'load',
              kind: 'import',
              type: 'SyntaxError',
              message: 'invalid syntax (kernel.py, line 2)',
              traceback: 'kernel.py:2',
            },
          ]
        : [{ v: 1, t: 'loaded', id: m.id, entry: 'Model.forward', ms: 3 }],
    );
    const r = new PythonRunner(s.link, folder());
    const e = (await r.load(...LOAD).catch((x: unknown) => x)) as RunnerError;
    expect(e).toBeInstanceOf(RunnerError);
    expect(e).toMatchObject({ kind: 'import', phase: 'load', pythonType: 'SyntaxError', traceback: 'kernel.py:2' });
    await expect(r.load(...LOAD)).resolves.toEqual({ entry: 'Model.forward', ms: 3 });
  });

  it('refuses an answer no command waits for, and a command not answered in time', async () => {
    const s = scripted((m) => [{ v: 1, t: 'prepared', id: Number(m.id) + 7, sets: 0 }]);
    const r = new PythonRunner(s.link, folder());
    await expect(r.prepare([], 0, 1000)).rejects.toMatchObject({ kind: 'answer', message: /to no command/ });
    const quiet = new PythonRunner(scripted(() => undefined).link, folder());
    await expect(quiet.prepare([], 0, 50)).rejects.toMatchObject({ kind: 'gone', message: /did not answer 'prepare'/ });
  });

  it('names tensor files by index, so names that read alike once made safe stay apart', () => {
    expect(tensorFileName('t0', 0, 'a.b')).toBe('t0/0-a_b.bin');
    expect(tensorFileName('t0', 1, 'a_b')).toBe('t0/1-a_b.bin');
    expect(tensorFileName('t0', 2, '../../x')).toBe('t0/2-______x.bin');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The real runner, on the CPU

const PYTHON = '/usr/bin/python3';
const torchHere = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { timeout: 60_000 }).status === 0;
if (!torchHere) console.log(`python runner tests on the CPU skipped: ${PYTHON} has no torch`);
const describeTorch = torchHere ? describe : describe.skip;

const SEEDS = join(import.meta.dirname, '..', 'fixtures', 'compat');

interface SeedArg {
  name: string;
  type: string;
  role: string;
  tensor_spec?: { shape: number[]; dtype: string };
}
function seedReference(name: string): { source: string; args: SeedArg[] } {
  const p = JSON.parse(readFileSync(join(SEEDS, `${name}.json`), 'utf8')) as {
    ref_kernel: { source_code: string; io: { args: SeedArg[] } };
  };
  return { source: p.ref_kernel.source_code, args: p.ref_kernel.io.args };
}

const running: PythonRunner[] = [];
afterEach(() => {
  for (const r of running.splice(0)) r.close();
});

function realRunner(): { runner: PythonRunner; stderr: () => string } {
  const dir = folder();
  const child = spawn(PYTHON, ['-I', RUNNER_PATH, '--serve'], {
    cwd: dir,
    env: { PATH: '/usr/bin:/bin', CUDAKIT_RUNNER_DEVICE: 'cpu' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const runner = new PythonRunner(childLink(child), dir);
  running.push(runner);
  return { runner, stderr: () => stderr };
}

const random = (n: number, seed: number): Float32Array => {
  let s = seed;
  return Float32Array.from({ length: n }, () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 4 - 2);
};
const f32 = (bytes: Uint8Array): Float32Array => new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
/** erf to ~1e-7 (Abramowitz and Stegun 7.1.26): enough for gelu's reference at 1e-5. */
const erf = (x: number): number => {
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const y =
    1 -
    ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return Math.sign(x) * y;
};

/** What each seed reference computes, in JavaScript, from its inputs. */
const EXPECTED: Record<string, (inputs: Float32Array[], shapes: number[][]) => number[]> = {
  vector_add: ([a, b]) => Array.from(a!, (x, i) => x + b![i]!),
  relu_activation: ([x]) => Array.from(x!, (v) => Math.max(v, 0)),
  gelu_activation: ([x]) => Array.from(x!, (v) => 0.5 * v * (1 + erf(v / Math.SQRT2))),
  sum_reduction: ([x], shapes) => {
    const [m, n] = shapes[0]!;
    return Array.from({ length: m! }, (_, i) => x!.subarray(i * n!, (i + 1) * n!).reduce((s, v) => s + v, 0));
  },
  matrix_multiply: ([a, b], shapes) => {
    const [m, k] = shapes[0]!;
    const n = shapes[1]![1];
    return Array.from({ length: m! * n! }, (_, idx) => {
      const [i, j] = [Math.floor(idx / n!), idx % n!];
      let s = 0;
      for (let p = 0; p < k!; p++) s += a![i * k! + p]! * b![p * n! + j]!;
      return s;
    });
  },
};

describeTorch('the real runner on the CPU', () => {
  it.each(Object.keys(EXPECTED))(
    "runs the original server's %s reference on given bytes",
    async (name) => {
      const { runner } = realRunner();
      const ref = seedReference(name);
      const args = ref.args.map((a) => ({
        name: a.name,
        kind: 'tensor' as const,
        dtype: 'float32' as const,
        shape: a.tensor_spec!.shape,
        role: 'input' as const,
      }));
      await expect(runner.ready).resolves.toMatchObject({ device: 'cpu', timer: 'perf-counter' });
      await expect(
        runner.load({ type: 'torch', source: ref.source, metadata: null, launch: null }, args, 60_000),
      ).resolves.toMatchObject({ entry: 'Model.forward' });
      const inputs = args.map((a, i) =>
        random(
          a.shape.reduce((x, y) => x * y, 1),
          7 + i,
        ),
      );
      const files: Record<string, string> = {};
      args.forEach((a, i) => {
        files[a.name] = runner.writeTensor(tensorFileName('t0', i, a.name), new Uint8Array(inputs[i]!.buffer));
      });
      const ran = await runner.run(files, 't0/out', 60_000);
      expect(ran.outputs).toHaveLength(1);
      const got = f32(runner.readTensor(ran.outputs[0]!));
      const want = EXPECTED[name]!(
        inputs,
        args.map((a) => a.shape),
      );
      expect(got).toHaveLength(want.length);
      let worst = 0;
      want.forEach((w, i) => (worst = Math.max(worst, Math.abs(got[i]! - w) / Math.max(1, Math.abs(w)))));
      expect(worst).toBeLessThan(1e-4); // float32 sums of 128 to 1024 terms, in another order
      // The inputs as they are after the call: untouched.
      for (const [i, a] of args.entries()) {
        const after = runner.readFile(ran.inputsAfter[a.name]!, inputs[i]!.byteLength);
        expect(Buffer.from(after).equals(Buffer.from(inputs[i]!.buffer))).toBe(true);
      }
      // Timed on two prepared sets: raw timestamps, in order, within the wall time.
      await runner.prepare([files, files], 0, 60_000);
      const b = await runner.time(8, 2, true, 60_000);
      expect(b.startsMs).toHaveLength(8);
    },
    120_000,
  );

  it("reports a kernel's exception with its own frames only; its prints do not break the protocol", async () => {
    const { runner, stderr } = realRunner();
    const source = [
      'import torch',
      'print("hello from the kernel"); print(\'{"v":1,"t":"loaded","id":1,"entry":"forged","ms":0}\')',
      'def helper(x):',
      '    raise ValueError("no good: " + __file__)',
      'def forward(x):',
      '    return helper(x)',
    ].join('\n');
    const args = [
      { name: 'x', kind: 'tensor' as const, dtype: 'float32' as const, shape: [4], role: 'input' as const },
    ];
    await expect(
      runner.load({ type: 'torch', source, metadata: { function_name: 'forward' }, launch: null }, args, 60_000),
    ).resolves.toMatchObject({ entry: 'forward' });
    const files = { x: runner.writeTensor('t0/x.bin', new Uint8Array(16)) };
    const e = (await runner.run(files, 't0/out', 60_000).catch((x: unknown) => x)) as RunnerError;
    expect(e).toMatchObject({ kind: 'raise', phase: 'run', pythonType: 'ValueError' });
    expect(e.message).toBe('no good: ./kernel.py');
    expect(e.traceback).toMatch(/kernel.py:6 in forward[\s\S]*kernel.py:4 in helper/);
    expect(`${e.message}${e.traceback}`).not.toContain(runner.dir);
    expect(stderr()).toContain('hello from the kernel');
    // Still serving.
    await expect(runner.prepare([files], 0, 60_000)).resolves.toBeUndefined();
  }, 120_000);

  it('says which tool a kernel type lacks: Triton here', async () => {
    const { runner } = realRunner();
    const e = (await runner
      .load(
        { type: 'triton', source: 'x = 1', metadata: { kernel_name: 'k' }, launch: { grid: { x: 1, y: 1, z: 1 } } },
        [],
        60_000,
      )
      .catch((x: unknown) => x)) as RunnerError;
    expect(e).toMatchObject({ kind: 'missing', message: /Triton is not installed/ });
  }, 120_000);
});
