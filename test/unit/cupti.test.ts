// SPDX-License-Identifier: MIT
// CUPTI without a GPU: where the library is looked for, how a trace is cut into samples, and when CUPTI is not used
// at all (a CUDA tool attached, compute-sanitizer). The trace itself is the GPU tier's (test/gpu/cupti.test.ts).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { type ActivityRecord, cuptiCandidates, durationTick, sampleDurations } from '../../lib/core/cupti.js';
import { runScript } from '../child.js';

const SONAMES = ['libcupti.so.13', 'libcupti.so.12', 'libcupti.so.11', 'libcupti.so'];

describe('cuptiCandidates', () => {
  const root = mkdtempSync(join(tmpdir(), 'cudakit-cupti-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const touch = (...parts: string[]): string => {
    const file = join(root, ...parts);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, '');
    return file;
  };

  it('takes CUDAKIT_CUPTI_PATH alone: an explicit choice is not second-guessed', () => {
    expect(cuptiCandidates({ CUDAKIT_CUPTI_PATH: '/opt/x/libcupti.so.12', CUDA_PATH: root })).toEqual([
      '/opt/x/libcupti.so.12',
    ]);
  });

  it("tries the loader's names first, then the files that exist under each toolkit root, in order", () => {
    const cuda13 = touch('cuda-13', 'targets', 'x86_64-linux', 'lib', 'libcupti.so.13');
    const cuda12 = touch('cuda-12', 'extras', 'CUPTI', 'lib64', 'libcupti.so.12');
    touch('cuda-12', 'extras', 'CUPTI', 'lib64', 'libcupti.so.12.8'); // not a name the loader asks for
    const list = cuptiCandidates({ CUDA_PATH: join(root, 'cuda-13'), CUDA_HOME: join(root, 'cuda-12') }, '', 'x64');
    expect(list.slice(0, 4)).toEqual(SONAMES);
    expect(list.indexOf(cuda13)).toBeGreaterThan(3);
    expect(list.indexOf(cuda12)).toBeGreaterThan(list.indexOf(cuda13));
    expect(list.some((p) => p.endsWith('.12.8'))).toBe(false);
  });

  it("looks in the arm64 toolkit's sbsa-linux directory on arm64", () => {
    const sbsa = touch('cuda-arm', 'targets', 'sbsa-linux', 'lib', 'libcupti.so.13');
    expect(cuptiCandidates({ CUDA_PATH: join(root, 'cuda-arm') }, '', 'arm64')).toContain(sbsa);
    expect(cuptiCandidates({ CUDA_PATH: join(root, 'cuda-arm') }, '', 'x64')).not.toContain(sbsa);
  });

  it("finds CUPTI beside libnvrtc (CUDA 13's layout) and in the toolkit above it", () => {
    const lib = join(root, 'beside', 'targets', 'x86_64-linux', 'lib');
    const cupti = touch('beside', 'targets', 'x86_64-linux', 'lib', 'libcupti.so.13');
    const old = touch('older', 'extras', 'CUPTI', 'lib64', 'libcupti.so.11');
    expect(cuptiCandidates({}, join(lib, 'libnvrtc.so.13'), 'x64')).toContain(cupti);
    expect(cuptiCandidates({}, join(root, 'older', 'lib64', 'libnvrtc.so.11.2'), 'x64')).toContain(old);
  });

  it("finds NVIDIA's CUPTI wheels in a virtual environment (CUDA 12 and 13 layouts)", () => {
    const venv = join(root, 'venv');
    const cu12 = touch('venv', 'lib', 'python3.11', 'site-packages', 'nvidia', 'cuda_cupti', 'lib', 'libcupti.so.12');
    const cu13 = touch('venv', 'lib', 'python3.12', 'site-packages', 'nvidia', 'cu13', 'lib', 'libcupti.so.13');
    const list = cuptiCandidates({ VIRTUAL_ENV: venv }, '', 'x64');
    expect(list).toContain(cu12);
    expect(list).toContain(cu13);
    expect(list.indexOf(cu13)).toBeLessThan(list.indexOf(cu12)); // the newer Python first
  });

  it('lists each file once however many roots lead to it', () => {
    const file = touch('same', 'targets', 'x86_64-linux', 'lib', 'libcupti.so.13');
    const same = join(root, 'same');
    const list = cuptiCandidates({ CUDA_PATH: same, CUDA_HOME: same }, join(same, 'lib64', 'libnvrtc.so.13'), 'x64');
    expect(list.filter((p) => p === file)).toHaveLength(1);
  });
});

describe('sampleDurations', () => {
  const PROBE = 'cudakit_clock_probe';
  let t = 0;
  /** A record `ns` long starting `gap` ns after the previous one ended. */
  const op = (name: string, ns: number, gap = 1000, kind: ActivityRecord['kind'] = 'kernel'): ActivityRecord => {
    const startNs = t + gap;
    t = startNs + ns;
    return { kind, name: kind === 'kernel' ? name : '', streamId: 7, correlationId: 0, startNs, endNs: t };
  };
  const fresh = (): void => {
    t = 0;
  };

  it("adds a kernel target's kernels between each pair of probes, and leaves the harness's out", () => {
    fresh();
    const records = [
      op('cudakit_flush', 90_000),
      op('cudakit_block', 5_000),
      op(PROBE, 2_000),
      op('saxpy', 4_400),
      op(PROBE, 2_000),
      op('cudakit_flush', 90_000),
      op('cudakit_block', 5_000),
      op(PROBE, 2_000),
      op('saxpy', 4_600),
      op(PROBE, 2_000),
    ];
    expect(sampleDurations(records, PROBE, 2, 'sum')).toEqual([0.0044, 0.0046]);
    // CUPTI delivers records in buffer order, not time order
    expect(sampleDurations([...records].reverse(), PROBE, 2, 'sum')).toEqual([0.0044, 0.0046]);
  });

  it("sums a graph replay's kernels, and spans a function target's work with its gaps", () => {
    fresh();
    const records = [op(PROBE, 2_000), op('k', 3_000), op('k', 3_000, 500), op('copy', 1_000, 500, 'memcpy')];
    records.push(op(PROBE, 2_000));
    expect(sampleDurations(records, PROBE, 1, 'sum')).toEqual([0.007]);
    expect(sampleDurations(records, PROBE, 1, 'span')).toEqual([0.008]);
  });

  it('counts overlapping operations once in a span (work forked to two streams)', () => {
    const open = { kind: 'kernel', name: PROBE, streamId: 1, correlationId: 0, startNs: 0, endNs: 1000 } as const;
    const a = { kind: 'kernel', name: 'a', streamId: 1, correlationId: 0, startNs: 2000, endNs: 12_000 } as const;
    const b = { kind: 'kernel', name: 'b', streamId: 2, correlationId: 0, startNs: 3000, endNs: 9_000 } as const;
    const close = { ...open, startNs: 13_000, endNs: 14_000 };
    expect(sampleDurations([open, a, b, close], PROBE, 1, 'span')).toEqual([0.01]);
    expect(sampleDurations([open, a, b, close], PROBE, 1, 'sum')).toEqual([0.016]);
  });

  it('refuses a trace that does not fit the samples, saying how', () => {
    fresh();
    const one = [op(PROBE, 2_000), op('k', 3_000), op(PROBE, 2_000)];
    expect(() => sampleDurations(one, PROBE, 2, 'sum')).toThrow(
      'CUPTI recorded 2 clock probes for 2 samples (expected 4)',
    );
    fresh();
    const empty = [op(PROBE, 2_000), op(PROBE, 2_000)];
    expect(() => sampleDurations(empty, PROBE, 1, 'sum')).toThrow('CUPTI recorded no GPU operation in sample 0');
    fresh();
    const noTimes = [op(PROBE, 2_000), { ...op('k', 3_000), startNs: -5000, endNs: -5000 }, op(PROBE, 2_000)];
    expect(() => sampleDurations(noTimes, PROBE, 1, 'sum')).toThrow('CUPTI gave a kernel record without timestamps');
    fresh();
    const open = op(PROBE, 2_000);
    const late = op('k', 3_000);
    const close = { ...op(PROBE, 2_000), startNs: late.startNs + 1000 };
    expect(() => sampleDurations([open, late, close], PROBE, 1, 'sum')).toThrow(
      'a kernel record of sample 0 ends after its closing probe',
    );
  });
});

describe('cuptiStatus', () => {
  it('does not use CUPTI when a CUDA tool is attached (ncu, nsys), and says so', async () => {
    vi.resetModules();
    vi.stubEnv('CUDA_INJECTION64_PATH', '/opt/nvidia/nsight-compute/target/libTreeLauncherTargetInjection.so');
    try {
      const { cuptiStatus } = await import('../../lib/core/cupti.js');
      expect(cuptiStatus()).toEqual({
        available: false,
        reason:
          'a CUDA tool is attached (CUDA_INJECTION64_PATH=/opt/nvidia/nsight-compute/target/' +
          'libTreeLauncherTargetInjection.so), and it holds CUPTI',
      });
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

describe('cuptiStatus under compute-sanitizer', () => {
  const SANITIZER = 'this process runs under compute-sanitizer, which holds CUPTI (kernels are timed by events)';

  /** cuptiStatus() of a fresh module with these variables set (and none of the tools' others). */
  async function statusWith(env: Record<string, string>): Promise<unknown> {
    vi.resetModules();
    for (const name of ['CUDA_INJECTION64_PATH', 'NV_SANITIZER_INJECTION_PORT_BASE']) vi.stubEnv(name, undefined);
    for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
    try {
      const { cuptiStatus } = await import('../../lib/core/cupti.js');
      return cuptiStatus();
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  }

  it('knows the sanitizer by its variables, before any other tool, and says so', async () => {
    expect(await statusWith({ NV_SANITIZER_INJECTION_PORT_BASE: '49152' })).toEqual({
      available: false,
      reason: SANITIZER,
    });
    const collection = '/usr/local/cuda-13.0/compute-sanitizer/libsanitizer-collection.so';
    expect(await statusWith({ CUDA_INJECTION64_PATH: collection })).toEqual({ available: false, reason: SANITIZER });
  });

  // The sanitizer need not leave its variables in the environment (the run that failed had none): its libraries
  // mapped into the process say it. A child process with an (empty) library of that name preloaded, so on any machine.
  const cc = spawnSync('sh', ['-c', 'command -v cc']).status === 0;
  it.skipIf(!cc)(`knows it by its libraries mapped into the process${cc ? '' : ' [skipped: no cc]'}`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-sanitizer-'));
    try {
      const lib = join(dir, 'compute-sanitizer', 'libsanitizer-public.so');
      mkdirSync(join(dir, 'compute-sanitizer'));
      const built = spawnSync('cc', ['-shared', '-fPIC', '-o', lib, '-x', 'c', '/dev/null'], { encoding: 'utf8' });
      expect(built.status, built.stderr).toBe(0);
      const script = `import { cuptiStatus } from './lib/core/cupti.ts';
        console.log(JSON.stringify(cuptiStatus()));`;
      const env = { ...process.env };
      delete env.CUDA_INJECTION64_PATH;
      delete env.NV_SANITIZER_INJECTION_PORT_BASE;
      const under = runScript(script, { env: { ...env, LD_PRELOAD: lib } });
      expect(under.stderr).toBe('');
      expect(JSON.parse(under.stdout)).toEqual({ available: false, reason: SANITIZER });
      // The same process without the library is not under the sanitizer (CUPTI may still be missing here).
      const plain = runScript(script, { env });
      expect((JSON.parse(plain.stdout) as { reason?: string }).reason ?? '').not.toContain('compute-sanitizer');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('durationTick', () => {
  /** Records of the given durations, ns, one after the other. */
  const records = (durations: number[]): ActivityRecord[] => {
    let t = 0;
    return durations.map((ns) => {
      const startNs = t + 1000;
      t = startNs + ns;
      return { kind: 'kernel', name: 'k', streamId: 7, correlationId: 0, startNs, endNs: t };
    });
  };
  /** `n` durations on whole 32 ns ticks, 2 µs to 100 µs, spread by a fixed pseudo-random walk. */
  const onTicks = (n: number): number[] => Array.from({ length: n }, (_, i) => 32 * (60 + ((i * 7919) % 3000)));

  it('finds the tick of durations on whole ticks', () => {
    expect(durationTick(records(onTicks(50)))).toBe(32);
  });

  it('finds it when rounding moved durations by 1 ns, where a greatest common divisor falls to 1', () => {
    const rounded = onTicks(50).map((ns, i) => ns + ([0, 1, -1][i % 3] ?? 0));
    expect(durationTick(records(rounded))).toBe(32);
    // one duration off the grid altogether (a tenth may be) does not hide it
    expect(durationTick(records([...rounded, 4850]))).toBe(32);
  });

  it('does not take a divisor of a duration that dominates the trace, and says 0 where it cannot tell', () => {
    // 1000 probes of one duration and a few others on 32 ns ticks: counted by distinct durations, the tick is 32
    const probes = Array.from({ length: 1000 }, () => 2048);
    expect(durationTick(records([...probes, ...onTicks(10)]))).toBe(32);
    expect(durationTick(records(onTicks(5)))).toBeUndefined(); // too few distinct durations: a later trace may tell
    // a timer of 1 ns resolution: no tick of 4 ns or more explains 90 % of them
    const fine = Array.from({ length: 200 }, (_, i) => 5000 + ((i * 7919) % 997));
    expect(durationTick(records(fine))).toBe(0);
  });
});

describe('the native CUPTI loader (cuptiLoad)', () => {
  it('reports every candidate that failed and why, and loads nothing that lacks the activity API', async () => {
    const { getNative } = await import('../../lib/core/native.js');
    const n = getNative();
    const s = n.cuptiLoad(['/nonexistent/libcupti.so.13', 'libc.so.6']);
    expect(s).toMatchObject({ loaded: false, path: '', version: 0 });
    expect(s.tried).toHaveLength(2);
    expect(s.tried[0]).toMatch(/^\/nonexistent\/libcupti\.so\.13: .*No such file/);
    expect(s.tried[1]).toBe('libc.so.6: not a CUPTI library (no activity API)');
    expect(() => n.cuptiActivityStart([10])).toThrow('cuptiActivityStart: CUPTI is not loaded (cuptiLoad)');
    expect(() => n.cuptiActivityStop([10])).toThrow('cuptiActivityStop: no trace is running');
  });
});
