// SPDX-License-Identifier: MIT
// The real binary as a child process, for the load benchmark (load.ts) and the tests that kill it
// (server/test/recovery.test.ts, load.test.ts): start it and wait for its 'listening' line, build the fake worker as
// plain JavaScript, read the fake workers' log (CUDAKIT_FAKE_LOG: which worker started, took a job, ended it), and
// tell whether a process is still alive.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The binary run from its sources (under tsx). */
export const MAIN_SOURCE = join(ROOT, 'server/src/main.ts');

export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  child: ChildProcess;
  pid: number;
  /** http://127.0.0.1:<port>, as the binary printed it. */
  url: string;
  /** The last 64 KiB of its stdout and stderr together. */
  output: () => string;
  exited: Promise<ServerExit>;
}

export interface StartOptions {
  /** The binary's own arguments. */
  args: readonly string[];
  /** Added to this process's environment. */
  env?: Readonly<Record<string, string>>;
  /** 'source' (default): server/src/main.ts under tsx; or the path of a built main.js. */
  main?: 'source' | string;
  /** Node flags before the script (--cpu-prof ...). */
  nodeArgs?: readonly string[];
  /**
   * Its working directory (default: the repository's root). Another checkout's server runs in its own, so that
   * `--import tsx` in nodeArgs loads that checkout's tsx (ab.ts).
   */
  cwd?: string;
  /** How long it may take to print its 'listening' line, and then to answer /healthz with 200. Default 30 s. */
  startTimeoutMs?: number;
}

const OUTPUT_TAIL_CHARS = 64 * 1024;

/**
 * Starts the binary; resolves once it prints where it listens and then answers /healthz with 200 (GPUs or not): on a
 * loaded host its first requests may be shed with a 503 for up to a second, as @fastify/under-pressure reads the
 * event-loop block of the start-up's own work as load until its next sample. Rejects with the binary's output if it
 * exits first or takes longer than startTimeoutMs.
 */
export async function startServer(options: StartOptions): Promise<ServerProcess> {
  const timeoutMs = options.startTimeoutMs ?? 30_000;
  const deadlineMs = Date.now() + timeoutMs;
  const server = await startListening(options, timeoutMs);
  let last = 'no answer';
  while (Date.now() < deadlineMs && server.child.exitCode === null && server.child.signalCode === null) {
    try {
      const res = await fetch(`${server.url}/healthz`);
      if (res.status === 200) return server;
      last = `${res.status} ${await res.text()}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  server.child.kill('SIGKILL');
  throw new Error(`/healthz did not answer 200 within ${timeoutMs} ms (last: ${last}):\n${server.output()}`);
}

function startListening(options: StartOptions, timeoutMs: number): Promise<ServerProcess> {
  const main = options.main ?? 'source';
  const script = main === 'source' ? ['--import', 'tsx', MAIN_SOURCE] : [main];
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...script, ...options.args], {
    cwd: options.cwd ?? ROOT,
    // Workers run as this process's user unless a test says otherwise: a fake worker built into a private temporary
    // folder cannot be read by the user a root server would choose (security/containment.test.ts tests that one).
    env: { ...process.env, CUDAKIT_SERVER_WORKER_USER: String(process.getuid?.() ?? ''), ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const append = (chunk: string): void => {
    output += chunk;
    if (output.length > 2 * OUTPUT_TAIL_CHARS) output = output.slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout!.setEncoding('utf8').on('data', append);
  child.stderr!.setEncoding('utf8').on('data', append);
  const exited = new Promise<ServerExit>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise<ServerProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no 'listening' line within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = (): void => {
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (url === undefined) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve({ child, pid: child.pid!, url, output: () => output.slice(-OUTPUT_TAIL_CHARS), exited });
    };
    child.stdout!.on('data', onData);
    void exited.then((e) => {
      clearTimeout(timer);
      reject(new Error(`exited (code ${e.code}, signal ${e.signal}) before listening:\n${output}`));
    });
  });
}

/**
 * Writes the fake worker (server/src/run/worker/fake.ts and the two modules it imports) to `dir` as JavaScript, and
 * returns the path to give CUDAKIT_SERVER_WORKER. Run from sources, every worker the server forks would load tsx
 * first (about 0.25 s of CPU each, 4 times a built worker's); a built install forks JavaScript, and so does this.
 */
export function buildFakeWorker(dir: string): string {
  // Loaded here, not at the top: a run with the real worker (on a GPU machine) may have no TypeScript compiler.
  const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript');
  const sources = ['run/worker/fake.ts', 'run/worker/guard.ts', 'run/protocol.ts'];
  for (const source of sources) {
    const text = readFileSync(join(ROOT, 'server/src', source), 'utf8');
    const out = ts.transpileModule(text, {
      fileName: source,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
    });
    const file = join(dir, source.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, out.outputText);
  }
  // Type-only imports are gone; a value import of anything else would fail here rather than in a worker.
  for (const source of sources) {
    const js = readFileSync(join(dir, source.replace(/\.ts$/, '.js')), 'utf8');
    const bare = [...js.matchAll(/^import [^'"]*['"]([^'"]+)['"]/gm)]
      .map((m) => m[1]!)
      .filter((s) => !s.startsWith('.') && !s.startsWith('node:'));
    if (bare.length > 0) throw new Error(`the fake worker's ${source} imports ${bare.join(', ')}: not built here`);
  }
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  return join(dir, 'run/worker/fake.js');
}

/** One line of CUDAKIT_FAKE_LOG. */
export interface FakeLogEvent {
  event: 'spawn' | 'start' | 'gpu' | 'end';
  pid: number;
  /** The UUID the worker was given (CUDA_VISIBLE_DEVICES). */
  gpu: string;
  /** The job, for 'start', 'gpu' (its turn on the GPU came) and 'end'. */
  id?: string;
  /** For 'spawn': when the worker makes its CUDA context ('job', 'turn', 'standby'). */
  context?: string;
  atMs: number;
}

export function readFakeLog(file: string): FakeLogEvent[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as FakeLogEvent);
}

/** Whether `pid` is a live process (a zombie, dead but not yet reaped by whoever adopted it, counts as dead). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform !== 'linux') return true;
  try {
    // /proc/<pid>/stat: 'pid (comm) S ...'; comm may hold spaces and parentheses, the state follows the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false; // gone between the two looks
  }
}

/** The live children of `pid` (Linux: /proc; elsewhere []). */
export function childrenOf(pid: number): number[] {
  if (process.platform !== 'linux') return [];
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) === pid && state !== 'Z') found.push(Number(entry));
    } catch {
      // exited while listed
    }
  }
  return found;
}

/**
 * Waits up to `timeoutMs` for every pid to be gone; returns those still alive then. Polled every 20 ms: nothing
 * tells another process's non-child that a process ended.
 */
export async function stillAliveAfter(pids: readonly number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const alive = pids.filter(isAlive);
    if (alive.length === 0 || Date.now() >= deadline) return alive;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
