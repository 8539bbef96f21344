// SPDX-License-Identifier: MIT
// `cudakit eval problem.json kernel.cu`: a kernel through every case of a problem (evaluateProblem()), its launch
// given over the problem's dimensions (--grid 'cdiv(n, 256)'), or a submission file holding kernel and launch; prints
// a line per case and the score, --json the whole report.
import { readFileSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import {
  type DimValue,
  type EvalProblem,
  type LaunchDim,
  type ProblemCaseReport,
  type ProblemProgress,
  type ProblemReport,
  type ProblemSubmission,
  evaluateProblem,
} from '../index.js';
import { externCKernels, progressLine } from '../eval/index.js';
import { readSourceFile } from './compile.js';
import {
  CHECK_FAILED,
  COMPILE_FLAGS,
  OK,
  PRESET_NAMES,
  USAGE,
  UsageError,
  commandHelp,
  compileOptionsFrom,
  defined,
  oneOf,
  parseCommand,
} from './flags.js';
import { type Output, firstLine, paint, systemMessage, table } from './output.js';
import { writeJson } from './bench.js';

export const EVAL_FLAGS = {
  ...COMPILE_FLAGS,
  kernel: { type: 'string' },
  grid: { type: 'string' },
  block: { type: 'string' },
  'shared-mem': { type: 'string' },
  cases: { type: 'string' },
  preset: { type: 'string' },
  json: { type: 'string' },
} as const;

type EvalValues = ReturnType<typeof parseCommand<typeof EVAL_FLAGS>>['values'];

/** A problem file (or its folder) as JSON, and the folder its relative files are read from. */
export function readProblemFile(path: string): { problem: EvalProblem; dir: string } {
  let file = path;
  try {
    if (statSync(path).isDirectory()) file = join(path, 'problem.json');
    return { problem: JSON.parse(readFileSync(file, 'utf8')) as EvalProblem, dir: resolve(dirname(file)) };
  } catch (e) {
    const why = e instanceof SyntaxError ? `not JSON (${e.message})` : systemMessage(e);
    throw new UsageError(`cannot read the problem ${file}: ${why}`);
  }
}

/**
 * A launch option's text as a launch dimension: expressions split at the commas outside parentheses
 * ('cdiv(n, 32),m' is two), an integer as a number.
 */
export function launchOf(text: string, option: string): LaunchDim {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')') depth--;
    else if (text[i] === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  const values: DimValue[] = parts.map((p) => p.trim()).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  if (values.length > 3 || values.some((v) => v === '')) {
    throw new UsageError(`${option} expects 1 to 3 sizes or expressions separated by commas, not '${text}'`);
  }
  return values.length === 1 ? values[0]! : values;
}

/** The submission: a JSON file holding one (its source relative to it), or a .cu file and the launch options. */
function submissionOf(file: string, v: EvalValues): ProblemSubmission {
  if (extname(file) === '.json') {
    let s: ProblemSubmission;
    try {
      s = JSON.parse(readFileSync(file, 'utf8')) as ProblemSubmission;
    } catch (e) {
      const why = e instanceof SyntaxError ? `not JSON (${e.message})` : systemMessage(e);
      throw new UsageError(`cannot read the submission ${file}: ${why}`);
    }
    if (typeof s !== 'object' || s === null || Array.isArray(s)) {
      throw new UsageError(`cannot read the submission ${file}: not a JSON object`);
    }
    // Its source file is relative to the submission; the problem's are relative to the problem.
    const src = s.source as unknown;
    if (typeof src === 'object' && src !== null && typeof (src as { file?: unknown }).file === 'string') {
      const f = (src as { file: string }).file;
      s = { ...s, source: { ...(src as object), file: resolve(dirname(file), f) } };
    }
    return withFlags(s, v);
  }
  const text = readSourceFile(file).text;
  let kernel = v.kernel;
  if (kernel === undefined) {
    const found = externCKernels(text);
    if (found.length !== 1) {
      const which = found.length === 0 ? 'no extern "C" kernel' : `kernels ${found.join(', ')}`;
      throw new UsageError(`eval needs --kernel <name>: ${file} has ${which}`);
    }
    kernel = found[0]!;
  }
  if (v.grid === undefined || v.block === undefined) {
    throw new UsageError("eval needs --grid and --block over the problem's dimensions, e.g. --grid 'cdiv(n, 256)'");
  }
  return withFlags({ source: { file: resolve(file) }, kernel, grid: 0, block: 0, name: basename(file) }, v);
}

/** The command line's launch and compile options over a submission's. */
function withFlags(s: ProblemSubmission, v: EvalValues): ProblemSubmission {
  const out: ProblemSubmission = { ...s };
  if (v.kernel !== undefined) out.kernel = v.kernel;
  if (v.grid !== undefined) out.grid = launchOf(v.grid, '--grid');
  if (v.block !== undefined) out.block = launchOf(v.block, '--block');
  if (v['shared-mem'] !== undefined) out.sharedMemBytes = launchOf(v['shared-mem'], '--shared-mem') as DimValue;
  const compile = compileOptionsFrom(v, s.compile);
  if (Object.keys(compile).length > 0) out.compile = compile;
  return out;
}

const us = (x: number | undefined): string => (x === undefined ? '—' : x < 10 ? x.toFixed(2) : x.toFixed(1));
const times = (x: number | undefined): string => (x === undefined ? '—' : `${x.toFixed(x < 10 ? 3 : 2)}×`);

function caseRow(c: ProblemCaseReport, color: boolean): string[] {
  const outcome = !c.ran ? 'not run' : c.passed ? paint(color, '32', 'passed') : paint(color, '31', 'FAILED');
  const interval = c.speedupLow === undefined ? '' : ` [${c.speedupLow.toFixed(3)}, ${c.speedupHigh!.toFixed(3)}]`;
  return [
    c.name,
    c.visibility,
    outcome,
    us(c.baselineUs),
    us(c.candidateUs),
    `${times(c.speedup)}${interval}${c.scored?.floored === true ? ' (floored)' : ''}`,
    us(c.floorUs),
  ];
}

/** Why a case failed, in a line: the phase and the error's first line. */
function failureLine(c: ProblemCaseReport): string {
  const r = c.report!;
  const e = r.error;
  return `case '${c.name}' failed in ${r.phase ?? 'an unknown phase'}: ${firstLine(e?.message)}`;
}

export function printProblemReport(r: ProblemReport, o: Output, stream: 'out' | 'err', color: boolean): void {
  const rows = r.cases.map((c) => caseRow(c, color));
  const head = ['case', 'visibility', 'check', 'baseline µs', 'kernel µs', 'speedup [95 % CI]', 'floor µs'];
  const device = r.device === undefined ? '' : ` on ${r.device.name} (${r.device.arch})`;
  o[stream](`${paint(color, '1', `${r.name} on ${r.problem}`)}${device}\n${table(head, rows)}`);
  for (const c of r.cases) if (c.ran && !c.passed) o[stream](`${failureLine(c)}\n`);
  for (const w of r.warnings) o[stream](`warning: ${w}\n`);
  if (r.score !== undefined) {
    const n = r.cases.length;
    o[stream](
      `score ${paint(color, '1', times(r.score))} [${r.scoreLow!.toFixed(3)}, ${r.scoreHigh!.toFixed(3)}]: ` +
        `the geometric mean over ${n} cases of baseline / kernel time, each floored at its roofline\n`,
    );
  }
}

export async function evalCommand(args: string[], o: Output): Promise<number> {
  const { values: v, positionals } = parseCommand('eval', args, EVAL_FLAGS);
  if (v.help === true) {
    o.out(commandHelp('eval'));
    return OK;
  }
  if (positionals.length !== 2) {
    throw new UsageError('eval takes a problem (problem.json or its folder) and a kernel (file.cu or submission.json)');
  }
  const { problem, dir } = readProblemFile(positionals[0]!);
  const submission = submissionOf(positionals[1]!, v);
  const cases = oneOf(v.cases, '--cases', ['all', 'public'] as const);
  const preset = oneOf(v.preset, '--preset', PRESET_NAMES);
  const jsonOnly = v.json === '-';
  const color = o.color && !jsonOnly;
  let report: ProblemReport;
  let current = '';
  try {
    report = await evaluateProblem(
      problem,
      submission,
      defined({
        baseDir: dir,
        cases,
        preset,
        onProgress: (p: ProblemProgress) => {
          if (p.kind === 'case') current = `case ${p.name} (${p.visibility})`;
          else if (p.kind === 'phase') o.showProgress(`${current}: ${p.phase}`);
          else if (p.kind === 'rounds') o.showProgress(progressLine(p.round, p.rounds, `${current}: ABBA rounds`));
        },
      }),
    );
  } finally {
    o.clearProgress();
  }
  if (report.error !== undefined) {
    const problems = report.error.problems ?? [];
    throw new UsageError(problems.map((p) => p.message).join('\n') || report.error.message);
  }
  printProblemReport(report, o, jsonOnly ? 'err' : 'out', color);
  writeJson(v.json, report, o);
  if (report.passed) return OK;
  // A case that failed its check is the kernel's fault (1); one that could not run at all (compile, CUDA) is 2.
  const failed = report.cases.find((c) => c.ran && !c.passed);
  return failed?.report?.error?.kind === 'verdict' ? CHECK_FAILED : USAGE;
}
