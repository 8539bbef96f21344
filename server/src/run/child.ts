// SPDX-License-Identifier: MIT
// One worker child process, as the slot (slot.ts) sees it: forked (by the forker, forker.ts: never by this process)
// into a process group of its own with one GPU visible, started under a parent-death guard, its stderr's tail kept,
// its `ready` awaited within a time limit, and killed with its whole group (ncu, or anything else it started). The
// slot decides when; this file only does it.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Containment, makeWorkerDir, removeWorkerDir, workerEnv } from './containment.js';
import { type ForkedChild, Forker } from './forker.js';
import { type ParentMessage, WORKER_ENV, describeMessage, isChildMessage } from './protocol.js';

export { describeMessage };
import { findExecutable } from './which.js';

/** A script to fork, with the Node flags it needs. */
export interface WorkerScript {
  path: string;
  args: readonly string[];
  execArgv: readonly string[];
}

/** The env var that picks the worker: unset for the real one, 'fake' for tests, or a script's path. */
export const WORKER_CHOICE_ENV = 'CUDAKIT_SERVER_WORKER';

/**
 * The script for a worker child, the probe or the compile check. `choice` (default: $CUDAKIT_SERVER_WORKER): unset or
 * 'real' for worker/main and worker/probe, 'fake' for worker/fake (the probe is `fake probe`), or the path of a script
 * that acts as a worker, and as the probe when given the argument 'probe'. The compile check is always
 * worker/compile-check: it needs NVRTC, never a GPU, so no fake stands in for it. Run from sources (.ts), tsx loads
 * them.
 */
export function workerScript(
  role: 'worker' | 'probe' | 'compile-check',
  choice = process.env[WORKER_CHOICE_ENV],
): WorkerScript {
  const here = fileURLToPath(import.meta.url);
  const ext = extname(here); // '.ts' under tsx or vitest, '.js' when built
  const sibling = (name: string): string => join(dirname(here), 'worker', `${name}${ext}`);
  let path: string;
  let args: string[] = [];
  if (role === 'compile-check') path = sibling('compile-check');
  else if (choice === undefined || choice === '' || choice === 'real') {
    path = sibling(role === 'worker' ? 'main' : 'probe');
  } else if (choice === 'fake') [path, args] = [sibling('fake'), role === 'probe' ? ['probe'] : []];
  else [path, args] = [resolve(choice), role === 'probe' ? ['probe'] : []]; // the worker's own folder is not ours
  return { path, args, execArgv: /\.[mc]?ts$/.test(path) ? ['--import', tsxLoader()] : [] };
}

function tsxLoader(): string {
  try {
    return pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  } catch {
    throw new Error('a worker script in TypeScript needs tsx (a development dependency); build the server instead');
  }
}

/**
 * How a child dies with its parent. 'setpriv': forked through `setpriv --pdeathsig KILL`, the kernel SIGKILLs it
 * when the parent (the thread that forked it: Node's main thread) dies, whatever the child is doing. 'watchdog':
 * the child runs a thread that polls getppid() (run/worker/guard.ts). Both also exit on IPC 'disconnect'.
 */
export type DeathGuard = { kind: 'setpriv'; path: string } | { kind: 'watchdog' };

let setpriv: Promise<string | undefined> | undefined;

/** setpriv's path when it exists and its --pdeathsig runs Node here (util-linux 2.33+), else undefined. Cached. */
export function setprivWithPdeathsig(): Promise<string | undefined> {
  setpriv ??= findExecutable('setpriv').then(
    (path) =>
      new Promise<string | undefined>((resolve) => {
        if (path === undefined) return resolve(undefined);
        const args = ['--pdeathsig', 'KILL', '--', process.execPath, '--version'];
        execFile(path, args, { timeout: 5_000 }, (error) => resolve(error === null ? path : undefined));
      }),
  );
  return setpriv;
}

/** 'auto': setpriv when it works here, else the watchdog; 'watchdog': always the watchdog. */
export async function chooseDeathGuard(choice: 'auto' | 'watchdog'): Promise<DeathGuard> {
  const path = choice === 'auto' ? await setprivWithPdeathsig() : undefined;
  return path === undefined ? { kind: 'watchdog' } : { kind: 'setpriv', path };
}

export interface ChildOptions {
  script: WorkerScript;
  /** The only GPU the child sees (CUDA_VISIBLE_DEVICES); '' for none (the compile check). */
  uuid: string;
  isolation: 'process' | 'warm';
  guard: DeathGuard;
  /** Set by the service for its workers, on top of the allowed part of its own environment (containment.ts). */
  env: Readonly<Record<string, string | undefined>>;
  /** Its folder, environment and user. */
  containment: Containment;
  startTimeoutMs: number;
  stderrTailChars: number;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export type ReadyResult = { ok: true } | { ok: false; reason: string };

/** 'exit code 3', 'signal SIGKILL'. */
export function describeExit(e: ChildExit): string {
  return e.signal !== null ? `signal ${e.signal}` : `exit code ${e.code ?? 'unknown'}`;
}

let forker: Forker | undefined;

/** The service's forker (forker.ts), started with the first child under the first child's parent-death guard. */
function sharedForker(guard: DeathGuard): Forker {
  if (forker === undefined) {
    const here = fileURLToPath(import.meta.url);
    const path = join(dirname(here), `forker-main${extname(here)}`);
    const execArgv = /\.[mc]?ts$/.test(path) ? ['--import', tsxLoader()] : [];
    forker = new Forker({ path, execArgv }, guard.kind === 'setpriv' ? guard.path : undefined);
  }
  return forker;
}

/** The pid of the process that forks the workers (forker.ts), once it runs. For tests. */
export function forkerPid(): number | undefined {
  return forker?.pid;
}

/**
 * A worker, forked by the forker (forker.ts) so that this process never blocks in fork(). Construct it to start it;
 * `ready` settles once: ready, or why not (the child is then killed).
 */
export class WorkerChild {
  readonly ready: Promise<ReadyResult>;
  readonly exited: Promise<ChildExit>;
  /** Set when the process has exited. */
  exit: ChildExit | undefined;
  isReady = false;
  /** Its private working folder (HOME too), removed once it has exited. */
  readonly dir: string;
  /** Jobs sent to it (one, in process-per-job isolation). */
  jobs = 0;
  /** Messages after `ready`, and its exit after `ready`: the slot's, while it cares. */
  onMessage: ((m: unknown) => void) | undefined;
  onExit: ((e: ChildExit) => void) | undefined;
  readonly #proc: ForkedChild;
  readonly #stdioClosed: Promise<void>;
  readonly #tailChars: number;
  #tail = '';

  constructor(o: ChildOptions) {
    this.#tailChars = o.stderrTailChars;
    let settleReady!: (r: ReadyResult) => void;
    let settleExit!: (e: ChildExit) => void;
    let settleStdio!: () => void;
    this.ready = new Promise((resolve) => (settleReady = resolve));
    this.exited = new Promise((resolve) => (settleExit = resolve));
    this.#stdioClosed = new Promise((resolve) => (settleStdio = resolve));

    let started = false;
    const fail = (reason: string): void => {
      if (started) return;
      started = true;
      clearTimeout(timer);
      this.kill();
      settleReady({ ok: false, reason });
    };
    const exited = (e: ChildExit): void => {
      if (this.exit !== undefined) return;
      this.exit = e;
      settleExit(e);
      if (!started) fail(`it exited before ready (${describeExit(e)})`);
      else if (this.isReady) this.onExit?.(e);
    };

    this.dir = makeWorkerDir(o.containment);
    const env = workerEnv(
      process.env,
      { ...o.env, CUDA_VISIBLE_DEVICES: o.uuid, [WORKER_ENV.isolation]: o.isolation, [WORKER_ENV.guard]: o.guard.kind },
      this.dir,
      o.containment.cacheDir,
    );
    const user = o.containment.user;
    const timer = setTimeout(() => fail(`no ready within ${o.startTimeoutMs} ms`), o.startTimeoutMs);
    this.#proc = sharedForker(o.guard).spawn(
      {
        path: o.script.path,
        args: o.script.args,
        env,
        cwd: this.dir,
        uid: user?.uid,
        gid: user?.gid,
        ...(o.guard.kind === 'setpriv'
          ? {
              execPath: o.guard.path,
              execArgv: ['--pdeathsig', 'KILL', '--', process.execPath, ...o.script.execArgv],
            }
          : { execPath: undefined, execArgv: o.script.execArgv }),
      },
      {
        spawned: () => {},
        failed: (message) => fail(message),
        stderr: (text) => this.#append(text),
        exit: (code, signal) => exited({ code, signal }),
        closed: () => {
          removeWorkerDir(this.dir); // its whole group is gone or going: nothing writes there any more
          settleStdio();
        },
        message: (m) => {
          if (started) return this.onMessage?.(m);
          if (isChildMessage(m) && m.t === 'ready') {
            started = true;
            this.isReady = true;
            clearTimeout(timer);
            settleReady({ ok: true });
          } else if (isChildMessage(m) && m.t === 'fatal') {
            fail(`it reported ${m.error.code} before ready: ${m.error.message}`);
          } else {
            fail(`protocol error before ready: ${describeMessage(m)}`);
          }
        },
      },
    );
  }

  /** Its pid, once the forker reported the fork. */
  get pid(): number | undefined {
    return this.#proc.pid;
  }

  /** The last stderrTailChars characters of its stderr. */
  stderrTail(): string {
    return this.#tail.slice(-this.#tailChars);
  }

  #append(chunk: string): void {
    this.#tail += chunk;
    if (this.#tail.length > 2 * this.#tailChars) this.#tail = this.#tail.slice(-this.#tailChars); // amortised
  }

  /** Sends a message; false when the child is gone (the exit that follows tells the rest). */
  send(message: ParentMessage): boolean {
    return this.#proc.send(message);
  }

  /** SIGKILLs its process group (also after it exited: what it started may live on). Never throws. */
  kill(): void {
    this.#proc.kill();
  }

  /** Whether it exited within `timeoutMs`. */
  async waitExit(timeoutMs: number): Promise<boolean> {
    if (this.exit !== undefined) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const r = await Promise.race([this.exited.then(() => true as const), timeout]);
    clearTimeout(timer);
    return r;
  }

  /** Waits up to `timeoutMs` for its stderr to be read to the end (after its exit). */
  async stdioClosed(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.#stdioClosed, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }
}
