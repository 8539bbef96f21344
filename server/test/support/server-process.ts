// SPDX-License-Identifier: MIT
// The real binary (server/src/main.ts under tsx) as a child process, for the tests that need one: its address once it
// listens, its output, its memory as the kernel counts it, and an end that never outlives the test file.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MAIN = join(ROOT, 'server/src/main.ts');

export interface ServerProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  /** SIGKILLs it (if it still runs) and removes its data directory. */
  stop(): Promise<void>;
}

/** The fake GPU worker, run as the test's own user (a checkout may sit where another user cannot read it). */
export const FAKE_GPU_ENV = {
  CUDAKIT_SERVER_WORKER: 'fake',
  CUDAKIT_FAKE_GPUS: '1',
  CUDAKIT_SERVER_WORKER_USER: String(process.getuid?.() ?? ''),
} as const;

/**
 * Starts the binary with `args` (a port of 0 and a fresh data directory unless given) and resolves once it prints
 * where it listens, or rejects with its output when it exits first or takes longer than `timeoutMs`.
 */
export async function startServer(
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<ServerProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cudakit-server-process-'));
  const role = args[args.indexOf('--role') + 1];
  const defaults = [
    ...(args.includes('--port') ? [] : ['--port', '0']),
    ...(args.includes('--data-dir') || (role !== undefined && role !== 'embedded') ? [] : ['--data-dir', dataDir]),
  ];
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...defaults, ...args], {
    cwd: ROOT,
    env: { ...process.env, CUDAKIT_SERVER_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no 'listening' line within ${timeoutMs} ms:\n${out}\n${err}`)),
        timeoutMs,
      );
      const onData = (): void => {
        const found = /listening on (http:\/\/\S+)/.exec(out)?.[1];
        if (found === undefined) return;
        clearTimeout(timer);
        resolve(found);
      };
      child.stdout!.on('data', onData);
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`exited with ${code} before listening:\n${out}\n${err}`));
      });
    });
    return { child, pid: child.pid!, url, stdout: () => out, stderr: () => err, exited, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** A process's peak resident memory so far (VmHWM of /proc/<pid>/status), in bytes. */
export function peakRssBytes(pid: number): number {
  const line = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (line === null) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(line[1]) * 1024;
}
