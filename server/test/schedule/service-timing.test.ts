// SPDX-License-Identifier: MIT
// The service's timing defaults (src/schedule/service-timing.ts): ±1 % and a 250 ms GPU-time cap for a job that asks
// for nothing else; a job's own preset, precision and cap kept; 'rigorous' uncapped. Through the service: what a
// plain job is run with (a leaderboard confirmation's rules are checked in http/leaderboard.test.ts).
import { describe, expect, it } from 'vitest';
import { SERVICE_MAX_GPU_MS, SERVICE_PRECISION, serviceTiming } from '../../src/schedule/service-timing.js';
import { jobBody } from '../../../test/support/jobs.js';
import { settled, setup } from '../support/helpers.js';

describe("the service's timing defaults", () => {
  it('time a job that sets nothing to ±1 %, for at most 250 ms of GPU time', () => {
    expect(serviceTiming(undefined)).toEqual({ precision: 0.01, rule: { maxGpuMs: 250 } });
    expect(serviceTiming({ bytes: 12, rule: { timeoutMs: 5000 } })).toEqual({
      bytes: 12,
      precision: SERVICE_PRECISION,
      rule: { timeoutMs: 5000, maxGpuMs: SERVICE_MAX_GPU_MS },
    });
  });

  it("keep a job's own preset, precision and cap, and leave 'rigorous' uncapped", () => {
    expect(serviceTiming({ preset: 'quick' })).toEqual({ preset: 'quick', rule: { maxGpuMs: 250 } });
    expect(serviceTiming({ preset: 'rigorous' })).toEqual({ preset: 'rigorous' });
    expect(serviceTiming({ precision: 0.002 })).toEqual({ precision: 0.002, rule: { maxGpuMs: 250 } });
    expect(serviceTiming({ rule: { targetRelCI: 0.03 } })).toEqual({ rule: { targetRelCI: 0.03, maxGpuMs: 250 } });
    expect(serviceTiming({ rule: { maxGpuMs: 1000 } })).toEqual({ precision: 0.01, rule: { maxGpuMs: 1000 } });
  });

  it('are what the worker gets for a plain job, the stored job left as the client sent it', async () => {
    const { service, pool } = await setup();
    const { record } = await service.submit('alice', jobBody('pass'));
    await settled(service, record.id);
    expect(pool.runs[0]!.job).toMatchObject({ timing: { precision: 0.01, rule: { maxGpuMs: 250 } } });
    expect((await service.get(record.id))!.job).not.toHaveProperty('timing.precision');
  });
});
