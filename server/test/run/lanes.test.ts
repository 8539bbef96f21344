// SPDX-License-Identifier: MIT
// A GPU's lanes (run/gpu-gate.ts): slots sharing one gate, each with a worker of its own, so that the next job's CPU
// work runs while another job uses the GPU, and their GPU work never overlaps. The gate's turns, the slots' use of
// them with the fake worker (its log says when each job started, had its turn and ended), a job's clock stopped while
// it waits, the turn given back only once the worker is gone, a worker that skips its turn, and a quarantine that
// takes every lane of the GPU out.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EvalReport } from 'cudakit';
import { afterAll, describe, expect, it } from 'vitest';
import { GpuGate } from '../../src/run/gpu-gate.js';
import type { SlotOutcome } from '../../src/run/pool.js';
import { type FakeLogEvent, readFakeLog } from '../../bench/binary.js';
import { fakeJob } from '../../../test/support/jobs.js';
import { until } from '../../../test/support/until.js';
import { deadlines, fakeSlot, isAlive } from '../support/slot-helpers.js';

const T = 15_000;
const dir = mkdtempSync(join(tmpdir(), 'cudakit-lanes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let logs = 0;

/** Two slots on one gate (two lanes of one GPU), their workers logging to a file of their own. */
async function twoLanes(options: Parameters<typeof fakeSlot>[0] = {}) {
  const gate = new GpuGate();
  const log = join(dir, `fake-${logs++}.log`);
  const env = { CUDAKIT_FAKE_LOG: log };
  const lanes = [fakeSlot({ gate, env, ...options }), fakeSlot({ gate, env, ...options })] as const;
  await Promise.all(lanes.map((l) => l.start()));
  const at = (event: FakeLogEvent['event'], id: string): number => {
    const e = readFakeLog(log).find((x) => x.event === event && x.id === id);
    if (e === undefined) throw new Error(`no '${event}' of ${id} in the fake log`);
    return e.atMs;
  };
  const pidOf = (id: string): number => readFakeLog(log).find((x) => x.event === 'start' && x.id === id)!.pid;
  return { gate, lanes, at, pidOf, log };
}

function passed(o: SlotOutcome): EvalReport {
  if (o.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(o)}`);
  return o.report as EvalReport;
}

describe('GpuGate', () => {
  it('gives turns one at a time, in the order asked; a wait given up is skipped', () => {
    const gate = new GpuGate();
    const got: string[] = [];
    for (const id of ['a', 'b', 'c', 'd']) gate.request(id, () => got.push(id));
    gate.request('a', () => got.push('a again')); // asked twice: one turn
    expect([got, gate.holder, gate.waiting]).toEqual([['a'], 'a', 3]);
    gate.release('c'); // gave up its wait
    gate.release('b'); // not its turn yet: its wait ends
    expect(gate.waiting).toBe(1);
    gate.release('a');
    expect([got, gate.holder]).toEqual([['a', 'd'], 'd']);
    gate.release('a'); // twice: nothing
    gate.release('d');
    expect([got, gate.holder, gate.waiting]).toEqual([['a', 'd'], undefined, 0]);
  });

  it('tells every other lane of a quarantine, once, with the PID the GPU kept', () => {
    const gate = new GpuGate();
    const [one, two] = [{}, {}];
    const heard: [object, string][] = [];
    gate.onQuarantine((q, from) => heard.push([from, `${q.reason} ${q.heldPid}`]));
    gate.quarantine({ reason: 'held', heldPid: 42 }, one);
    gate.quarantine({ reason: 'again', heldPid: 43 }, two);
    expect(heard).toEqual([[one, 'held 42']]);
    expect(gate.quarantined).toEqual({ reason: 'held', heldPid: 42 });
    gate.clearQuarantine();
    expect(gate.quarantined).toBeUndefined();
  });
});

describe('GpuSlot: lanes of one GPU', () => {
  it(
    "runs the next job's CPU work beside a job on the GPU, and its GPU work only once that job's worker is gone",
    async () => {
      const { lanes, at, pidOf, log } = await twoLanes();
      const a = lanes[0].lease()!.run('a', fakeJob('fake:pass:600ms'), 's', deadlines(), {});
      await until(() => readFakeLog(log).some((e) => e.event === 'gpu'), { timeoutMs: 5_000, what: "a's turn" });
      const b = lanes[1].lease()!.run('b', fakeJob('fake:pass:100ms'), 's', deadlines(), {});
      const [ra, rb] = await Promise.all([a, b]);
      expect([passed(ra).passed, passed(rb).passed]).toEqual([true, true]);
      // b started (validated, compiled) while a was on the GPU ...
      expect(at('start', 'b')).toBeLessThan(at('end', 'a'));
      // ... and had its turn only after a's worker had exited.
      expect(at('gpu', 'b')).toBeGreaterThan(at('end', 'a'));
      expect(isAlive(pidOf('a'))).toBe(false);
      expect(at('gpu', 'a')).toBeLessThan(at('start', 'b') + 1_000);
    },
    T,
  );

  it(
    'keeps the turn of a worker that lingers after its result until the worker is killed (it may still use the GPU)',
    async () => {
      const { lanes, gate, at } = await twoLanes({ exitGraceMs: 700 });
      const a = lanes[0].lease()!.run('a', fakeJob('fake:linger'), 's', deadlines(), {});
      await until(() => gate.holder === 'a', { timeoutMs: 5_000, what: "a's turn" });
      const b = lanes[1].lease()!.run('b', fakeJob('fake:pass'), 's', deadlines(), {});
      expect(passed(await a).passed).toBe(true);
      expect(passed(await b).passed).toBe(true);
      expect(at('gpu', 'b') - at('end', 'a')).toBeGreaterThanOrEqual(700);
    },
    T,
  );

  it(
    "stops a waiting job's clock: its deadline counts none of another job's time on the GPU",
    async () => {
      const { lanes, gate, at } = await twoLanes();
      const a = lanes[0].lease()!.run('a', fakeJob('fake:pass:1200ms'), 's', deadlines(), {});
      await until(() => gate.holder === 'a', { timeoutMs: 5_000, what: "a's turn" });
      // b's whole job may take 500 ms; it waits longer than that for a, and still passes.
      const b = await lanes[1].lease()!.run('b', fakeJob('fake:pass:60ms'), 's', deadlines(500), {});
      expect(passed(b).passed).toBe(true);
      expect(at('end', 'b') - at('start', 'b')).toBeGreaterThan(500);
      await a;
    },
    T,
  );

  it(
    "gives the turn of a killed job back once its worker has exited, and a cancelled wait costs no one's turn",
    async () => {
      const { lanes, gate, at, pidOf } = await twoLanes();
      const leaseA = lanes[0].lease()!;
      const a = leaseA.run('a', fakeJob('fake:hang:time'), 's', deadlines(), {});
      await until(() => gate.holder === 'a', { timeoutMs: 5_000, what: "a's turn" });
      const leaseB = lanes[1].lease()!;
      const b = leaseB.run('b', fakeJob('fake:pass'), 's', deadlines(), {});
      await until(() => gate.waiting === 1, { timeoutMs: 5_000, what: 'b to wait' });
      leaseA.cancel();
      expect((await a).kind).toBe('cancelled');
      expect(passed(await b).passed).toBe(true);
      expect(at('gpu', 'b')).toBeGreaterThanOrEqual(at('start', 'a'));
      expect(isAlive(pidOf('a'))).toBe(false);

      // A job cancelled while it waits leaves the queue: the job after it is not held up.
      await until(() => lanes[0].info().state === 'idle' && lanes[1].info().state === 'idle', {
        timeoutMs: 5_000,
        what: 'both lanes idle',
      });
      const c = lanes[0].lease()!.run('c', fakeJob('fake:pass:400ms'), 's', deadlines(), {});
      await until(() => gate.holder === 'c', { timeoutMs: 5_000, what: "c's turn" });
      const leaseD = lanes[1].lease()!;
      const d = leaseD.run('d', fakeJob('fake:pass'), 's', deadlines(), {});
      await until(() => gate.waiting === 1, { timeoutMs: 5_000, what: 'd to wait' });
      leaseD.cancel();
      expect((await d).kind).toBe('cancelled');
      expect(gate.waiting).toBe(0);
      expect(passed(await c).passed).toBe(true);
    },
    T,
  );

  it(
    'kills a worker that uses the GPU without its turn: a GPU phase or a Python runner first (each a protocol error)',
    async () => {
      const { lanes, gate } = await twoLanes();
      for (const [job, said] of [
        ['fake:skip-turn', "the load phase began before the job's turn on the GPU"],
        ['fake:skip-turn:python', "a Python runner asked for before the job's turn on the GPU"],
      ] as const) {
        await until(() => lanes[0].info().state === 'idle', { timeoutMs: 5_000, what: 'the lane idle' });
        const outcome = await lanes[0].lease()!.run(job, fakeJob(job), 's', deadlines(), {});
        expect(outcome).toMatchObject({ kind: 'crashed', reason: `protocol error: ${said}` });
        expect(gate.holder).toBeUndefined();
      }
    },
    T,
  );

  it(
    'takes every lane out when one quarantines the GPU: a job running on another lane ends cancelled',
    async () => {
      let held = true;
      const { lanes } = await twoLanes({ gpuReleased: () => Promise.resolve(!held), releaseTimeoutMs: 200 });
      const onTwo = lanes[1].lease()!.run('long', fakeJob('fake:hang:compile'), 's', deadlines(), {});
      const leaseOne = lanes[0].lease()!;
      const killed = leaseOne.run('killed', fakeJob('fake:hang:time'), 's', deadlines(), {});
      await until(() => lanes[0].info().state === 'busy', { timeoutMs: 5_000, what: 'the job to run' });
      leaseOne.cancel(); // killed: the "GPU" keeps its PID
      expect((await killed).kind).toBe('cancelled');
      expect((await onTwo).kind).toBe('cancelled');
      await until(() => lanes.every((l) => l.info().state === 'quarantined'), { timeoutMs: 5_000, what: 'both out' });
      expect(lanes[1].info().lastError).toMatch(/still lists the killed worker's PID/);
      expect(lanes[1].lease()).toBeUndefined();

      // The GPU lets go: a reprobe of either lane brings it back, and the other follows on its own reprobe.
      held = false;
      expect((await lanes[1].reprobe()).state).toBe('idle');
      expect((await lanes[0].reprobe()).state).toBe('idle');
    },
    T,
  );
});
