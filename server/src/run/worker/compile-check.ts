// SPDX-License-Identifier: MIT
// The compile-check child: where no GPU can run a job, the service still tells a client whose kernel does not compile
// (or whose arguments do not match the compiled kernel) at once, with a 400, instead of a 503 that invites retries.
// The parent (run/compile-check.ts) forks it like a GPU worker (its own empty folder, the allowed environment, the
// worker user, a deadline) but with no GPU visible: this process compiles, it never launches. The server process
// itself never runs NVRTC on a client's source.
//
// On `job`: evaluate() the job with every kernel compiled for `compile.arch`, else the newest architecture this NVRTC
// knows; evaluate() then stops at its load phase for want of a GPU, after it has checked each kernel's arguments
// against the compiled code. The report goes back as `result`, and the child exits.
import { type EvalJob, type SmArch, evaluate, formatJson, supportedArchNames } from 'cudakit';
import { PROTOCOL_VERSION } from '../protocol.js';
import { installParentDeathGuard, onParentMessage, send, sendAndExit } from './guard.js';
import { prepareForRun } from './run.js';

installParentDeathGuard();
const v = PROTOCOL_VERSION;

/** The job as it is checked: source names bare, an arch where the job names none, nothing timed. */
function checkedJob(job: EvalJob): EvalJob {
  const run = prepareForRun(job, 'compile-check', false);
  const compile = typeof run.compile === 'object' && run.compile !== null ? run.compile : {};
  if (compile.arch === undefined && compile.target !== 'ptx') {
    // Without NVRTC the list is empty: the compile then fails as NVRTC_NOT_FOUND, which proves nothing either way.
    const newest = safeNewestArch();
    if (newest !== undefined) run.compile = { ...compile, arch: newest };
  }
  run.timing = { ...run.timing, skip: true };
  return run;
}

function safeNewestArch(): SmArch | undefined {
  try {
    return supportedArchNames().at(-1);
  } catch {
    return undefined;
  }
}

onParentMessage((m) => {
  if (m.t === 'shutdown') process.exit(0);
  void (async () => {
    try {
      // The service sends the compile check an EvalJob (a problem's, its first case's).
      const job = checkedJob(m.job as EvalJob);
      const report = await evaluate(job);
      const plain = JSON.parse(formatJson(report as unknown as Record<string, unknown>)) as typeof report;
      await sendAndExit({ v, t: 'result', id: m.id, report: plain, device: undefined }, 0);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      await sendAndExit({ v, t: 'fatal', id: m.id, error: { code: 'ERR_COMPILE_CHECK', message } }, 1);
    }
  })();
});

await send({ v, t: 'ready', pid: process.pid });
