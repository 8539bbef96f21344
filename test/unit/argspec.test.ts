// SPDX-License-Identifier: MIT
import { describe, expect, it } from 'vitest';
import {
  checkArgSpecs,
  parseArgSpec,
  parseArgSpecs,
  signatureOf,
  type ArgSpec,
  type BufferDType,
} from '../../lib/measure/argspec.js';

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
      expect(e.message).toBe(`Expected ${expected} but received the argument spec '${text}'`);
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
      expect(e.message).toBe(`Expected ${expected} but received the argument spec '${text}'`);
    }
  });

  it('rejects a non-string with the validate.ts message format', () => {
    expect(() => parseArgSpec(5 as unknown as string)).toThrow(
      new TypeError(
        'Expected a string such as f32=2.5 or ptr:f32[N] for an argument spec but received 5 of type number',
      ),
    );
  });
});

describe('parseArgSpec: buffers', () => {
  it('defaults the role to out without an init and to in with one', () => {
    expect(parseArgSpec('ptr:f32[1024]')).toEqual({
      kind: 'buffer',
      dtype: 'f32',
      length: 1024,
      role: 'out',
      init: undefined,
    });
    expect(parseArgSpec('ptr:f32[1024]=zeros')).toEqual({
      kind: 'buffer',
      dtype: 'f32',
      length: 1024,
      role: 'in',
      init: { kind: 'zeros' },
    });
  });

  it('takes an explicit :in or :out role, with or without an init', () => {
    expect(parseArgSpec('ptr:f32[1024]:out')).toMatchObject({ role: 'out', init: undefined });
    expect(parseArgSpec('ptr:f32[1024]:in')).toMatchObject({ role: 'in', init: undefined });
    expect(parseArgSpec('ptr:f32[8]=zeros:out')).toMatchObject({ role: 'out', init: { kind: 'zeros' } });
    expect(parseArgSpec('ptr:f32[8]=uniform(-1,1):in')).toMatchObject({
      role: 'in',
      init: { kind: 'uniform', lo: -1, hi: 1 },
    });
  });

  it('accepts every element type', () => {
    for (const dtype of DTYPES) {
      expect(parseArgSpec(`ptr:${dtype}[16]`)).toEqual({
        kind: 'buffer',
        dtype,
        length: 16,
        role: 'out',
        init: undefined,
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
    const inits =
      'uniform(lo,hi), normal(mean,std), randint(lo,hi), const(v), zeros, ones, arange, seq(start,step) ' +
      'or data(base64)';
    const cases: [string, string][] = [
      ['ptr:f32', 'ptr:<dtype>[<length>] such as ptr:f32[1024]'],
      ['ptr:f32[4', 'ptr:<dtype>[<length>] such as ptr:f32[1024]'],
      ['ptr:f32]4[', 'ptr:<dtype>[<length>] such as ptr:f32[1024]'],
      ['ptr:f33[4]', 'a buffer element type (i8 u8 i16 u16 i32 u32 i64 u64 f8e4m3 f8e5m2 f16 bf16 f32 f64)'],
      ['ptr:bool[4]', 'a buffer element type (i8 u8 i16 u16 i32 u32 i64 u64 f8e4m3 f8e5m2 f16 bf16 f32 f64)'],
      ['ptr:[4]', 'a buffer element type (i8 u8 i16 u16 i32 u32 i64 u64 f8e4m3 f8e5m2 f16 bf16 f32 f64)'],
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
      expect(e.message, text).toBe(`Expected ${expected} but received the argument spec '${text}'`);
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
      expect(e.message, text).toBe(`Expected ${expected} but received the argument spec '${text}'`);
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
      new RangeError("Expected an integer in [0, 255] for u8 but received the argument spec 'u8=300'"),
    );
    expect(() => parseArgSpecs('i32=1' as unknown as string[])).toThrow(
      new TypeError("Expected an array of strings for argument specs but received 'i32=1' of type string"),
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
      kind: 'buffer',
      dtype: 'f32',
      length: 8192,
      shape: [64, 128],
      role: 'in',
      init: { kind: 'uniform', lo: 0, hi: 1 },
    });
    expect(parseArgSpec('ptr:f16[2,1k,4]:out')).toMatchObject({ length: 8192, shape: [2, 1024, 4], role: 'out' });
    expect(parseArgSpec('ptr:i32[1024]')).not.toHaveProperty('shape');
    expect(() => parseArgSpec('ptr:f32[64,0]')).toThrow(RangeError);
    expect(() => parseArgSpec('ptr:f32[64,]')).toThrow(TypeError);
  });
});

describe('argument names', () => {
  it('come first and end at @, for scalars and buffers alike', () => {
    expect(parseArgSpec('x@ptr:f32[4]=zeros')).toEqual({
      kind: 'buffer',
      dtype: 'f32',
      length: 4,
      role: 'in',
      init: { kind: 'zeros' },
      name: 'x',
    });
    expect(parseArgSpec('n@i32=4')).toEqual({ kind: 'scalar', type: 'i32', value: 4, name: 'n' });
    expect(parseArgSpec(' out_0 @ ptr:f16[2,8]:out ')).toMatchObject({ name: 'out_0', shape: [2, 8], role: 'out' });
    expect(parseArgSpec('_y2@ptr:u8[1]=const(3):out')).toMatchObject({
      name: '_y2',
      role: 'out',
      init: { kind: 'const', value: 3 },
    });
    expect(parseArgSpec('ptr:f32[4]')).not.toHaveProperty('name');
  });

  it('cannot be confused with a type, an init or a role: the rest parses exactly as without a name', () => {
    for (const text of ['f32=2.5', 'ptr:f32[64,128]=uniform(-1,1):out', 'i64=9007199254740993', 'ptr:u8[4]=seq(1,2)']) {
      // even a name spelt like a type
      expect(parseArgSpec(`i32@${text}`)).toEqual({ ...parseArgSpec(text), name: 'i32' });
    }
  });

  it('must be C identifiers', () => {
    const form = 'a name of letters, digits and _ (not starting with a digit) before @, such as x@ptr:f32[N]';
    for (const text of ['1x@i32=1', '@i32=1', 'x y@i32=1', 'x-y@ptr:f32[4]', 'ptr:f32[4]@x']) {
      const e = errorOf(text);
      expect(e, text).toBeInstanceOf(TypeError);
      expect(e.message, text).toBe(`Expected ${form} but received the argument spec '${text}'`);
    }
    expect(errorOf('x@y@i32=1').message).toBe(
      "Expected a type such as f32 or ptr:f32[N] but received the argument spec 'x@y@i32=1'",
    );
  });

  it('are unique within a list', () => {
    expect(
      parseArgSpecs(['x@ptr:f32[4]=ones', 'y@ptr:f32[4]:out', 'n@i32=4', 'ptr:f32[4]:out', 'ptr:f32[4]:out']),
    ).toHaveLength(5);
    expect(() => parseArgSpecs(['x@ptr:f32[4]=ones', 'n@i32=4', 'x@ptr:f32[4]:out'])).toThrow(
      new TypeError(
        "Expected a name not used by an earlier argument ('x' is) but received the argument spec 'x@ptr:f32[4]:out'",
      ),
    );
  });
});

describe('init kinds for services', () => {
  const init = (text: string): unknown => {
    const spec = parseArgSpec(text);
    if (spec.kind !== 'buffer') throw new Error('not a buffer');
    return spec.init;
  };

  it('give a random buffer a seed of its own: uniform, normal and randint take seed=', () => {
    expect(init('ptr:f32[8]=uniform(-1,1,seed=7)')).toEqual({ kind: 'uniform', lo: -1, hi: 1, seed: 7 });
    expect(init('ptr:f64[8]=normal(0, 2, seed = 0x10)')).toEqual({ kind: 'normal', mean: 0, std: 2, seed: 16 });
    expect(init('ptr:i32[8]=randint(0,9,seed=9007199254740991)')).toEqual({
      kind: 'randint',
      lo: 0,
      hi: 9,
      seed: 2 ** 53 - 1,
    });
    expect(init('ptr:f32[8]=uniform(-1,1)')).not.toHaveProperty('seed');
  });

  it('run a sequence along the last dimension with along=last (along=all is the default)', () => {
    expect(init('ptr:f32[4,8]=seq(0,1,along=last)')).toEqual({ kind: 'seq', start: 0, step: 1, along: 'last' });
    expect(init('ptr:f32[4,8]=seq(0,1,along=all)')).toEqual({ kind: 'seq', start: 0, step: 1, along: 'all' });
    expect(init('ptr:i32[4,8]=arange(along=last)')).toEqual({ kind: 'arange', along: 'last' });
    expect(init('ptr:i32[4,8]=arange()')).toEqual({ kind: 'arange' });
  });

  it("take exact bytes as base64: data(...) of exactly the buffer's size", () => {
    expect(init('ptr:u8[4]=data(AQIDBA==)')).toEqual({ kind: 'data', bytes: new Uint8Array([1, 2, 3, 4]) });
    expect(init('ptr:f32[1]=data(AACAPw==)')).toEqual({ kind: 'data', bytes: new Uint8Array([0, 0, 0x80, 0x3f]) });
    expect(parseArgSpec('ptr:u16[2]=data(AQACAA==):out')).toMatchObject({ role: 'out', init: { kind: 'data' } });
  });

  it('reject named arguments they do not take, and bad values for those they do', () => {
    const cases: [string, typeof TypeError | typeof RangeError, string][] = [
      ['ptr:f32[4]=const(1,seed=2)', TypeError, 'const(v) with no named arguments'],
      ['ptr:f32[4]=seq(0,1,seed=2)', TypeError, 'seq(start,step) with named arguments along='],
      ['ptr:f32[4]=uniform(0,1,along=last)', TypeError, 'uniform(lo,hi) with named arguments seed='],
      ['ptr:f32[4]=uniform(0,1,seed=1,seed=2)', TypeError, 'uniform(lo,hi) with named arguments seed='],
      ['ptr:f32[4]=uniform(0,1,seed=x)', TypeError, 'uniform(lo,hi) with an integer seed='],
      ['ptr:f32[4]=uniform(0,1,seed=1.5)', TypeError, 'uniform(lo,hi) with an integer seed='],
      ['ptr:f32[4]=uniform(0,1,seed=-1)', RangeError, 'uniform(lo,hi) with a seed in [0, 9007199254740991]'],
      ['ptr:i32[4]=randint(0,1,seed=1e20)', RangeError, 'randint(lo,hi) with a seed in [0, 9007199254740991]'],
      ['ptr:f32[4]=seq(0,1,along=first)', TypeError, 'seq(start,step) with along=all or along=last'],
      ['ptr:f32[4]=arange(along=rows)', TypeError, 'arange with along=all or along=last'],
      ['ptr:f32[4]=arange(1)', TypeError, 'arange (no arguments)'],
      ['ptr:u8[4]=data(AQID)', RangeError, 'data(<base64>) of exactly 4 bytes (4 × u8), not 3'],
      ['ptr:u8[4]=data(AQ*DBA==)', TypeError, 'data(<base64>) with standard base64 (A-Z a-z 0-9 + /, = padding)'],
      ['ptr:u8[4]=data(AQIDBA=)', TypeError, 'data(<base64>) with standard base64 (A-Z a-z 0-9 + /, = padding)'],
    ];
    for (const [text, ctor, expected] of cases) {
      const e = errorOf(text);
      expect(e, text).toBeInstanceOf(ctor);
      expect(e.message, text).toBe(`Expected ${expected} but received the argument spec '${text}'`);
    }
  });
});

describe('checkArgSpecs (the object form)', () => {
  const f32 = (extra: Record<string, unknown> = {}) => ({
    kind: 'buffer',
    dtype: 'f32',
    length: 4,
    role: 'in',
    init: undefined,
    ...extra,
  });
  const check = (io: unknown[]) => () => checkArgSpecs(io as ArgSpec[]);

  it('passes whatever parseArgSpecs makes, and returns it', () => {
    const io = parseArgSpecs([
      'x@ptr:f32[4,8]=seq(0,1,along=last)',
      'w@ptr:f16[32]=normal(0,1,seed=3)',
      'y@ptr:f32[32]:out',
      'b@ptr:u8[2]=data(AQI=)',
      'n@i32=32',
      'bool=true',
    ]);
    expect(checkArgSpecs(io)).toBe(io);
  });

  it('names the field that is wrong, in the standard message', () => {
    expect(check([f32({ dtype: 'f33' })])).toThrow(
      new TypeError(
        'Expected an element type (i8 u8 i16 u16 i32 u32 i64 u64 f8e4m3 f8e5m2 f16 bf16 f32 f64) for io[0].dtype ' +
          "but received 'f33' of type string",
      ),
    );
    expect(check([f32({ length: 0 })])).toThrow(
      new RangeError('Expected a positive integer for io[0].length but received 0 of type number'),
    );
    expect(check([f32({ length: '4' })])).toThrow(TypeError);
    expect(check([f32({ shape: [2, 3] })])).toThrow(
      new RangeError(
        'Expected dimensions whose product is the length 4 for io[0].shape but received an object of type Array',
      ),
    );
    expect(check([f32({ role: 'inout' })])).toThrow(/'in' or 'out' for io\[0\].role/);
    expect(check([f32({ init: { kind: 'gauss' } })])).toThrow(/an init \{ kind: 'uniform' \| .* for io\[0\].init/);
    expect(check([f32({ init: { kind: 'uniform', lo: 0, hi: Number.NaN } })])).toThrow(
      /a finite number for io\[0\].init.hi/,
    );
    expect(check([{ kind: 'scalar', type: 'f128', value: 1 }])).toThrow(/a scalar type .* for io\[0\].type/);
    expect(check([{ kind: 'tensor' }])).toThrow(/'buffer' or 'scalar' for io\[0\].kind/);
    expect(check('x' as unknown as unknown[])).toThrow(/an array of argument specs \(see parseArgSpec\) for io/);
  });

  it("wants exactly the buffer's bytes for data, seeds only on random kinds, along only on sequences", () => {
    expect(check([f32({ init: { kind: 'data', bytes: new Uint8Array(16) } })])).not.toThrow();
    expect(check([f32({ init: { kind: 'data', bytes: new Uint8Array(12) } })])).toThrow(
      new RangeError(
        'Expected exactly 16 bytes (4 × f32) for io[0].init.bytes.byteLength but received 12 of type number',
      ),
    );
    expect(check([f32({ init: { kind: 'data', bytes: [1, 2] } })])).toThrow(
      /a Uint8Array of 16 bytes for io\[0\].init.bytes/,
    );
    expect(check([f32({ init: { kind: 'const', value: 1, seed: 3 } })])).toThrow(
      /no seed: only uniform, normal and randint/,
    );
    expect(check([f32({ init: { kind: 'uniform', lo: 0, hi: 1, seed: -3 } })])).toThrow(RangeError);
    expect(check([f32({ init: { kind: 'uniform', lo: 0, hi: 1, along: 'last' } })])).toThrow(
      /no along: only seq and arange/,
    );
    expect(check([f32({ init: { kind: 'seq', start: 0, step: 1, along: 'rows' } })])).toThrow(
      /'all' or 'last' for io\[0\].init.along/,
    );
  });

  it('wants names to be unique C identifiers', () => {
    expect(check([f32({ name: 'x' }), f32({ name: 'x' })])).toThrow(
      new TypeError("Expected a name no other argument has for io[1].name but received 'x' of type string"),
    );
    expect(check([f32({ name: 'a b' })])).toThrow(/a C identifier such as x or out_0 for io\[0\].name/);
    expect(checkArgSpecs([f32({ name: 'x' }), f32({ name: 'y' })] as ArgSpec[], 'reference.io')).toHaveLength(2);
    expect(() => checkArgSpecs([f32({ name: 1 })] as unknown as ArgSpec[], 'reference.io')).toThrow(
      /for reference.io\[0\].name/,
    );
  });
});
