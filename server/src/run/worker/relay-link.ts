// SPDX-License-Identifier: MIT
// A worker's link to one of its job's Python runners, which the slot starts and relays (run/python-relay.ts): lines
// both ways over the worker's IPC channel. Imports nothing of cudakit's, so the fake worker links to runners too.
import type { RunnerLink } from '../python-runner.js';
import { PROTOCOL_VERSION, type PythonRole } from '../protocol.js';
import { onRelayEvent, send } from './guard.js';

/**
 * Asks the slot for the job's runner and resolves to a link to it over the IPC channel, with the runner's folder.
 * The slot answers 'started' (or 'exit' with why it could not start).
 */
export function relayedRunner(
  id: string,
  runner: PythonRole,
): Promise<{ link: RunnerLink; dir: string; builds: 'kept' | 'new' | undefined }> {
  const lineListeners: ((line: string) => void)[] = [];
  const closeListeners: ((why: string) => void)[] = [];
  const link: RunnerLink = {
    send: (line) => void send({ v: PROTOCOL_VERSION, t: 'python', id, runner, op: 'line', line }),
    onLine: (l) => lineListeners.push(l),
    onClose: (l) => closeListeners.push(l),
  };
  return new Promise((resolve, reject) => {
    onRelayEvent(runner, (m) => {
      if (m.id !== id) return;
      const e = m.event;
      if (e.op === 'started') resolve({ link, dir: e.dir, builds: e.builds });
      else if (e.op === 'line') for (const l of lineListeners) l(e.line);
      else {
        const tail = e.stderrTail.trim().split('\n').slice(-3).join(' | ');
        const why = `${e.why}${tail === '' ? '' : ` (stderr: ${tail.slice(-600)})`}`;
        reject(new Error(`the Python runner could not start: ${why}`));
        for (const l of closeListeners) l(why);
        onRelayEvent(runner, undefined);
      }
    });
    void send({ v: PROTOCOL_VERSION, t: 'python', id, runner, op: 'start' });
  });
}

/** Tells the slot the job is done with a runner (the slot also stops it when the job ends any other way). */
export function stopRelayedRunner(id: string, runner: PythonRole): void {
  onRelayEvent(runner, undefined);
  void send({ v: PROTOCOL_VERSION, t: 'python', id, runner, op: 'stop' });
}
