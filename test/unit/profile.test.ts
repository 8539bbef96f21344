// SPDX-License-Identifier: MIT
// profile() without a GPU or Nsight Compute: ncu's raw page read from captured-looking output, metrics grouped, the
// command line built, and every way there are no metrics (no ncu, no counter permission, compute-sanitizer, a timeout,
// a failed launch) through stand-in `ncu` scripts that print what the real one prints; and what `cudakit bench
// --metrics` prints of it. The GPU tier profiles a real launch.
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  DEFAULT_DEVICE_METRICS,
  METRIC_GROUPS,
  type EvalJob,
  InvalidJobError,
  type ProfileResult,
  formatDeviceMetrics,
  parseArgSpecs,
  profile,
  profileJob,
} from '../../lib/index.js';
import { benchMetrics, planFromCommandLine } from '../../lib/cli/bench.js';
import { BENCH_FLAGS, metricsOption, parseCommand } from '../../lib/cli/flags.js';
import { KEY_METRICS, formatKeyMetrics, metricsBlock, stallShares } from '../../lib/cli/metrics.js';
import { Output } from '../../lib/cli/output.js';
import { decodeLaunch, encodeLaunch } from '../../lib/measure/profile-launch.js';
import {
  csvFields,
  groupMetrics,
  groupOf,
  inaccessibleMetrics,
  kernelFilter,
  metricValue,
  ncuArguments,
  ncuVersionOf,
  outputTail,
  parseRawPage,
  underComputeSanitizer,
} from '../../lib/measure/profile-ncu.js';
import { findNcu } from '../../lib/measure/profile.js';
import { cli, describeNvrtc, machine } from '../helpers.js';

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/ncu/${name}`, import.meta.url), 'utf8');
const RAW = fixture('copy-raw.csv');
const PERMISSION = fixture('permission.txt');
const VERSION = fixture('version.txt');

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cudakit-profile-test-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let scripts = 0;
/**
 * A stand-in `ncu`: answers --version as ncu 2025.3 does, and otherwise runs `body` (sh) with its arguments in "$@"
 * and $LAST, the launch file (the last argument). Returns its path.
 */
function fakeNcu(body: string): string {
  const path = join(dir, `ncu-${++scripts}`);
  const text = [
    '#!/bin/sh',
    `if [ "$1" = "--version" ]; then cat <<'EOF'\n${VERSION}EOF\nexit 0; fi`,
    'for LAST in "$@"; do :; done',
    body,
    '',
  ].join('\n');
  writeFileSync(path, text);
  chmodSync(path, 0o755);
  return path;
}

/** A file holding `text`, for a fake to cat. */
function dataFile(text: string): string {
  const path = join(dir, `data-${++scripts}`);
  writeFileSync(path, text);
  return path;
}

const io = parseArgSpecs(['ptr:f32[16M]=uniform(-1,1)', 'ptr:f32[16M]:out', 'i64=16777216']);
const launch = {
  code: '// PTX stands in: the fake never loads it\n',
  kernel: 'copy',
  config: { grid: 65536, block: 256 },
  io,
};
const NCU_NOT_FOUND = /^device metrics not collected: ncu \(Nsight Compute\) not found /;

function expectFailure(r: ProfileResult, failure: string): string {
  expect(r.deviceMetrics).toBeNull();
  expect(r.failure).toBe(failure);
  expect(r.warnings).toHaveLength(1);
  return r.warnings[0]!;
}

describe("ncu's raw page", () => {
  it('reads a kernel row after the header and the units row, among ==PROF== lines and the application output', () => {
    const page = parseRawPage(RAW)!;
    expect(page.kernel).toBe('copy');
    expect(page.kernels).toBe(1);
    // Every metric column, and only those (Block Size, Grid Size ... are not metrics).
    expect(Object.keys(page.metrics).sort()).toEqual([...DEFAULT_DEVICE_METRICS].sort());
    expect(page.metrics['dram__bytes_read.sum']).toEqual({ value: 67_240_448, unit: 'byte' });
    expect(page.metrics['dram__bytes_write.sum']).toEqual({ value: 67_174_912, unit: 'byte' });
    expect(page.metrics['dram__throughput.avg.pct_of_peak_sustained_elapsed']).toEqual({ value: 91.85, unit: '%' });
    expect(page.metrics['gpu__time_duration.sum']).toEqual({ value: 29_824, unit: 'nsecond' });
    expect(page.metrics['launch__grid_size']).toEqual({ value: 65_536, unit: '' });
    expect(page.metrics['dram__bytes.sum.per_second']).toEqual({ value: 4_506_933_745_304.52, unit: 'byte/second' });
  });

  it('is absent when no kernel was profiled, and tolerates a page without a units row', () => {
    expect(parseRawPage(PERMISSION)).toBeUndefined();
    expect(parseRawPage('')).toBeUndefined();
    const lines = RAW.split('\n').filter((l) => l.startsWith('"'));
    expect(parseRawPage(lines.slice(0, 2).join('\n'))).toBeUndefined(); // header and units: nothing profiled
    const noUnits = parseRawPage([lines[0], lines[2]].join('\n'))!;
    expect(noUnits.metrics['dram__bytes_read.sum']).toEqual({ value: 67_240_448, unit: '' });
  });

  it('splits quoted CSV fields with commas and doubled quotes', () => {
    expect(csvFields('"a","b, c","(256, 1, 1)","say ""hi""",""')).toEqual(['a', 'b, c', '(256, 1, 1)', 'say "hi"', '']);
    expect(csvFields('1,"x",3')).toEqual(['1', 'x', '3']);
    expect(csvFields('"void scale<float>(float *, int)","7"')).toEqual(['void scale<float>(float *, int)', '7']);
  });

  it('reads numbers with thousands separators and exponents, and keeps text as text', () => {
    expect(metricValue('67,108,864')).toBe(67_108_864);
    expect(metricValue('1,234.5')).toBe(1234.5);
    expect(metricValue('4.0e-05')).toBe(4e-5);
    expect(metricValue('-3')).toBe(-3);
    expect(metricValue('.5')).toBe(0.5);
    expect(metricValue('n/a')).toBe('n/a');
    expect(metricValue('1,2')).toBe('1,2'); // not thousands grouping
    expect(metricValue('27.595.520')).toBe('27.595.520');
    expect(metricValue('(1, 1, 1)')).toBe('(1, 1, 1)');
    expect(metricValue('')).toBe('');
  });

  it("reads ncu's version, the metrics it cannot collect, and a tail without the page", () => {
    expect(ncuVersionOf(VERSION)).toBe('2025.3.1.0');
    expect(ncuVersionOf('no version here')).toBeUndefined();
    const failed = '==ERROR== Failed to access the following 2 metrics: nvlrx__bytes.sum, nvltx__bytes.sum\n';
    expect(inaccessibleMetrics(failed)).toEqual(['nvlrx__bytes.sum', 'nvltx__bytes.sum']);
    expect(inaccessibleMetrics(RAW)).toEqual([]);
    expect(outputTail(RAW)).toBe('cudakit-profile: launched copy');
    expect(outputTail(PERMISSION)).toMatch(/^==ERROR== ERR_NVGPUCTRPERM - The user does not have permission/);
    expect(outputTail('x\n'.repeat(50), 3)).toBe('x\nx\nx');
  });
});

describe('metric groups', () => {
  it('puts every default metric in its group, in the groups of the original server, in order', () => {
    const page = parseRawPage(RAW)!;
    const groups = groupMetrics(page.metrics);
    expect(Object.keys(groups)).toEqual([
      'speedOfLight',
      'memory',
      'compute',
      'pipeline',
      'occupancy',
      'launch',
      'stalls',
      'scheduler',
      'accessPattern',
      'roofline',
    ]);
    for (const [g, names] of Object.entries(METRIC_GROUPS)) {
      expect(Object.keys(groups[g as keyof typeof groups]!).sort(), g).toEqual([...names].sort());
    }
    expect(groups.memory!['dram__bytes_read.sum']).toBe(page.metrics['dram__bytes_read.sum']);
    expect(new Set(DEFAULT_DEVICE_METRICS).size).toBe(DEFAULT_DEVICE_METRICS.length); // each in one group
  });

  it("files a section's metrics by family, and the rest under 'other'", () => {
    expect(groupOf('launch__occupancy_per_block_size')).toBe('launch');
    expect(groupOf('launch__occupancy_limit_barriers')).toBe('occupancy');
    expect(groupOf('smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio')).toBe('stalls');
    expect(groupOf('device__attribute_display_name')).toBe('other');
    const groups = groupMetrics({ 'x__y.sum': { value: 1, unit: '' }, launch__grid_size: { value: 2, unit: '' } });
    expect(groups).toEqual({
      launch: { launch__grid_size: { value: 2, unit: '' } },
      other: { 'x__y.sum': { value: 1, unit: '' } },
    });
  });

  it('prints them by group with readable sizes', () => {
    const page = parseRawPage(RAW)!;
    const text = formatDeviceMetrics({
      kernel: page.kernel,
      metrics: page.metrics,
      groups: groupMetrics(page.metrics),
      ncuVersion: '2025.3.1.0',
      command: [],
      unavailable: [],
      wallMs: 1,
    });
    const lines = text.split('\n');
    expect(lines[0]).toBe('copy (ncu 2025.3.1.0, one launch)');
    expect(lines[1]).toBe('speed of light');
    expect(text).toMatch(/\n {2}dram__bytes_read\.sum +67,240,448 byte \(64\.13 MiB\)\n/);
    expect(text).toMatch(/\n {2}dram__throughput\.avg\.pct_of_peak_sustained_elapsed +91\.85%\n/);
    expect(text).toMatch(/\nwarp stalls\n {2}smsp__warp_issue_stalled_long_scoreboard_per_warp_active\.pct +88\.49%\n/);
    expect(text.endsWith('\n')).toBe(false);
    expect(() => formatDeviceMetrics(null as never)).toThrow(TypeError);
  });
});

describe('warp stalls and occupancy among the defaults', () => {
  it('collects every stall reason but selected (no stall) and gmma (Hopper only), and what the summary reads', () => {
    const reasons = METRIC_GROUPS.stalls.map((name) => {
      expect(groupOf(name), name).toBe('stalls');
      return /^smsp__warp_issue_stalled_(\w+)_per_warp_active\.pct$/.exec(name)?.[1];
    });
    expect(reasons.sort()).toEqual([
      'barrier',
      'branch_resolving',
      'dispatch_stall',
      'drain',
      'imc_miss',
      'lg_throttle',
      'long_scoreboard',
      'math_pipe_throttle',
      'membar',
      'mio_throttle',
      'misc',
      'no_instruction',
      'not_selected',
      'short_scoreboard',
      'sleeping',
      'tex_throttle',
      'wait',
    ]);
    for (const name of Object.values(KEY_METRICS)) expect(DEFAULT_DEVICE_METRICS, name).toContain(name);
    expect(groupOf(KEY_METRICS.achievedOccupancy)).toBe('occupancy');
    expect(groupOf(KEY_METRICS.memory)).toBe('speedOfLight');
  });
});

describe('the ncu command line', () => {
  it('profiles one launch of one kernel, cold caches, clocks as they are, in base units', () => {
    const args = ncuArguments('copy', { metrics: ['a__b.sum', 'c__d.pct'], sections: [] }, ['node', 'child.js', 'f']);
    expect(args).toEqual([
      '--csv',
      '--page',
      'raw',
      '--print-units',
      'base',
      '--cache-control',
      'all',
      '--clock-control',
      'none',
      '--target-processes',
      'all',
      '--kernel-name-base',
      'mangled',
      '--kernel-name',
      'regex:^copy$',
      '--launch-count',
      '1',
      '--metrics',
      'a__b.sum,c__d.pct',
      'node',
      'child.js',
      'f',
    ]);
    const sections = ncuArguments('k', { metrics: [], sections: ['SpeedOfLight', 'Occupancy'] }, ['app']);
    expect(sections.slice(-5)).toEqual(['--section', 'SpeedOfLight', '--section', 'Occupancy', 'app']);
    expect(sections).not.toContain('--metrics');
  });

  it('matches the symbol exactly, regex characters escaped', () => {
    expect(kernelFilter('_Z5scaleIfEvPT_S0_i')).toBe('regex:^_Z5scaleIfEvPT_S0_i$');
    expect(kernelFilter('k.clone$1')).toBe('regex:^k\\.clone\\$1$');
  });

  it('launch files carry what JSON cannot: bigints, bytes, non-finite numbers', () => {
    const specs = parseArgSpecs(['i64=9007199254740993', 'ptr:u8[4]=data(AQIDBA==)', 'f32=2.5']);
    const file = {
      image: new Uint8Array([0, 1, 2, 255]),
      symbol: 'k',
      signature: ['i64' as const, 'ptr' as const, 'f32' as const],
      config: { grid: [2, 2] as [number, number], block: 32 },
      io: [...specs, { kind: 'scalar' as const, type: 'f32' as const, value: Number.NaN }],
      seed: 7,
    };
    const back = decodeLaunch(encodeLaunch(file));
    expect(back).toEqual(file);
    expect(back.io[0]).toMatchObject({ value: 9007199254740993n });
    expect(back.image).toBeInstanceOf(Uint8Array);
  });
});

describe('profile() without metrics', () => {
  it('resolves to null and says where ncu was looked for, given a path or not', async () => {
    const missing = join(dir, 'no-such-ncu');
    const given = expectFailure(await profile(launch, { ncu: missing }), 'ncu-not-found');
    expect(given).toMatch(NCU_NOT_FOUND);
    expect(given).toContain(`at ${missing}`);
    const saved = process.env.PATH;
    process.env.PATH = dir; // no ncu here
    try {
      const onPath = expectFailure(await profile(launch), 'ncu-not-found');
      expect(onPath).toBe(
        'device metrics not collected: ncu (Nsight Compute) not found on PATH: ' +
          'install Nsight Compute, or give its path',
      );
    } finally {
      process.env.PATH = saved;
    }
    // A file that is not executable is not an ncu.
    expect(findNcu(dataFile('#!/bin/sh\n'))).toBeUndefined();
  });

  it('names ERR_NVGPUCTRPERM and its remedies when ncu may not read the counters', async () => {
    const ncu = fakeNcu(`cat '${dataFile(PERMISSION)}'\nexit 1`);
    const w = expectFailure(await profile(launch, { ncu }), 'permission');
    expect(w).toMatch(/^device metrics not collected: ncu was refused \(ERR_NVGPUCTRPERM\)/);
    expect(w).toContain('NVreg_RestrictProfilingToAdminUsers=0');
    expect(w).toContain('/etc/modprobe.d/');
    expect(w).toMatch(/root \(or with CAP_SYS_ADMIN\)/);
  });

  for (const processGroup of ['own', 'caller'] as const) {
    it(`kills ncu and what it started when it runs past timeoutMs (processGroup '${processGroup}')`, async () => {
      const pids = join(dir, `pids-${processGroup}`);
      // The fake and a child of its own, both of which must be gone afterwards.
      const ncu = fakeNcu(`echo "==PROF== Connected to process $$"\nsleep 30 &\necho $$ $! > '${pids}'\nwait`);
      const t0 = performance.now();
      const w = expectFailure(await profile(launch, { ncu, timeoutMs: 1500, processGroup }), 'timeout');
      expect(performance.now() - t0).toBeLessThan(10_000);
      expect(w).toMatch(/^device metrics not collected: ncu did not finish within 2 s and was killed/);
      // Alive: still there and not a zombie (a killed orphan waits for init to reap it).
      const alive = readFileSync(pids, 'utf8')
        .trim()
        .split(' ')
        .filter((pid) => {
          try {
            const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
            return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
          } catch {
            return false;
          }
        });
      expect(alive).toEqual([]);
    });
  }

  it('says the launch failed, with the last output, when the application did not finish its launch', async () => {
    const ncu = fakeNcu(
      [
        'echo "==PROF== Connected to process 4242 (/usr/bin/node)"',
        'echo "cudakit-profile: CUDA_ERROR_INVALID_VALUE: cuLaunchKernel failed" >&2',
        'echo "==PROF== Disconnected from process 4242"',
        'echo "==ERROR== The application returned an error code (1)." >&2',
        'echo "==WARNING== No kernels were profiled." >&2',
        'exit 1',
      ].join('\n'),
    );
    const w = expectFailure(await profile(launch, { ncu }), 'launch-failed');
    expect(w).toMatch(
      /^device metrics not collected: the profiled launch of copy failed \(exit code 1\); its last output:\n/,
    );
    expect(w).toContain('cudakit-profile: CUDA_ERROR_INVALID_VALUE: cuLaunchKernel failed');
    expect(w).not.toContain('==PROF== Connected');
  });

  it('runs the child it names, which reports why it could not launch (or launches, on a GPU)', async () => {
    // The fake runs the application part of its command line, as ncu does, and profiles nothing.
    const ncu = fakeNcu(
      'while [ $# -gt 0 ] && [ "$1" != "--launch-count" ]; do shift; done\nshift 2\n' +
        'while [ "$1" = "--metrics" ] || [ "$1" = "--section" ]; do shift 2; done\n"$@"',
    );
    const r = await profile(launch, { ncu, metrics: ['dram__bytes_read.sum'] });
    if (machine.ok) {
      // The PTX above is no module: the launch fails in the child, in the driver's words.
      expect(expectFailure(r, 'launch-failed')).toMatch(/cudakit-profile: .*CUDA_ERROR/);
    } else {
      // The child's own words: the driver's error code, as probe() gives it.
      const code = /^[A-Z_]+/.exec(machine.reason!)![0];
      expect(expectFailure(r, 'launch-failed')).toMatch(new RegExp(`\ncudakit-profile: .*${code}`));
    }
  }, 30_000);
});

describe('profile() under compute-sanitizer', () => {
  it('knows the sanitizer by what it gives the process: its variables, or its libraries mapped', () => {
    const lib = '/usr/local/cuda-13.0/compute-sanitizer/libsanitizer-collection.so';
    const maps = (path: string): string => `7f1c2a000000-7f1c2a400000 r-xp 00000000 fd:01 1234   ${path}\n`;
    expect(underComputeSanitizer({ NV_SANITIZER_INJECTION_PORT_BASE: '49152' }, '')).toBe(true);
    expect(underComputeSanitizer({ CUDA_INJECTION64_PATH: lib }, '')).toBe(true);
    expect(underComputeSanitizer({}, maps(lib))).toBe(true);
    expect(underComputeSanitizer({}, maps('/opt/compute-sanitizer/libsanitizer-public.so'))).toBe(true);
    // Not the sanitizer: ncu's own injection, a launcher library both tools ship, a folder named after the tool.
    const ncuInjection =
      '/opt/nvidia/nsight-compute/2025.3.1/target/linux-desktop-glibc_2_11_3-x64/libcuda-injection.so';
    expect(underComputeSanitizer({ CUDA_INJECTION64_PATH: ncuInjection }, '')).toBe(false);
    expect(underComputeSanitizer({}, maps('/usr/local/cuda/compute-sanitizer/libTreeLauncherTargetInjection.so'))).toBe(
      false,
    );
    expect(underComputeSanitizer({}, maps('/home/me/compute-sanitizer/node'))).toBe(false);
    expect(underComputeSanitizer({}, '')).toBe(false);
  });

  it('resolves to null and says why, without starting ncu', async () => {
    const started = join(dir, 'sanitized-ncu-started');
    const ncu = fakeNcu(`touch '${started}'\ncat '${dataFile(RAW)}'`);
    vi.stubEnv('NV_SANITIZER_INJECTION_PORT_BASE', '49152');
    try {
      const w = expectFailure(await profile(launch, { ncu }), 'sanitizer');
      expect(w).toBe(
        'device metrics not collected: this process runs under compute-sanitizer, and ncu cannot profile a launch ' +
          'it holds: run without it',
      );
      // A missing ncu is said first: it is missing without the sanitizer too.
      const none = expectFailure(await profile(launch, { ncu: join(dir, 'none') }), 'ncu-not-found');
      expect(none).toMatch(NCU_NOT_FOUND);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(existsSync(started)).toBe(false);
  });
});

describe('profile() through a stand-in ncu', () => {
  it('returns the metrics by name and by group, with the command, and leaves no files behind', async () => {
    const argsFile = join(dir, 'args-ok');
    const launchCopy = join(dir, 'launch-ok.json');
    const ncu = fakeNcu(`printf '%s\\n' "$@" > '${argsFile}'\ncp "$LAST" '${launchCopy}'\ncat '${dataFile(RAW)}'`);
    const r = await profile({ ...launch, seed: 7 }, { ncu });
    expect(r.failure).toBeUndefined();
    expect(r.warnings).toEqual([]);
    const m = r.deviceMetrics!;
    expect(m.kernel).toBe('copy');
    expect(m.ncuVersion).toBe('2025.3.1.0');
    expect(m.metrics['dram__bytes_read.sum']).toEqual({ value: 67_240_448, unit: 'byte' });
    expect(m.groups.memory!['dram__bytes_write.sum']).toEqual({ value: 67_174_912, unit: 'byte' });
    expect(m.unavailable).toEqual([]);
    expect(m.wallMs).toBeGreaterThan(0);

    const args = readFileSync(argsFile, 'utf8').trimEnd().split('\n');
    expect(m.command).toEqual([ncu, ...args]);
    const at = args.indexOf('--metrics');
    expect(args.slice(0, at)).toEqual(ncuArguments('copy', { metrics: [], sections: [] }, []));
    expect(args[at + 1]!.split(',')).toEqual(DEFAULT_DEVICE_METRICS);
    // The application: this Node, tsx (from the sources), the child script, the launch file.
    const app = args.slice(at + 2);
    expect(app[0]).toBe(process.execPath);
    expect(app.slice(1, 3)).toEqual(['--import', expect.stringMatching(/^file:.*\/tsx\/dist\/loader\.mjs$/)]);
    expect(app[3]).toMatch(/\/lib\/measure\/profile-child\.ts$/);
    expect(existsSync(app[3]!)).toBe(true);
    expect(existsSync(app[4]!)).toBe(false); // the launch file's directory is removed

    const file = decodeLaunch(readFileSync(launchCopy, 'utf8'));
    expect(file.symbol).toBe('copy');
    expect(file.seed).toBe(7);
    expect(file.signature).toEqual(['ptr', 'ptr', 'i64']);
    expect(file.config).toEqual({ grid: 65536, block: 256 });
    expect(file.io).toEqual(io);
    expect(new TextDecoder().decode(file.image)).toBe(launch.code);
  });

  it('leaves out metrics this GPU does not have, once more without them, and says so', async () => {
    const count = join(dir, 'runs');
    const argsFile = join(dir, 'args-retry');
    const ncu = fakeNcu(
      [
        `echo x >> '${count}'`,
        `if [ "$(wc -l < '${count}')" -eq 1 ]; then`,
        '  echo "==PROF== Connected to process 77 (/usr/bin/node)"',
        '  echo "==ERROR== Failed to access the following 1 metrics: ' +
          'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active" >&2',
        '  exit 1',
        'fi',
        `printf '%s\\n' "$@" > '${argsFile}'`,
        `cat '${dataFile(RAW)}'`,
      ].join('\n'),
    );
    const r = await profile(launch, { ncu });
    const missing = 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active';
    expect(r.deviceMetrics!.unavailable).toEqual([missing]);
    expect(r.warnings).toEqual([`ncu cannot collect 1 metric on this GPU, left out: ${missing}`]);
    const args = readFileSync(argsFile, 'utf8').split('\n');
    expect(args[args.indexOf('--metrics') + 1]!.split(',')).toEqual(
      DEFAULT_DEVICE_METRICS.filter((x) => x !== missing),
    );
    expect(readFileSync(count, 'utf8')).toBe('x\nx\n');
  });

  it('returns the metrics asked for by name, and whatever the sections collect', async () => {
    const ncu = fakeNcu(`cat '${dataFile(RAW)}'`);
    const named = await profile(launch, { ncu, metrics: ['launch__grid_size', 'dram__bytes_read.sum'] });
    expect(Object.keys(named.deviceMetrics!.metrics).sort()).toEqual(['dram__bytes_read.sum', 'launch__grid_size']);
    expect(Object.keys(named.deviceMetrics!.groups)).toEqual(['memory', 'launch']);
    const sections = await profile(launch, { ncu, sections: ['SpeedOfLight'] });
    expect(Object.keys(sections.deviceMetrics!.metrics)).toHaveLength(DEFAULT_DEVICE_METRICS.length);
  });

  it('asks for sections alone when given sections and no metrics', async () => {
    const argsFile = join(dir, 'args-sections');
    const ncu = fakeNcu(`printf '%s\\n' "$@" > '${argsFile}'\ncat '${dataFile(RAW)}'`);
    const r = await profile(launch, { ncu, sections: ['SpeedOfLight'] });
    expect(r.deviceMetrics).not.toBeNull();
    const args = readFileSync(argsFile, 'utf8').split('\n');
    expect(args).not.toContain('--metrics');
    expect(args.slice(args.indexOf('--section'), args.indexOf('--section') + 2)).toEqual(['--section', 'SpeedOfLight']);
  });
});

describe('profile() arguments', () => {
  const rejects = (l: unknown, o: unknown, error: typeof TypeError, message: string) =>
    expect(profile(l as never, o as never)).rejects.toThrow(new error(message));
  it('rejects a bad launch description in the library words, before looking for ncu', async () => {
    await rejects(
      { ...launch, code: 5 },
      undefined,
      TypeError,
      'Expected an ObjectCode, PTX text, or CUBIN / fatbin bytes (a Uint8Array) for launch.code ' +
        'but received 5 of type number',
    );
    await rejects(
      { ...launch, code: '' },
      undefined,
      TypeError,
      "Expected a non-empty module image for launch.code but received '' of type string",
    );
    await rejects(
      { ...launch, kernel: 3 },
      undefined,
      TypeError,
      'Expected a string for launch.kernel but received 3 of type number',
    );
    await rejects(
      { ...launch, config: { grid: 0, block: 1 } },
      undefined,
      RangeError,
      'Expected a positive integer for launch.config.grid but received 0 of type number',
    );
    await rejects(
      { ...launch, config: { grid: [1, 2, 3, 4], block: 1 } },
      undefined,
      TypeError,
      'Expected a positive integer or an array of 1 to 3 of them for launch.config.grid ' +
        'but received an object of type Array',
    );
    await rejects(
      { ...launch, config: { grid: 1, block: 1, stream: {} } },
      undefined,
      TypeError,
      'Expected no stream (the launch runs in a child process, on its default stream) for launch.config.stream ' +
        'but received an object of type Object',
    );
    await expect(
      profile({ ...launch, io: [{ kind: 'buffer', dtype: 'f33', length: 1, role: 'in' }] } as never),
    ).rejects.toThrow(/^Expected an element type \(.*\) for launch\.io\[0\]\.dtype but received 'f33' of type string$/);
    await rejects(
      { ...launch, signature: ['ptr'] },
      undefined,
      RangeError,
      'Expected one parameter type per argument spec (3) for launch.signature but received an object of type Array',
    );
    await rejects(
      { ...launch, seed: -1 },
      undefined,
      RangeError,
      'Expected a non-negative integer for launch.seed but received -1 of type number',
    );
  });

  it('rejects bad options', async () => {
    await rejects(
      launch,
      { metric: ['x__y'] },
      TypeError,
      'Unknown option options.metric; known options: metrics, sections, ncu, timeoutMs, processGroup',
    );
    await rejects(
      launch,
      { metrics: ['a__b,c__d'] },
      TypeError,
      'Expected an ncu metric name such as dram__bytes_read.sum for options.metrics[0] ' +
        "but received 'a__b,c__d' of type string",
    );
    await rejects(
      launch,
      { metrics: [] },
      RangeError,
      'Expected at least one metric (or options.sections) for options.metrics but received an object of type Array',
    );
    await rejects(
      launch,
      { timeoutMs: -1 },
      RangeError,
      'Expected a positive number of ms for options.timeoutMs but received -1 of type number',
    );
    await rejects(
      launch,
      { processGroup: 'mine' },
      TypeError,
      "Expected 'own' or 'caller' for options.processGroup but received 'mine' of type string",
    );
    await rejects(
      launch,
      { ncu: '' },
      TypeError,
      "Expected the path of ncu (or no ncu option: 'ncu' on PATH) for options.ncu but received '' of type string",
    );
  });
});

describeNvrtc('profileJob()', () => {
  const source =
    'template <typename T> __global__ void scale(T* x, T s, int n) { if (threadIdx.x < n) x[threadIdx.x] *= s; }';
  const job: EvalJob = {
    source,
    kernel: 'scale<float>',
    compile: { target: 'ptx', arch: 'compute_80' },
    grid: 1,
    block: 32,
    args: ['ptr:f32[32]=uniform(-1,1):out', 'f32=2', 'i32=32'],
    check: { seed: 11 },
  };

  it("profiles the job's candidate: compiled as evaluate() compiles it, its mangled symbol, check's seed", async () => {
    const launchCopy = join(dir, 'launch-job.json');
    const argsFile = join(dir, 'args-job');
    const ncu = fakeNcu(`printf '%s\\n' "$@" > '${argsFile}'\ncp "$LAST" '${launchCopy}'\ncat '${dataFile(RAW)}'`);
    const r = await profileJob(job, { ncu, metrics: ['dram__bytes_read.sum'] });
    expect(r.deviceMetrics).not.toBeNull();
    const file = decodeLaunch(readFileSync(launchCopy, 'utf8'));
    expect(file.symbol).toMatch(/^_Z5scaleIfEvPT_S0_i$/);
    expect(new TextDecoder().decode(file.image)).toContain(`.entry ${file.symbol}(`);
    expect(file.seed).toBe(11);
    expect(file.io).toEqual(parseArgSpecs(job.args as string[]));
    expect(file.signature).toEqual(['ptr', 'f32', 'i32']);
    const args = readFileSync(argsFile, 'utf8').split('\n');
    expect(args[args.indexOf('--kernel-name') + 1]).toBe(`regex:^${file.symbol}$`);
  });

  it('rejects an invalid job or options before compiling anything', async () => {
    await expect(profileJob({ ...job, grid: 0 })).rejects.toThrow(InvalidJobError);
    await expect(profileJob(job, { baseDir: 1 } as never)).rejects.toThrow(
      'Expected a string for options.baseDir but received 1 of type number',
    );
    await expect(profileJob(job, { timeoutMs: 0 })).rejects.toThrow(RangeError);
  });
});

describe('cudakit profile', () => {
  it('is in the help, with its options', async () => {
    const r = await cli(['--help']);
    expect(r.stdout).toContain('  profile <file.cu | spec.ts> device metrics of one launch from Nsight Compute');
    for (const text of ['--metrics <a,b,...>', '--section <name>', '--ncu <path>', 'cudakit profile examples/saxpy']) {
      expect(r.stdout).toContain(text);
    }
    const own = (await cli(['profile', '--help'])).stdout;
    expect(own).toMatch(/^Usage: cudakit profile <file\.cu \| spec\.ts> \[options\]\n/);
    for (const text of ['--metrics <a,b,...>', '--section <name>', '--ncu <path>', 'cudakit profile examples/saxpy']) {
      expect(own).toContain(text);
    }
  });

  it('checks its command line before the GPU', async () => {
    const cu = join(dir, 'k.cu');
    writeFileSync(cu, 'extern "C" __global__ void k(float* x) { x[0] = 1; }\n');
    const cases: [string[], string][] = [
      [['profile'], 'cudakit: profile takes one source file or spec (see cudakit --help)\n'],
      [['profile', cu], `cudakit: profile needs --kernel <name> (extern "C" kernels in ${cu}: k)\n`],
      [['profile', cu, '--kernel', 'k'], 'cudakit: profile needs --grid and --block, e.g. --grid 4096 --block 256\n'],
      [['profile', cu, '--compare', cu], "cudakit: profile: Unknown option '--compare' (see cudakit --help)\n"],
      [
        ['profile', cu, '--metrics', ','],
        'cudakit: --metrics expects ncu metric names such as dram__bytes_read.sum,dram__bytes_write.sum\n',
      ],
      [
        ['profile', cu, '--section', 'Speed Of Light'],
        "cudakit: --metrics and --section expect ncu names such as dram__bytes_read.sum, not 'Speed Of Light'\n",
      ],
    ];
    for (const [args, stderr] of cases) expect(await cli(args)).toEqual({ code: 2, stdout: '', stderr });
  });

  it('reads a job from JSON, checked like a spec file before the GPU', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{ "kernel": ');
    const r = await cli(['profile', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^cudakit: cannot load ${bad.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: `));
    const invalid = join(dir, 'invalid.json');
    writeFileSync(invalid, JSON.stringify({ source: 'x', kernel: 'k', grid: 0, block: 1, args: ['ptr:f32[1]:out'] }));
    const v = await cli(['profile', invalid]);
    expect(v.code).toBe(2);
    expect(v.stderr).toMatch(/^cudakit: .*invalid\.json: Expected .* for job\.grid but received 0 of type number\n$/);
    if (machine.ok) return;
    const good = join(dir, 'good.json');
    const job = { source: 'extern "C" __global__ void k(float* x) { x[0] = 1; }', kernel: 'k', grid: 1, block: 1 };
    writeFileSync(good, JSON.stringify({ ...job, args: ['ptr:f32[1]:out'] }));
    expect((await cli(['profile', good])).stderr).toMatch(/^cudakit: profile needs a CUDA GPU and none is usable: /);
  });

  it.skipIf(machine.ok)('without a GPU exits 2 with the driver message and its remedy (skipped with one)', async () => {
    const cu = join(dir, 'k2.cu');
    writeFileSync(cu, 'extern "C" __global__ void k(float* x) { x[0] = 1; }\n');
    const r = await cli(['profile', cu, '--kernel', 'k', '--grid', '1', '--block', '1', '--arg', 'ptr:f32[1]:out']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `cudakit: profile needs a CUDA GPU and none is usable: ${machine.reason!.split('\n')[0]}\n` +
        `${machine.remedy!.replace(/^/gm, '  Remedy: ')}\n`,
    );
  });
});

describe('cudakit bench --metrics: the summary under the timing', () => {
  const page = parseRawPage(RAW)!;
  const metrics = (m: Record<string, { value: number | string; unit: string }>) => ({
    kernel: 'copy',
    metrics: m,
    groups: groupMetrics(m),
    ncuVersion: '2025.3.1.0',
    command: [],
    unavailable: [],
    wallMs: 1,
  });

  it('gives speed of light, occupancy and the three largest stalls of a recorded copy', () => {
    expect(formatKeyMetrics(metrics(page.metrics), 'saxpy.cu:copy', false)).toEqual([
      'device metrics of saxpy.cu:copy (ncu 2025.3.1.0, one launch)',
      '  speed of light          memory 91.8% · compute (SM) 14.1% of peak',
      '  occupancy               86.7% achieved · 100% theoretical',
      '  top warp stalls         long_scoreboard 88.5% · drain 2.8% · wait 1.9% of active warps',
    ]);
    expect(formatKeyMetrics(metrics(page.metrics), 'copy', true)[0]).toBe(
      '\x1b[1mdevice metrics of copy\x1b[0m \x1b[2m(ncu 2025.3.1.0, one launch)\x1b[0m',
    );
  });

  it('orders the stalls by share, leaving out selected, zeros and text', () => {
    const stall = (reason: string, value: number | string) => [
      `smsp__warp_issue_stalled_${reason}_per_warp_active.pct`,
      { value, unit: '%' },
    ];
    const m = Object.fromEntries([
      stall('wait', 4),
      stall('selected', 50),
      stall('barrier', 0),
      stall('long_scoreboard', 12.5),
      stall('drain', 'n/a'),
      stall('mio_throttle', 4.5),
      ['smsp__average_warp_latency_issue_stalled_wait.ratio', { value: 99, unit: '' }],
    ]);
    expect(stallShares(m)).toEqual([
      { reason: 'long_scoreboard', percent: 12.5 },
      { reason: 'mio_throttle', percent: 4.5 },
      { reason: 'wait', percent: 4 },
    ]);
    expect(stallShares(page.metrics)).toHaveLength(13); // of the 17 in the recording, 4 at 0 %
  });

  it("reads n/a for what ncu could not collect on this GPU, and adds profile()'s warnings", () => {
    const fewer = Object.fromEntries(
      Object.entries(page.metrics).filter(([name]) => name !== KEY_METRICS.compute && !name.includes('_stalled_')),
    );
    const block = metricsBlock(
      {
        deviceMetrics: metrics({ ...fewer, [KEY_METRICS.theoreticalOccupancy]: { value: 'n/a', unit: '%' } }),
        failure: undefined,
        warnings: [`ncu cannot collect 1 metric on this GPU, left out: ${KEY_METRICS.compute}`],
      },
      'copy',
      false,
      false,
    );
    expect(block.slice(1)).toEqual([
      '  speed of light          memory 91.8% · compute (SM) n/a of peak',
      '  occupancy               86.7% achieved · n/a theoretical',
      '  top warp stalls         n/a',
      `  ⚠ ncu cannot collect 1 metric on this GPU, left out: ${KEY_METRICS.compute}`,
    ]);
  });

  it("says why there are none in one line, with ncu's last output indented below where it tells why", () => {
    const none = (failure: ProfileResult['failure'], warning: string): ProfileResult =>
      ({ deviceMetrics: null, failure, warnings: [warning] }) as ProfileResult;
    const onPath =
      'device metrics not collected: ncu (Nsight Compute) not found on PATH: install Nsight Compute, or give its path';
    expect(metricsBlock(none('ncu-not-found', onPath), 'copy', false, false)).toEqual([`⚠ ${onPath} (--ncu <path>)`]);
    const at = 'device metrics not collected: ncu (Nsight Compute) not found at /opt/ncu';
    expect(metricsBlock(none('ncu-not-found', at), 'copy', false, true)).toEqual([`⚠ ${at}`]);
    const failed =
      'device metrics not collected: the profiled launch of copy failed (exit code 1); its last output:\n' +
      'cudakit-profile: CUDA_ERROR_INVALID_VALUE: cuLaunchKernel failed\n==WARNING== No kernels were profiled.';
    expect(metricsBlock(none('launch-failed', failed), 'copy', true, false)).toEqual([
      '\x1b[33m⚠\x1b[0m device metrics not collected: the profiled launch of copy failed (exit code 1); ' +
        'its last output:',
      '  cudakit-profile: CUDA_ERROR_INVALID_VALUE: cuLaunchKernel failed',
      '  ==WARNING== No kernels were profiled.',
    ]);
  });
});

describeNvrtc('cudakit bench --metrics: profileJob() after the timing (a stand-in ncu)', () => {
  const COPY =
    'extern "C" __global__ void copy(const float* in, float* out, long long n) {\n' +
    '  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n  if (i < n) out[i] = in[i];\n}\n';
  const copyArgs = ['ptr:f32[16M]=uniform(-1,1)', 'ptr:f32[16M]:out', 'i64=16777216'].flatMap((a) => ['--arg', a]);

  /** The plan of `cudakit bench copy.cu ... --metrics [more]`, compiled to PTX so that no GPU is needed. */
  function plan(...more: string[]) {
    const cu = join(dir, 'bench-copy.cu');
    writeFileSync(cu, COPY);
    const { values } = parseCommand(
      'bench',
      ['--kernel', 'copy', '--grid', '65536', '--block', '256', ...copyArgs, '--ptx', '--arch', 'compute_80', ...more],
      BENCH_FLAGS,
    );
    const p = planFromCommandLine(cu, values);
    p.metrics = metricsOption(values)!;
    return p;
  }
  async function run(p: ReturnType<typeof plan>, stream: 'out' | 'err' = 'out') {
    let stdout = '';
    let stderr = '';
    const o = new Output({
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: (t: string) => (stderr += t) },
    });
    const json = await benchMetrics(p, 'bench-copy.cu:copy', o, stream, false);
    return { stdout, stderr, json };
  }

  it("profiles the plan's kernel with the default metrics and prints the summary a blank line below", async () => {
    const argsFile = join(dir, 'args-bench');
    const ncu = fakeNcu(`printf '%s\\n' "$@" > '${argsFile}'\ncat '${dataFile(RAW)}'`);
    const r = await run(plan('--metrics', '--ncu', ncu));
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(
      [
        '',
        'device metrics of bench-copy.cu:copy (ncu 2025.3.1.0, one launch)',
        '  speed of light          memory 91.8% · compute (SM) 14.1% of peak',
        '  occupancy               86.7% achieved · 100% theoretical',
        '  top warp stalls         long_scoreboard 88.5% · drain 2.8% · wait 1.9% of active warps',
        '',
      ].join('\n'),
    );
    // --json: every metric profile() returned, as `cudakit profile --json` writes them.
    expect(r.json.failure).toBeNull();
    expect(r.json.warnings).toEqual([]);
    expect(r.json.deviceMetrics!.metrics).toEqual(parseRawPage(RAW)!.metrics);
    expect(r.json.deviceMetrics!.groups.stalls).toEqual(groupMetrics(parseRawPage(RAW)!.metrics).stalls);
    const args = readFileSync(argsFile, 'utf8').split('\n');
    expect(args[args.indexOf('--kernel-name') + 1]).toBe('regex:^copy$');
    expect(args[args.indexOf('--metrics') + 1]!.split(',')).toEqual(DEFAULT_DEVICE_METRICS);
  });

  it('without ncu: the reason and what to do, on one line; on stderr alone with --json -', async () => {
    const missing = join(dir, 'no-ncu-here', 'ncu');
    const given = await run(plan('--metrics', '--ncu', missing));
    const why = `device metrics not collected: ncu (Nsight Compute) not found at ${missing}`;
    expect(given).toEqual({
      stdout: `\n⚠ ${why}\n`,
      stderr: '',
      json: { deviceMetrics: null, failure: 'ncu-not-found', warnings: [why] },
    });
    expect(await run(plan('--metrics', '--ncu', missing), 'err')).toEqual({
      ...given,
      stdout: '',
      stderr: `⚠ ${why}\n`,
    });
    vi.stubEnv('PATH', dir); // no ncu here
    try {
      const onPath = await run(plan('--metrics'));
      expect(onPath.stdout).toBe(
        '\n⚠ device metrics not collected: ncu (Nsight Compute) not found on PATH: install Nsight Compute, ' +
          'or give its path (--ncu <path>)\n',
      );
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('without counter permission or under compute-sanitizer: the reason and the remedy, on one line', async () => {
    const refused = await run(plan('--metrics', '--ncu', fakeNcu(`cat '${dataFile(PERMISSION)}'\nexit 1`)));
    expect(refused.json.failure).toBe('permission');
    expect(refused.stdout).toMatch(
      /^\n⚠ device metrics not collected: ncu was refused \(ERR_NVGPUCTRPERM\): .*RestrictProfilingToAdminUsers=0/,
    );
    expect(refused.stdout.split('\n')).toHaveLength(3); // '', the line, ''
    vi.stubEnv('NV_SANITIZER_INJECTION_PORT_BASE', '49152');
    try {
      const sanitized = await run(plan('--metrics', '--ncu', fakeNcu(`cat '${dataFile(RAW)}'`)));
      expect(sanitized.json.failure).toBe('sanitizer');
      expect(sanitized.stdout).toBe(
        '\n⚠ device metrics not collected: this process runs under compute-sanitizer, and ncu cannot profile a ' +
          'launch it holds: run without it\n',
      );
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
