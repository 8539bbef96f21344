// SPDX-License-Identifier: MIT
// The adversarial suite (test/adversarial/): kernels that game a kernel benchmark in the ways leaderboards have met
// (replayed results, skipped launches, modified inputs, reused memory, lowered precision, behaviour that changes when
// timed), and honest kernels that look like them. What can be checked without a GPU: the manifest lists every kernel
// file exactly once and covers every family, with honest look-alikes; the tasks are valid jobs; and every kernel (the
// precise reference of the precision policy's task too) compiles without the toolkit's headers, without a warning,
// and takes the parameters its task's signature lists.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Program, parseArgSpecs, signatureOf, supportedArchs, validateJob } from '../../lib/index.js';
import { layoutOf } from '../../lib/core/args.js';
import { cubinParams } from '../../lib/core/image.js';
import { describeNvrtc } from '../helpers.js';

const FAMILIES = [
  'result-replay',
  'batch-and-skip',
  'first-launch-only',
  'input-mutation',
  'memory-reuse',
  'precision',
  'timing-aware',
  'honest',
] as const;
type Family = (typeof FAMILIES)[number];
type TaskName = 'map' | 'dot' | 'dot-policy';

interface Entry {
  file: string;
  kernel: string;
  task: TaskName;
  family: Family;
  expect: 'pass' | 'fail';
  reported: string;
  why: string;
}

interface Task {
  description: string;
  /** The task whose kernels this one judges again under other check options (it has no kernels of its own). */
  judges?: TaskName;
  /** A job without its source and kernel: what every candidate of the task shares. */
  job: {
    args: string[];
    grid: number;
    block: number;
    reference: { source: { file: string }; kernel: string };
    check: {
      atol: number;
      rtol: number;
      precision?: { reference: { source: { file: string }; kernel: string; args: string[] } };
    };
  };
  note: string;
}

const SUITE = new URL('../adversarial/', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, SUITE), 'utf8');
const manifest = JSON.parse(read('manifest.json')) as Entry[];
const tasks = JSON.parse(read('tasks.json')) as Record<TaskName, Task>;
const ENTRY_KEYS = ['expect', 'family', 'file', 'kernel', 'reported', 'task', 'why'];

/** The source's leading comment: its lines up to the first that is not a comment. */
function header(source: string): string {
  const lines = source.split('\n');
  const end = lines.findIndex((line) => !line.startsWith('//'));
  return lines.slice(0, end === -1 ? lines.length : end).join('\n');
}

describe('the adversarial suite: manifest and tasks', () => {
  it('lists every kernel file exactly once, each entry with the fields it must have', () => {
    expect(manifest.length).toBeGreaterThanOrEqual(25);
    const files = readdirSync(new URL('kernels/', SUITE)).map((f) => `kernels/${f}`);
    expect(files.every((f) => f.endsWith('.cu'))).toBe(true);
    expect(manifest.map((e) => e.file).sort()).toEqual(files.sort());
    expect(new Set(manifest.map((e) => e.kernel)).size).toBe(manifest.length);
    for (const e of manifest) {
      expect(Object.keys(e).sort(), e.file).toEqual(ENTRY_KEYS);
      expect(e.kernel, e.file).toBe(e.file.slice('kernels/'.length, -'.cu'.length).replaceAll('-', '_'));
      expect(Object.keys(tasks), e.file).toContain(e.task);
      expect(FAMILIES, e.file).toContain(e.family);
      expect(['pass', 'fail'], e.file).toContain(e.expect);
      expect(e.reported.length, e.file).toBeGreaterThan(0);
      expect(e.why, e.file).toMatch(/^\S.*\.$/);
    }
  });

  it('covers every family with variants, and has honest look-alikes that must pass', () => {
    for (const family of FAMILIES) {
      const members = manifest.filter((e) => e.family === family);
      expect(members.length, family).toBeGreaterThanOrEqual(family === 'honest' ? 6 : 2);
      // The honest kernels are the ones that must pass; every other family's must fail.
      expect(new Set(members.map((e) => e.expect)), family).toEqual(new Set([family === 'honest' ? 'pass' : 'fail']));
    }
    const lookalikes = manifest.filter((e) => e.expect === 'pass' && e.reported === 'look-alike');
    expect(lookalikes.length).toBeGreaterThanOrEqual(6);
    // The precision family needs a reduction; its honest side is there too.
    expect(manifest.filter((e) => e.family === 'precision').every((e) => e.task === 'dot')).toBe(true);
    expect(lookalikes.filter((e) => e.task === 'dot').length).toBeGreaterThanOrEqual(2);
  });

  it.each(manifest.map((e) => [e.file, e] as const))(
    '%s starts with the licence line, says its family and verdict, and defines its kernel',
    (_, e) => {
      const source = read(e.file);
      expect(source.startsWith('// SPDX-License-Identifier: MIT\n')).toBe(true);
      const said = /Family: ([a-z -]+?) \(expect: (pass|fail)\)/.exec(header(source));
      expect(said, 'the header names the family and the verdict').not.toBeNull();
      expect(said![1]!.replaceAll(' ', '-')).toBe(e.family);
      expect(said![2]).toBe(e.expect);
      expect(source).toContain(`extern "C" __global__ void ${e.kernel}(`);
      expect(source).not.toMatch(/#include/);
    },
  );

  it.each(Object.entries(tasks))(
    'task %s: its arguments parse, it makes a valid job, and its reference is the suite’s',
    (name, task) => {
      const specs = parseArgSpecs(task.job.args);
      expect(specs.filter((s) => s.kind === 'buffer' && s.role === 'out')).toHaveLength(1);
      const { reference } = task.job;
      expect(() => validateJob({ ...task.job, source: reference.source, kernel: reference.kernel })).not.toThrow();
      const entry = manifest.find((e) => e.file === reference.source.file);
      const own = task.judges ?? name;
      expect(entry).toMatchObject({ kernel: reference.kernel, task: own, family: 'honest', expect: 'pass' });
      expect(manifest.filter((e) => e.reported === 'reference' && e.task === own)).toEqual([entry]);
      if (task.judges !== undefined) {
        expect(manifest.some((e) => e.task === name)).toBe(false);
        expect(tasks[task.judges].job.args).toEqual(task.job.args);
      }
      expect(task.job.check.atol).toBeGreaterThan(0);
      expect(task.job.check.rtol).toBeGreaterThan(0);
      expect(task.note.length).toBeGreaterThan(0);
      expect(existsSync(new URL(reference.source.file, SUITE))).toBe(true);
    },
  );
});

describeNvrtc('the adversarial suite compiles', () => {
  it('dot-policy’s precise reference compiles, and takes the parameters its own arguments list', () => {
    const precise = tasks['dot-policy'].job.check.precision!.reference;
    const code = new Program(read(precise.source.file), { name: precise.source.file }).compile({
      arch: 'sm_90',
      cudaIncludes: false,
      cache: false,
    });
    expect(code.log, 'warnings').toBe('');
    const params = cubinParams(code.bytes, precise.kernel);
    const signature = signatureOf(parseArgSpecs(precise.args));
    expect(params!.map((p) => p.size)).toEqual(signature.map((p) => layoutOf(p, precise.kernel).size));
  });

  it.each(manifest.map((e) => [e.file, e] as const))(
    '%s: compiles for sm_90 without headers or warnings, and takes its task’s parameters',
    (_, e) => {
      expect(supportedArchs()).toContain(90);
      const source = read(e.file);
      const name = e.file.slice('kernels/'.length);
      const code = new Program(source, { name }).compile({ arch: 'sm_90', cudaIncludes: false, cache: false });
      expect(code.log, 'warnings').toBe('');
      const params = cubinParams(code.bytes, e.kernel);
      expect(params, `${e.kernel} in the cubin`).toBeDefined();
      const signature = signatureOf(parseArgSpecs(tasks[e.task].job.args));
      expect(params).toHaveLength(e.task === 'map' ? 3 : 5);
      expect(params!.map((p) => p.size)).toEqual(signature.map((p) => layoutOf(p, e.kernel).size));
    },
  );
});
