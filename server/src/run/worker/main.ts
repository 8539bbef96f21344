// SPDX-License-Identifier: MIT
// The GPU worker child. The slot (run/slot.ts) forks it with CUDA_VISIBLE_DEVICES set to one GPU's UUID. It loads
// cudakit, the driver and NVRTC (a small compile), with the slot's context 'standby' creates its CUDA context, says
// `ready` and waits. On `job` it runs evaluate() (then, with deviceMetrics, one launch under Nsight Compute in a child
// of its own), or evaluateProblem() for a submission to the problem with cases its extras carry, and reports phases,
// progress and the result; then it exits (process per job, the default) or waits for the next job (warm: the context
// stays, buffers are scrubbed before they are freed and the memory pool is trimmed between jobs; after a problem with
// cases it exits, as evaluateProblem() scrubs nothing). The job's GPU work (its context, when the worker has none yet,
// and everything from the load phase on) waits for its turn on the GPU, which the slot gives when no other job uses it.
// The parent times every phase and kills the process group when a deadline passes: this process never times itself
// out (a kernel that never ends blocks it); only ncu, which it kills itself before the profile deadline so the job
// keeps its verdict.
import {
  Device,
  type EvalJob,
  type EvalPhase,
  type ProblemSubmission,
  Program,
  contextLostBy,
  isArch,
  probe,
} from 'cudakit';
import { PROTOCOL_VERSION, type RunProgress, WORKER_ENV, isProblemReport } from '../protocol.js';
import { gpuTurn, installParentDeathGuard, onParentMessage, send, sendAndExit } from './guard.js';
import { runJob, runProblemJob, workerDevice } from './run.js';

installParentDeathGuard();

const warm = process.env[WORKER_ENV.isolation] === 'warm';
const v = PROTOCOL_VERSION;

// Loading the driver now (dlopen, cuInit: no context) leaves a job only its context to pay for.
const machine = probe();
if (!machine.ok) {
  const message = machine.reason ?? 'no CUDA device';
  await sendAndExit({ v, t: 'fatal', id: undefined, error: { code: 'NO_DEVICE', message } }, 1);
}
const facts = workerDevice(); // read before any job can lose the context

// A small compile loads NVRTC's builtins, which a job's first compile would otherwise wait for (no context needed).
// A failure here (no NVRTC, say) is the job's to report, with its own compile.
if (facts !== undefined && isArch(facts.arch)) {
  const warmUp = 'extern "C" __global__ void warm_up(float* y) { y[threadIdx.x] = 2.0f * y[threadIdx.x]; }';
  await new Program(warmUp, { name: 'warm-up.cu' }).compileAsync({ arch: facts.arch, cache: false }).catch(() => {});
}
// A standby worker's job does not wait for a context. A failure here is the job's to report, at its load phase.
const contextAt = process.env[WORKER_ENV.context] ?? 'job';
if (facts !== undefined && contextAt === 'standby') {
  await Device.get(0)
    .createContextAsync()
    .catch(() => {});
}

let running: { id: string; abort: AbortController } | undefined;
let shutdownAfterJob = false;

onParentMessage((m) => {
  if (m.t === 'shutdown') {
    if (running === undefined) process.exit(0);
    shutdownAfterJob = true; // no further phase; the result (aborted) still goes out
    running.abort.abort(new Error('the worker was asked to shut down'));
    return;
  }
  if (running !== undefined) {
    const message = `job ${m.id} arrived while job ${running.id} runs`;
    void sendAndExit({ v, t: 'fatal', id: m.id, error: { code: 'ERR_WORKER_BUSY', message } }, 2);
    return;
  }
  const job = { id: m.id, abort: new AbortController() };
  const receivedAtMs = Date.now();
  running = job;
  // The job's context where the worker has none yet: now, beside validation and NVRTC, on a GPU of one lane; after
  // its turn where lanes share the GPU. A failure shows at the load phase, as the job's. A Python candidate's job
  // makes none: its runners launch on their own contexts.
  const candidate = m.extras?.python?.candidate !== undefined;
  const makeContext = () =>
    candidate
      ? Promise.resolve()
      : Device.get(0)
          .createContextAsync()
          .catch(() => {});
  const early = contextAt === 'job' ? makeContext() : undefined;
  let turn: Promise<void> | undefined;
  const waitForGpu = (): Promise<void> => (turn ??= gpuTurn(m.id).then(() => early ?? makeContext()));
  void (async () => {
    try {
      const options = {
        signal: job.abort.signal,
        zeroOnFree: warm,
        deviceMetrics: m.extras?.deviceMetrics === true,
        ...(m.extras?.referenceModule === undefined ? {} : { referenceModule: m.extras.referenceModule }),
        ...(m.extras?.python === undefined ? {} : { python: m.extras.python, jobId: m.id }),
        deadlines: m.deadlines,
        receivedAtMs,
        waitForGpu,
        onPhase: (phase: EvalPhase | 'profile') => void send({ v, t: 'phase', id: m.id, phase, atMs: Date.now() }),
        onProgress: (progress: RunProgress) => void send({ v, t: 'progress', id: m.id, progress }),
      };
      const problem = m.extras?.problem;
      // With a problem, the job is the submission to it (the service sends nothing else with one).
      const { report, device } =
        problem === undefined
          ? await runJob(m.job as EvalJob, m.seedSalt, options)
          : await runProblemJob(problem, m.job as ProblemSubmission, m.seedSalt, options);
      await send({ v, t: 'result', id: m.id, report, device });
      if (!warm || shutdownAfterJob || problem !== undefined || contextLostBy() !== undefined) process.exit(0);
      // Warm: give the pool's cache back between jobs (the next job's memory starts from the driver).
      if (!isProblemReport(report) && report.phases.some((p) => p.phase === 'load')) Device.get(0).trimMemory();
    } catch (e) {
      // evaluate() rejects only for bad options: this file's mistake, not the job's.
      const message = e instanceof Error ? (e.stack ?? e.message) : String(e);
      await sendAndExit({ v, t: 'fatal', id: m.id, error: { code: 'ERR_WORKER', message } }, 1);
    }
    running = undefined;
  })();
});

await send({ v, t: 'ready', pid: process.pid });
