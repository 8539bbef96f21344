// SPDX-License-Identifier: MIT
// The forker: a small process (forker-main.ts) that forks the worker children on the service's behalf and relays
// what they say, so that the service's process never calls fork() itself. fork() copies the calling process's page
// tables and blocks its thread meanwhile: about 4 ms for the service (100 MB and more), and on a busy 2-core host a
// median of 8 ms and a p99 of 50 ms per call under load, with one call per job in process-per-job isolation; the
// event loop of the API stood still for all of it. The forker holds nothing but its children (about 40 MB), so
// its forks are short, and they block nothing of the API.
//
// One forker per service process, started with the first child and again after it dies; its own parent-death guard
// is the workers' (setpriv's signal, or a ppid watchdog), and it exits on 'disconnect', killing its children's
// process groups first. Each child keeps its own process group and guard, as when the service forked it: killing
// a group (process.kill(-pid)) and the GPU's PID checks work as before.
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** What the forker is asked to fork: fork()'s arguments. */
export interface ForkRequest {
  path: string;
  args: readonly string[];
  /** setpriv (the parent-death guard), or undefined for Node itself. */
  execPath: string | undefined;
  execArgv: readonly string[];
  env: Record<string, string | undefined>;
  /** The child's working folder (its private one: containment.ts). */
  cwd: string;
  /** The user and group it runs as; undefined: the forker's. */
  uid: number | undefined;
  gid: number | undefined;
}

/** The service's messages to the forker. */
export type ForkerRequest =
  | ({ t: 'spawn'; key: number } & ForkRequest)
  | { t: 'send'; key: number; message: unknown }
  | { t: 'kill'; key: number };

/** The forker's messages to the service, per child in the order they happened. */
export type ForkerReport =
  | { t: 'spawned'; key: number; pid: number }
  | { t: 'failed'; key: number; message: string }
  | { t: 'message'; key: number; message: unknown }
  | { t: 'stderr'; key: number; text: string }
  /** Sent once the child's channel is read to its end: no message of it comes after. */
  | { t: 'exit'; key: number; code: number | null; signal: NodeJS.Signals | null }
  /** Its stdio and channel are closed. */
  | { t: 'closed'; key: number };

/** What a forked child's owner hears (each at most once, except message and stderr). */
export interface ForkHandlers {
  spawned(pid: number): void;
  /** The fork itself failed: no process. `exit` and `closed` follow. */
  failed(message: string): void;
  message(message: unknown): void;
  stderr(text: string): void;
  exit(code: number | null, signal: NodeJS.Signals | null): void;
  closed(): void;
}

/** A child forked through the forker. */
export interface ForkedChild {
  /** Known once the forker reported the fork. */
  readonly pid: number | undefined;
  /** False when the child is gone. */
  send(message: unknown): boolean;
  /** SIGKILLs its process group (through the forker when its pid is not known yet). Never throws. */
  kill(): void;
}

/** The forker's script and the Node flags it needs. */
export interface ForkerScript {
  path: string;
  execArgv: readonly string[];
}

/** How long the children of a forker that died may take to be gone before they count as exited anyway. */
const ORPHAN_WAIT_MS = 10_000;

interface Entry {
  handlers: ForkHandlers;
  pid: number | undefined;
  exited: boolean;
  closed: boolean;
}

export function isForkerReport(m: unknown): m is ForkerReport {
  const r = m as { t?: unknown; key?: unknown } | null;
  return typeof r === 'object' && r !== null && typeof r.key === 'number' && typeof r.t === 'string';
}

export class Forker {
  readonly #script: ForkerScript;
  /** setpriv's path for the forker's own parent-death guard, or undefined for its ppid watchdog. */
  readonly #setpriv: string | undefined;
  #proc: ChildProcess | undefined;
  #nextKey = 1;
  readonly #entries = new Map<number, Entry>();
  #live = 0;

  constructor(script: ForkerScript, setpriv: string | undefined) {
    this.#script = script;
    this.#setpriv = setpriv;
  }

  /** The forker's pid, once it runs (tests). */
  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  /** Asks the forker for a child; `handlers` hear of it from the next turn of the event loop on. */
  spawn(request: ForkRequest, handlers: ForkHandlers): ForkedChild {
    const key = this.#nextKey++;
    const entry: Entry = { handlers, pid: undefined, exited: false, closed: false };
    this.#entries.set(key, entry);
    this.#live++;
    this.#send({ t: 'spawn', key, ...request });
    this.#reref(); // unreferenced since its last child exited, the forker would not keep this process up for this one
    return {
      get pid() {
        return entry.pid;
      },
      send: (message) => {
        if (entry.exited) return false;
        return this.#send({ t: 'send', key, message });
      },
      kill: () => {
        if (entry.pid === undefined) {
          if (!entry.exited) this.#send({ t: 'kill', key });
          return;
        }
        try {
          process.kill(-entry.pid, 'SIGKILL');
        } catch {
          // the group is gone already
        }
      },
    };
  }

  #send(request: ForkerRequest): boolean {
    const proc = this.#proc ?? this.#start();
    if (!proc.connected) return false;
    try {
      return proc.send(request, undefined, {}, () => {});
    } catch {
      return false;
    }
  }

  #start(): ChildProcess {
    const guard = this.#setpriv;
    const proc = fork(this.#script.path, [guard === undefined ? 'watchdog' : 'setpriv'], {
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      ...(guard === undefined
        ? { execArgv: [...this.#script.execArgv] }
        : { execPath: guard, execArgv: ['--pdeathsig', 'KILL', '--', process.execPath, ...this.#script.execArgv] }),
    });
    this.#proc = proc;
    proc.on('message', (m: unknown) => {
      if (isForkerReport(m)) this.#report(m);
    });
    proc.on('error', () => {
      // A failed fork of the forker reports its exit too; its children are dealt with there.
    });
    proc.on('exit', () => {
      if (this.#proc === proc) this.#proc = undefined;
      void this.#orphaned();
    });
    this.#reref();
    return proc;
  }

  #report(r: ForkerReport): void {
    const entry = this.#entries.get(r.key);
    if (entry === undefined) return;
    const h = entry.handlers;
    switch (r.t) {
      case 'spawned':
        entry.pid = r.pid;
        return h.spawned(r.pid);
      case 'failed':
        h.failed(r.message);
        return this.#end(r.key, entry, null, null);
      case 'message':
        return h.message(r.message);
      case 'stderr':
        return h.stderr(r.text);
      case 'exit':
        return this.#exit(entry, r.code, r.signal);
      case 'closed':
        return this.#end(r.key, entry, null, null);
    }
  }

  #exit(entry: Entry, code: number | null, signal: NodeJS.Signals | null): void {
    if (entry.exited) return;
    entry.exited = true;
    this.#live--;
    this.#reref();
    entry.handlers.exit(code, signal);
  }

  /** Exit (when not reported yet) and close: the entry is done. */
  #end(key: number, entry: Entry, code: number | null, signal: NodeJS.Signals | null): void {
    this.#exit(entry, code, signal);
    if (entry.closed) return;
    entry.closed = true;
    this.#entries.delete(key);
    entry.handlers.closed();
  }

  /**
   * The forker died: its children die with it (their parent-death guard, or their 'disconnect'); their groups are
   * killed here too, and each counts as exited once it is gone.
   */
  async #orphaned(): Promise<void> {
    const orphans = [...this.#entries].filter(([, e]) => !e.closed);
    for (const [, e] of orphans) {
      if (e.pid === undefined) continue;
      try {
        process.kill(-e.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    const deadline = Date.now() + ORPHAN_WAIT_MS;
    while (orphans.some(([, e]) => e.pid !== undefined && isAlive(e.pid)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (const [key, e] of orphans) this.#end(key, e, null, 'SIGKILL');
  }

  /** The forker keeps the service's event loop alive only while it has children, as forked children would. */
  #reref(): void {
    const proc = this.#proc;
    if (proc === undefined) return;
    if (this.#live > 0) {
      proc.ref();
      proc.channel?.ref();
    } else {
      proc.unref();
      proc.channel?.unref();
    }
  }
}

/** Whether `pid` is a live process (a zombie, dead but not yet reaped by whoever adopted it, counts as dead). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  const stat = `/proc/${pid}/stat`;
  if (!existsSync('/proc/self/stat')) return true;
  try {
    const text = readFileSync(stat, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
