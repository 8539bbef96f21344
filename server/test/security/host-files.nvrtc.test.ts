// SPDX-License-Identifier: MIT
// A job's compile reads no host file, whatever its includes and source names spell: the worker's compile step
// (runJob, as the worker calls it) with real NVRTC and no GPU (compile.arch given, so the job ends at its compile).
// Secrets wait where NVRTC could once reach them: in the folder the worker runs in, in the server's folder (a source
// named after it), in the system's temporary folder, in /etc/passwd (a worker started in /, as under systemd) and in
// this process's environment (/proc/self/environ). Admission is not asked: the worker must hold by itself.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { EvalJob } from '../../../lib/index.js';
import { prepareForRun, runJob } from '../../src/run/worker/run.js';
import { describeNvrtc } from '../../../test/helpers.js';

const SECRET = `S${randomBytes(12).toString('hex')}`;
/** A sentinel file's text: NVRTC quotes an #error's text in its log, as it quotes most of what it cannot parse. */
const SENTINEL = `#error ${SECRET}\n`;
const ENV_NAME = 'CUDAKIT_SERVER_TEST_SENTINEL';
/** What /etc/passwd holds on every Linux host. */
const PASSWD = /root:x?:0:0/;
/** NVRTC's words for an include it did not find (11.8: could not, 13: cannot): each attack must end in them. */
const NOT_FOUND = /(could not|cannot) open source file/;

let workerDir = '';
let serverDir = '';
let tmpFile = '';
let startDir = '';

beforeAll(() => {
  startDir = process.cwd();
  process.env[ENV_NAME] = SECRET;
  // The folder the worker runs in, with files under every name an include below spells.
  workerDir = mkdtempSync(join(tmpdir(), 'cudakit-worker-dir-'));
  for (const name of ['secret.txt', 'package.json', 'passwd', 'environ', 'sentinel.txt']) {
    writeFileSync(join(workerDir, name), SENTINEL);
  }
  mkdirSync(join(workerDir, 'etc'));
  writeFileSync(join(workerDir, 'etc', 'passwd'), SENTINEL);
  serverDir = mkdtempSync(join(tmpdir(), 'cudakit-server-dir-'));
  writeFileSync(join(serverDir, 'sentinel.txt'), SENTINEL);
  tmpFile = join(tmpdir(), `cudakit-sentinel-${randomBytes(6).toString('hex')}.txt`);
  writeFileSync(tmpFile, SENTINEL);
});
afterAll(() => {
  process.chdir(startDir);
  delete process.env[ENV_NAME];
  for (const p of [workerDir, serverDir, tmpFile]) rmSync(p, { recursive: true, force: true });
});

const kernel = (include: string): string =>
  `${include}\nextern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n`;

const job = (source: EvalJob['source'], more: Partial<EvalJob> = {}): EvalJob => ({
  source,
  kernel: 'k',
  grid: 1,
  block: 32,
  args: ['ptr:f32[32]:out'],
  compile: { arch: 'sm_80', cache: false },
  ...more,
});

const NAMES: Array<string | undefined> = [
  undefined,
  '/etc/x.cu',
  '/proc/self/x.cu',
  `../../../../../..${tmpdir()}/x.cu`,
  '..\\..\\etc\\x.cu',
];

/**
 * Every way a job could name a host file: each include spelling in a source under each name, and the reference's, the
 * compare kernel's and the precise reference's names (they reach NVRTC the same way) with the first include.
 */
function attacks(
  includes: readonly string[],
  names: readonly (string | undefined)[],
): Array<{ what: string; job: EvalJob }> {
  const out: Array<{ what: string; job: EvalJob }> = [];
  for (const name of names) {
    for (const include of includes) {
      const source = name === undefined ? kernel(include) : { text: kernel(include), name };
      out.push({ what: `${include} in ${name ?? 'a text source'}`, job: job(source) });
    }
    if (name === undefined) continue;
    const ref = { source: { text: kernel(includes[0]!), name }, kernel: 'k' };
    out.push({ what: `reference: ${includes[0]} in ${name}`, job: job(kernel(''), { reference: ref }) });
    out.push({ what: `compare: ${includes[0]} in ${name}`, job: job(kernel(''), { compare: ref }) });
    const honest = { source: kernel(''), kernel: 'k' };
    const precise = { reference: honest, check: { precision: { reference: ref } } };
    out.push({ what: `precise: ${includes[0]} in ${name}`, job: job(kernel(''), precise) });
  }
  return out;
}

/** Each attack's report as one string (the log, the diagnostics, the messages), two compiles at a time. */
async function reportTexts(
  list: Array<{ what: string; job: EvalJob }>,
): Promise<Array<{ what: string; text: string }>> {
  const out: Array<{ what: string; text: string }> = [];
  for (let i = 0; i < list.length; i += 2) {
    const pair = list.slice(i, i + 2);
    const reports = await Promise.all(pair.map(async (a) => (await runJob(a.job, 'salt')).report));
    pair.forEach((a, k) => out.push({ what: a.what, text: JSON.stringify(reports[k]) }));
  }
  return out;
}

describeNvrtc('security: a job reads no host file through NVRTC', () => {
  it("in the folder the worker runs in, the server's folder and the temporary folder", async () => {
    process.chdir(workerDir);
    const includes = [
      '#include "secret.txt"',
      '#include "etc/passwd"',
      '#include "package.json"',
      '#include <package.json>',
      `#include "${basename(tmpFile)}"`,
      `#include "${tmpFile.slice(1)}"`,
      '#include "sentinel.txt"',
    ];
    const names = [...NAMES, join(workerDir, 'x.cu'), join(serverDir, 'x.cu'), join(tmpdir(), 'x.cu')];
    try {
      for (const r of await reportTexts(attacks(includes, names))) {
        expect(r.text, r.what).not.toContain(SECRET);
        expect(r.text, r.what).toMatch(NOT_FOUND);
      }
    } finally {
      process.chdir(startDir);
    }
  });

  it('started in / (as under systemd): neither /etc/passwd nor its own environment', async () => {
    process.chdir('/');
    const includes = [
      '#include "etc/passwd"',
      '#include "proc/self/environ"',
      '#include "passwd"',
      '#include "environ"',
    ];
    try {
      for (const r of await reportTexts(attacks(includes, NAMES))) {
        expect(r.text, r.what).not.toContain(SECRET);
        expect(r.text, r.what).not.toMatch(PASSWD);
        // Found, a host file fails the compile in words that need not quote it (NVRTC 11.8 quotes neither file).
        expect(r.text, r.what).toMatch(NOT_FOUND);
      }
    } finally {
      process.chdir(startDir);
    }
  });

  it('a kernel name or name expression on two lines includes nothing (NVRTC writes each as a line)', async () => {
    const template = 'template <int N> __global__ void k(float* x) { x[threadIdx.x] = N; }\n';
    const smuggled = `k<1>\n#include "${tmpFile}"`;
    const jobs = [
      job(template, { kernel: smuggled }),
      job(template, { kernel: 'k<1>', compile: { arch: 'sm_80', cache: false, nameExpressions: [smuggled] } }),
    ];
    for (const r of await reportTexts(jobs.map((j, i) => ({ what: `job ${i}`, job: j })))) {
      expect(r.text, r.what).not.toContain(SECRET);
      expect(r.text, r.what).toContain('a name expression on one line');
    }
  });

  it('still compiles what a job may include: its in-memory headers', async () => {
    process.chdir(workerDir);
    const source = '#include "scale.h"\nextern "C" __global__ void k(float* x) { x[threadIdx.x] = SCALE; }\n';
    const { report } = await runJob(
      job({ text: source, name: '/etc/x.cu' }, { headers: { 'scale.h': '#define SCALE 2.0f\n' } }),
      'salt',
    );
    process.chdir(startDir);
    // Past the compile: the job fails only where a GPU is needed (or passes, on a machine with one).
    expect(report.phase).not.toBe('compile');
  });

  it('gives NVRTC bare program names: the client keeps its names in the stored job only', () => {
    const ref = { source: { text: 'x', name: '/proc/self/r.cu' }, kernel: 'k' };
    const run = prepareForRun(
      job(
        { text: 'x', name: '/etc/x.cu' },
        {
          reference: ref,
          compare: { ...ref, source: { text: 'x', name: '..\\a\\c.cu' } },
          check: { precision: { reference: { ...ref, source: { text: 'x', name: '/etc/p.cu' } } } },
        },
      ),
      'salt',
      false,
    );
    expect(run.source).toEqual({ text: 'x', name: 'x.cu' });
    expect((run.reference as typeof ref).source.name).toBe('r.cu');
    expect((run.compare as typeof ref).source.name).toBe('c.cu');
    expect((run.check?.precision?.reference as typeof ref).source.name).toBe('p.cu');
    const odd = prepareForRun(job({ text: 'x', name: '/tmp/../' }), 'salt', false);
    expect(odd.source).toEqual({ text: 'x', name: 'kernel.cu' });
  });
});
