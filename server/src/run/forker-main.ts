// SPDX-License-Identifier: MIT
// The forker process (forker.ts starts it; argv[2]: 'setpriv' or 'watchdog', its own parent-death guard): forks the
// worker children the service asks for and relays their messages, stderr and exit, per child in order. It imports
// nothing but Node's child_process, so it stays small and its fork() calls stay short.
import { type ChildProcess, fork } from 'node:child_process';
import type { ForkerReport, ForkerRequest } from './forker.js';

/** How long an exited child's channel may take to deliver what is still in it (see the 'exit' handler). */
const CHANNEL_DRAIN_MS = 500;
/** How often the watchdog looks at the parent. */
const WATCHDOG_POLL_MS = 100;

const children = new Map<number, ChildProcess>();

function report(r: ForkerReport): void {
  if (!process.connected) return;
  try {
    process.send!(r, undefined, {}, () => {});
  } catch {
    // the service is gone: 'disconnect' ends this process
  }
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

/** The service is gone: so are the children, with whatever they started. */
function exitWithChildren(): never {
  for (const child of children.values()) killGroup(child.pid);
  process.exit(0);
}

function spawnChild(r: Extract<ForkerRequest, { t: 'spawn' }>): void {
  const { key } = r;
  let proc: ChildProcess;
  try {
    proc = fork(r.path, [...r.args], {
      serialization: 'advanced',
      detached: true, // its own process group: one kill takes whatever it started
      env: r.env,
      cwd: r.cwd,
      ...(r.uid === undefined ? {} : { uid: r.uid }),
      ...(r.gid === undefined ? {} : { gid: r.gid }),
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      ...(r.execPath === undefined ? {} : { execPath: r.execPath }),
      execArgv: [...r.execArgv],
    });
  } catch (e) {
    report({ t: 'failed', key, message: `it could not be forked: ${(e as Error).message}` });
    return;
  }
  if (proc.pid === undefined) {
    // A failed spawn reports through 'error' (and nothing else).
    proc.on('error', (e) => report({ t: 'failed', key, message: `it could not be started: ${e.message}` }));
    return;
  }
  children.set(key, proc);
  report({ t: 'spawned', key, pid: proc.pid });
  proc.on('error', () => {
    // errors of kill() and send() are dealt with where they are called
  });
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (text: string) => report({ t: 'stderr', key, text }));
  proc.on('message', (message: unknown) => report({ t: 'message', key, message }));
  // 'exit' may be handled before messages the child sent just before it exited (its result, then exit(0)): libuv
  // can see the child's end before it reads the rest of the channel. Its exit is reported once the channel is read to
  // its end ('disconnect', or 'close', both after every 'message'), so the service never takes a child that reported
  // for one that died without a word.
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let exitReported = false;
  let timer: NodeJS.Timeout | undefined;
  const reportExit = (): void => {
    if (exit === undefined || exitReported) return;
    exitReported = true;
    clearTimeout(timer);
    report({ t: 'exit', key, ...exit });
  };
  proc.on('exit', (code, signal) => {
    exit = { code, signal };
    if (!proc.connected) return reportExit();
    timer = setTimeout(reportExit, CHANNEL_DRAIN_MS);
    proc.once('disconnect', reportExit);
  });
  proc.on('close', () => {
    reportExit();
    children.delete(key);
    report({ t: 'closed', key });
  });
}

if (process.send === undefined) {
  process.stderr.write('the cudakit forker runs only as a child of the service (no IPC channel)\n');
  process.exit(1);
}
process.on('disconnect', exitWithChildren);
if (process.argv[2] === 'watchdog') {
  const ppid = process.ppid;
  setInterval(() => {
    if (process.ppid !== ppid) exitWithChildren();
  }, WATCHDOG_POLL_MS).unref();
}
process.on('message', (m: ForkerRequest) => {
  switch (m.t) {
    case 'spawn':
      return spawnChild(m);
    case 'send': {
      const child = children.get(m.key);
      if (child?.connected !== true) return;
      try {
        child.send(m.message as never, undefined, {}, () => {});
      } catch {
        // its exit follows
      }
      return;
    }
    case 'kill':
      return killGroup(children.get(m.key)?.pid);
  }
});
