// SPDX-License-Identifier: MIT
// `cudakit profile file.cu | spec.ts | job.json`: the launch as `bench` describes it (the same flags, spec files and
// jobs), profileJob() under Nsight Compute, and the metrics printed by group or written as JSON. Nothing is timed.
import { writeFileSync } from 'node:fs';
import { extname } from 'node:path';
import {
  CompileError,
  InvalidJobError,
  type ProfileJobOptions,
  type ProfileResult,
  formatDeviceMetrics,
  formatJson,
  profileJob,
} from '../index.js';
import {
  type BenchPlan,
  SPEC_EXT,
  compileWithoutGpu,
  planFromCommandLine,
  planFromSpec,
  shownSource,
} from './bench.js';
import {
  OK,
  PROFILE_FLAGS,
  type ProfileValues,
  USAGE,
  UsageError,
  commandHelp,
  defined,
  parseCommand,
} from './flags.js';
import { type Output, gotCount, paint, reportCompileFailure, systemMessage } from './output.js';

export async function profileCommand(args: string[], o: Output): Promise<number> {
  const { values, positionals } = parseCommand('profile', args, PROFILE_FLAGS);
  if (values.help === true) {
    o.out(commandHelp('profile'));
    return OK;
  }
  if (positionals.length !== 1) {
    throw new UsageError(`profile takes one source file or spec${gotCount(positionals)} (see cudakit --help)`);
  }
  const file = positionals[0]!;
  const options = profileOptions(values);
  // The bench command's plan: its flags here are a subset of bench's (no reference, compare or timing).
  const plan = SPEC_EXT.has(extname(file))
    ? await planFromSpec(file, values)
    : planFromCommandLine(file, values, 'profile');
  return (await compileWithoutGpu(plan, 'profile', o)) ?? runProfile(plan, options, values.json, o);
}

/** --metrics (each may list several, comma-separated), --section and --ncu as profileJob's options. */
export function profileOptions(v: ProfileValues): ProfileJobOptions {
  const metrics = (v.metrics ?? []).flatMap((m) => m.split(',').map((s) => s.trim())).filter((s) => s !== '');
  if (v.metrics !== undefined && metrics.length === 0) {
    throw new UsageError('--metrics expects ncu metric names such as dram__bytes_read.sum,dram__bytes_write.sum');
  }
  const bad = [...metrics, ...(v.section ?? [])].find((s) => !/^[A-Za-z0-9_.:$-]+$/.test(s));
  if (bad !== undefined) {
    throw new UsageError(`--metrics and --section expect ncu names such as dram__bytes_read.sum, not '${bad}'`);
  }
  if (v.ncu === '') throw new UsageError('--ncu expects the path of ncu');
  return {
    ...defined({ metrics: metrics.length > 0 ? metrics : undefined, sections: v.section, ncu: v.ncu }),
    // ncu and the launch stay in the terminal's process group: Ctrl-C reaches them too.
    processGroup: 'caller',
  };
}

export async function runProfile(
  plan: BenchPlan,
  options: ProfileJobOptions,
  json: string | undefined,
  o: Output,
): Promise<number> {
  const jsonOnly = json === '-';
  const writeJson = (r: ProfileResult): void => {
    if (json === undefined) return;
    const { deviceMetrics, failure, warnings } = r;
    const text = `${formatJson({ deviceMetrics, failure: failure ?? null, warnings })}\n`;
    if (jsonOnly) return void o.out(text);
    try {
      writeFileSync(json, text);
    } catch (e) {
      throw new UsageError(`cannot write ${json}: ${systemMessage(e)}`);
    }
  };
  let r: ProfileResult;
  o.showProgress(`${plan.job.name ?? plan.job.kernel}: one launch under Nsight Compute`);
  try {
    r = await profileJob(plan.job, { ...options, ...defined({ baseDir: plan.baseDir }) });
  } catch (e) {
    o.clearProgress();
    if (e instanceof InvalidJobError) {
      throw new UsageError(e.problems.map((p) => `${plan.what}: ${p.message}`).join('\n') || e.message);
    }
    if (e instanceof CompileError) {
      reportCompileFailure(e, shownSource(plan, 'candidate'), o);
      return USAGE;
    }
    throw e;
  }
  o.clearProgress();
  writeJson(r);
  if (r.deviceMetrics === null) {
    for (const w of r.warnings) o.err(`cudakit: ${w}\n`);
    return USAGE;
  }
  // With JSON on stdout, the warnings move to stderr so stdout stays parseable.
  if (jsonOnly) {
    for (const w of r.warnings) o.err(`cudakit: warning: ${w}\n`);
    return OK;
  }
  const warnings = r.warnings.map((w) => `  ${paint(o.color, '33', '⚠')} ${w}`);
  o.out(`${[formatDeviceMetrics(r.deviceMetrics, { color: o.color }), ...warnings].join('\n')}\n`);
  return OK;
}
