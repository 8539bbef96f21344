// SPDX-License-Identifier: MIT
// `npm run bench:problems -w server -- [--write]`: what a problem with many cases costs against a job of one case, on
// a machine with an NVIDIA GPU, for each shipped problem's example (server/problems/):
//
//   - the wall time of evaluateProblem() over every case (public and hidden), and of evaluate() of the problem's
//     first public case alone (the one-case job), and their ratio;
//   - where the time of a problem goes: each phase's wall time summed over its cases;
//   - the score's 95 % interval, relative to the score, and the widest case's.
//
// Both start with the in-memory compile cache cleared, as a fresh worker does, on a context made before either. The
// order alternates from one problem to the next (one-case first, then problem first), so that a drift of the machine
// falls on both alike. --problems a,b picks some; --preset overrides each problem's own; --budget stops starting new
// problems after that many seconds.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  Device,
  type EvalProblem,
  type EvalReport,
  type PresetName,
  type ProblemReport,
  type ProblemSubmission,
  caseJob,
  clearMemoryCache,
  evaluate,
  evaluateProblem,
  probe,
} from 'cudakit';
import { ROOT } from './binary.js';
import { RESULTS_FILE, replaceSection } from './results.js';

const PROBLEMS_DIR = join(ROOT, 'server/problems');

/** One problem's figures. */
interface ProblemFigures {
  problem: string;
  cases: number;
  passed: boolean;
  /** Why it did not pass: the first failing case's error. */
  error: string | undefined;
  /** evaluateProblem() over every case, s. */
  problemS: number;
  /** evaluate() of the first public case, s. */
  oneCaseS: number;
  /** Each phase's wall time summed over the cases, s. */
  phasesS: Record<string, number>;
  score: number | undefined;
  /** Half the score's 95 % interval, relative to the score (max of the two sides), %. */
  scoreCiPct: number | undefined;
  /** The widest case's interval, the same way, %. */
  worstCaseCiPct: number | undefined;
  /** The smallest candidate median over the cases, µs. */
  minCandidateUs: number | undefined;
}

const read = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

function problemNames(): string[] {
  return readdirSync(PROBLEMS_DIR, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

function halfWidthPct(value: number, low: number, high: number): number {
  return (100 * Math.max(high - value, value - low)) / value;
}

function firstError(r: ProblemReport): string | undefined {
  if (r.error !== undefined) return `${r.error.code}: ${r.error.message.split('\n')[0]}`;
  const bad = r.cases.find((c) => c.ran && !c.passed);
  const e = bad?.report?.error;
  return e === undefined ? undefined : `${bad!.name}: ${bad!.report!.phase}: ${e.code}: ${e.message.split('\n')[0]}`;
}

async function one(name: string, preset: PresetName | undefined, device: Device, flip: boolean) {
  const dir = join(PROBLEMS_DIR, name);
  const problem = read<EvalProblem>(join(dir, 'problem.json'));
  const example = read<ProblemSubmission>(join(dir, 'example.json'));
  const first = problem.cases.find((c) => (c.visibility ?? 'public') === 'public')!;

  const runOneCase = async (): Promise<[number, EvalReport]> => {
    const job = caseJob(problem, example, first);
    if (preset !== undefined) job.timing = { ...job.timing, preset };
    clearMemoryCache();
    const t = performance.now();
    const r = await evaluate(job, { baseDir: dir, device });
    return [(performance.now() - t) / 1e3, r];
  };
  const runProblem = async (): Promise<[number, ProblemReport]> => {
    clearMemoryCache();
    const t = performance.now();
    const r = await evaluateProblem(problem, example, { baseDir: dir, device, ...(preset ? { preset } : {}) });
    return [(performance.now() - t) / 1e3, r];
  };
  let oneCase: [number, EvalReport];
  let whole: [number, ProblemReport];
  if (flip) {
    whole = await runProblem();
    oneCase = await runOneCase();
  } else {
    oneCase = await runOneCase();
    whole = await runProblem();
  }
  const [problemS, r] = whole;
  const phasesS: Record<string, number> = {};
  for (const c of r.cases)
    for (const p of c.report?.phases ?? []) phasesS[p.phase] = (phasesS[p.phase] ?? 0) + p.ms / 1e3;
  const cis = r.cases.flatMap((c) =>
    c.scored === undefined ? [] : [halfWidthPct(c.scored.speedup, c.scored.speedupLow, c.scored.speedupHigh)],
  );
  const medians = r.cases.flatMap((c) => (c.candidateUs === undefined ? [] : [c.candidateUs]));
  const f: ProblemFigures = {
    problem: name,
    cases: r.cases.length,
    passed: r.passed && oneCase[1].passed,
    error: firstError(r) ?? (oneCase[1].passed ? undefined : `one-case: ${oneCase[1].error?.message.split('\n')[0]}`),
    problemS,
    oneCaseS: oneCase[0],
    phasesS,
    score: r.score,
    scoreCiPct: r.score === undefined ? undefined : halfWidthPct(r.score, r.scoreLow!, r.scoreHigh!),
    worstCaseCiPct: cis.length === 0 ? undefined : Math.max(...cis),
    minCandidateUs: medians.length === 0 ? undefined : Math.min(...medians),
  };
  return f;
}

const fix = (x: number | undefined, d: number): string => (x === undefined ? '—' : x.toFixed(d));

function table(rows: ProblemFigures[], device: string, preset: string): string {
  const phases = ['compile', 'load', 'check', 'time', 'recheck'];
  const lines = [
    `Measured on ${device}, ${new Date().toISOString().slice(0, 10)}, preset ${preset}: ` +
      "each shipped problem's example through every case (evaluateProblem()), against evaluate() of its first " +
      'public case alone.',
    '',
    `| problem | cases | problem, s | one case, s | ratio | ${phases.join(', s | ')}, s | score | ` +
      'score ±95 %, % | widest case ±, % | fastest case, µs |',
    `|---|--:|--:|--:|--:|${phases.map(() => '--:').join('|')}|--:|--:|--:|--:|`,
  ];
  for (const f of rows) {
    lines.push(
      `| ${f.problem}${f.passed ? '' : ' (failed)'} | ${f.cases} | ${fix(f.problemS, 1)} | ${fix(f.oneCaseS, 2)} | ` +
        `${fix(f.problemS / f.oneCaseS, 2)}× | ${phases.map((p) => fix(f.phasesS[p] ?? 0, 2)).join(' | ')} | ` +
        `${fix(f.score, 3)} | ${fix(f.scoreCiPct, 2)} | ${fix(f.worstCaseCiPct, 2)} | ${fix(f.minCandidateUs, 1)} |`,
    );
  }
  const failed = rows.filter((f) => !f.passed);
  for (const f of failed) lines.push('', `${f.problem} failed: ${f.error ?? 'unknown'}`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      problems: { type: 'string' },
      preset: { type: 'string' },
      budget: { type: 'string' },
      write: { type: 'boolean' },
      json: { type: 'string' },
    },
  });
  const p = probe();
  if (!p.ok) {
    console.log(`skipped: ${p.reason ?? 'no usable CUDA GPU'}`);
    return;
  }
  const names = values.problems?.split(',') ?? problemNames();
  const preset = values.preset as PresetName | undefined;
  const budgetS = Number(values.budget ?? 1e9);
  const device = Device.get(0);
  const t0 = performance.now();
  const rows: ProblemFigures[] = [];
  for (const [i, name] of names.entries()) {
    if ((performance.now() - t0) / 1e3 > budgetS) {
      console.log(`budget spent: ${names.slice(i).join(', ')} not run`);
      break;
    }
    const f = await one(name, preset, device, i % 2 === 1);
    rows.push(f);
    console.log(JSON.stringify(f));
  }
  const text = table(rows, device.name, preset ?? "each problem's own");
  console.log(`\n${text}`);
  if (values.json !== undefined) writeFileSync(values.json, JSON.stringify({ device: device.name, rows }, null, 2));
  if (values.write === true) {
    let old: string | undefined;
    try {
      old = readFileSync(RESULTS_FILE, 'utf8');
    } catch {
      old = undefined;
    }
    writeFileSync(RESULTS_FILE, replaceSection(old, 'problems', text));
  }
}

await main();
