// SPDX-License-Identifier: MIT
import { describe, expect, it } from 'vitest';
import { parseArgSpec, parseArgSpecs, signatureOf, type ArgSpec, type BufferDType } from '../../lib/measure/argspec.js';

/** The error parseArgSpec throws for text (fails the test when it does not throw). */
function errorOf(text: string): Error {
  try {
    parseArgSpec(text);
  } catch (e) {
    return e as Error;
  }
  throw new Error(`parseArgSpec('${text}') did not throw`);
}

const scalar = (text: string): unknown => {
  const spec = parseArgSpec(text);
  if (spec.kind !== 'scalar') throw new Error(`${text} parsed as a ${spec.kind}`);
  return spec.value;
};

const DTYPES: BufferDType[] = ['i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'i64', 'u64', 'f16', 'bf16', 'f32', 'f64'];

describe('parseArgSpec: scalars', () => {
  it('parses each scalar type at the ends of its range', () => {
    expect(parseArgSpec('i8=-128')).toEqual({ kind: 'scalar', type: 'i8', value: -128 });
    expect(scalar('i8=127')).toBe(127);
    expect(scalar('u8=0')).toBe(0);
    expect(scalar('u8=255')).toBe(255);
    expect(scalar('i16=-32768')).toBe(-32768);
    expect(scalar('i16=32767')).toBe(32767);
    expect(scalar('u16=65535')).toBe(65535);
    expect(scalar('i32=-2147483648')).toBe(-2147483648);
    expect(scalar('i32=2147483647')).toBe(2147483647);
    expect(scalar('u32=4294967295')).toBe(4294967295);
    expect(scalar('i64=-9223372036854775808')).toBe(-9223372036854775808n);
    expect(scalar('i64=9223372036854775807')).toBe(9223372036854775807n);
    expect(scalar('u64=18446744073709551615')).toBe(18446744073709551615n);
    expect(scalar('f16=65504')).toBe(65504);
    expect(scalar('f16=-65504')).toBe(-65504);
    expect(parseArgSpec('bf16=1.5')).toEqual({ kind: 'scalar', type: 'bf16', value: 1.5 });
    expect(parseArgSpec('f32=2.5')).toEqual({ kind: 'scalar', type: 'f32', value: 2.5 });
    expect(scalar('f64=1e300')).toBe(1e300);
  });

  it('parses bool as true or false only', () => {
    expect(parseArgSpec('bool=true')).toEqual({ kind: 'scalar', type: 'bool', value: true });
    expect(parseArgSpec('bool=false')).toEqual({ kind: 'scalar', type: 'bool', value: false });
  });

  it('reads decimal, hex and exponent literals', () => {
    expect(scalar('u32=0x1F')).toBe(31);
    expect(scalar('u8=0XFF')).toBe(255);
    expect(scalar('i8=-0x80')).toBe(-128);
    expect(scalar('i32=+3')).toBe(3);
    expect(scalar('i32=1e3')).toBe(1000);
    expect(scalar('i32=1.5e1')).toBe(15);
    expect(scalar('i32=100e-2')).toBe(1);
    expect(scalar('i32=-0')).toBe(0);
    expect(scalar('f32=.5')).toBe(0.5);
    expect(scalar('f32=5.')).toBe(5);
    expect(scalar('f64=-2.5e-3')).toBe(-0.0025);
    expect(scalar('f32=1E-2')).toBe(0.01);
    expect(scalar('f32=0x10')).toBe(16);
  });

  it('parses i64/u64 to bigint, exactly beyond 2^53', () => {
    expect(scalar('i64=5')).toBe(5n);
    expect(scalar('i64=9007199254740993')).toBe(9007199254740993n); // 2^53 + 1: a double would round it
    expect(scalar('u64=0xFFFFFFFFFFFFFFFF')).toBe(2n ** 64n - 1n);
    expect(scalar('i64=1e18')).toBe(10n ** 18n);
    expect(scalar('i64=1.234567890123456789e18')).toBe(1234567890123456789n);
    expect(scalar('u64=0')).toBe(0n);
  });

  it('ignores whitespace around the type and the value', () => {
    expect(parseArgSpec(' i32 = 7 ')).toEqual({ kind: 'scalar', type: 'i32', value: 7 });
  });

  it('throws TypeError for text that is not a scalar spec', () => {
    const cases: [string, string][] = [
      ['f33=1', 'a type such as f32 or ptr:f32[N]'],
      ['=5', 'a type such as f32 or ptr:f32[N]'],
      ['int=5', 'a type such as f32 or ptr:f32[N]'],
      ['f32', '<type>=<value> such as i32=1024, or a buffer such as ptr:f32[1024]'],
      ['', '<type>=<value> such as i32=1024, or a buffer such as ptr:f32[1024]'],
      ['ptr=5', 'a buffer such as ptr:f32[1024]'],
      ['ptr', 'a buffer such as ptr:f32[1024]'],
      ['ptr[4]', 'a buffer such as ptr:f32[1024]'],
      ['i32=abc', 'a number (decimal, 0x hex or exponent) for i32'],
      ['i32=', 'a number (decimal, 0x hex or exponent) for i32'],
      ['i32=true', 'a number (decimal, 0x hex or exponent) for i32'],
      ['i32=0x', 'a number (decimal, 0x hex or exponent) for i32'],
      ['f32=1e', 'a number (decimal, 0x hex or exponent) for f32'],
      ['i32=1_000', 'a number (decimal, 0x hex or exponent) for i32'],
      ['f32=inf', 'a number (decimal, 0x hex or exponent) for f32'],
      ['bool=1', 'true or false for bool'],
      ['bool=TRUE', 'true or false for bool'],
    ];
    for (const [text, expected] of cases) {
      const e = errorOf(text);
      expect(e, text).toBeInstanceOf(TypeError);
      expect(e.message).toBe(`Expected ${expected} in --arg '${text}'`);
    }
  });

  it('throws RangeError for a value its type cannot hold', () => {
    const cases: [string, string][] = [
      ['u8=300', 'an integer in [0, 255] for u8'],
      ['u8=-1', 'an integer in [0, 255] for u8'],
      ['i8=128', 'an integer in [-128, 127] for i8'],
      ['i8=-129', 'an integer in [-128, 127] for i8'],
      ['i16=32768', 'an integer in [-32768, 32767] for i16'],
      ['u16=65536', 'an integer in [0, 65535] for u16'],
      ['i32=1.5', 'an integer in [-2147483648, 2147483647] for i32'],
      ['i32=1e-3', 'an integer in [-2147483648, 2147483647] for i32'],
      ['i32=2147483648', 'an integer in [-2147483648, 2147483647] for i32'],
      ['i32=1e100', 'an integer in [-2147483648, 2147483647] for i32'],
      ['u32=0x100000000', 'an integer in [0, 4294967295] for u32'],
      ['i64=9223372036854775808', 'an integer in [-9223372036854775808, 9223372036854775807] for i64'],
      ['i64=1e999999', 'an integer in [-9223372036854775808, 9223372036854775807] for i64'],
      ['i64=0.5', 'an integer in [-9223372036854775808, 9223372036854775807] for i64'],
      ['u64=-1', 'an integer in [0, 18446744073709551615] for u64'],
      ['u64=18446744073709551616', 'an integer in [0, 18446744073709551615] for u64'],
      ['f16=65505', 'a finite number within ±65504 for f16'],
      ['bf16=4e38', 'a finite number within ±3.3895313892515355e+38 for bf16'],
      ['f32=1e39', 'a finite number within ±3.4028234663852886e+38 for f32'],
      ['f32=-1e39', 'a finite number within ±3.4028234663852886e+38 for f32'],
      ['f64=1e400', 'a finite number within ±1.7976931348623157e+308 for f64'],
    ];
    for (const [text, expected] of cases) {
      const e = errorOf(text);
      expect(e, text).toBeInstanceOf(RangeError);
      expect(e.message).toBe(`Expected ${expected} in --arg '${text}'`);
    }
  });

  it('rejects a non-string with the validate.ts message format', () => {
    expect(() => parseArgSpec(5 as unknown as string)).toThrow(
      new TypeError('Expected a string such as f32=2.5 or ptr:f32[N] for --arg but received 5 of type number'),
    );
  });
});

describe('parseArgSpec: buffers', () => {
  it('defaults the role to out without an init and to in with one', () => {
    expect(parseArgSpec('ptr:f32[1024]')).toEqual({
      kind: 'buffer', dtype: 'f32', length: 1024, role: 'out', init: undefined,
    });
    expect(parseArgSpec('ptr:f32[1024]=zeros')).toEqual({
      kind: 'buffer', dtype: 'f32', length: 1024, role: 'in', init: { kind: 'zeros' },
    });
  });

  it('takes an explicit :in or :out role, with or without an init', () => {
    expect(parseArgSpec('ptr:f32[1024]:out')).toMatchObject({ role: 'out', init: undefined });
    expect(parseArgSpec('ptr:f32[1024]:in')).toMatchObject({ role: 'in', init: undefined });
    expect(parseArgSpec('ptr:f32[8]=zeros:out')).toMatchObject({ role: 'out', init: { kind: 'zeros' } });
    expect(parseArgSpec('ptr:f32[8]=uniform(-1,1):in')).toMatchObject({
      role: 'in', init: { kind: 'uniform', lo: -1, hi: 1 },
    });
  });

  it('accepts every element type', () => {
    for (const dtype of DTYPES) {
      expect(parseArgSpec(`ptr:${dtype}[16]`)).toEqual({
        kind: 'buffer', dtype, length: 16, role: 'out', init: undefined,
      });
    }
  });

  it('reads lengths with * products and 1024-based k/M suffixes', () => {
    const length = (inner: string): number => {
      const spec = parseArgSpec(`ptr:f32[${inner}]`);
      if (spec.kind !== 'buffer') throw new Error('not a buffer');
      return spec.length;
    };
    expect(length('1')).toBe(1);
    expect(length('1k')).toBe(1024);
    expect(length('2K')).toBe(2048);
    expect(length('4M')).toBe(4194304);
    expect(length('1024*1024')).toBe(1048576);
    expect(length('4*1k*2')).toBe(8192);
    expect(length(' 8 * 2 ')).toBe(16);
    expect(length('0x10')).toBe(16);
    expect(length('1e3')).toBe(1000);
  });

  it('parses every init form', () => {
    const init = (dtype: string, text: string): unknown => {
      const spec = parseArgSpec(`ptr:${dtype}[64]=${text}`);
      if (spec.kind !== 'buffer') throw new Error('not a buffer');
      return spec.init;
    };
    expect(init('f32', 'uniform(-1,1)')).toEqual({ kind: 'uniform', lo: -1, hi: 1 });
    expect(init('f32', 'uniform( -1.5 , 0x2 )')).toEqual({ kind: 'uniform', lo: -1.5, hi: 2 });
    expect(init('f64', 'normal(0,1)')).toEqual({ kind: 'normal', mean: 0, std: 1 });
    expect(init('bf16', 'normal(5,0)')).toEqual({ kind: 'normal', mean: 5, std: 0 });
    expect(init('i32', 'randint(0,10)')).toEqual({ kind: 'randint', lo: 0, hi: 10 });
    expect(init('i8', 'randint(-128,128)')).toEqual({ kind: 'randint', lo: -128, hi: 128 }); // hi exclusive: 127 fits
    expect(init('u8', 'randint(0,256)')).toEqual({ kind: 'randint', lo: 0, hi: 256 });
    expect(init('f16', 'randint(-3,3)')).toEqual({ kind: 'randint', lo: -3, hi: 3 });
    expect(init('f32', 'const(3.5)')).toEqual({ kind: 'const', value: 3.5 });
    expect(init('i32', 'const(-1)')).toEqual({ kind: 'const', value: -1 });
    expect(init('u8', 'const(255)')).toEqual({ kind: 'const', value: 255 });
    expect(init('f32', 'zeros')).toEqual({ kind: 'zeros' });
    expect(init('f32', 'zeros()')).toEqual({ kind: 'zeros' });
    expect(init('i64', 'ones')).toEqual({ kind: 'ones' });
    expect(init('u32', 'arange')).toEqual({ kind: 'arange' });
    expect(init('i32', 'seq(10,-2)')).toEqual({ kind: 'seq', start: 10, step: -2 });
    expect(init('f32', 'seq(0.5,0.25)')).toEqual({ kind: 'seq', start: 0.5, step: 0.25 });
  });

  it('throws TypeError for text that is not a buffer spec', () => {
    const inits = 'uniform(lo,hi), normal(mean,std), randint(lo,hi), const(v), zeros, ones, arange or seq(start,step)';
    const cases: [string, string][] = [
      ['ptr:f32', 'ptr:<dtype>[<length>] such as ptr:f32[1024]'],
      ['ptr:f32[4', 'ptr:<dtype>[<length>] such as ptr:f32[1024]'],
      ['ptr:f32]4[', 'ptr:<dtype>[<length>] such as ptr:f32[1024]'],
      ['ptr:f33[4]', 'a buffer element type (i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64)'],
      ['ptr:bool[4]', 'a buffer element type (i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64)'],
      ['ptr:[4]', 'a buffer element type (i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64)'],
      ['ptr:f32[abc]', 'a positive integer length such as 1024, 4M or 1024*1024'],
      ['ptr:f32[]', 'a positive integer length such as 1024, 4M or 1024*1024'],
      ['ptr:f32[4m]', 'a positive integer length such as 1024, 4M or 1024*1024'],
      ['ptr:f32[4G]', 'a positive integer length such as 1024, 4M or 1024*1024'],
      ['ptr:f32[2**3]', 'a positive integer length such as 1024, 4M or 1024*1024'],
      ['ptr:f32[4]:inout', 'a role marker :in or :out'],
      ['ptr:f32[4]=zeros:', 'a role marker :in or :out'],
      ['ptr:f32[4]zeros', '=<init> or :in/:out after ptr:f32[...]'],
      ['ptr:f32[4]]', '=<init> or :in/:out after ptr:f32[...]'],
      ['ptr:f32[4]=', `an init such as ${inits}`],
      ['ptr:f32[4]=gauss(0,1)', `an init such as ${inits}`],
      ['ptr:f32[4]=uniform(0,1', `an init such as ${inits}`],
      ['ptr:f32[4]=Zeros', `an init such as ${inits}`],
      ['ptr:f32[4]=uniform(0)', 'uniform(lo,hi)'],
      ['ptr:f32[4]=uniform(0,1,2)', 'uniform(lo,hi)'],
      ['ptr:f32[4]=uniform', 'uniform(lo,hi)'],
      ['ptr:f32[4]=uniform(a,b)', 'uniform(lo,hi) with number arguments'],
      ['ptr:f32[4]=normal(0)', 'normal(mean,std)'],
      ['ptr:i32[4]=randint(0)', 'randint(lo,hi)'],
      ['ptr:f32[4]=const', 'const(v)'],
      ['ptr:f32[4]=const(x)', 'const(v) with number arguments'],
      ['ptr:f32[4]=seq(1)', 'seq(start,step)'],
      ['ptr:f32[4]=zeros(1)', 'zeros (no arguments)'],
      ['ptr:f32[4]=ones(0)', 'ones (no arguments)'],
      ['ptr:f32[4]=arange(1,2)', 'arange (no arguments)'],
      ['ptr:i32[4]=uniform(0,1)', 'randint(lo,hi) rather than uniform for the integer buffer i32'],
      ['ptr:u8[4]=normal(0,1)', 'randint(lo,hi) rather than normal for the integer buffer u8'],
    ];
    for (const [text, expected] of cases) {
      const e = errorOf(text);
      expect(e, text).toBeInstanceOf(TypeError);
      expect(e.message, text).toBe(`Expected ${expected} in --arg '${text}'`);
    }
  });

  it('throws RangeError for lengths and init values out of range', () => {
    const len = 'a positive integer length such as 1024, 4M or 1024*1024';
    const cases: [string, string][] = [
      ['ptr:f32[0]', len],
      ['ptr:f32[-5]', len],
      ['ptr:f32[0*5]', len],
      ['ptr:f32[-2*-3]', len],
      ['ptr:f32[1.5k]', len],
      ['ptr:f32[2.5]', len],
      ['ptr:f32[1M*1M*1M*1M]', len], // 2^80 elements: beyond a safe integer
      ['ptr:f32[4]=uniform(2,1)', 'uniform(lo,hi) with lo < hi'],
      ['ptr:f32[4]=uniform(1,1)', 'uniform(lo,hi) with lo < hi'],
      ['ptr:f32[4]=uniform(0,1e400)', 'uniform(lo,hi) with finite arguments'],
      ['ptr:f16[4]=uniform(-1e5,1)', 'uniform(lo,hi) with lo within ±65504 for f16'],
      ['ptr:f16[4]=uniform(0,7e4)', 'uniform(lo,hi) with hi within ±65504 for f16'],
      ['ptr:f32[4]=normal(0,-1)', 'normal(mean,std) with std >= 0'],
      ['ptr:f16[4]=normal(1e6,1)', 'normal(mean,std) with mean within ±65504 for f16'],
      ['ptr:i32[4]=randint(5,5)', 'randint(lo,hi) with lo < hi (hi is exclusive)'],
      ['ptr:i32[4]=randint(9,2)', 'randint(lo,hi) with lo < hi (hi is exclusive)'],
      ['ptr:i32[4]=randint(0.5,3)', 'randint(lo,hi) with integer bounds'],
      ['ptr:u8[4]=randint(0,257)', 'randint(lo,hi) with hi - 1 an integer in [0, 255] for u8'],
      ['ptr:u8[4]=randint(-1,10)', 'randint(lo,hi) with lo an integer in [0, 255] for u8'],
      ['ptr:u8[4]=const(300)', 'const(v) with v an integer in [0, 255] for u8'],
      ['ptr:i32[4]=const(1.5)', 'const(v) with v an integer in [-2147483648, 2147483647] for i32'],
      ['ptr:f16[4]=const(70000)', 'const(v) with v within ±65504 for f16'],
      ['ptr:u8[4]=seq(-1,1)', 'seq(start,step) with start an integer in [0, 255] for u8'],
      ['ptr:i32[4]=seq(0,0.5)', 'seq(start,step) with an integer step for i32'],
    ];
    for (const [text, expected] of cases) {
      const e = errorOf(text);
      expect(e, text).toBeInstanceOf(RangeError);
      expect(e.message, text).toBe(`Expected ${expected} in --arg '${text}'`);
    }
  });
});

describe('parseArgSpecs and signatureOf', () => {
  const saxpy = ['f32=2.5', 'ptr:f32[1048576]=uniform(-1,1)', 'ptr:f32[1M]:out', 'i32=1048576'];

  it('parses a list in order', () => {
    const specs = parseArgSpecs(saxpy);
    expect(specs).toEqual<ArgSpec[]>([
      { kind: 'scalar', type: 'f32', value: 2.5 },
      { kind: 'buffer', dtype: 'f32', length: 1048576, role: 'in', init: { kind: 'uniform', lo: -1, hi: 1 } },
      { kind: 'buffer', dtype: 'f32', length: 1048576, role: 'out', init: undefined },
      { kind: 'scalar', type: 'i32', value: 1048576 },
    ]);
    expect(parseArgSpecs([])).toEqual([]);
  });

  it('throws the first bad spec with its own text', () => {
    expect(() => parseArgSpecs(['i32=1', 'u8=300', 'f33=1'])).toThrow(
      new RangeError("Expected an integer in [0, 255] for u8 in --arg 'u8=300'"),
    );
    expect(() => parseArgSpecs('i32=1' as unknown as string[])).toThrow(
      new TypeError("Expected an array of strings for --arg list but received 'i32=1' of type string"),
    );
    expect(() => parseArgSpecs([7 as unknown as string])).toThrow(TypeError);
  });

  it('maps scalars to their type and buffers to ptr', () => {
    expect(signatureOf(parseArgSpecs(saxpy))).toEqual(['f32', 'ptr', 'ptr', 'i32']);
    expect(signatureOf(parseArgSpecs(['bool=true', 'u64=1', 'ptr:u8[1]']))).toEqual(['bool', 'u64', 'ptr']);
    expect(signatureOf([])).toEqual([]);
  });
});

describe('buffer shapes', () => {
  it('declare dimensions, row-major; the length is their product', () => {
    expect(parseArgSpec('ptr:f32[64,128]=uniform(0,1)')).toEqual({
      kind: 'buffer', dtype: 'f32', length: 8192, shape: [64, 128], role: 'in', init: { kind: 'uniform', lo: 0, hi: 1 },
    });
    expect(parseArgSpec('ptr:f16[2,1k,4]:out')).toMatchObject({ length: 8192, shape: [2, 1024, 4], role: 'out' });
    expect(parseArgSpec('ptr:i32[1024]')).not.toHaveProperty('shape');
    expect(() => parseArgSpec('ptr:f32[64,0]')).toThrow(RangeError);
    expect(() => parseArgSpec('ptr:f32[64,]')).toThrow(TypeError);
  });
});
