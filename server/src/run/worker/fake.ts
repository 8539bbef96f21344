// SPDX-License-Identifier: MIT
// The fake GPU worker, for tests on machines without a GPU (CUDAKIT_SERVER_WORKER=fake). It speaks the worker
// protocol like main.ts, imports nothing of cudakit's values, and does what the job's name says:
//
//   fake:pass[:80ms]             every phase, `80ms` in all, then a passing report
//   fake:hang:<phase>            hangs in that phase (event loop free)
//   fake:crash:<phase>[:<how>]   dies in that phase: exit code 70, or `how`: an exit code or a signal ('SIGSEGV')
//   fake:exit-before-ready       exits (code 3) on the job, before any phase: a worker lost before it took the job
//   fake:garbage                 sends something that is not a protocol message, then hangs
//   fake:wrong-id                sends a result for another job
//   fake:ignore-sigterm[:<phase>]  ignores SIGTERM and hangs ('time' by default)
//   fake:grandchild[:<phase>]    starts a process in the worker's process group that keeps running, reports its pid as
//                                progress { kind: 'samples', name: 'grandchild', samples: <pid> }, and hangs
//   fake:busy-loop[:<phase>]     a synchronous endless loop: no handler runs again, only a signal ends it
//   fake:fault                   a RUNTIME_ERROR report with a sticky CUDA error, then exits (warm or not)
//   fake:fatal                   a `fatal` message, then exits
//   fake:linger                  a passing report, but no exit afterwards
//   fake:python-runners          asks the slot for the job's two Python runners (candidate and reference), waits for
//                                each one's first line, and passes with `python <role> <folder> <line>` warnings
//   fake:skip-turn[:python]      uses the GPU without its turn: sends its load phase (or asks for a Python runner)
//                                without asking for the GPU first, then hangs
//   fake:kill-agent[:<phase>]    SIGKILLs the distributed mode's agent that runs it (CUDAKIT_SERVER_AGENT_PID): a
//                                job that takes its whole host down
//
// Any other name passes at once. A submission to a problem with cases (the problem in the job's extras) that passes
// goes through every case (fake-problem.ts: each case's start, phases and samples, then a ProblemReport), and so do
//   fake:public-fail[:80ms]      the second public case fails its check; no hidden case runs
//   fake:hidden-fail[:80ms]      every public case passes, the first hidden one fails its check
// after which the worker exits, warm or not, as a real one does after a problem.
//
// At start, CUDAKIT_FAKE_START = 'never-ready' | 'garbage' | 'exit' misbehaves before `ready` ('@<file>': read that
// from the file at each start, so a test can mend a broken "GPU").
// `fake.ts probe` is the probe instead: CUDAKIT_FAKE_GPUS = a count of fake H200s (4 by default), or a comma list of
// `name@arch` ('NVIDIA H100 80GB HBM3@sm_90'; a name with the word MIG gets a MIG- UUID), or 'none' (no driver);
// CUDAKIT_FAKE_HOST = 4 hex digits that start every UUID (default fa4e), so fake hosts have GPUs of their own.
// A GPU's launch limits are its arch's (an H200's on sm_90: 227 KiB of shared memory, clusters of 8); `@` and
// `key=value` pairs joined by '+' after the arch set others: threads (per block), block and grid (XxYxZ), smem
// (opt-in shared memory bytes), cluster (blocks): 'NVIDIA A100-SXM4-80GB@sm_80@smem=166912+cluster=0'.
// CUDAKIT_FAKE_LOG = a file: each worker appends a JSON line `{ event, pid, gpu, id, atMs }` when it starts ('spawn',
// with `context`: when it was told to make its CUDA context),
// takes a job ('start'), has its turn on the GPU ('gpu') and is done with it ('end': its result goes out next, then
// it exits), so a test can find every worker a server started and see which jobs used which GPU when.
// Every job asks for its turn on the GPU before its load phase, as the real worker does.
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EvalCompileFacts, EvalError, EvalPhase, EvalProblem, EvalReport, ProblemSubmission } from 'cudakit';
import {
  type ChildMessage,
  type DeviceFacts,
  type LaunchFacts,
  PROTOCOL_VERSION,
  type RunJob,
  WORKER_ENV,
} from '../protocol.js';
import type { FakeProblemOutcome } from './fake-problem.js';
import { gpuTurn, installParentDeathGuard, onParentMessage, send, sendAndExit } from './guard.js';

const FAKE_ENV = {
  start: 'CUDAKIT_FAKE_START',
  gpus: 'CUDAKIT_FAKE_GPUS',
  log: 'CUDAKIT_FAKE_LOG',
  host: 'CUDAKIT_FAKE_HOST',
} as const;

const PHASES: readonly EvalPhase[] = ['validate', 'compile', 'load', 'check', 'time', 'recheck'];
const v = PROTOCOL_VERSION;

/** Opt-in shared memory per block and cluster blocks by arch, as CUDA's programming guide gives them. */
const ARCH_LAUNCH: Record<string, [smemBytes: number, clusterBlocks: number]> = {
  sm_70: [98_304, 0],
  sm_75: [65_536, 0],
  sm_80: [166_912, 0],
  sm_86: [101_376, 0],
  sm_87: [166_912, 0],
  sm_89: [101_376, 0],
  sm_90: [232_448, 8],
  sm_100: [232_448, 8],
  sm_120: [101_376, 8],
};

/** The launch limits of a fake GPU of `arch`, with the overrides of its entry ('smem=166912+cluster=0'). */
function fakeLaunch(arch: string, overrides: string | undefined): LaunchFacts {
  const [smem, cluster] = ARCH_LAUNCH[arch] ?? [49_152, 0];
  const launch: LaunchFacts = {
    maxThreadsPerBlock: 1024,
    maxBlockDim: [1024, 1024, 64],
    maxGridDim: [2 ** 31 - 1, 65_535, 65_535],
    maxSharedMemoryPerBlockOptinBytes: smem,
    maxClusterBlocks: cluster,
  };
  for (const pair of overrides === undefined || overrides === '' ? [] : overrides.split('+')) {
    const [key, value = ''] = pair.split('=');
    const dim = (): [number, number, number] => {
      const d = value.split('x').map(Number);
      if (d.length !== 3 || !d.every(Number.isSafeInteger)) throw new Error(`fake probe: ${pair} is not XxYxZ`);
      return d as [number, number, number];
    };
    if (key === 'threads') launch.maxThreadsPerBlock = Number(value);
    else if (key === 'block') launch.maxBlockDim = dim();
    else if (key === 'grid') launch.maxGridDim = dim();
    else if (key === 'smem') launch.maxSharedMemoryPerBlockOptinBytes = Number(value);
    else if (key === 'cluster') launch.maxClusterBlocks = Number(value);
    else throw new Error(`fake probe: unknown launch limit '${pair}' (threads, block, grid, smem, cluster)`);
  }
  return launch;
}

/** The probe's answer for CUDAKIT_FAKE_GPUS. */
function fakeProbe(spec = '4', host = 'fa4e'): { devices: DeviceFacts[]; reason: string | undefined } {
  if (spec === 'none') {
    return { devices: [], reason: 'CUDA_DRIVER_NOT_FOUND: libcuda.so.1 could not be loaded (fake probe)' };
  }
  const entries = /^\d+$/.test(spec) ? Array<string>(Number(spec)).fill('NVIDIA H200@sm_90') : spec.split(',');
  const hostPart = /^[0-9a-f]{4}$/.test(host) ? host : 'fa4e';
  const devices = entries.map((entry, ordinal): DeviceFacts => {
    const [name = 'NVIDIA H200', arch = 'sm_90', overrides] = entry.split('@');
    const id = `${hostPart}${String(ordinal).padStart(4, '0')}-0000-4000-8000-00000000000${ordinal % 10}`;
    return {
      ordinal,
      uuid: /\bMIG\b/.test(name) ? `MIG-${id}` : `GPU-${id}`,
      name,
      arch,
      totalMemoryBytes: 150_000_000_000,
      multiprocessorCount: 132,
      driverVersion: '13.0',
      nvrtcVersion: '12.8',
      launch: fakeLaunch(arch, overrides),
    };
  });
  return { devices, reason: undefined };
}

/** A valid EvalReport: every phase that ran, the candidate's compile facts, no check, no timing. */
function fakeReport(name: string, ran: readonly EvalPhase[], error?: EvalError): EvalReport {
  const candidate: EvalCompileFacts = {
    kernel: 'fake',
    loweredName: 'fake',
    source: 'candidate.cu',
    target: 'cubin',
    arch: 'sm_90',
    nvrtcVersion: '12.8',
    compileMs: 1,
    cached: false,
    flags: ['--gpu-architecture=sm_90'],
    log: '',
    diagnostics: [],
  };
  const failed = error === undefined ? undefined : ran[ran.length - 1];
  return {
    name,
    passed: error === undefined,
    phase: failed,
    error,
    phases: ran.map((phase) => ({ phase, ms: 1 })),
    compile: { candidate },
    check: { skipped: 'not checked (fake worker)' },
    timing: undefined,
    comparison: undefined,
    warnings: [`fake worker pid ${process.pid}`],
  };
}

const STICKY_FAULT: EvalError = {
  kind: 'cuda',
  code: 'CUDA_ERROR_ILLEGAL_ADDRESS',
  message: 'cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered',
  kernel: 'candidate',
  api: 'cuStreamSynchronize',
  result: 700,
  sticky: true,
  defence: 'fault',
};

/** Appends one line to CUDAKIT_FAKE_LOG, when it is set (one write: lines of several workers do not mix). */
function logEvent(event: 'spawn' | 'start' | 'gpu' | 'end', id?: string): void {
  const file = process.env[FAKE_ENV.log];
  if (file === undefined || file === '') return;
  const gpu = process.env.CUDA_VISIBLE_DEVICES;
  const context = event === 'spawn' ? process.env[WORKER_ENV.context] : undefined; // when it would make its context
  appendFileSync(file, `${JSON.stringify({ event, pid: process.pid, gpu, id, atMs: Date.now(), context })}\n`);
}

const turnsTaken = new Set<string>();

/** Waits for job `id`'s turn on the GPU (asked once per job), and logs it when it comes. */
async function turnOnGpu(id: string): Promise<void> {
  await gpuTurn(id);
  if (turnsTaken.has(id)) return;
  turnsTaken.add(id);
  logEvent('gpu', id);
}

function hang(): Promise<never> {
  setInterval(() => {}, 60_000);
  return new Promise<never>(() => {});
}

/** Runs the phases up to and including `until` (all when undefined), spending `totalMs` across them. */
async function phases(id: string, until: EvalPhase | undefined, totalMs: number): Promise<EvalPhase[]> {
  const ran: EvalPhase[] = [];
  for (const phase of PHASES) {
    if (phase === 'load') await turnOnGpu(id);
    await send({ v, t: 'phase', id, phase, atMs: Date.now() });
    ran.push(phase);
    if (phase === 'time') {
      const progress = { kind: 'samples', name: 'fake', mode: 'cold', samples: 20, rejected: 0, elapsedMs: 1 } as const;
      await send({ v, t: 'progress', id, progress: { ...progress, relCI: 0.01 } });
    }
    if (phase === until) return ran;
    if (totalMs > 0) await sleep(totalMs / PHASES.length);
  }
  return ran;
}

function phaseArg(arg: string | undefined, fallback: EvalPhase): EvalPhase {
  return PHASES.includes(arg as EvalPhase) ? (arg as EvalPhase) : fallback;
}

/** A submission to a problem: each case as evaluateProblem() runs it, `totalMs` across them, then its report. */
async function runFakeProblem(
  id: string,
  problem: EvalProblem,
  submission: ProblemSubmission,
  outcome: FakeProblemOutcome,
  totalMs: number,
): Promise<ChildMessage> {
  // Imported only when a problem comes: the fake worker some tests build (fake, guard and protocol) runs none.
  const { fakeProblemProgress, fakeProblemReport } = await import('./fake-problem.js');
  const progress = fakeProblemProgress(problem, submission, outcome);
  for (const p of progress) {
    await send({ v, t: 'progress', id, progress: p });
    if (p.kind !== 'case') continue;
    await turnOnGpu(id); // asked once, before the first case's load phase
    for (const phase of PHASES) await send({ v, t: 'phase', id, phase, atMs: Date.now() });
    if (totalMs > 0) await sleep(totalMs / progress.length);
  }
  const caseReport = (name: string, error: EvalError | undefined): EvalReport =>
    fakeReport(name, error === undefined ? PHASES : PHASES.slice(0, PHASES.indexOf('check') + 1), error);
  return { v, t: 'result', id, report: fakeProblemReport(problem, submission, outcome, caseReport), device: undefined };
}

async function runFakeJob(id: string, job: RunJob, problem: EvalProblem | undefined, warm: boolean): Promise<void> {
  const name = typeof job.name === 'string' ? job.name : '';
  const [, behaviour = 'pass', arg, arg2] = name.startsWith('fake:') ? name.split(':') : [];
  const done = async (message: ChildMessage, exit: boolean): Promise<void> => {
    logEvent('end', id);
    await send(message);
    if (exit) process.exit(0);
  };
  switch (behaviour) {
    case 'hang':
      await phases(id, phaseArg(arg, 'check'), 0);
      return hang();
    case 'crash': {
      await phases(id, phaseArg(arg, 'time'), 0);
      process.stderr.write(`fake worker: crashing in the ${arg ?? 'time'} phase\n`);
      if (arg2 !== undefined && /^SIG[A-Z0-9]+$/.test(arg2)) {
        process.kill(process.pid, arg2 as NodeJS.Signals);
        await sleep(1000); // the signal's default action ends the process
      }
      process.exit(arg2 !== undefined && /^\d+$/.test(arg2) ? Number(arg2) : 70);
      return;
    }
    case 'exit-before-ready':
      process.stderr.write('fake worker: exiting before the job starts\n');
      process.exit(3);
      return;
    case 'garbage':
      await phases(id, 'validate', 0);
      process.send?.({ hello: 'not a protocol message' });
      return hang();
    case 'wrong-id':
      await phases(id, 'validate', 0);
      return done(
        { v, t: 'result', id: `${id}-other`, report: fakeReport(name, ['validate']), device: undefined },
        false,
      );
    case 'ignore-sigterm':
      process.on('SIGTERM', () => process.stderr.write('fake worker: SIGTERM ignored\n'));
      await phases(id, phaseArg(arg, 'time'), 0);
      return hang();
    case 'grandchild': {
      const keepAlive = 'setInterval(() => {}, 60000)';
      const grandchild = spawn(process.execPath, ['-e', keepAlive], { stdio: 'ignore' }); // our process group
      await phases(id, phaseArg(arg, 'time'), 0);
      const progress = { kind: 'samples', name: 'grandchild', mode: 'cold', samples: grandchild.pid ?? -1 } as const;
      await send({ v, t: 'progress', id, progress: { ...progress, rejected: 0, elapsedMs: 0, relCI: 1 } });
      return hang();
    }
    case 'busy-loop':
      await phases(id, phaseArg(arg, 'time'), 0);
      for (;;); // no JavaScript runs again here ('disconnect' included): only a signal ends it
    case 'fault': {
      const ran = await phases(id, 'check', 0);
      return done({ v, t: 'result', id, report: fakeReport(name, ran, STICKY_FAULT), device: undefined }, true);
    }
    case 'fatal':
      await phases(id, 'load', 0);
      await sendAndExit({ v, t: 'fatal', id, error: { code: 'NO_DEVICE', message: 'fake: no device' } }, 1);
      return;
    case 'skip-turn':
      await phases(id, 'compile', 0);
      if (arg === 'python') await send({ v, t: 'python', id, runner: 'candidate', op: 'start' });
      else await send({ v, t: 'phase', id, phase: 'load', atMs: Date.now() });
      return hang();
    case 'kill-agent': {
      await phases(id, phaseArg(arg, 'time'), 0);
      const agentPid = Number(process.env.CUDAKIT_SERVER_AGENT_PID);
      process.stderr.write(`fake worker: killing the agent (pid ${agentPid})\n`);
      if (Number.isInteger(agentPid) && agentPid > 1) process.kill(agentPid, 'SIGKILL');
      return hang();
    }
    case 'python-runners': {
      const ran = await phases(id, 'load', 0);
      const { relayedRunner, stopRelayedRunner } = await import('./relay-link.js');
      const said = await Promise.all(
        (['candidate', 'reference'] as const).map(async (role) => {
          try {
            const { link, dir } = await relayedRunner(id, role);
            const line = await new Promise<string>((resolve) => link.onLine(resolve));
            stopRelayedRunner(id, role);
            return `python ${role} ${dir} ${line.slice(0, 200)}`;
          } catch (e) {
            return `python ${role} failed: ${(e as Error).message}`;
          }
        }),
      );
      const report = { ...fakeReport(name, ran), warnings: said };
      return done({ v, t: 'result', id, report, device: undefined }, !warm);
    }
    case 'linger': {
      const ran = await phases(id, undefined, 0);
      logEvent('end', id);
      await send({ v, t: 'result', id, report: fakeReport(name, ran), device: undefined });
      return hang();
    }
    default: {
      const ms = /^(\d+)ms$/.exec(arg ?? '');
      if (problem !== undefined) {
        const outcome = behaviour === 'public-fail' || behaviour === 'hidden-fail' ? behaviour : 'pass';
        const totalMs = ms === null ? 0 : Number(ms[1]);
        return done(await runFakeProblem(id, problem, job as ProblemSubmission, outcome, totalMs), true);
      }
      const ran = await phases(id, undefined, ms === null ? 0 : Number(ms[1]));
      return done({ v, t: 'result', id, report: fakeReport(name, ran), device: undefined }, !warm);
    }
  }
}

async function main(): Promise<void> {
  if (process.argv[2] === 'probe') {
    process.stdout.write(`${JSON.stringify(fakeProbe(process.env[FAKE_ENV.gpus], process.env[FAKE_ENV.host]))}\n`);
    return;
  }
  installParentDeathGuard();
  logEvent('spawn');
  let start = process.env[FAKE_ENV.start] ?? '';
  if (start.startsWith('@')) start = readFileSync(start.slice(1), 'utf8').trim();
  if (start === 'exit') {
    process.stderr.write('fake worker: exiting before ready\n');
    process.exit(3);
  }
  if (start === 'garbage') process.send?.('garbage before ready');
  if (start === 'never-ready' || start === 'garbage') {
    await hang();
  }
  const warm = process.env[WORKER_ENV.isolation] === 'warm';
  let busy = false;
  onParentMessage((m) => {
    if (m.t === 'shutdown') process.exit(0);
    if (busy) {
      const message = `job ${m.id} arrived while another runs`;
      void sendAndExit({ v, t: 'fatal', id: m.id, error: { code: 'ERR_WORKER_BUSY', message } }, 2);
      return;
    }
    busy = true;
    logEvent('start', m.id);
    void runFakeJob(m.id, m.job, m.extras?.problem, warm).then(() => (busy = false));
  });
  await send({ v, t: 'ready', pid: process.pid });
}

await main();
