// SPDX-License-Identifier: MIT
// `cudakit bench file.cu | spec.ts`: the command line (or a spec file with the command line over it) becomes an
// EvalJob, evaluate() runs it, and this file prints the report: the check line, the timing text, --json, the exit code;
// with --metrics, then profileJob() of the kernel (one launch under Nsight Compute, after the timing) and its summary.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type EvalCheck,
  type EvalError,
  type EvalJob,
  type EvalKernelRef,
  type EvalKernelRole,
  type EvalProgress,
  type EvalReport,
  type JsReference,
  type ProfileFailure,
  type ProfileResult,
  evaluate,
  formatComparison,
  formatJson,
  formatResult,
  parseArgSpecs,
  probe,
  profileJob,
} from '../index.js';
import { externCKernels, prepareJob, progressLine, readSource } from '../eval/index.js';
import { readSourceFile } from './compile.js';
import {
  BENCH_FLAGS,
  CHECK_FAILED,
  OK,
  type PlanValues,
  USAGE,
  UsageError,
  commandHelp,
  commonBenchOptions,
  compileOptionsFrom,
  defined,
  jobFromFlags,
  kernelFromFlags,
  metricsOption,
  parseCommand,
  parseCount,
  parseDim,
  timingFlags,
} from './flags.js';
import { metricsBlock } from './metrics.js';
import {
  type Output,
  type ShownSource,
  firstLine,
  gotCount,
  paint,
  reportCompileFailure,
  systemMessage,
} from './output.js';

/** A bench command, ready to run: the job, and what only the command line knows. */
export interface BenchPlan {
  /** The file named on the command line (a source or a spec). */
  what: string;
  job: EvalJob;
  /** A spec's JavaScript reference. */
  reference: JsReference | undefined;
  /** A spec's directory: its relative files and its inline sources' #include "..." (the cwd for a source file). */
  baseDir: string | undefined;
  /** --json: a file, or '-' for stdout. */
  json: string | undefined;
  /** --no-check. */
  noCheck: boolean;
  /** --metrics, with --ncu: device metrics of the kernel after its timing. */
  metrics?: { ncu: string | undefined };
}

/** Spec files: modules whose default export is the job, and JSON files holding it. */
export const SPEC_EXT = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs', '.json']);

export async function benchCommand(args: string[], o: Output): Promise<number> {
  const { values, positionals } = parseCommand('bench', args, BENCH_FLAGS);
  if (values.help === true) {
    o.out(commandHelp('bench'));
    return OK;
  }
  if (positionals.length !== 1) {
    throw new UsageError(`bench takes one source file or spec${gotCount(positionals)} (see cudakit --help)`);
  }
  const file = positionals[0]!;
  // Everything that can be checked without a GPU is checked first, so a typo is reported as itself.
  const metrics = metricsOption(values);
  const plan = SPEC_EXT.has(extname(file)) ? await planFromSpec(file, values) : planFromCommandLine(file, values);
  if (metrics !== undefined) plan.metrics = metrics;
  return (await compileWithoutGpu(plan, 'bench', o)) ?? runBench(plan, o);
}

/**
 * Without a usable GPU: compiles the job's kernels all the same (PTX, unless --arch names the target) and checks the
 * arguments against them, so that a compile error, an unknown kernel or a wrong argument count is reported as itself;
 * then says the GPU is missing, with what was tried and what to do (and in --json). Undefined with a GPU.
 */
export async function compileWithoutGpu(plan: BenchPlan, command: string, o: Output): Promise<number | undefined> {
  const p = probe();
  if (p.ok) return undefined;
  if (p.nvrtcVersion !== undefined) {
    const compile = { ...plan.job.compile };
    if (compile.arch === undefined) compile.target = 'ptx';
    // Compiling is the phase before the GPU is asked for: a report that gets past it fails for the missing GPU.
    const report = await evaluate({ ...plan.job, compile }, defined({ baseDir: plan.baseDir }));
    // A load without a GPU still checks the arguments against the compiled kernels: a mismatch is reported as itself.
    const loadFailed = report.phase === 'load' && report.error?.kind !== 'cuda';
    if (report.phase === 'validate' || report.phase === 'compile' || loadFailed) return reportFailure(report, plan, o);
  }
  const reason = firstLine(p.reason);
  const message = `${command} needs a CUDA GPU and none is usable: ${reason}`;
  o.err(`cudakit: ${message}\n`);
  for (const line of (p.remedy ?? '').split('\n').filter((l) => l !== '')) o.err(`  Remedy: ${line}\n`);
  // The driver's code, as a CudaError would carry it: 'CUDA_DRIVER_NOT_FOUND: ...', 'cuInit failed: CUDA_ERROR_...'.
  const code = /^(?:cuInit failed: )?([A-Z][A-Z0-9_]+)\b/.exec(reason)?.[1] ?? 'CUDA_ERROR_NO_DEVICE';
  const error: EvalError = { kind: 'cuda', code, message, ...(p.remedy === undefined ? {} : { remedy: p.remedy }) };
  writeJson(plan.json, { error }, o);
  return USAGE;
}

/** --json: `value` to the file it names, or to stdout for '-'; nothing without --json. */
export function writeJson(json: string | undefined, value: object, o: Output): void {
  if (json === undefined) return;
  const text = `${formatJson(value as Record<string, unknown>)}\n`;
  if (json === '-') return void o.out(text);
  try {
    writeFileSync(json, text);
  } catch (e) {
    throw new UsageError(`cannot write ${json}: ${systemMessage(e)}`);
  }
}

/** `cudakit bench file.cu --kernel ... --arg ...`: the job from the flags (see jobFromFlags). */
export function planFromCommandLine(file: string, v: PlanValues, command = 'bench'): BenchPlan {
  const src = readSourceFile(file);
  if (v.kernel === undefined) {
    const found = externCKernels(src.text);
    const hint = found.length > 0 ? ` (extern "C" kernels in ${file}: ${found.join(', ')})` : '';
    throw new UsageError(`${command} needs --kernel <name>${hint}`);
  }
  const job = jobFromFlags(file, v, command);
  for (const other of [v.ref, v.compare]) if (other !== undefined) readSourceFile(other);
  return { what: file, job, reference: undefined, baseDir: undefined, json: v.json, noCheck: v['no-check'] === true };
}

/**
 * The default export, and beside it a JavaScript reference exported as `reference` (a CommonJS module's exports
 * arrive one level down, under `default`).
 */
function specExport(namespace: unknown): { job: unknown; reference: unknown } {
  const ns = namespace as { default?: unknown; reference?: unknown };
  const d = ns.default;
  const nested = typeof d === 'object' && d !== null && 'default' in d && !('kernel' in d);
  const cjs = nested ? (d as { default: unknown; reference?: unknown }) : undefined;
  return { job: cjs !== undefined ? cjs.default : d, reference: ns.reference ?? cjs?.reference };
}

/**
 * Imports a spec module: natively, or through tsx for TypeScript when Node cannot load it by itself. A JSON file is
 * the job itself.
 */
async function importSpec(path: string): Promise<{ job: unknown; reference: unknown }> {
  if (!existsSync(path)) throw new UsageError(`cannot read ${path}: no such file or directory`);
  if (extname(path) === '.json') {
    try {
      return { job: JSON.parse(readFileSync(path, 'utf8')) as unknown, reference: undefined };
    } catch (e) {
      throw new UsageError(`cannot load ${path}: ${firstLine(systemMessage(e))}`);
    }
  }
  const url = pathToFileURL(resolve(path)).href;
  try {
    try {
      return specExport(await import(url));
    } catch (e) {
      if ((e as { code?: string }).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw e;
    }
    let tsx: typeof import('tsx/esm/api');
    try {
      tsx = await import('tsx/esm/api');
    } catch {
      throw new UsageError(
        `${path} is TypeScript and Node cannot load it: install tsx (npm i -D tsx) or run cudakit through it`,
      );
    }
    return specExport(await tsx.tsImport(url, import.meta.url));
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`cannot load ${path}: ${firstLine((e as Error)?.message ?? String(e))}`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A spec's source for the job: inline text named after the spec ('saxpy.bench.source.cu'), a file relative to the
 * spec (read now, so a missing one is reported as itself) named relative to the working directory. Anything else is
 * left for validateJob to report.
 */
function specSource(value: unknown, specPath: string, label: string): unknown {
  if (typeof value === 'string') {
    return { text: value, name: `${basename(specPath).replace(/\.[cm]?[jt]s$/, '')}.${label}.cu` };
  }
  if (!isObject(value) || typeof value.file !== 'string') return value;
  const abs = resolve(dirname(resolve(specPath)), value.file);
  readSourceFile(abs);
  const name = typeof value.name === 'string' ? value.name : relative(process.cwd(), abs) || abs;
  return { ...value, file: abs, name };
}

/** `cudakit bench spec.ts [options]`: the spec's job with the command line over it, checked by validateJob. */
export async function planFromSpec(path: string, v: PlanValues): Promise<BenchPlan> {
  const { job: value, reference: exported } = await importSpec(path);
  if (!isObject(value)) {
    throw new UsageError(`${path}: the default export must be a job { source, kernel, grid, block, args, ... }`);
  }
  if (exported !== undefined && typeof exported !== 'function') {
    throw new UsageError(`${path}: the export 'reference' must be a function (args) => void`);
  }
  const spec: Record<string, unknown> = { ...value };
  // The JavaScript reference: the module's `reference` export, or (BenchSpec's place) the job's reference field.
  let reference = exported as JsReference | undefined;
  if (typeof spec.reference === 'function') {
    if (reference !== undefined) throw new UsageError(`${path}: two JavaScript references: export one, as 'reference'`);
    reference = spec.reference as JsReference;
    delete spec.reference;
  }
  spec.source = specSource(spec.source, path, 'source');
  for (const field of ['reference', 'compare'] as const) {
    const k = spec[field];
    if (isObject(k)) spec[field] = { ...k, source: specSource(k.source, path, field) };
  }

  // The command line over the spec.
  if (v.kernel !== undefined) spec.kernel = v.kernel;
  const kernel = typeof spec.kernel === 'string' ? spec.kernel : '';
  if (v.grid !== undefined) spec.grid = parseDim(v.grid, '--grid');
  if (v.block !== undefined) spec.block = parseDim(v.block, '--block');
  if (v['shared-mem'] !== undefined) spec.sharedMemBytes = parseCount(v['shared-mem'], '--shared-mem', 0);
  if (v.arg !== undefined) {
    parseArgSpecs(v.arg); // argspec's own messages (Expected ... but received the argument spec '...')
    spec.args = [...v.arg];
  }
  const common = commonBenchOptions(v);
  // Files named on the command line are relative to the working directory, not to the spec (its baseDir).
  const given = (file: string): { file: string; name: string } => {
    readSourceFile(file);
    return { file: resolve(file), name: file };
  };
  if (v.ref !== undefined) {
    spec.reference = kernelFromFlags(given(v.ref), v['ref-kernel'] ?? kernel, v['ref-grid'], v['ref-block'], 'ref');
    reference = undefined;
  }
  if (v.compare !== undefined) {
    const name = v['compare-kernel'] ?? kernel;
    spec.compare = kernelFromFlags(given(v.compare), name, v['compare-grid'], v['compare-block'], 'compare');
  }
  if (spec.compile === undefined || isObject(spec.compile)) {
    const compile = compileOptionsFrom(v, spec.compile as EvalJob['compile']);
    if (Object.keys(compile).length > 0) spec.compile = compile;
  }
  if (spec.check === undefined || isObject(spec.check)) {
    const own = (spec.check ?? {}) as Record<string, unknown>;
    spec.check = {
      ...own,
      ...common.check,
      ...(v['no-check'] === true ? { skip: true } : {}),
      withoutReference: own.withoutReference ?? 'skip',
    };
  }
  const timing = timingFlags(common);
  if (Object.keys(timing).length > 0 && (spec.timing === undefined || isObject(spec.timing))) {
    for (const key of Object.keys(timing)) delete spec[key]; // BenchSpec's top-level fields, overridden
    spec.timing = { ...(spec.timing as object | undefined), ...timing };
  }

  const r = prepareJob(spec);
  if (Array.isArray(r)) throw new UsageError(r.map((p) => `${path}: ${p.message}`).join('\n'));
  const baseDir = dirname(resolve(path));
  return { what: path, job: r.job, reference, baseDir, json: v.json, noCheck: v['no-check'] === true };
}

/** The report's check as --json has always written it: a skipped check says why in the command line's words. */
function checkForJson(check: EvalCheck | undefined, plan: BenchPlan): EvalCheck | undefined {
  if (check === undefined || !('skipped' in check)) return check;
  return { skipped: plan.noCheck ? 'not checked (--no-check)' : 'not checked (no reference: give --ref or --compare)' };
}

/** Where a kernel of the job came from, for printing its compile errors with their source lines. */
export function shownSource(plan: BenchPlan, role: EvalKernelRole): ShownSource {
  const j = plan.job;
  const k: { source: EvalJob['source']; compile?: EvalJob['compile'] } =
    role === 'candidate' ? j : role === 'reference' ? (j.reference as EvalKernelRef) : j.compare!;
  const src = readSource(k.source, plan.baseDir, `${role}.cu`);
  const includePaths = { ...j.compile, ...(role === 'candidate' ? {} : k.compile) }.includePaths ?? [];
  const own = src.dir !== undefined ? [src.dir] : [];
  return { text: src.text, name: src.name, includeDirs: [...own, ...includePaths] };
}

export async function runBench(plan: BenchPlan, o: Output): Promise<number> {
  const jsonOnly = plan.json === '-';
  // With JSON on stdout, the human lines move to stderr so stdout stays parseable.
  const note = (text: string): void => (jsonOnly ? o.err(`${text}\n`) : o.out(`${text}\n`));
  // --json carries the correctness verdict too (also when it fails, then without timings, and why a run failed:
  // `{ error }`), so scripts need no stderr.
  const json = (value: object): void => writeJson(plan.json, value, o);
  const color = o.color && !jsonOnly;

  let report: EvalReport;
  try {
    report = await evaluate(
      plan.job,
      defined({
        reference: plan.reference,
        baseDir: plan.baseDir,
        onProgress: (p: EvalProgress) => {
          if (p.kind === 'checked') {
            const c = checkForJson(p.check, plan)!;
            if ('skipped' in c) note(`correctness: ${c.skipped}`);
            else if (c.passed) note(`${paint(color, '32', '✓')} check against ${c.reference}: ${c.before.summary}`);
          } else if (p.kind === 'samples') {
            const ci = Number.isFinite(p.relCI) ? ` ±${(p.relCI * 100).toFixed(2)}%` : '';
            o.showProgress(progressLine(p.samples, undefined, `${p.name} (${p.mode})${ci} samples`));
          } else if (p.kind === 'rounds') {
            o.showProgress(progressLine(p.round, p.rounds, `${p.a} vs ${p.b}: ABBA rounds`));
          }
        },
      }),
    );
  } finally {
    o.clearProgress();
  }
  const check = checkForJson(report.check, plan);
  if (report.passed) {
    const t = report.timing;
    const c = report.comparison;
    const text =
      t !== undefined
        ? formatResult(t, { color })
        : [formatResult(c!.a, { color }), formatResult(c!.b, { color }), formatComparison(c!, { color })].join('\n\n');
    if (!jsonOnly) o.out(`${text}\n`);
    // The kernel profiled is the candidate: B of a comparison.
    const metrics =
      plan.metrics === undefined
        ? undefined
        : await benchMetrics(plan, (t ?? c!.b).name, o, jsonOnly ? 'err' : 'out', color);
    json({ ...(t ?? c), check, ...(metrics === undefined ? {} : { metrics }) });
    return OK;
  }
  if (check !== undefined && 'before' in check) {
    if (report.phase === 'check' && !check.before.passed) {
      o.err(`cudakit: check failed against ${check.reference}: ${check.before.summary}\n`);
      json({ check });
      return CHECK_FAILED;
    }
    if (report.phase === 'recheck' && check.afterTiming?.passed === false) {
      o.err(`cudakit: check failed after timing against ${check.reference}: ${check.afterTiming.summary}\n`);
      json({ check });
      return CHECK_FAILED;
    }
  }
  return reportFailure(report, plan, o);
}

/** --json's `metrics`: what `cudakit profile --json` writes, the device metrics or why there are none. */
export interface BenchMetricsJson {
  deviceMetrics: ProfileResult['deviceMetrics'];
  failure: ProfileFailure | null;
  warnings: string[];
}

/**
 * --metrics: after the timing, profileJob() of the plan's kernel (its own launch, in a child under ncu, never timed),
 * and the block under the timing on `stream`: the summary, or why there are no metrics. Whatever happens here, the
 * timing decides the exit code: an error is a reason too.
 */
export async function benchMetrics(
  plan: BenchPlan,
  title: string,
  o: Output,
  stream: 'out' | 'err',
  color: boolean,
): Promise<BenchMetricsJson> {
  const ncu = plan.metrics?.ncu;
  let r: ProfileResult;
  o.showProgress(`${title}: one launch under Nsight Compute`);
  try {
    r = await profileJob(
      plan.job,
      defined({ ncu, baseDir: plan.baseDir, processGroup: 'caller' as const }), // Ctrl-C reaches ncu too
    );
  } catch (e) {
    // evaluate() has compiled and run the job: what throws now is the machine's (a full disk ...), a reason too.
    const why = `device metrics not collected: ${firstLine(systemMessage(e))}`;
    r = { deviceMetrics: null, failure: 'ncu-failed', warnings: [why] };
  } finally {
    o.clearProgress();
  }
  // Under the timing text, a blank line apart; alone on stderr (--json -), without it.
  const lines = metricsBlock(r, title, color, ncu !== undefined);
  o[stream](`${stream === 'out' ? '\n' : ''}${lines.join('\n')}\n`);
  return { deviceMetrics: r.deviceMetrics, failure: r.failure ?? null, warnings: r.warnings };
}

/**
 * A failed report (not a failed check): a usage error, the compile errors with their source lines (and what cudakit
 * adds: where a missing header was looked for, the remedy), or why; --json gets `{ error }`, the report's.
 */
function reportFailure(report: EvalReport, plan: BenchPlan, o: Output): number {
  const e = report.error!;
  if (report.phase === 'validate') {
    throw new UsageError((e.problems ?? []).map((p) => `${plan.what}: ${p.message}`).join('\n') || e.message);
  }
  if (e.kind === 'compile') {
    const failure = {
      code: e.code,
      log: e.log ?? '',
      diagnostics: e.diagnostics ?? [],
      note: e.note,
      remedy: e.remedy,
    };
    reportCompileFailure(failure, shownSource(plan, e.kernel ?? 'candidate'), o);
  } else {
    o.err(`cudakit: ${e.message.replace(/^cudakit: /, '')}\n`);
  }
  writeJson(plan.json, { error: e }, o);
  return USAGE;
}
