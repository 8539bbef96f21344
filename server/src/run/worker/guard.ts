// SPDX-License-Identifier: MIT
// What every worker child (the real one and the fake) does first: make sure it dies with its parent,
// and talk to it. A dead supervisor must never leave a child holding a GPU, even one whose event loop is blocked in
// a driver wait on a kernel that never ends, where no 'disconnect' event can run.
//
// Two guards, one chosen by the parent (run/child.ts): the kernel's parent-death signal, set by starting the child
// through `setpriv --pdeathsig KILL` (nothing runs in the child for it), or, where setpriv is missing, a watchdog
// thread in the child that polls getppid() and SIGKILLs its own process when the parent changes. The thread has an
// event loop of its own, so a busy main thread does not stop it. 'disconnect' covers the ordinary case in both.
import { Worker } from 'node:worker_threads';
import {
  type ChildMessage,
  type ParentMessage,
  PROTOCOL_VERSION,
  type PythonRole,
  WORKER_ENV,
  isParentMessage,
} from '../protocol.js';

/** How often the watchdog thread looks at its parent. */
export const WATCHDOG_POLL_MS = 100;

// CommonJS (an eval'd worker); reparented to init or a subreaper, the process sees another parent id.
const WATCHDOG_SOURCE = `
const { workerData } = require('node:worker_threads');
setInterval(() => {
  if (process.ppid !== workerData.ppid) process.kill(workerData.pid, 'SIGKILL');
}, workerData.pollMs);
`;

/** Exits when the parent goes away; call before anything slow. */
export function installParentDeathGuard(): void {
  if (process.send === undefined || !process.connected) {
    process.stderr.write('a cudakit worker runs only as a child of the service (no IPC channel)\n');
    process.exit(1);
  }
  process.on('disconnect', () => process.exit(0));
  if (process.env[WORKER_ENV.guard] === 'watchdog') {
    const watchdog = new Worker(WATCHDOG_SOURCE, {
      eval: true,
      workerData: { ppid: process.ppid, pid: process.pid, pollMs: WATCHDOG_POLL_MS },
      stdout: false,
      stderr: false,
    });
    watchdog.unref(); // never what keeps the worker alive
  }
}

/** Sends a message to the parent; resolves once it is written (or the channel is gone: 'disconnect' exits). */
export function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined || !process.connected) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

/** Calls `listener` with each well-formed message from the parent; anything else ends the child (a bug of ours). */
export function onParentMessage(listener: (message: JobMessage) => void): void {
  process.on('message', (m: unknown) => {
    if (!isParentMessage(m)) {
      process.stderr.write(`cudakit worker: not a protocol message from the parent (${typeof m})\n`);
      process.exit(2);
    }
    if (m.t === 'python') relayListeners.get(m.runner)?.(m);
    else if (m.t === 'gpu') {
      if (turn?.id === m.id) turn.granted();
    } else listener(m);
  });
}

/** A message of the parent's about a job: the job itself, or the end of work. */
export type JobMessage = Exclude<ParentMessage, { t: 'python' | 'gpu' }>;

let turn: { id: string; promise: Promise<void>; granted: () => void } | undefined;

/**
 * Asks the slot for job `id`'s turn on the GPU and resolves when it has come (the slot answers when no other job's
 * GPU work runs on this GPU). Asked once per job: a second call for the same job returns the same promise.
 */
export function gpuTurn(id: string): Promise<void> {
  if (turn?.id === id) return turn.promise;
  let granted = (): void => {};
  const promise = new Promise<void>((resolve) => (granted = resolve));
  turn = { id, promise, granted };
  void send({ v: PROTOCOL_VERSION, t: 'gpu', id });
  return promise;
}

type RelayMessage = Extract<ParentMessage, { t: 'python' }>;
const relayListeners = new Map<PythonRole, (m: RelayMessage) => void>();

/**
 * Where the events of the job's Python runner for `runner` go (python-reference.ts); undefined: nowhere (none was
 * asked for, or it is done).
 */
export function onRelayEvent(runner: PythonRole, listener: ((m: RelayMessage) => void) | undefined): void {
  if (listener === undefined) relayListeners.delete(runner);
  else relayListeners.set(runner, listener);
}

/** Sends `message`, then exits with `code` (after the message is written, so the parent gets it). */
export async function sendAndExit(message: ChildMessage | undefined, code: number): Promise<never> {
  if (message !== undefined) await send(message);
  process.exit(code);
}
