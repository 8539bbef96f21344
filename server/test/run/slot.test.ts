// SPDX-License-Identifier: MIT
// GpuSlot with the fake worker (server/src/run/worker/fake.ts): the ready handshake, jobs that pass, hang, crash, break
// the protocol or refuse to die, start failures and quarantine, cancel, one job at a time, the pre-started child,
// warm isolation, the GPU keeping a killed PID, and children dying with their parent even while busy-looping.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { EvalPhase, EvalProgress, EvalReport } from 'cudakit';
import { afterAll, describe, expect, it } from 'vitest';
import { setprivWithPdeathsig } from '../../src/run/child.js';
import type { SlotOutcome } from '../../src/run/pool.js';
import { verdictOf } from '../../src/judge/verdict.js';
import { isProblemReport } from '../../src/run/protocol.js';
import { ADD, ADD_PROBLEM } from '../support/cases-problem.js';
import { fakeJob } from '../../../test/support/jobs.js';
import { until, untilIdle } from '../../../test/support/until.js';
import { deadlines, fakeSlot, isAlive, tsxImport, untilDead } from '../support/slot-helpers.js';

const T = 10_000; // per test

function report(o: SlotOutcome): EvalReport {
  if (o.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(o)}`);
  return o.report as EvalReport; // these jobs are EvalJobs
}

/** The pid the fake worker puts in its report's warnings. */
function workerPid(r: EvalReport): number {
  return Number(/fake worker pid (\d+)/.exec(r.warnings.join('\n'))?.[1]);
}

describe('GpuSlot: start', () => {
  it(
    'counts as capacity only after the child said ready',
    async () => {
      const slot = fakeSlot();
      const started = slot.start();
      expect(slot.state).toBe('starting');
      expect(slot.lease()).toBeUndefined();
      await started;
      expect(slot.info()).toMatchObject({
        uuid: 'GPU-fa4e0000-0000-4000-8000-000000000000',
        name: 'NVIDIA H200',
        arch: 'sm_90',
        classes: ['H200', 'sm_90', 'any'],
        state: 'idle',
        jobs: 0,
        restarts: 0,
        lastError: undefined,
        shared: false,
      });
      const pid = slot.pids().current!;
      expect(isAlive(pid)).toBe(true);
      expect(slot.pids().others).toEqual([]); // nothing pre-started before a job
    },
    T,
  );

  it(
    'uses setpriv --pdeathsig where it works, else the watchdog',
    async () => {
      const expected = (await setprivWithPdeathsig()) === undefined ? 'watchdog' : 'setpriv';
      expect(await fakeSlot().deathGuard()).toBe(expected);
      expect(await fakeSlot({ deathGuard: 'watchdog' }).deathGuard()).toBe('watchdog');
    },
    T,
  );

  it(
    'is quarantined after 3 starts without ready',
    async () => {
      const slot = fakeSlot({ startTimeoutMs: 300, env: { CUDAKIT_FAKE_START: 'never-ready' } });
      const t0 = performance.now();
      await slot.start();
      expect(performance.now() - t0).toBeGreaterThanOrEqual(900);
      expect(slot.info()).toMatchObject({ state: 'quarantined', restarts: 3, jobs: 0 });
      expect(slot.info().lastError).toBe('the worker did not start: no ready within 300 ms');
      expect(slot.lease()).toBeUndefined();
      expect(slot.pids()).toEqual({ current: undefined, others: [] });
    },
    T,
  );

  it(
    'comes back from quarantine through reprobe() once its "GPU" is mended',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cudakit-slot-'));
      const file = join(dir, 'start');
      writeFileSync(file, 'exit');
      try {
        const slot = fakeSlot({ env: { CUDAKIT_FAKE_START: `@${file}` } });
        await slot.start();
        expect(slot.info()).toMatchObject({ state: 'quarantined', restarts: 3 });
        expect((await slot.reprobe()).state).toBe('quarantined'); // still broken: three more failed starts
        expect(slot.info().restarts).toBe(6);

        writeFileSync(file, '');
        const reprobing = slot.reprobe();
        expect(slot.state).toBe('starting');
        expect((await reprobing).state).toBe('idle');
        const lease = slot.lease()!;
        expect(report(await lease.run('j', fakeJob('fake:pass'), 's', deadlines(), {})).passed).toBe(true);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    T,
  );

  it(
    'counts a child that exits or sends garbage before ready as a failed start',
    async () => {
      const exits = fakeSlot({ env: { CUDAKIT_FAKE_START: 'exit' } });
      const garbage = fakeSlot({ env: { CUDAKIT_FAKE_START: 'garbage' } });
      await Promise.all([exits.start(), garbage.start()]);
      expect(exits.info()).toMatchObject({ state: 'quarantined', restarts: 3 });
      expect(exits.info().lastError).toBe(
        'the worker did not start: it exited before ready (exit code 3) (stderr: fake worker: exiting before ready)',
      );
      expect(garbage.info()).toMatchObject({ state: 'quarantined', restarts: 3 });
      expect(garbage.info().lastError).toBe(
        'the worker did not start: protocol error before ready: "garbage before ready"',
      );
    },
    T,
  );

  it(
    'replaces a child that dies while idle',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      const first = slot.pids().current!;
      process.kill(first, 'SIGKILL');
      await until(() => slot.state !== 'idle');
      await untilIdle(slot);
      expect(slot.pids().current).not.toBe(first);
      expect(slot.info()).toMatchObject({ restarts: 1, lastError: 'the idle worker exited (signal SIGKILL)' });
    },
    T,
  );
});

describe('GpuSlot: jobs', () => {
  it(
    'runs a passing job, forwarding phases and progress, and starts the next child while it runs',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      const first = slot.pids().current!;
      const lease = slot.lease()!;
      expect(slot.state).toBe('busy');
      const phases: EvalPhase[] = [];
      const progress: EvalProgress[] = [];
      const run = lease.run('job-1', fakeJob('fake:pass:600ms'), 'salt', deadlines(), {
        onPhase: (p) => void phases.push(p as EvalPhase),
        onProgress: (p) => void progress.push(p as EvalProgress),
      });
      // The pre-started child: started while the job runs (it takes over once ready and the job is done).
      await until(() => slot.pids().others.length === 1, { timeoutMs: 3_000 });
      const spare = slot.pids().others[0]!.pid;
      expect(slot.state).toBe('busy');

      const r = report(await run);
      expect(r).toMatchObject({ name: 'fake:pass:600ms', passed: true, phase: undefined });
      expect(workerPid(r)).toBe(first);
      expect(verdictOf(r)).toBe('PASSED');
      expect(phases).toEqual(['validate', 'compile', 'load', 'check', 'time', 'recheck']);
      expect(progress).toEqual([expect.objectContaining({ kind: 'samples', samples: 20, relCI: 0.01 })]);

      await untilIdle(slot);
      expect(slot.pids().current).toBe(spare); // the pre-started child took over
      await untilDead(first); // process per job: the first one exited
      expect(slot.info()).toMatchObject({ jobs: 1, restarts: 0, lastError: undefined });
    },
    T,
  );

  it(
    'kills a job past its phase deadline, reports TIMEOUT, and the next job runs fine',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      const pid = slot.pids().current!;
      let checkAt = 0;
      const outcome = await slot.lease()!.run('j1', fakeJob('fake:hang:check'), 's', deadlines(8_000, { check: 300 }), {
        onPhase: (p) => void (p === 'check' && (checkAt = performance.now())),
      });
      const late = performance.now() - checkAt;
      expect(outcome).toEqual({ kind: 'timeout', phase: 'check', limitMs: 300, scope: 'phase' });
      expect(late).toBeGreaterThanOrEqual(295);
      expect(late).toBeLessThan(1_000);
      expect(isAlive(pid)).toBe(false);
      expect(slot.info()).toMatchObject({ restarts: 1 });
      expect(slot.info().lastError).toBe('the check phase ran past its deadline of 300 ms');

      await untilIdle(slot);
      const next = report(await slot.lease()!.run('j2', fakeJob('fake:pass'), 's', deadlines(), {}));
      expect(next.passed).toBe(true);
      expect(slot.info().jobs).toBe(2);
    },
    T,
  );

  it(
    'says of a job killed in a hidden case only that: no phase, deadline or message in lastError',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      let hidden = false;
      const hooks = { onPhase: (p: string) => void (hidden = p === 'check'), showsDetails: () => !hidden };
      const outcome = await slot
        .lease()!
        .run('j1', fakeJob('fake:hang:check'), 's', deadlines(8_000, { check: 300 }), hooks);
      // The job's own outcome keeps what happened (the dispatcher shows its owner what a hidden case may show).
      expect(outcome).toEqual({ kind: 'timeout', phase: 'check', limitMs: 300, scope: 'phase' });
      expect(slot.info().lastError).toBe(
        "a job ended in a hidden case of its problem (what happened there is the job's own)",
      );
      await untilIdle(slot);
      // Outside a hidden case, the reason is said in full.
      hidden = false;
      const hooks2 = { showsDetails: () => true };
      await slot.lease()!.run('j2', fakeJob('fake:hang:check'), 's', deadlines(8_000, { check: 300 }), hooks2);
      expect(slot.info().lastError).toBe('the check phase ran past its deadline of 300 ms');
      await untilIdle(slot);
    },
    T,
  );

  it(
    'kills a job past the whole-job deadline',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      const t0 = performance.now();
      const outcome = await slot.lease()!.run('j', fakeJob('fake:hang:time'), 's', deadlines(500, {}), {});
      expect(outcome).toEqual({ kind: 'timeout', phase: 'time', limitMs: 500, scope: 'job' });
      expect(performance.now() - t0).toBeGreaterThanOrEqual(495);
      expect(slot.info().lastError).toBe('the job ran past its deadline of 500 ms');
      await untilIdle(slot);
    },
    T,
  );

  it(
    'reports a crash mid-phase with the exit code or signal, the phase and the stderr tail',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      const exited = await slot.lease()!.run('j1', fakeJob('fake:crash:time'), 's', deadlines(), {});
      expect(exited).toEqual({
        kind: 'crashed',
        phase: 'time',
        signal: undefined,
        exitCode: 70,
        stderrTail: 'fake worker: crashing in the time phase\n',
        reason: 'the worker died in the time phase (exit code 70)',
      });
      await untilIdle(slot);
      const signalled = await slot.lease()!.run('j2', fakeJob('fake:crash:check:SIGSEGV'), 's', deadlines(), {});
      expect(signalled).toMatchObject({ kind: 'crashed', phase: 'check', signal: 'SIGSEGV', exitCode: undefined });
      expect(signalled).toHaveProperty('reason', 'the worker died in the check phase (signal SIGSEGV)');
      await untilIdle(slot);
      // Lost before its first phase: no phase to blame (the service calls that the worker's failure, not the kernel's).
      const lost = await slot.lease()!.run('j3', fakeJob('fake:exit-before-ready'), 's', deadlines(), {});
      expect(lost).toMatchObject({ kind: 'crashed', phase: undefined, exitCode: 3 });
      expect(lost).toHaveProperty('reason', "the worker died before the job's first phase (exit code 3)");
      await untilIdle(slot);
      expect(slot.info()).toMatchObject({ restarts: 3, jobs: 3 });
      expect(report(await slot.lease()!.run('j4', fakeJob('fake:pass'), 's', deadlines(), {})).passed).toBe(true);
    },
    T,
  );

  it(
    "keeps only the tail of a crashed child's stderr",
    async () => {
      const slot = fakeSlot({ stderrTailChars: 16 });
      await slot.start();
      const outcome = await slot.lease()!.run('j', fakeJob('fake:crash:check'), 's', deadlines(), {});
      expect(outcome).toMatchObject({ kind: 'crashed', stderrTail: 'the check phase\n' });
    },
    T,
  );

  it(
    'treats garbage, a result for another job and a fatal message as a crash, never its own',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      const garbage = await slot.lease()!.run('j1', fakeJob('fake:garbage'), 's', deadlines(), {});
      expect(garbage).toMatchObject({
        kind: 'crashed',
        phase: 'validate',
        signal: 'SIGKILL',
        reason: 'protocol error: not a protocol message: {"hello":"not a protocol message"}',
      });
      await untilIdle(slot);
      const wrongId = await slot.lease()!.run('j2', fakeJob('fake:wrong-id'), 's', deadlines(), {});
      expect(wrongId).toMatchObject({
        kind: 'crashed',
        reason: 'protocol error: a result message for job j2-other, not j2',
      });
      await untilIdle(slot);
      const fatal = await slot.lease()!.run('j3', fakeJob('fake:fatal'), 's', deadlines(), {});
      expect(fatal).toMatchObject({
        kind: 'crashed',
        phase: 'load',
        reason: 'the worker failed: NO_DEVICE: fake: no device',
      });
      await untilIdle(slot);
      expect(slot.info().restarts).toBe(3);
    },
    T,
  );

  it(
    'kills a child that ignores SIGTERM and one stuck in a synchronous loop (SIGKILL)',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      for (const name of ['fake:ignore-sigterm', 'fake:busy-loop']) {
        await untilIdle(slot);
        const pid = slot.pids().current!;
        const t0 = performance.now();
        const outcome = await slot.lease()!.run(name, fakeJob(name), 's', deadlines(8_000, { time: 300 }), {});
        expect(outcome).toEqual({ kind: 'timeout', phase: 'time', limitMs: 300, scope: 'phase' });
        expect(performance.now() - t0).toBeLessThan(2_000);
        expect(isAlive(pid)).toBe(false); // the run resolves only after the exit
      }
    },
    T,
  );

  it(
    'kills the whole process group: a grandchild dies with the worker',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      let grandchild = 0;
      const outcome = await slot.lease()!.run('j', fakeJob('fake:grandchild'), 's', deadlines(8_000, { time: 500 }), {
        onProgress: (p) => {
          if (p.kind === 'samples' && p.name === 'grandchild') {
            grandchild = p.samples;
            expect(isAlive(grandchild)).toBe(true);
          }
        },
      });
      expect(outcome).toMatchObject({ kind: 'timeout', phase: 'time' });
      expect(grandchild).toBeGreaterThan(0);
      await untilDead(grandchild, 2_000);
    },
    T,
  );

  it(
    'cancels a running job (killed) and a lease not yet run (nothing killed)',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      const lease = slot.lease()!;
      const run = lease.run('j', fakeJob('fake:busy-loop'), 's', deadlines(), {
        onPhase: (p) => void (p === 'time' && setTimeout(() => lease.cancel(), 50)),
      });
      expect(await run).toEqual({ kind: 'cancelled' });
      expect(slot.info().lastError).toBe('the job was cancelled');
      await untilIdle(slot);

      const pid = slot.pids().current;
      const unused = slot.lease()!;
      unused.cancel();
      expect(slot.state).toBe('idle');
      expect(await unused.run('j2', fakeJob('fake:pass'), 's', deadlines(), {})).toEqual({ kind: 'cancelled' });
      expect(slot.pids().current).toBe(pid);
      expect(slot.info().jobs).toBe(1);
    },
    T,
  );

  it(
    'never runs two jobs at once',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      const lease = slot.lease()!;
      expect(slot.lease()).toBeUndefined();
      const first = lease.run('a', fakeJob('fake:pass:100ms'), 's', deadlines(), {});
      await expect(lease.run('b', fakeJob('fake:pass'), 's', deadlines(), {})).rejects.toThrow(
        'a slot lease runs one job',
      );
      expect(slot.lease()).toBeUndefined();
      await first;

      // A scheduler driven by onIdle: 6 jobs, their intervals never overlap, each in a child of its own.
      const intervals: [number, number][] = [];
      const pids = new Set<number>();
      let left = 6;
      let started = 0;
      await new Promise<void>((done) => {
        const next = (): void => {
          if (started === 6) return;
          const l = slot.lease();
          if (l === undefined) return;
          started++;
          const start = performance.now();
          void l.run(`job-${left}`, fakeJob('fake:pass:30ms'), 's', deadlines(), {}).then((o) => {
            intervals.push([start, performance.now()]);
            pids.add(workerPid(report(o)));
            if (--left === 0) done();
          });
        };
        slot.onIdle(next);
        next();
      });
      intervals.sort((x, y) => x[0] - y[0]);
      for (let i = 1; i < intervals.length; i++) expect(intervals[i]![0]).toBeGreaterThanOrEqual(intervals[i - 1]![1]);
      expect(pids.size).toBe(6);
      expect(slot.info().jobs).toBe(7);
    },
    T,
  );

  it(
    'stop() kills every child, and a running job resolves cancelled',
    async () => {
      const slot = fakeSlot();
      await slot.start();
      const lease = slot.lease()!;
      let running = false;
      const run = lease.run('j', fakeJob('fake:hang:time'), 's', deadlines(), {
        onPhase: (p) => void (running ||= p === 'time'),
      });
      await until(() => running && slot.pids().others.length === 1);
      const pids = [slot.pids().current!, ...slot.pids().others.map((o) => o.pid)];
      await slot.stop();
      expect(await run).toEqual({ kind: 'cancelled' });
      for (const pid of pids) expect(isAlive(pid)).toBe(false);
      expect(slot.lease()).toBeUndefined();
    },
    T,
  );

  it(
    'kills a child that does not exit after its result (process per job)',
    async () => {
      const slot = fakeSlot({ exitGraceMs: 200 });
      await slot.start();
      const pid = slot.pids().current!;
      expect(report(await slot.lease()!.run('j', fakeJob('fake:linger'), 's', deadlines(), {})).passed).toBe(true);
      expect(slot.state).toBe('restarting');
      // The pre-started child takes over at once; the lingering one is killed when its exit grace (200 ms) is over.
      await untilIdle(slot);
      expect(slot.pids().current).not.toBe(pid);
      await untilDead(pid);
      expect(slot.info()).toMatchObject({ state: 'idle' });
    },
    T,
  );
});

describe('GpuSlot: warm isolation', () => {
  it(
    'keeps the child across jobs, and replaces it after a sticky fault',
    async () => {
      const slot = fakeSlot({ isolation: 'warm' });
      await slot.start();
      const pid = slot.pids().current!;
      const a = report(await slot.lease()!.run('a', fakeJob('fake:pass'), 's', deadlines(), {}));
      expect(slot.state).toBe('idle');
      expect(slot.pids().others).toEqual([]); // nothing pre-started in warm mode
      const b = report(await slot.lease()!.run('b', fakeJob('fake:pass'), 's', deadlines(), {}));
      expect([workerPid(a), workerPid(b), slot.pids().current]).toEqual([pid, pid, pid]);

      const fault = report(await slot.lease()!.run('c', fakeJob('fake:fault'), 's', deadlines(), {}));
      expect(fault).toMatchObject({ passed: false, phase: 'check', error: { code: 'CUDA_ERROR_ILLEGAL_ADDRESS' } });
      expect(fault.error?.sticky).toBe(true);
      expect(verdictOf(fault)).toBe('RUNTIME_ERROR');
      expect(slot.state).toBe('restarting'); // its context is lost: it exits, and another starts
      await untilIdle(slot);
      expect(slot.pids().current).not.toBe(pid);
      expect(isAlive(pid)).toBe(false);
      expect(report(await slot.lease()!.run('d', fakeJob('fake:pass'), 's', deadlines(), {})).passed).toBe(true);
    },
    T,
  );

  it(
    'runs a problem with cases, its report and its cases’ progress through, and replaces the warm child after it',
    async () => {
      const slot = fakeSlot({ isolation: 'warm' });
      await slot.start();
      const pid = slot.pids().current!;
      const problem = { ...ADD_PROBLEM, reference: { ...ADD_PROBLEM.reference, source: ADD } };
      const submission = { source: ADD, kernel: 'add', grid: 'cdiv(n, 256)', block: 256, name: 'fake:hidden-fail' };
      const progress: string[] = [];
      const outcome = await slot.lease()!.run(
        'p',
        submission,
        's',
        deadlines(),
        {
          onProgress: (p) => void progress.push(p.kind === 'case' ? `case ${p.index}` : p.kind),
        },
        { problem },
      );
      if (outcome.kind !== 'report' || !isProblemReport(outcome.report)) throw new Error(JSON.stringify(outcome));
      expect(outcome.report.cases.map((c) => [c.ran, c.passed])).toEqual([
        [true, true],
        [true, true],
        [true, false],
        [false, false],
      ]);
      expect(progress).toEqual(['case 0', 'samples', 'case 1', 'samples', 'case 2', 'samples']);
      // Its cases' buffers are not scrubbed: the warm child exits, and another starts.
      expect(slot.state).toBe('restarting');
      await untilIdle(slot);
      expect(slot.pids().current).not.toBe(pid);
      expect(isAlive(pid)).toBe(false);
    },
    T,
  );
});

describe('GpuSlot: the GPU keeps a killed PID', () => {
  it(
    'is quarantined, and reprobe() brings it back once the GPU lets go',
    async () => {
      let held = true;
      const calls: [number, string, number][] = [];
      const slot = fakeSlot({
        releaseTimeoutMs: 250,
        gpuReleased: (pid, uuid, timeoutMs) => {
          calls.push([pid, uuid, timeoutMs]);
          return Promise.resolve(!held);
        },
      });
      await slot.start();
      const pid = slot.pids().current!;
      const run = slot.lease()!.run('j', fakeJob('fake:hang:check'), 's', deadlines(8_000, { check: 200 }), {});
      await until(() => slot.pids().others.length === 1);
      const spare = slot.pids().others[0]!.pid;
      expect(await run).toMatchObject({ kind: 'timeout', phase: 'check' });
      await until(() => slot.state === 'quarantined');
      expect(calls).toEqual([[pid, 'GPU-fa4e0000-0000-4000-8000-000000000000', 250]]);
      expect(slot.info().lastError).toBe(`the GPU still lists the killed worker's PID ${pid} after 250 ms`);
      await untilDead(spare); // the pre-started child went too
      await until(() => slot.pids().current === undefined && slot.pids().others.length === 0);

      expect((await slot.reprobe()).state).toBe('quarantined'); // still held
      held = false;
      expect((await slot.reprobe()).state).toBe('idle');
      expect(report(await slot.lease()!.run('k', fakeJob('fake:pass'), 's', deadlines(), {})).passed).toBe(true);
    },
    T,
  );
});

describe('the parent-death guard', () => {
  const intermediates: ChildProcess[] = [];
  const orphans: number[] = [];
  afterAll(() => {
    for (const c of intermediates) c.kill('SIGKILL');
    for (const pid of orphans) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  });

  for (const guard of ['auto', 'watchdog'] as const) {
    it(
      `kills busy-looping children when their parent is SIGKILLed (${guard})`,
      async () => {
        const fixture = fileURLToPath(new URL('../fixtures/orphan-parent.ts', import.meta.url));
        const parent = spawn(process.execPath, [...tsxImport(), fixture, guard], { stdio: ['ignore', 'pipe', 'pipe'] });
        intermediates.push(parent);
        let stderr = '';
        parent.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
        const line = await new Promise<string>((resolve, reject) => {
          createInterface({ input: parent.stdout! }).once('line', resolve);
          parent.once('exit', () => reject(new Error(`the intermediate exited: ${stderr}`)));
        });
        const { busy, spare, guard: used } = JSON.parse(line) as { busy: number; spare: number; guard: string };
        orphans.push(busy, spare);
        const expected = guard === 'watchdog' || (await setprivWithPdeathsig()) === undefined ? 'watchdog' : 'setpriv';
        expect(used).toBe(expected);
        expect(isAlive(busy)).toBe(true);
        expect(isAlive(spare)).toBe(true);

        parent.kill('SIGKILL');
        const t0 = performance.now();
        await untilDead(busy, 3_000);
        await untilDead(spare, 3_000);
        expect(performance.now() - t0).toBeLessThan(3_000);
      },
      T,
    );
  }
});
