// SPDX-License-Identifier: MIT
// A script of the library's own TypeScript run in a fresh Node process: for what a test must not do to its own
// process (a sticky CUDA error, a forced library path, a V8 flag, a fault planted on purpose).
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';

/** The repository root: a script's imports ('./lib/index.ts') are relative to it. */
const repoRoot = new URL('..', import.meta.url).pathname;

export interface ScriptOptions {
  /** Node options before the script (e.g. '--expose-gc'). */
  nodeFlags?: readonly string[];
  /** The child's environment; this process's when absent. */
  env?: NodeJS.ProcessEnv;
  /** Killed after this long (default 60 s). */
  timeoutMs?: number;
}

/** Runs `script` as an ES module through tsx, from the repository root, and waits for it. */
export function runScript(script: string, options: ScriptOptions = {}): SpawnSyncReturns<string> {
  const args = [...(options.nodeFlags ?? []), '--import', 'tsx', '--input-type=module', '-e', script];
  return spawnSync(process.execPath, args, {
    cwd: repoRoot,
    env: options.env,
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 60_000,
  });
}
