// SPDX-License-Identifier: MIT
// What the service refuses before validateJob (server/src/submit/admission.ts): includes and flags that reach the
// server's files, sources that are files, too much memory, too much source, too deep a body, and launches over the
// smallest GPU's limits (block, grid, dynamic shared memory, cluster), each named with the GPU it comes from.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_ADMISSION_LIMITS,
  DEFAULT_LAUNCH_LIMITS,
  MAX_SOURCE_CHARS,
  admissionProblems,
  declaredDeviceBytes,
  gpuAdmissionLimits,
  gpuLaunchLimits,
  isAllowedFlag,
  nestedDeeperThan,
  unsafeInclude,
  type AdmissionLimits,
} from '../../src/submit/admission.js';
import type { LaunchFacts } from '../../src/run/protocol.js';
import { H200_LAUNCH } from '../../../test/support/devices.js';
import { body } from '../support/helpers.js';

describe('unsafeInclude', () => {
  it.each([
    ['#include "/etc/passwd"'],
    ['  #  include </etc/passwd>'],
    ['%:include "/etc/passwd"'],
    ['??=include "/etc/passwd"'],
    ['#inc\\\nlude "/etc/passwd"'],
    ['#/**/include "/etc/passwd"'],
    ['// a line comment: its /* starts nothing\n#include "/etc/passwd"\n/* */'],
    ['const char* s = "/*";\n#include "/etc/passwd"\n/* */'],
    ['char c = \'"\';\n#include "/etc/passwd"'],
    ['auto s = R"( " /* )";\n#include "/etc/passwd"\n/* */'],
    ['#define P "/etc/passwd"\n#include P'],
    ['#include "../../../etc/passwd"'],
    ['#include "a\\..\\b"'],
    ['#if __has_include("/etc/shadow")\n#endif'],
    ['#include_next "/x"'],
  ])('refuses %j', (source) => {
    expect(unsafeInclude(source)).toBeDefined();
  });

  it.each([
    ['#include <cuda_fp16.h>\n#include "my.h"\n__global__ void k() {}'],
    ['#include <cuda/std/cstdint>'],
    ['/* #include "/etc/passwd" */ int x;'],
    ['const char* s = "#include \\"/etc/passwd\\"";'],
    ['auto s = R"x(\n#include "/etc/passwd"\n)x";'],
  ])('allows %j', (source) => {
    expect(unsafeInclude(source)).toBeUndefined();
  });
});

describe('admissionProblems', () => {
  const limits = DEFAULT_ADMISSION_LIMITS;

  it('accepts an ordinary job', () => {
    expect(admissionProblems(body(), limits)).toEqual([]);
  });

  it("names each include, file source and flag that would reach the server's files", () => {
    const problems = admissionProblems(
      body('x', {
        source: '#include "/etc/passwd"\n',
        headers: { 'a.h': '#include "../secret"' },
        compile: { extraFlags: ['--use_fast_math', '-I/', '-DN=4', '--fdevice-time-trace=/tmp/x'] },
        compare: { source: { file: 'k.cu' }, kernel: 'k', compile: { cache: { dir: '/' } } },
        check: {
          precision: {
            reference: { source: { file: '/etc/passwd' }, kernel: 'p', compile: { extraFlags: ['-I/'] } },
          },
        },
      }),
      limits,
    );
    expect(problems.map((p) => p.path)).toEqual([
      'job.source',
      "job.headers['a.h']",
      'job.compile.extraFlags[1]',
      'job.compile.extraFlags[3]',
      'job.compare.source',
      'job.compare.compile.cache',
      'job.check.precision.reference.source',
      'job.check.precision.reference.compile.extraFlags[0]',
    ]);
    for (const p of problems) expect(p.message).toMatch(/^Expected .* for job\./);
    expect(problems[0]!.message).toContain(`'#include "/etc/passwd"'`);
  });

  it('allows the usual NVRTC flags, and no file-system ones', () => {
    for (const f of ['--use_fast_math', '-DN=4', '--std=c++20', '--ftz=true', '-lineinfo', '--maxrregcount=64']) {
      expect(isAllowedFlag(f), f).toBe(true);
    }
    for (const f of ['-I/', '--include-path=/', '--pre-include=/etc/passwd', '-rdc=true', '-D', '--time=/tmp/t', '']) {
      expect(isAllowedFlag(f), f).toBe(false);
    }
  });

  it('counts declared device bytes from argspecs and objects, and caps them', () => {
    expect(
      declaredDeviceBytes([
        'ptr:f32[1K]:out',
        'i32=4',
        'ptr:bf16[2,3]',
        { kind: 'buffer', dtype: 'f64', shape: [4, 4] },
      ]),
    ).toBe(4096 + 12 + 128);
    expect(declaredDeviceBytes(['ptr:nonsense', 5, null])).toBe(0);
    const [p] = admissionProblems(body('x', { args: ['ptr:f32[1K]:out'] }), { maxDeviceBytes: 1000 });
    expect(p).toMatchObject({ path: 'job.args', type: 'RangeError' });
    expect(p!.message).toBe('Expected buffers of at most 1000 bytes in all for job.args but received 4096 bytes');
    expect(admissionProblems(body('x', { args: ['ptr:f32[250]:out'] }), { maxDeviceBytes: 1000 })).toEqual([]);
  });

  it("caps device bytes at a quarter of the smallest GPU's memory, and says which GPU", () => {
    expect(gpuAdmissionLimits([])).toBeUndefined();
    expect(gpuAdmissionLimits([{ uuid: 'GPU-a', name: 'broken', totalMemoryBytes: 0 }])).toBeUndefined();
    const limits = gpuAdmissionLimits([
      { uuid: 'GPU-a', name: 'NVIDIA H200', totalMemoryBytes: 150_754_820_096 },
      { uuid: 'MIG-b', name: 'NVIDIA H200 MIG 1g.18gb', totalMemoryBytes: 17_985_175_555 },
    ])!;
    expect(limits).toEqual({
      maxDeviceBytes: 4_496_293_888, // floor(17 985 175 555 / 4)
      maxDeviceBytesReason:
        'the limit is a quarter of the memory of the smallest GPU here: NVIDIA H200 MIG 1g.18gb (MIG-b), ' +
        '17985175555 bytes',
    });
    const fits = body('x', { args: [`ptr:u8[${limits.maxDeviceBytes}]:out`] });
    expect(admissionProblems(fits, limits)).toEqual([]);
    const [p] = admissionProblems(body('x', { args: [`ptr:u8[${limits.maxDeviceBytes + 1}]:out`] }), limits);
    expect(p!.message).toBe(
      `Expected buffers of at most 4496293888 bytes in all for job.args but received 4496293889 bytes ` +
        `(${limits.maxDeviceBytesReason})`,
    );
    expect(DEFAULT_ADMISSION_LIMITS.maxDeviceBytes).toBe(8 * 2 ** 30);
  });

  it('refuses bodies nested too deep, or with too much source, before scanning them', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = { a: deep };
    expect(nestedDeeperThan(deep, 32)).toBe(true);
    expect(nestedDeeperThan(body(), 32)).toBe(false);
    expect(admissionProblems(body('x', { signature: [deep] }), limits)).toEqual([
      expect.objectContaining({ path: 'job', type: 'RangeError' }),
    ]);
    const headers = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`h${i}.h`, 'x'.repeat(256 * 1024)]));
    const [big] = admissionProblems(body('x', { headers }), limits);
    expect(big!.message).toContain(`at most ${MAX_SOURCE_CHARS} characters`);
  });
});

describe('launch limits', () => {
  const H200 = { uuid: 'GPU-h200', name: 'NVIDIA H200', launch: H200_LAUNCH };
  const A100: { uuid: string; name: string; launch: LaunchFacts } = {
    uuid: 'GPU-a100',
    name: 'NVIDIA A100-SXM4-80GB',
    launch: { ...H200_LAUNCH, maxSharedMemoryPerBlockOptinBytes: 166_912, maxClusterBlocks: 0 },
  };
  const h200: AdmissionLimits = { maxDeviceBytes: 2 ** 40, launch: gpuLaunchLimits([H200]) };
  const OF_H200 = '(the limit of NVIDIA H200 (GPU-h200))';
  const messages = (extra: Record<string, unknown>, limits = h200): string[] =>
    admissionProblems(body('x', extra), limits).map((p) => `${p.path}: ${p.message}`);

  it("are the smallest GPU's, each naming its GPU; CUDA's own without any GPU's", () => {
    const mixed = gpuLaunchLimits([H200, A100, { uuid: 'GPU-old', name: 'an older agent' }]);
    expect(mixed.maxThreadsPerBlock).toEqual({ max: 1024, reason: 'the limit of NVIDIA H200 (GPU-h200)' });
    expect(mixed.maxBlockDim.map((l) => l.max)).toEqual([1024, 1024, 64]);
    expect(mixed.maxGridDim.map((l) => l.max)).toEqual([2 ** 31 - 1, 65_535, 65_535]);
    expect(mixed.maxSharedMemoryBytes).toEqual({
      max: 166_912,
      reason: 'the limit of NVIDIA A100-SXM4-80GB (GPU-a100)',
    });
    expect(mixed.maxClusterBlocks).toEqual({ max: 0, reason: 'the limit of NVIDIA A100-SXM4-80GB (GPU-a100)' });
    // A limit a probe could not read (0) is not a limit of 0; no launch facts at all: CUDA's own.
    const broken = gpuLaunchLimits([{ ...H200, launch: { ...H200_LAUNCH, maxThreadsPerBlock: 0 } }]);
    expect(broken.maxThreadsPerBlock).toBe(DEFAULT_LAUNCH_LIMITS.maxThreadsPerBlock);
    expect(gpuLaunchLimits([])).toEqual(DEFAULT_LAUNCH_LIMITS);
    expect(gpuLaunchLimits([{ uuid: 'GPU-old', name: 'an older agent' }])).toEqual(DEFAULT_LAUNCH_LIMITS);
    const d = DEFAULT_LAUNCH_LIMITS;
    expect([d.maxThreadsPerBlock.max, d.maxSharedMemoryBytes.max, d.maxClusterBlocks.max]).toEqual([1024, 232_448, 8]);
    expect(d.maxBlockDim.map((l) => l.max)).toEqual([1024, 1024, 64]);
    expect(d.maxGridDim.map((l) => l.max)).toEqual([2 ** 31 - 1, 65_535, 65_535]);
    expect(DEFAULT_ADMISSION_LIMITS.launch).toBe(DEFAULT_LAUNCH_LIMITS);
  });

  it('refuses each limit exceeded, naming the limit and its GPU', () => {
    expect(messages({ block: [1024, 2] })).toEqual([
      `job.block: Expected at most 1024 threads per block for job.block but received 2048 ${OF_H200}`,
    ]);
    expect(messages({ block: 2048 })).toEqual([
      `job.block: Expected at most 1024 threads per block for job.block but received 2048 ${OF_H200}`,
      `job.block: Expected at most 1024 threads along x for job.block but received 2048 ${OF_H200}`,
    ]);
    expect(messages({ block: [1, 2048] })).toContain(
      `job.block: Expected at most 1024 threads along y for job.block but received 2048 ${OF_H200}`,
    );
    expect(messages({ block: [1, 1, 128] })).toEqual([
      `job.block: Expected at most 64 threads along z for job.block but received 128 ${OF_H200}`,
    ]);
    expect(messages({ grid: 2 ** 31 })).toEqual([
      `job.grid: Expected at most 2147483647 blocks along x for job.grid but received 2147483648 ${OF_H200}`,
    ]);
    expect(messages({ grid: [1, 65_536] })).toEqual([
      `job.grid: Expected at most 65535 blocks along y for job.grid but received 65536 ${OF_H200}`,
    ]);
    expect(messages({ grid: [1, 1, 65_536] })).toEqual([
      `job.grid: Expected at most 65535 blocks along z for job.grid but received 65536 ${OF_H200}`,
    ]);
    expect(messages({ sharedMemBytes: 2 ** 40 })).toEqual([
      'job.sharedMemBytes: Expected at most 232448 bytes of dynamic shared memory per block for job.sharedMemBytes ' +
        `but received 1099511627776 ${OF_H200}`,
    ]);
    expect(messages({ clusterDim: [4, 4] })).toEqual([
      `job.clusterDim: Expected at most 8 blocks per cluster for job.clusterDim but received 16 ${OF_H200}`,
    ]);
    // Without any GPU's limits: CUDA's, said so.
    expect(messages({ block: [1, 1, 65] }, { maxDeviceBytes: 2 ** 40 })).toEqual([
      'job.block: Expected at most 64 threads along z for job.block but received 65 ' +
        "(CUDA's limit on every GPU: the GPUs here are not known)",
    ]);
    // Each problem is a RangeError in the library's format.
    for (const p of admissionProblems(body('x', { block: 4096, grid: [1, 1, 1e6] }), h200)) {
      expect(p).toMatchObject({ type: 'RangeError', message: expect.stringMatching(/^Expected at most \d+ /) });
    }
  });

  it("holds a reference's and a baseline's own launches to the same limits", () => {
    const ref = { source: 'extern "C" __global__ void r(float* y, int n) {}', kernel: 'r' };
    expect(
      messages({
        reference: { ...ref, block: [1, 1, 65], sharedMemBytes: 232_449 },
        compare: { ...ref, grid: [1, 70_000] },
      }),
    ).toEqual([
      `job.reference.block: Expected at most 64 threads along z for job.reference.block but received 65 ${OF_H200}`,
      'job.reference.sharedMemBytes: Expected at most 232448 bytes of dynamic shared memory per block for ' +
        `job.reference.sharedMemBytes but received 232449 ${OF_H200}`,
      `job.compare.grid: Expected at most 65535 blocks along y for job.compare.grid but received 70000 ${OF_H200}`,
    ]);
    // Expected outputs launch nothing.
    expect(messages({ reference: { expected: {} } })).toEqual([]);
  });

  it('accepts a job exactly at every limit', () => {
    const at = { grid: [2 ** 31 - 1, 65_535, 65_535], sharedMemBytes: 232_448, clusterDim: [2, 2, 2] };
    for (const block of [1024, [1024], [1, 1024], [16, 1, 64], [32, 32, 1]]) {
      expect(messages({ ...at, block })).toEqual([]);
    }
    expect(messages({ ...at, block: 32, clusterDim: 8 })).toEqual([]);
    const ref = { source: 'extern "C" __global__ void r() {}', kernel: 'r', ...at, block: [1, 1, 64] };
    expect(messages({ reference: ref, compare: ref })).toEqual([]);
  });

  it('refuses any cluster where the smallest GPU launches none, and holds shared memory to its limit', () => {
    const mixed: AdmissionLimits = { maxDeviceBytes: 2 ** 40, launch: gpuLaunchLimits([H200, A100]) };
    expect(messages({ clusterDim: [2, 1, 1] }, mixed)).toEqual([
      'job.clusterDim: Expected no thread block cluster for job.clusterDim but received one of 2 blocks ' +
        '(the limit of NVIDIA A100-SXM4-80GB (GPU-a100), which launches no clusters: they need sm_90 or later)',
    ]);
    expect(messages({ sharedMemBytes: 166_913 }, mixed)).toEqual([
      'job.sharedMemBytes: Expected at most 166912 bytes of dynamic shared memory per block for ' +
        'job.sharedMemBytes but received 166913 (the limit of NVIDIA A100-SXM4-80GB (GPU-a100))',
    ]);
    expect(messages({ sharedMemBytes: 166_912 }, mixed)).toEqual([]);
  });

  it("leaves what is not a launch size to validateJob's words", () => {
    for (const v of [{ block: 0 }, { block: [2.5, 1] }, { grid: 'many' }, { block: [1, 2, 3, 4] }, { clusterDim: 0 }]) {
      expect(messages(v)).toEqual([]);
    }
  });
});
