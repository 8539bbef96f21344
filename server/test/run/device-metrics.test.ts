// SPDX-License-Identifier: MIT
// deviceMetrics without a GPU: what the worker puts in the report for each profiling outcome (metrics, or null with a
// warning, the job's verdict untouched), how long it lets ncu run, and how the compatible routes show the metrics in
// the original server's shape. A stand-in takes profileJob's place; test/gpu/profile.test.ts profiles for real.
import type { DeviceMetrics, EvalJob, EvalReport, ProfileJobOptions, ProfileResult } from 'cudakit';
import { describe, expect, it } from 'vitest';
import { answerOf, compatDeviceMetricsOf } from '../../src/compat/answers.js';
import type { JobRecord } from '../../src/store/store.js';
import { PROFILE_MARGIN_MS, collectDeviceMetrics, profileBudgetMs, runJob } from '../../src/run/worker/run.js';

const job: EvalJob = {
  name: 'copy',
  source: 'extern "C" __global__ void copy(const float* x, float* y, int n) {}',
  kernel: 'copy',
  grid: 1,
  block: 32,
  args: ['ptr:f32[32]=uniform(-1,1)', 'ptr:f32[32]:out', 'i32=32'],
};

const passed = {
  name: 'copy',
  passed: true,
  phase: undefined,
  warnings: ['a compile warning'],
} as unknown as EvalReport;
const failedCheck = { name: 'copy', passed: false, phase: 'check', warnings: [] } as unknown as EvalReport;

const metrics: DeviceMetrics = {
  kernel: 'copy',
  metrics: {
    'dram__bytes_read.sum': { value: 67_240_448, unit: 'byte' },
    'sm__throughput.avg.pct_of_peak_sustained_elapsed': { value: 14.08456, unit: '%' },
    launch__grid_size: { value: 65_536, unit: '' },
    device__attribute_display_name: { value: 'NVIDIA H200', unit: '' },
  },
  groups: {
    speedOfLight: { 'sm__throughput.avg.pct_of_peak_sustained_elapsed': { value: 14.08456, unit: '%' } },
    memory: { 'dram__bytes_read.sum': { value: 67_240_448, unit: 'byte' } },
    launch: { launch__grid_size: { value: 65_536, unit: '' } },
    other: { device__attribute_display_name: { value: 'NVIDIA H200', unit: '' } },
  },
  ncuVersion: '2025.3.1.0',
  command: ['ncu', '--csv'],
  unavailable: [],
  wallMs: 2100,
};

/** A stand-in for profileJob that records what it was asked. */
function standIn(result: ProfileResult | Error) {
  const calls: { job: EvalJob; options: ProfileJobOptions }[] = [];
  const profile = (j: EvalJob, options: ProfileJobOptions): Promise<ProfileResult> => {
    calls.push({ job: j, options });
    return result instanceof Error ? Promise.reject(result) : Promise.resolve(result);
  };
  return { calls, profile };
}

describe("the worker's device metrics", () => {
  it('profiles a job that passed, in its own process group, after announcing the profile phase', async () => {
    const { calls, profile } = standIn({ deviceMetrics: metrics, failure: undefined, warnings: ['left out: x__y'] });
    const phases: string[] = [];
    const r = await collectDeviceMetrics(passed, job, {
      ncu: '/opt/nsight/ncu',
      timeoutMs: 60_000,
      onPhase: (p) => phases.push(p),
      profile,
    });
    expect(r).toEqual({ deviceMetrics: metrics, warnings: ['left out: x__y'] });
    expect(phases).toEqual(['profile']);
    expect(calls).toEqual([{ job, options: { processGroup: 'caller', ncu: '/opt/nsight/ncu', timeoutMs: 60_000 } }]);
  });

  it("looks for ncu on PATH with 'auto'", async () => {
    const { calls, profile } = standIn({ deviceMetrics: metrics, failure: undefined, warnings: [] });
    await collectDeviceMetrics(passed, job, { ncu: 'auto', profile });
    expect(calls[0]!.options).toEqual({ processGroup: 'caller' });
  });

  it('passes on null and the warning when profiling could not be done', async () => {
    const warning = 'device metrics not collected: ncu was refused (ERR_NVGPUCTRPERM): ...';
    const { profile } = standIn({ deviceMetrics: null, failure: 'permission', warnings: [warning] });
    expect(await collectDeviceMetrics(passed, job, { ncu: 'auto', profile })).toEqual({
      deviceMetrics: null,
      warnings: [warning],
    });
  });

  it('does not profile with ncu off, a job that failed, or too little time left; nor announce the phase', async () => {
    const { calls, profile } = standIn({ deviceMetrics: metrics, failure: undefined, warnings: [] });
    const phases: string[] = [];
    const onPhase = (p: string): void => void phases.push(p);
    const cases: [Parameters<typeof collectDeviceMetrics>, string][] = [
      [[passed, job, { ncu: 'off', onPhase, profile }], 'Nsight Compute is off on this server (--ncu off)'],
      [[failedCheck, job, { ncu: 'auto', onPhase, profile }], 'the job did not pass (its check phase failed)'],
      [[passed, job, { ncu: 'auto', timeoutMs: 4000, onPhase, profile }], "too little of the job's time is left (4 s)"],
    ];
    for (const [args, why] of cases) {
      expect(await collectDeviceMetrics(...args)).toEqual({
        deviceMetrics: null,
        warnings: [`device metrics not collected: ${why}`],
      });
    }
    expect(calls).toEqual([]);
    expect(phases).toEqual([]);
  });

  it('turns an exception (a source that no longer compiles ...) into null and a warning', async () => {
    const { profile } = standIn(new Error('NVRTC_ERROR_COMPILATION'));
    expect(await collectDeviceMetrics(passed, job, { ncu: 'auto', profile })).toEqual({
      deviceMetrics: null,
      warnings: ['device metrics not collected: NVRTC_ERROR_COMPILATION'],
    });
  });

  it('ends profiling before the profile deadline or the job deadline, whichever comes first', () => {
    const deadlines = { jobMs: 120_000, phaseMs: { profile: 120_000 } };
    expect(profileBudgetMs(deadlines, 10_000)).toBe(110_000 - PROFILE_MARGIN_MS);
    expect(profileBudgetMs({ jobMs: 600_000, phaseMs: { profile: 120_000 } }, 10_000)).toBe(
      120_000 - PROFILE_MARGIN_MS,
    );
    expect(profileBudgetMs(deadlines, 119_000)).toBe(1_000 - PROFILE_MARGIN_MS);
  });

  it("puts null and the warning in the report of a job that failed, and keeps the job's own verdict", async () => {
    const { calls, profile } = standIn({ deviceMetrics: metrics, failure: undefined, warnings: [] });
    const phases: string[] = [];
    const { report } = await runJob({ ...job, grid: 0 }, 'salt', {
      deviceMetrics: true,
      ncu: 'auto',
      onPhase: (p) => void phases.push(p),
      profile,
    });
    expect(report).toMatchObject({ passed: false, phase: 'validate', deviceMetrics: null });
    expect(report.warnings).toEqual(['device metrics not collected: the job did not pass (its validate phase failed)']);
    expect(phases).toEqual(['validate']);
    expect(calls).toEqual([]);
    // Without the option the report has no deviceMetrics at all.
    const plain = await runJob({ ...job, grid: 0 }, 'salt', { profile });
    expect('deviceMetrics' in plain.report).toBe(false);
  });
});

describe('device metrics on the compatible routes', () => {
  it("are the original's categories, numbers rounded to 3 decimals, launch figures under occupancy", () => {
    const compat = compatDeviceMetricsOf(metrics);
    expect(Object.keys(compat)).toEqual([
      'speed_of_light',
      'detailed_metrics',
      'memory_metrics',
      'compute_metrics',
      'pipeline_metrics',
      'occupancy_metrics',
      'stall_metrics',
      'scheduler_metrics',
      'access_pattern_metrics',
      'roofline_metrics',
      'timing_metrics',
    ]);
    expect(compat.speed_of_light).toEqual({ 'sm__throughput.avg.pct_of_peak_sustained_elapsed': 14.085 });
    expect(compat.memory_metrics).toEqual({ 'dram__bytes_read.sum': 67_240_448 });
    expect(compat.occupancy_metrics).toEqual({ launch__grid_size: 65_536 });
    expect(compat.detailed_metrics).toEqual({}); // text values are left out: the original's are numbers
    expect(compat.stall_metrics).toEqual({});
  });

  const record = (report: object): JobRecord => ({
    id: 'ev_01',
    principal: 'local',
    status: 'succeeded',
    verdict: 'PASSED',
    phase: undefined,
    job,
    options: { timeoutSeconds: 120, maxQueueSeconds: 300, priority: 0, gpu: 'any', deviceMetrics: true },
    idempotencyKey: undefined,
    bodyHash: 'x',
    createdAt: 0,
    startedAt: 0,
    finishedAt: 1,
    gpuUuid: undefined,
    report: JSON.stringify(report),
    error: undefined,
  });
  const report = { name: 'copy', passed: true, phase: undefined, compile: {}, warnings: [] };

  it("go under metadata.device_metrics: /evaluate's kernel is 'original', /compare's candidate 'custom'", () => {
    const ctx = { gpu: undefined, warnings: [] };
    const evaluate = answerOf(record({ ...report, deviceMetrics: metrics }), { ...ctx, kind: 'evaluate' });
    expect(evaluate.statusCode).toBe(200);
    const meta = (evaluate.body as { kernel_exec_result: { metadata: Record<string, unknown> } }).kernel_exec_result
      .metadata;
    expect(meta.device_metrics).toEqual({ original_device_metrics: compatDeviceMetricsOf(metrics) });
    const compare = answerOf(record({ ...report, deviceMetrics: metrics }), { ...ctx, kind: 'compare' });
    const compareMeta = (compare.body as { kernel_exec_result: { metadata: Record<string, unknown> } })
      .kernel_exec_result.metadata;
    expect(compareMeta.device_metrics).toEqual({ custom_device_metrics: compatDeviceMetricsOf(metrics) });
    for (const without of [report, { ...report, deviceMetrics: null }]) {
      const a = answerOf(record(without), { ...ctx, kind: 'evaluate' });
      expect(
        'device_metrics' in (a.body as { kernel_exec_result: { metadata: object } }).kernel_exec_result.metadata,
      ).toBe(false);
    }
  });
});
