// SPDX-License-Identifier: MIT
// A job with two Python kernels (a Python candidate checked against a Python reference) gets two runners from its GPU
// slot: the worker asks for each by its role (run/worker/relay-link.ts), the slot starts each in a folder of its own
// and relays each one's lines to the right listener, and both die with the job. The fake worker
// (fake:python-runners) links to both runners and reports what each said first.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { EvalReport } from 'cudakit';
import { describe, expect, it } from 'vitest';
import { fakeJob } from '../../../test/support/jobs.js';
import { deadlines, fakeSlot } from '../support/slot-helpers.js';

const PYTHON = '/usr/bin/python3';
const torchHere = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { timeout: 60_000 }).status === 0;
if (!torchHere) console.log(`python runners tests skipped: ${PYTHON} has no torch`);

describe('a job’s two Python runners', () => {
  it.runIf(torchHere)(
    'are started one per role, each in a folder of its own, each relayed to its own listener, and end with the job',
    async () => {
      const python = { path: PYTHON, hidden: [], env: { CUDAKIT_RUNNER_DEVICE: 'cpu' }, unsandboxed: true };
      const slot = fakeSlot({ python });
      await slot.start();
      const outcome = await slot.lease()!.run('j', fakeJob('fake:python-runners'), 's', deadlines(60_000), {});
      if (outcome.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(outcome)}`);
      const report = outcome.report as EvalReport;
      expect(report.passed).toBe(true);
      const said = report.warnings.map((w) => /^python (candidate|reference) (\S+) (.*)$/.exec(w));
      expect(said.map((m) => m?.[1])).toEqual(['candidate', 'reference']);
      const [candidate, reference] = said.map((m) => m!);
      expect(candidate![2]).not.toBe(reference![2]);
      // Each listener got its own runner's first line: the runner's ready message.
      for (const m of [candidate!, reference!]) expect(JSON.parse(m[3]!)).toMatchObject({ t: 'ready', device: 'cpu' });
      // Both folders are gone once the job is over (the worker's stop, the slot's settle).
      expect(existsSync(candidate![2]!)).toBe(false);
      expect(existsSync(reference![2]!)).toBe(false);
    },
    120_000,
  );

  it('refuses a worker that asks for a runner by no known role: a protocol error, the slot replaced', async () => {
    const { checkJobMessage } = await import('../../src/run/protocol.js');
    const m = { v: 1, t: 'python', id: 'j', runner: 'judge', op: 'start' } as const;
    expect(checkJobMessage(m as never, 'j')).toBe('a python message for runner "judge"');
    expect(checkJobMessage({ ...m, runner: 'reference' }, 'j')).toBeUndefined();
  });
});
