// SPDX-License-Identifier: MIT
// The start check of --python (src/run/python.ts), in the real sandbox: the system's Python without torch is refused
// naming torch; fake interpreters (shell scripts that answer the probe as a Python with torch would, or not at all)
// stand for the rest; an interpreter in a folder the sandbox hides is refused before anything runs. Needs root, as
// the sandbox does; without it the suite skips and says why.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Containment, makeContainment } from '../../src/run/containment.js';
import { PythonUnavailableError, checkPython, pythonHidden } from '../../src/run/python.js';

const root = process.getuid?.() === 0;
if (!root) console.log('python start-check tests skipped: not root (the sandbox needs root)');
const describeRoot = root ? describe : describe.skip;

let fakes: string;
let containment: Containment;
let hidden: string[];

/** A fake interpreter: a script that prints `answer` (and exits `code`), whatever it is asked. */
function fake(name: string, answer: string, code = 0): string {
  const path = join(fakes, name);
  writeFileSync(path, `#!/bin/sh\necho '${answer}'\nexit ${code}\n`);
  chmodSync(path, 0o755);
  return path;
}

const TORCH = {
  v: 1,
  python: '3.12.3',
  torch: '2.11.0+cu130',
  triton: '3.6.0',
  cuda: true,
  cudaVersion: '13.0',
  devices: 1,
  missing: [],
};

beforeAll(() => {
  if (!root) return;
  fakes = mkdtempSync('/opt/cudakit-fake-python-');
  chmodSync(fakes, 0o755);
  containment = makeContainment({ user: { name: 'nobody', uid: 65534, gid: 65534 }, cacheDir: undefined });
  hidden = pythonHidden(containment, []);
});

afterAll(() => {
  if (root) rmSync(fakes, { recursive: true, force: true });
});

describeRoot('the start check of --python', () => {
  it('accepts a Python with torch and a GPU, and says what it serves', async () => {
    const path = fake('python-torch', JSON.stringify(TORCH));
    await expect(checkPython(path, containment, hidden)).resolves.toEqual({
      path,
      python: '3.12.3',
      torch: '2.11.0+cu130',
      triton: '3.6.0',
      cudaVersion: '13.0',
    });
  });

  it.runIf(existsSync('/usr/bin/python3'))('refuses the system Python, naming what it lacks', async () => {
    // Without torch it names torch; with a CPU-only torch (Debian's python3-torch), the GPU torch cannot use.
    const hasTorch = spawnSync('/usr/bin/python3', ['-c', 'import torch'], { timeout: 60_000 }).status === 0;
    const e = await checkPython('/usr/bin/python3', containment, hidden).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(PythonUnavailableError);
    expect((e as Error).message).toMatch(
      hasTorch
        ? /^--python \/usr\/bin\/python3 cannot serve Python jobs: missing a GPU torch can use/
        : /^--python \/usr\/bin\/python3 cannot serve Python jobs: missing torch \(/,
    );
  });

  it('refuses torch without a GPU, an answer that is not the probe’s, and a probe that fails', async () => {
    const noGpu = { ...TORCH, cuda: false, missing: ['a GPU torch can use (torch.cuda.is_available() is False)'] };
    const cases: [string, RegExp][] = [
      [fake('no-gpu', JSON.stringify(noGpu)), /missing a GPU torch can use/],
      [fake('chatty', 'hello'), /did not answer the probe with the runner's JSON \(it printed 'hello/],
      [fake('old', JSON.stringify({ ...TORCH, v: 0 })), /another protocol \(0\)/],
      [fake('broken', 'oops', 3), /the probe failed: it exited with 3/],
    ];
    for (const [path, message] of cases) {
      await expect(checkPython(path, containment, hidden), path).rejects.toThrow(message);
    }
  });

  it('refuses an interpreter the sandbox hides, or none at all, before anything runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-hidden-python-'));
    try {
      const path = join(dir, 'python');
      writeFileSync(path, '#!/bin/sh\n');
      chmodSync(path, 0o755);
      await expect(checkPython(path, containment, hidden)).rejects.toThrow(/which the sandbox hides from Python jobs/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await expect(checkPython('/opt/no-such-python', containment, hidden)).rejects.toThrow(/there is no such file/);
    await expect(checkPython('python3', containment, hidden)).rejects.toThrow(/an absolute path/);
  });
});
