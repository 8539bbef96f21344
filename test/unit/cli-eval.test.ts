// SPDX-License-Identifier: MIT
// `cudakit eval problem kernel.cu` before any GPU work: its help, the launch options' expressions (split at the
// commas outside calls), and every usage error (a problem that cannot be read or is invalid, a kernel it cannot
// name, a launch it cannot read), each a `cudakit:` line and exit 2.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchOf } from '../../lib/cli/eval.js';
import { cli } from '../helpers.js';

let dir = '';
const PROBLEM = {
  name: 'vadd',
  dims: { n: {} },
  args: ['a@ptr:f32[n]=normal(0,1)', 'b@ptr:f32[n]=normal(0,1)', 'c@ptr:f32[n]:out', 'n@i32=n'],
  reference: { source: { file: 'ref.cu' }, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 },
  cases: [{ dims: { n: 1000 } }, { dims: { n: 5000 }, visibility: 'hidden' }],
};
const ADD = 'extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {}\n';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cudakit-cli-eval-'));
  writeFileSync(join(dir, 'problem.json'), JSON.stringify(PROBLEM));
  writeFileSync(join(dir, 'ref.cu'), ADD);
  writeFileSync(join(dir, 'two.cu'), `${ADD}extern "C" __global__ void other() {}\n`);
  writeFileSync(join(dir, 'broken.json'), '{ "name": ');
  writeFileSync(join(dir, 'null.json'), 'null');
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...PROBLEM, cases: [{ dims: { n: 0 } }] }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('launchOf', () => {
  it('reads integers as numbers and splits only at commas outside parentheses', () => {
    expect(launchOf('256', '--block')).toBe(256);
    expect(launchOf('cdiv(n, 256)', '--grid')).toBe('cdiv(n, 256)');
    expect(launchOf('cdiv(n, 32), max(m, 1), 2', '--grid')).toEqual(['cdiv(n, 32)', 'max(m, 1)', 2]);
  });

  it('refuses more than three sizes and empty ones', () => {
    expect(() => launchOf('1,2,3,4', '--grid')).toThrow(
      "--grid expects 1 to 3 sizes or expressions separated by commas, not '1,2,3,4'",
    );
    expect(() => launchOf('n,,2', '--block')).toThrow(/--block expects 1 to 3/);
  });
});

describe('cudakit eval: usage', () => {
  it('has its own help, and is listed in the usage', async () => {
    const help = await cli(['eval', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: cudakit eval <problem> <file\.cu> \[options\]\n/);
    expect(help.stdout).toMatch(/--cases <all\|public> {8}every case \(default\), or the public ones only/);
    expect((await cli(['--help'])).stdout).toMatch(/\n {2}eval <problem> <file\.cu> {4}a kernel through every case/);
  });

  it('says what is wrong, exit 2, before any GPU work', async () => {
    const p = join(dir, 'problem.json');
    const ref = join(dir, 'ref.cu');
    const cases: [string[], RegExp][] = [
      [['eval', p], /^cudakit: eval takes a problem \(problem\.json or its folder\) and a kernel/],
      [['eval', join(dir, 'missing.json'), ref], /^cudakit: cannot read the problem .*missing\.json: no such file/],
      [['eval', join(dir, 'broken.json'), ref], /^cudakit: cannot read the problem .*broken\.json: not JSON/],
      [
        ['eval', dir, join(dir, 'two.cu'), '--grid', '1', '--block', '1'],
        /eval needs --kernel <name>: .* has kernels add, other/,
      ],
      [['eval', dir, ref], /^cudakit: eval needs --grid and --block over the problem's dimensions/],
      [['eval', dir, join(dir, 'null.json')], /^cudakit: cannot read the submission .*null\.json: not a JSON object/],
      [['eval', dir, ref, '--grid', 'cdiv(n, 256', '--block', '256'], /for submission\.grid at column 12/],
      [
        ['eval', dir, ref, '--grid', 'cdiv(m, 256)', '--block', '256'],
        /dimensions \(n\) for submission\.grid.*uses 'm'/,
      ],
      [
        ['eval', join(dir, 'bad.json'), ref, '--grid', '1', '--block', '1'],
        /problem\.cases\[0\]\.dims\.n but received 0/,
      ],
      [['eval', dir, ref, '--grid', '1', '--block', '1', '--cases', 'some'], /--cases expects all, public, not 'some'/],
      [
        ['eval', dir, ref, '--grid', '1', '--block', '1', '--preset', 'slow'],
        /--preset expects quick, default, rigorous/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
  });
});
