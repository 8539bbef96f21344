// SPDX-License-Identifier: MIT
// The Python interpreter of cudakit-server --python: checked once at start, in the sandbox its jobs will run in
// (sandbox.ts), with the runner's probe (server/python/cudakit_runner.py --probe). A Python that cannot serve (no
// torch, no GPU for torch, an interpreter the sandbox cannot see, no sandbox at all) is a start error naming what is
// missing; one that can is shown with its versions in /v1/gpus and /v1/health.
import { spawn } from 'node:child_process';
import { accessSync, constants, copyFileSync, existsSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Containment, makeWorkerDir, removeWorkerDir, workerEnv } from './containment.js';
import { DEFAULT_SANDBOX_LIMITS, HIDDEN_BY_DEFAULT, sandboxArgv, sandboxUnavailable } from './sandbox.js';

/** The runner, shipped with the server (server/python/). */
export const RUNNER_PATH = fileURLToPath(new URL('../../python/cudakit_runner.py', import.meta.url));

/** The runner's protocol version: the probe's answer carries it, and the server refuses another. */
export const RUNNER_PROTOCOL_VERSION = 1;

/** What a checked interpreter serves: shown per GPU in /v1/gpus. */
export interface PythonFacts {
  /** The interpreter as configured. */
  path: string;
  /** Versions: Python's, torch's, triton's (null when Triton is not installed: its kernel type is refused). */
  python: string;
  torch: string;
  triton: string | null;
  /** The CUDA version torch was built for. */
  cudaVersion: string | null;
}

/** Why the configured interpreter cannot serve Python jobs: a start error. */
export class PythonUnavailableError extends Error {
  constructor(path: string, why: string) {
    super(`--python ${path} cannot serve Python jobs: ${why}`);
    this.name = 'PythonUnavailableError';
  }
}

/** The probe's answer, as the runner writes it. */
interface ProbeAnswer {
  v: number;
  python: string;
  torch: string | null;
  triton: string | null;
  cuda: boolean;
  cudaVersion: string | null;
  missing: string[];
}

/** The folders a Python job cannot see: the sandbox's defaults, the workers' folders and the service's own. */
export function pythonHidden(containment: Containment, more: readonly string[]): string[] {
  return [...HIDDEN_BY_DEFAULT, containment.rootDir, containment.cacheDir, ...more];
}

/**
 * Checks `path` as the service's Python: an executable file outside every folder a job cannot see, a sandbox this
 * host can make, and a probe run in it that finds torch with a GPU. Resolves to what it serves.
 *
 * @throws PythonUnavailableError naming what is missing.
 */
export async function checkPython(
  path: string,
  containment: Containment,
  hidden: readonly string[],
  timeoutMs = 120_000,
): Promise<PythonFacts> {
  const unavailable = (why: string): never => {
    throw new PythonUnavailableError(path, why);
  };
  if (!path.startsWith('/')) unavailable('give the interpreter as an absolute path');
  if (!existsSync(path)) unavailable('there is no such file');
  const real = realpathSync(path);
  try {
    if (!statSync(real).isFile()) unavailable('it is not a file');
    accessSync(real, constants.X_OK);
  } catch (e) {
    if (e instanceof PythonUnavailableError) throw e;
    unavailable('it is not executable');
  }
  for (const h of hidden) {
    if (real === h || real.startsWith(`${h}/`)) {
      unavailable(
        `it is in ${h} (as ${real}), which the sandbox hides from Python jobs: install the interpreter elsewhere ` +
          '(/usr, /opt)',
      );
    }
  }
  const dir = makeWorkerDir(containment);
  try {
    const why = sandboxUnavailable(dir);
    if (why !== undefined) unavailable(why);
    const runner = join(dir, 'cudakit_runner.py');
    copyFileSync(RUNNER_PATH, runner);
    const out = await run(path, runner, dir, containment, hidden, timeoutMs);
    return factsOf(path, out, unavailable);
  } finally {
    removeWorkerDir(dir);
  }
}

/** Runs the probe in the sandbox; resolves to what it printed, or fails naming why it did not answer. */
function run(
  path: string,
  runner: string,
  dir: string,
  containment: Containment,
  hidden: readonly string[],
  timeoutMs: number,
): Promise<string> {
  const user = containment.user ?? { uid: 65534, gid: 65534 };
  const env = workerEnv(process.env, {}, dir, containment.cacheDir);
  const argv = sandboxArgv([path, '-I', runner, '--probe'], {
    dir,
    hidden,
    user,
    limits: DEFAULT_SANDBOX_LIMITS,
    env,
  });
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone already
      }
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new PythonUnavailableError(path, `the probe could not start (${e.message})`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(out);
      const last = err.trim().split('\n').pop() ?? '';
      const how = signal === 'SIGKILL' ? `it did not answer within ${timeoutMs / 1000} s` : `it exited with ${code}`;
      reject(new PythonUnavailableError(path, `the probe failed: ${how}${last === '' ? '' : ` (${last})`}`));
    });
  });
}

/** The probe's last line as facts, or what it says is missing. */
function factsOf(path: string, out: string, unavailable: (why: string) => never): PythonFacts {
  let a: ProbeAnswer;
  try {
    a = JSON.parse(out.trim().split('\n').pop() ?? '') as ProbeAnswer;
  } catch {
    return unavailable(`it did not answer the probe with the runner's JSON (it printed '${out.slice(0, 120)}')`);
  }
  if (typeof a !== 'object' || a === null || a.v !== RUNNER_PROTOCOL_VERSION) {
    return unavailable(`the runner answered in another protocol (${String((a as { v?: unknown })?.v)})`);
  }
  if (!Array.isArray(a.missing) || typeof a.python !== 'string') {
    return unavailable("it did not answer the probe with the runner's JSON");
  }
  if (a.missing.length > 0 || a.torch === null || !a.cuda) {
    return unavailable(`missing ${a.missing.length > 0 ? a.missing.join('; ') : 'torch with a GPU'}`);
  }
  return { path, python: a.python, torch: a.torch, triton: a.triton ?? null, cudaVersion: a.cudaVersion ?? null };
}
