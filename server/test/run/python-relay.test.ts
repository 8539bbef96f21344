// SPDX-License-Identifier: MIT
// A job's Python runner as its slot owns it (src/run/python-relay.ts): started on the worker's request in a folder
// of its own, lines relayed both ways, killed with its whole group and its folder removed when the job ends, and a
// request that makes no sense answered with an exit rather than a crash. The runner is the real one, on the CPU,
// where this host's Python has torch; in the sandbox too where the tests run as root.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Containment, makeContainment } from '../../src/run/containment.js';
import { PythonRelay, type PythonService, type RelayEvent, type RelayOptions } from '../../src/run/python-relay.js';
import { pythonHidden } from '../../src/run/python.js';
import { DEFAULT_SANDBOX_LIMITS, quotaMountsUnder } from '../../src/run/sandbox.js';

const PYTHON = '/usr/bin/python3';
const torchHere = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { timeout: 60_000 }).status === 0;
if (!torchHere) console.log(`python relay tests skipped: ${PYTHON} has no torch`);
const root = process.getuid?.() === 0;
if (torchHere && !root) console.log('python relay tests in the sandbox skipped: not root (the sandbox needs root)');

const relays: PythonRelay[] = [];
afterAll(() => {
  for (const r of relays) r.stop();
});

/** A relay and the events it emitted, with a wait for the next one that matches. */
function relayOf(python: PythonService | undefined, containment: Containment, build?: RelayOptions['build']) {
  const events: RelayEvent[] = [];
  const waiters: (() => void)[] = [];
  const relay = new PythonRelay({
    python,
    containment,
    emit: (e) => {
      events.push(e);
      for (const w of waiters.splice(0)) w();
    },
    ...(build === undefined ? {} : { build }),
  });
  relays.push(relay);
  const next = async (op: RelayEvent['op'], timeoutMs = 60_000): Promise<RelayEvent> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = events.find((e) => e.op === op);
      if (found !== undefined) {
        events.splice(events.indexOf(found), 1);
        return found;
      }
      if (Date.now() > deadline) throw new Error(`no '${op}' event in ${timeoutMs} ms: ${JSON.stringify(events)}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  };
  return { relay, events, next };
}

const LOAD = JSON.stringify({
  v: 1,
  t: 'load',
  id: 1,
  kernel: { type: 'torch', source: 'def f(x):\n    return x * 2\n', metadata: { function_name: 'f' }, launch: null },
  args: [{ name: 'x', kind: 'tensor', dtype: 'float32', shape: [4], role: 'input' }],
});

describe('a job’s Python runner, owned by its slot', () => {
  it('answers an exit, never a crash, without --python or for a line before the runner', () => {
    const containment = makeContainment({ user: undefined, cacheDir: undefined });
    const without = relayOf(undefined, containment);
    without.relay.handle('start');
    expect(without.events).toEqual([{ op: 'exit', why: 'this server was started without --python', stderrTail: '' }]);
    const early = relayOf({ path: PYTHON, hidden: [] }, containment);
    early.relay.handle('line', '{}');
    expect(early.events).toEqual([{ op: 'exit', why: 'a line for no runner', stderrTail: '' }]);
    early.relay.handle('start'); // stopped: nothing more happens
    expect(early.events).toHaveLength(1);
  });

  it.runIf(torchHere)(
    'starts the runner in a folder of its own, relays its lines, and kills it with its folder at the end',
    async () => {
      const containment = makeContainment({ user: undefined, cacheDir: undefined });
      const { relay, next } = relayOf(
        { path: PYTHON, hidden: [], env: { CUDAKIT_RUNNER_DEVICE: 'cpu' }, unsandboxed: true },
        containment,
      );
      relay.handle('start');
      const started = (await next('started')) as Extract<RelayEvent, { op: 'started' }>;
      expect(started.dir.startsWith(`${containment.rootDir}/`)).toBe(true);
      expect(JSON.parse(((await next('line')) as { line: string }).line)).toMatchObject({ t: 'ready', device: 'cpu' });
      relay.handle('line', LOAD);
      expect(JSON.parse(((await next('line')) as { line: string }).line)).toMatchObject({ t: 'loaded', entry: 'f' });
      relay.handle('stop');
      expect(existsSync(started.dir)).toBe(false);
    },
    120_000,
  );

  it.runIf(torchHere)(
    "puts the interpreter's folder first on the runner's PATH (a venv's ninja), and its TMPDIR in the job's folder",
    async () => {
      const containment = makeContainment({ user: undefined, cacheDir: undefined });
      const python = {
        path: PYTHON,
        hidden: [],
        env: { CUDAKIT_RUNNER_DEVICE: 'cpu', PATH: '/x/bin' },
        unsandboxed: true,
      };
      const { relay, next } = relayOf(python, containment);
      relay.handle('start');
      const started = (await next('started')) as Extract<RelayEvent, { op: 'started' }>;
      await next('line'); // ready
      const source = 'import os\nraise ValueError("PATH=" + os.environ["PATH"] + " TMPDIR=" + os.environ["TMPDIR"])\n';
      relay.handle('line', JSON.stringify({ ...JSON.parse(LOAD), kernel: { ...JSON.parse(LOAD).kernel, source } }));
      const answer = (await next('line')) as { line: string };
      expect(answer.line).toContain('PATH=/usr/bin:/x/bin');
      // The compilers' temporary files go to the job's folder: the sandbox's /tmp cannot be written. (The runner
      // writes its folder as '.' in what it answers: no answer carries a path.)
      expect(answer.line).toMatch(/TMPDIR=\.["\s]/);
      expect(existsSync(started.dir)).toBe(true);
      relay.handle('stop');
    },
    120_000,
  );

  it.runIf(torchHere && root)(
    'runs the runner in the sandbox as the worker user, where it still serves',
    async () => {
      const containment = makeContainment({ user: { name: 'nobody', uid: 65534, gid: 65534 }, cacheDir: undefined });
      const { relay, next } = relayOf(
        { path: PYTHON, hidden: pythonHidden(containment, []), env: { CUDAKIT_RUNNER_DEVICE: 'cpu' } },
        containment,
      );
      relay.handle('start');
      const started = (await next('started')) as Extract<RelayEvent, { op: 'started' }>;
      const ready = JSON.parse(((await next('line')) as { line: string }).line) as { t: string; pid: number };
      expect(ready.t).toBe('ready');
      // The PID namespace: the runner is process 1 of its own (under the sandbox's shell: a small number).
      expect(ready.pid).toBeLessThan(10);
      relay.handle('line', LOAD);
      expect(JSON.parse(((await next('line')) as { line: string }).line)).toMatchObject({ t: 'loaded' });
      relay.stop();
      expect(existsSync(started.dir)).toBe(false);
    },
    120_000,
  );

  it.runIf(torchHere && root)(
    "gives the runner's folder a size: a kernel that writes past it fails with ENOSPC, and the host's disk is spared",
    async () => {
      const containment = makeContainment({ user: { name: 'nobody', uid: 65534, gid: 65534 }, cacheDir: undefined });
      const limits = { ...DEFAULT_SANDBOX_LIMITS, diskBytes: 4 << 20 };
      const { relay, next } = relayOf(
        { path: PYTHON, hidden: pythonHidden(containment, []), env: { CUDAKIT_RUNNER_DEVICE: 'cpu' }, limits },
        containment,
      );
      relay.handle('start');
      const started = (await next('started')) as Extract<RelayEvent, { op: 'started' }>;
      expect(quotaMountsUnder(containment.rootDir)).toEqual([started.dir]);
      await next('line'); // ready
      // The module writes 8 MiB into its folder as it is imported, a MiB at a time.
      const source = [
        'with open("fill.bin", "wb") as f:',
        '    for _ in range(8):',
        '        f.write(bytes(1 << 20))',
        '        f.flush()',
        'def f(x):',
        '    return x',
        '',
      ].join('\n');
      const load = JSON.parse(LOAD) as { kernel: { source: string } };
      load.kernel.source = source;
      relay.handle('line', JSON.stringify(load));
      const answer = JSON.parse(((await next('line')) as { line: string }).line) as Record<string, unknown>;
      expect(answer).toMatchObject({ t: 'error', phase: 'load', type: 'OSError' });
      expect(String(answer.message)).toMatch(/No space left on device/);
      relay.stop();
      expect(quotaMountsUnder(containment.rootDir)).toEqual([]);
      expect(existsSync(started.dir)).toBe(false);
    },
    120_000,
  );

  it.runIf(torchHere)(
    'keeps what a job built for the next job with its key, without the links and pipes it planted, and no other key',
    async () => {
      const user = root ? { name: 'nobody', uid: 65534, gid: 65534 } : undefined;
      const containment = makeContainment({ user, cacheDir: undefined });
      const python: PythonService = root
        ? { path: PYTHON, hidden: pythonHidden(containment, []), env: { CUDAKIT_RUNNER_DEVICE: 'cpu' } }
        : { path: PYTHON, hidden: [], env: { CUDAKIT_RUNNER_DEVICE: 'cpu' }, unsandboxed: true };
      // A build that left a file, a link to a host file and a pipe; a later job with the same key finds the file.
      const source = [
        'import os',
        'd = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "ext")',
        'if os.path.exists(os.path.join(d, "made")):',
        '    kept = sorted(os.listdir(d))',
        '    raise ValueError(f"kept {kept} {open(os.path.join(d, \'made\')).read()}")',
        'os.makedirs(d)',
        'with open(os.path.join(d, "made"), "w") as f:',
        '    f.write("by job one")',
        'os.symlink("/etc/passwd", os.path.join(d, "passwd"))',
        'os.symlink("/etc", os.path.join(d, "etc"))',
        'os.mkfifo(os.path.join(d, "pipe"))',
        'def f(x):',
        '    return x',
        '',
      ].join('\n');
      const load = JSON.parse(LOAD) as { kernel: { type: string; source: string } };
      load.kernel.source = source;
      const job = async (scope: string) => {
        const { relay, next } = relayOf(python, containment, { scope, gpu: 'sm_90', kernel: load.kernel });
        relay.handle('start');
        const started = (await next('started')) as Extract<RelayEvent, { op: 'started' }>;
        await next('line'); // ready
        relay.handle('line', JSON.stringify(load));
        const answer = JSON.parse(((await next('line')) as { line: string }).line) as Record<string, unknown>;
        relay.stop();
        await relay.settled;
        expect(existsSync(started.dir)).toBe(false);
        return { builds: started.builds, answer };
      };
      const first = await job('a');
      expect(first).toMatchObject({ builds: 'new', answer: { t: 'loaded' } });
      const again = await job('a');
      expect(again.builds).toBe('kept');
      expect(again.answer).toMatchObject({ t: 'error', phase: 'load' });
      expect(String(again.answer.message)).toContain("kept ['made'] by job one");
      // Another principal's job with the same source gets nothing of it.
      expect(await job('b')).toMatchObject({ builds: 'new', answer: { t: 'loaded' } });
    },
    120_000,
  );

  it.runIf(torchHere)(
    'takes a float8 tensor where the torch has float8, and refuses it by name where it has not',
    async () => {
      const containment = makeContainment({ user: undefined, cacheDir: undefined });
      const python = { path: PYTHON, hidden: [], env: { CUDAKIT_RUNNER_DEVICE: 'cpu' }, unsandboxed: true };
      const { relay, next } = relayOf(python, containment);
      relay.handle('start');
      const started = (await next('started')) as Extract<RelayEvent, { op: 'started' }>;
      await next('line'); // ready
      const x = { name: 'x', kind: 'tensor', dtype: 'float8_e4m3fn', shape: [4], role: 'input' };
      const load = { ...JSON.parse(LOAD), args: [x] };
      load.kernel.source = 'def f(x):\n    return x.float() * 2\n';
      relay.handle('line', JSON.stringify(load));
      expect(JSON.parse(((await next('line')) as { line: string }).line)).toMatchObject({ t: 'loaded' });
      writeFileSync(join(started.dir, 'x.bin'), Buffer.from([0x38, 0xc0, 0x30, 0x7e])); // 1, -2, 0.5, 448
      relay.handle('line', JSON.stringify({ v: 1, t: 'run', id: 2, files: { x: 'x.bin' }, out: 'out' }));
      const answer = JSON.parse(((await next('line')) as { line: string }).line) as Record<string, unknown>;
      const hasFloat8 =
        spawnSync(PYTHON, ['-c', 'import torch; torch.float8_e4m3fn'], { timeout: 60_000 }).status === 0;
      if (hasFloat8) {
        expect(answer).toMatchObject({ t: 'ran', outputs: [{ dtype: 'float32', shape: [4] }] });
        const out = readFileSync(join(started.dir, 'out', 'o0.bin'));
        expect(Array.from(new Float32Array(out.buffer, out.byteOffset, 4))).toEqual([2, -4, 1, 896]);
      } else {
        expect(answer).toMatchObject({ t: 'error', phase: 'run' });
        expect(String(answer.message)).toMatch(/has no float8_e4m3fn/);
      }
      relay.stop();
    },
    120_000,
  );
});
