// SPDX-License-Identifier: MIT
// Parses the CLI's kernel argument specs (`--arg 'f32=2.5'`, `--arg 'ptr:f32[1M]=uniform(-1,1)'`) into typed records.
// Pure: no CUDA import, so the grammar and its error messages are tested without a GPU.
import { typeError } from '../core/index.js';

/** Element types a device buffer can hold. */
export type BufferDType = 'i8' | 'u8' | 'i16' | 'u16' | 'i32' | 'u32' | 'i64' | 'u64' | 'f16' | 'bf16' | 'f32' | 'f64';
/** Types a by-value scalar argument can have. */
export type ArgScalarType = BufferDType | 'bool';

/** How to fill a buffer before the kernel runs. Random kinds draw independently per element. */
export type InitSpec =
  /** Uniform reals in [lo, hi). Float buffers only. */
  | { kind: 'uniform'; lo: number; hi: number }
  /** Normal reals. Float buffers only. */
  | { kind: 'normal'; mean: number; std: number }
  /** Uniform integers in [lo, hi): lo inclusive, hi exclusive. */
  | { kind: 'randint'; lo: number; hi: number }
  | { kind: 'const'; value: number }
  | { kind: 'zeros' }
  | { kind: 'ones' }
  /** 0, 1, 2, … (wraps or rounds as the element type's conversion does). */
  | { kind: 'arange' }
  /** start, start + step, start + 2·step, … */
  | { kind: 'seq'; start: number; step: number };

/** A by-value scalar: `i32=1024`. i64/u64 values are always bigint, bool values boolean, others number. */
export interface ScalarArgSpec {
  kind: 'scalar';
  type: ArgScalarType;
  value: number | bigint | boolean;
}

/** A device buffer passed as a pointer: `ptr:f32[1024]=uniform(-1,1)`. */
export interface BufferArgSpec {
  kind: 'buffer';
  dtype: BufferDType;
  /** Elements, not bytes (for a shape, the product of its dimensions). */
  length: number;
  /** The dimensions, outermost first, when the buffer was declared with a shape (`ptr:f32[64,128]`); row-major. */
  shape?: number[];
  /** 'in': filled before launch; 'out': written by the kernel (default 'in' with an init, 'out' without). */
  role: 'in' | 'out';
  init: InitSpec | undefined;
}

export type ArgSpec = ScalarArgSpec | BufferArgSpec;

const DTYPES: readonly BufferDType[] = [
  'i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'i64', 'u64', 'f16', 'bf16', 'f32', 'f64',
];
const INIT_FORMS = 'uniform(lo,hi), normal(mean,std), randint(lo,hi), const(v), zeros, ones, arange or seq(start,step)';

// Inclusive integer ranges, as bigint so i64/u64 limits are exact.
const INT_RANGE: Partial<Record<BufferDType, readonly [bigint, bigint]>> = {
  i8: [-(2n ** 7n), 2n ** 7n - 1n],
  u8: [0n, 2n ** 8n - 1n],
  i16: [-(2n ** 15n), 2n ** 15n - 1n],
  u16: [0n, 2n ** 16n - 1n],
  i32: [-(2n ** 31n), 2n ** 31n - 1n],
  u32: [0n, 2n ** 32n - 1n],
  i64: [-(2n ** 63n), 2n ** 63n - 1n],
  u64: [0n, 2n ** 64n - 1n],
};

// Largest finite magnitude of each float type: beyond it the value would become Infinity on the device.
const FLOAT_MAX: Partial<Record<BufferDType, number>> = {
  f16: 65504,
  bf16: 3.3895313892515355e38,
  f32: 3.4028234663852886e38,
  f64: Number.MAX_VALUE,
};

// Decimal (with optional fraction and exponent) or hex integer, optionally signed.
const LITERAL = /^[+-]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$/;

const isDType = (s: string): s is BufferDType => (DTYPES as readonly string[]).includes(s);

function fail(ctor: typeof TypeError | typeof RangeError, text: string, expected: string): Error {
  return new ctor(`Expected ${expected} in --arg '${text}'`);
}

interface Literal {
  /** The nearest double. */
  num: number;
  /** The exact value when the literal is an integer, else undefined. */
  int: bigint | undefined;
}

// Beyond this many decimal digits a value is out of every supported range; stops `1e999999` building a huge bigint.
const MAX_DIGITS = 40;

function parseLiteral(s: string): Literal | undefined {
  if (!LITERAL.test(s)) return undefined;
  const negative = s.startsWith('-');
  const body = s.replace(/^[+-]/, '');
  if (/^0x/i.test(body)) {
    const int = negative ? -BigInt(body) : BigInt(body);
    return { num: Number(int), int };
  }
  const num = Number(s);
  const m = /^(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(body);
  if (m === null) return undefined;
  const frac = m[2] ?? '';
  let digits = ((m[1] ?? '') + frac).replace(/^0+/, '');
  if (digits === '') return { num, int: 0n };
  let exp = Number(m[3] ?? '0') - frac.length;
  if (exp < 0) {
    // An integer only when the digits below the decimal point are all zero.
    const cut = digits.length + exp;
    if (cut <= 0 || !/^0*$/.test(digits.slice(cut))) return { num, int: undefined };
    digits = digits.slice(0, cut);
    exp = 0;
  }
  const magnitude = digits.length + exp > MAX_DIGITS ? 10n ** BigInt(MAX_DIGITS) : BigInt(digits) * 10n ** BigInt(exp);
  return { num, int: negative ? -magnitude : magnitude };
}

function parseScalar(text: string, typeText: string, valueText: string): ScalarArgSpec {
  if (typeText === 'bool') {
    if (valueText === 'true' || valueText === 'false') {
      return { kind: 'scalar', type: 'bool', value: valueText === 'true' };
    }
    throw fail(TypeError, text, 'true or false for bool');
  }
  if (!isDType(typeText)) {
    if (typeText === 'ptr') throw fail(TypeError, text, 'a buffer such as ptr:f32[1024]');
    throw fail(TypeError, text, 'a type such as f32 or ptr:f32[N]');
  }
  const type = typeText;
  const lit = parseLiteral(valueText);
  if (lit === undefined) throw fail(TypeError, text, `a number (decimal, 0x hex or exponent) for ${type}`);
  const range = INT_RANGE[type];
  if (range !== undefined) {
    const [min, max] = range;
    if (lit.int === undefined || lit.int < min || lit.int > max) {
      throw fail(RangeError, text, `an integer in [${min}, ${max}] for ${type}`);
    }
    const value = type === 'i64' || type === 'u64' ? lit.int : Number(lit.int);
    return { kind: 'scalar', type, value };
  }
  const max = FLOAT_MAX[type] ?? Number.MAX_VALUE;
  if (!(Math.abs(lit.num) <= max)) throw fail(RangeError, text, `a finite number within ±${max} for ${type}`);
  return { kind: 'scalar', type, value: lit.num };
}

const SUFFIX: Record<string, number> = { '': 1, k: 1024, K: 1024, M: 1024 * 1024 };

function parseLength(text: string, lengthText: string): number {
  const expected = 'a positive integer length such as 1024, 4M or 1024*1024';
  let length = 1;
  for (const raw of lengthText.split('*')) {
    const factor = raw.trim();
    const m = /^(.*?)([kKM]?)$/.exec(factor);
    const lit = parseLiteral(m?.[1] ?? '');
    if (m === null || lit === undefined) throw fail(TypeError, text, expected);
    // Each factor positive, so '-2*-3' is not a length of 6.
    if (lit.int === undefined || lit.int <= 0n) throw fail(RangeError, text, expected);
    length *= Number(lit.int) * (SUFFIX[m[2] ?? ''] ?? 1);
  }
  if (!Number.isSafeInteger(length) || length <= 0) throw fail(RangeError, text, expected);
  return length;
}

/** The numeric arguments of `name(a,b)`, each a number literal; `count` of them or a TypeError. */
function initArgs(text: string, form: string, argsText: string | undefined, count: number): number[] {
  const parts = argsText === undefined || argsText.trim() === '' ? [] : argsText.split(',').map((a) => a.trim());
  if (parts.length !== count) throw fail(TypeError, text, form);
  return parts.map((p) => {
    const lit = parseLiteral(p);
    if (lit === undefined) throw fail(TypeError, text, `${form} with number arguments`);
    if (!Number.isFinite(lit.num)) throw fail(RangeError, text, `${form} with finite arguments`);
    return lit.num;
  });
}

function parseInit(text: string, dtype: BufferDType, initText: string): InitSpec {
  const m = /^([a-z]+)\s*(?:\((.*)\))?$/.exec(initText);
  if (m === null) throw fail(TypeError, text, `an init such as ${INIT_FORMS}`);
  const name = m[1] ?? '';
  const argsText = m[2];
  const intRange = INT_RANGE[dtype];
  const isInt = intRange !== undefined;
  const floatMax = FLOAT_MAX[dtype] ?? Number.MAX_VALUE;
  // Checks a value the buffer must hold exactly (const, seq start, randint bounds).
  const fits = (v: number, what: string): void => {
    if (intRange !== undefined) {
      if (!Number.isSafeInteger(v) || BigInt(v) < intRange[0] || BigInt(v) > intRange[1]) {
        throw fail(RangeError, text, `${what} an integer in [${intRange[0]}, ${intRange[1]}] for ${dtype}`);
      }
    } else if (Math.abs(v) > floatMax) {
      throw fail(RangeError, text, `${what} within ±${floatMax} for ${dtype}`);
    }
  };
  switch (name) {
    case 'uniform':
    case 'normal': {
      const form = name === 'uniform' ? 'uniform(lo,hi)' : 'normal(mean,std)';
      const [a = 0, b = 0] = initArgs(text, form, argsText, 2);
      // Real-valued draws into an integer buffer would be silently truncated; randint says what is meant.
      if (isInt) throw fail(TypeError, text, `randint(lo,hi) rather than ${name} for the integer buffer ${dtype}`);
      if (name === 'uniform') {
        if (!(a < b)) throw fail(RangeError, text, 'uniform(lo,hi) with lo < hi');
        fits(a, 'uniform(lo,hi) with lo');
        fits(b, 'uniform(lo,hi) with hi');
        return { kind: 'uniform', lo: a, hi: b };
      }
      if (!(b >= 0)) throw fail(RangeError, text, 'normal(mean,std) with std >= 0');
      fits(a, 'normal(mean,std) with mean');
      return { kind: 'normal', mean: a, std: b };
    }
    case 'randint': {
      const [lo = 0, hi = 0] = initArgs(text, 'randint(lo,hi)', argsText, 2);
      if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi)) {
        throw fail(RangeError, text, 'randint(lo,hi) with integer bounds');
      }
      if (!(lo < hi)) throw fail(RangeError, text, 'randint(lo,hi) with lo < hi (hi is exclusive)');
      fits(lo, 'randint(lo,hi) with lo');
      fits(hi - 1, 'randint(lo,hi) with hi - 1');
      return { kind: 'randint', lo, hi };
    }
    case 'const': {
      const [value = 0] = initArgs(text, 'const(v)', argsText, 1);
      fits(value, 'const(v) with v');
      return { kind: 'const', value };
    }
    case 'seq': {
      const [start = 0, step = 0] = initArgs(text, 'seq(start,step)', argsText, 2);
      fits(start, 'seq(start,step) with start');
      if (isInt && !Number.isSafeInteger(step)) {
        throw fail(RangeError, text, `seq(start,step) with an integer step for ${dtype}`);
      }
      return { kind: 'seq', start, step };
    }
    case 'zeros':
    case 'ones':
    case 'arange':
      initArgs(text, `${name} (no arguments)`, argsText, 0);
      return { kind: name };
    default:
      throw fail(TypeError, text, `an init such as ${INIT_FORMS}`);
  }
}

function parseBuffer(text: string, body: string): BufferArgSpec {
  // body is what follows 'ptr:': <dtype>[<length>] [=<init>] [:in|:out]
  const open = body.indexOf('[');
  const close = body.indexOf(']');
  if (open < 0 || close < open) throw fail(TypeError, text, 'ptr:<dtype>[<length>] such as ptr:f32[1024]');
  const dtypeText = body.slice(0, open).trim();
  if (!isDType(dtypeText)) throw fail(TypeError, text, `a buffer element type (${DTYPES.join(' ')})`);
  const dtype = dtypeText;
  const dims = body.slice(open + 1, close).split(',').map((d) => parseLength(text, d));
  const length = dims.reduce((a, b) => a * b, 1);
  if (!Number.isSafeInteger(length)) throw fail(RangeError, text, 'a shape whose element count is a safe integer');
  let rest = body.slice(close + 1).trim();
  let role: 'in' | 'out' | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon >= 0) {
    const marker = rest.slice(colon + 1).trim();
    if (marker !== 'in' && marker !== 'out') throw fail(TypeError, text, 'a role marker :in or :out');
    role = marker;
    rest = rest.slice(0, colon).trim();
  }
  let init: InitSpec | undefined;
  if (rest !== '') {
    if (!rest.startsWith('=')) throw fail(TypeError, text, `=<init> or :in/:out after ptr:${dtype}[...]`);
    init = parseInit(text, dtype, rest.slice(1).trim());
  }
  const spec: BufferArgSpec = { kind: 'buffer', dtype, length, role: role ?? (init === undefined ? 'out' : 'in'), init };
  if (dims.length > 1) spec.shape = dims;
  return spec;
}

/**
 * Parses one `--arg` spec.
 *
 * Scalars are `<type>=<value>` (`i32=1024`, `f32=-2.5e-3`, `u32=0xff`, `bool=true`, `i64=9007199254740993`).
 * Buffers are `ptr:<dtype>[<length>]`, then optionally `=<init>`, then optionally `:in` or `:out`; the length may use
 * `*` and the 1024-based suffixes k and M (`ptr:f32[4M]=uniform(-1,1)`, `ptr:u8[1024*1024]:out`).
 *
 * @throws TypeError when the text does not follow the grammar (unknown type, bad literal, unknown init).
 * @throws RangeError when a value is outside what its type holds (`u8=300`, `i32=1.5`, `uniform(2,1)`, length 0).
 * @example parseArgSpec('ptr:f32[1k]') // { kind: 'buffer', dtype: 'f32', length: 1024, role: 'out', init: undefined }
 */
export function parseArgSpec(text: string): ArgSpec {
  if (typeof text !== 'string') throw typeError('--arg', 'a string such as f32=2.5 or ptr:f32[N]', text);
  const spec = text.trim();
  if (/^ptr\s*:/.test(spec)) return parseBuffer(text, spec.slice(spec.indexOf(':') + 1));
  const eq = spec.indexOf('=');
  if (eq < 0) {
    if (spec === 'ptr' || spec.startsWith('ptr[')) throw fail(TypeError, text, 'a buffer such as ptr:f32[1024]');
    throw fail(TypeError, text, '<type>=<value> such as i32=1024, or a buffer such as ptr:f32[1024]');
  }
  return parseScalar(text, spec.slice(0, eq).trim(), spec.slice(eq + 1).trim());
}

/** Parses every `--arg` spec in order; the first bad one throws (see parseArgSpec). */
export function parseArgSpecs(list: readonly string[]): ArgSpec[] {
  if (!Array.isArray(list)) throw typeError('--arg list', 'an array of strings', list);
  return list.map((text) => parseArgSpec(text));
}

/** The kernel signature the specs describe: scalars by their type, buffers as 'ptr' (lib/kernel.ts ScalarType). */
export function signatureOf(specs: readonly ArgSpec[]): Array<ArgScalarType | 'ptr'> {
  return specs.map((s) => (s.kind === 'scalar' ? s.type : 'ptr'));
}
