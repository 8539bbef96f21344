// SPDX-License-Identifier: MIT
// What the service refuses before validateJob (server/src/admission.ts): includes and flags that reach the server's
// files, sources that are files, too much memory, too much source, too deep a body.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_ADMISSION_LIMITS,
  MAX_SOURCE_CHARS,
  admissionProblems,
  declaredDeviceBytes,
  gpuAdmissionLimits,
  isAllowedFlag,
  nestedDeeperThan,
  unsafeInclude,
} from '../../server/src/admission.js';
import { body } from './helpers.js';

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
