// Struct and vector parameter layouts checked against the compiler itself, without a GPU: for each type, the size,
// alignment and member offsets cudakit computes from the signature must equal what NVRTC reports (sizeof, alignof
// and offsets as __device__ constants in the PTX) and where the CUBIN places the parameter (.nv.info KPARAM_INFO).
import { expect, it } from 'vitest';
import { CompileError, type ParamType, Program } from '../../lib/index.js';
import { cubinParams } from '../../lib/core/image.js';
import { layoutOf } from '../../lib/core/args.js';
import { describeNvrtc } from '../helpers.js';

interface Case {
  /** Kernel and constant name suffix. */
  name: string;
  /** C++ declarations the type needs. */
  decl?: string;
  ctype: string;
  /** Members in order (a vector's components). */
  members: string[];
  param: ParamType;
}

const CASES: Case[] = [
  {
    name: 'float_float2',
    decl: 'struct S1 { float a; float2 b; };',
    ctype: 'S1',
    members: ['a', 'b'],
    param: { struct: ['f32', 'f32x2'] },
  },
  {
    name: 'float_float2_int',
    decl: 'struct S2 { float a; float2 b; int c; };',
    ctype: 'S2',
    members: ['a', 'b', 'c'],
    param: { struct: ['f32', 'f32x2', 'i32'] },
  },
  {
    name: 'align16',
    decl: 'struct __align__(16) S3 { float a; };',
    ctype: 'S3',
    members: ['a'],
    param: { struct: ['f32'], align: 16 },
  },
  {
    name: 'align8_floats',
    decl: 'struct __align__(8) S4 { float a, b, c; };',
    ctype: 'S4',
    members: ['a', 'b', 'c'],
    param: { struct: ['f32', 'f32', 'f32'], align: 8 },
  },
  {
    name: 'nested',
    decl: 'struct S5 { char tag; S1 inner; double2 d; short s; };',
    ctype: 'S5',
    members: ['tag', 'inner', 'd', 's'],
    param: { struct: ['i8', { struct: ['f32', 'f32x2'] }, 'f64x2', 'i16'] },
  },
  {
    name: 'nested_aligned',
    decl: 'struct S6 { char tag; S3 inner; float3 f; };',
    ctype: 'S6',
    members: ['tag', 'inner', 'f'],
    param: { struct: ['i8', { struct: ['f32'], align: 16 }, 'f32x3'] },
  },
  {
    name: 'small_vectors',
    decl: 'struct S7 { char a; char2 b; uchar4 c; short2 d; short4 e; int3 f; };',
    ctype: 'S7',
    members: ['a', 'b', 'c', 'd', 'e', 'f'],
    param: { struct: ['i8', 'i8x2', 'u8x4', 'i16x2', 'i16x4', 'i32x3'] },
  },
  { name: 'float4', ctype: 'float4', members: ['x', 'y', 'z', 'w'], param: 'f32x4' },
  { name: 'float3', ctype: 'float3', members: ['x', 'y', 'z'], param: 'f32x3' },
  { name: 'float2', ctype: 'float2', members: ['x', 'y'], param: 'f32x2' },
  { name: 'double2', ctype: 'double2', members: ['x', 'y'], param: 'f64x2' },
  { name: 'double4', ctype: 'double4', members: ['x', 'y', 'z', 'w'], param: 'f64x4' },
  { name: 'int2', ctype: 'int2', members: ['x', 'y'], param: 'i32x2' },
  { name: 'uint4', ctype: 'uint4', members: ['x', 'y', 'z', 'w'], param: 'u32x4' },
  { name: 'longlong2', ctype: 'longlong2', members: ['x', 'y'], param: 'i64x2' },
  { name: 'ulonglong3', ctype: 'ulonglong3', members: ['x', 'y', 'z'], param: 'u64x3' },
];

/** Each case as a kernel (char head, T v, char tail) plus sizeof/alignof/member offsets as __device__ constants. */
function source(cases: readonly Case[]): string {
  return cases
    .map(({ name, decl, ctype, members }) =>
      [
        decl ?? '',
        `extern "C" __global__ void k_${name}(char head, ${ctype} v, char tail) {}`,
        `__device__ unsigned long long size_${name} = sizeof(${ctype});`,
        `__device__ unsigned long long align_${name} = alignof(${ctype});`,
        // Member offsets as address constants into an instance (the PTX prints them as generic(inst)+offset): a form
        // every NVRTC accepts in a __device__ initializer, unlike offsetof tricks.
        `__device__ ${ctype} inst_${name};`,
        ...members.map((m, i) => `__device__ char* off_${name}_${i} = (char*)&inst_${name}.${m};`),
      ].join('\n'),
    )
    .join('\n');
}

/** The __device__ constants' values from PTX (a zero may be printed without an initializer). */
function constants(ptx: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of ptx.matchAll(/\.global\s+\.align\s+\d+\s+\.u64\s+(\w+)(?:\s*=\s*(\d+))?;/g))
    out.set(m[1]!, Number(m[2] ?? 0));
  for (const m of ptx.matchAll(/\.global\s+\.align\s+\d+\s+\.u64\s+(\w+)\s*=\s*generic\(\w+\)(?:\+(\d+))?;/g))
    out.set(m[1]!, Number(m[2] ?? 0));
  return out;
}

/** Where cudakit puts (char, T, char): the layout Kernel uses when neither the driver nor the image can tell. */
function cudakitParams(param: ParamType): { offset: number; size: number }[] {
  let at = 0;
  return ['i8' as const, param, 'i8' as const].map((p) => {
    const l = layoutOf(p, 'p');
    at = Math.ceil(at / l.align) * l.align;
    const placed = { offset: at, size: l.size };
    at += l.size;
    return placed;
  });
}

describeNvrtc('struct and vector parameter layouts match the compiler', () => {
  const opts = { arch: 'sm_80', cache: false, cudaIncludes: false, std: 'c++17' } as const;

  function check(cases: readonly Case[], compileOpts: Parameters<Program['compile']>[0], prelude = ''): void {
    const src = prelude + source(cases);
    const cubin = new Program(src).compile(compileOpts).bytes;
    const consts = constants(new Program(src).compile({ ...compileOpts, target: 'ptx' }).ptx);
    for (const c of cases) {
      const l = layoutOf(c.param, c.name);
      const compiler = {
        size: consts.get(`size_${c.name}`),
        align: consts.get(`align_${c.name}`),
        offsets: c.members.map((_, i) => consts.get(`off_${c.name}_${i}`)),
      };
      expect({ size: l.size, align: l.align, offsets: l.offsets }, c.name).toEqual(compiler);
      expect(cudakitParams(c.param), c.name).toEqual(cubinParams(cubin, `k_${c.name}`));
    }
  }

  it('for structs with vector members, __align__ structs, nested structs and vectors by value', () => {
    check(CASES, opts);
  });

  it('shows what describing a float2 as two floats gets wrong', () => {
    const src = `${CASES[1]!.decl}\nextern "C" __global__ void k(S2 s) {}`;
    const [param] = cubinParams(new Program(src).compile(opts).bytes, 'k')!;
    expect(param).toEqual({ offset: 0, size: 24 });
    expect(layoutOf({ struct: ['f32', 'f32', 'f32', 'i32'] }, 's').size).toBe(16); // what the Kernel check reports
    expect(layoutOf({ struct: ['f32', 'f32x2', 'i32'] }, 's').size).toBe(24);
  });

  it('for __half2 and __nv_bfloat162 (needs the toolkit headers)', (ctx) => {
    const cases: Case[] = [
      { name: 'half2', ctype: '__half2', members: ['x', 'y'], param: 'f16x2' },
      { name: 'bfloat162', ctype: '__nv_bfloat162', members: ['x', 'y'], param: 'bf16x2' },
      {
        name: 'half_pair',
        decl: 'struct H { __half a; __half2 b; };',
        ctype: 'H',
        members: ['a', 'b'],
        param: { struct: ['f16', 'f16x2'] },
      },
    ];
    const withHeaders = { ...opts, cudaIncludes: true } as const;
    const prelude = '#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n';
    try {
      new Program(prelude).compile({ ...withHeaders, target: 'ptx' });
    } catch (e) {
      if (e instanceof CompileError && /could not open source file "cuda_(fp16|bf16)\.h"/.test(e.message)) {
        ctx.skip('no cuda_fp16.h/cuda_bf16.h for this NVRTC');
        return;
      }
      throw e;
    }
    check(cases, withHeaders, prelude);
  });
});
