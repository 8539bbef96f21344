// SPDX-License-Identifier: MIT
// Kernel argument specs: what each kernel argument is and how to fill it, as text (the CLI's `--arg`, spec files) or
// as objects (the evaluation service). parseArgSpec reads the text form; checkArgSpecs validates either form before
// check() and inputSets() use it. Pure: no GPU, so the grammar and its error messages are tested without one.
//
// The text form, one argument per spec:
//   scalars   <type>=<value>                  i32=1024  f32=-2.5e-3  u32=0xff  bool=true  i64=9007199254740993
//   buffers   ptr:<dtype>[<dims>][=<init>][:in|:out]
//                                             ptr:f32[1M]=uniform(-1,1)  ptr:u8[1024*1024]:out
//                                             ptr:f32[64,128]=seq(0,1,along=last)  ptr:f32[8]=normal(0,1,seed=3)
//   a name    <name>@<spec>                   x@ptr:f32[1M]=uniform(-1,1)  y@ptr:f32[1M]:out  n@i32=1048576
// A name comes first and ends at '@', a character no other part of the grammar uses, so it cannot be read as a
// type, an init or a role. (`x=ptr:...` could: '=' already separates a scalar's type from its value and a buffer
// from its init, and `i32=f32=1` would be anyone's guess.) Names are C identifiers, unique within a list; they let a
// reference kernel with another parameter order be matched to the candidate (check()'s Reference.io).
import { DTYPES, DTYPE_INFO, type DType, isDType, rangeError, typeError } from '../core/index.js';

/** Element types a device buffer can hold (the core's DType). */
export type BufferDType = DType;
/** Types a by-value scalar argument can have. */
export type ArgScalarType = BufferDType | 'bool';

/** Where a sequence runs: over the whole buffer, or along its last dimension (restarting every lastDim elements). */
export type SequenceAxis = 'all' | 'last';

/**
 * How to fill a buffer before the kernel runs. Random kinds draw independently per element: from the trial's
 * generator, which the buffers share in argument order, or, with `seed`, from a generator of the buffer's own (seeded
 * by the trial's seed and this one), so that its values depend on no other buffer and not on the order of the others.
 */
export type InitSpec =
  /** Uniform reals in [lo, hi). Float buffers only. Text: uniform(lo,hi) or uniform(lo,hi,seed=7). */
  | {
      /** Selects this form. */
      kind: 'uniform';
      /** Lower bound, inclusive. */
      lo: number;
      /** Upper bound, exclusive. */
      hi: number;
      /** The buffer's own generator's seed; without it, the trial's generator is used. */
      seed?: number;
    }
  /** Normal reals. Float buffers only. Text: normal(mean,std) or normal(mean,std,seed=7). */
  | {
      /** Selects this form. */
      kind: 'normal';
      /** The distribution's mean. */
      mean: number;
      /** Its standard deviation. */
      std: number;
      /** The buffer's own generator's seed; without it, the trial's generator is used. */
      seed?: number;
    }
  /** Uniform integers in [lo, hi): lo inclusive, hi exclusive. Text: randint(lo,hi) or randint(lo,hi,seed=7). */
  | {
      /** Selects this form. */
      kind: 'randint';
      /** Lower bound, inclusive. */
      lo: number;
      /** Upper bound, exclusive. */
      hi: number;
      /** The buffer's own generator's seed; without it, the trial's generator is used. */
      seed?: number;
    }
  /** Every element `value`. Text: const(v). */
  | {
      /** Selects this form. */
      kind: 'const';
      /** The value of every element. */
      value: number;
    }
  /** Every element 0. Text: zeros. */
  | {
      /** Selects this form. */
      kind: 'zeros';
    }
  /** Every element 1. Text: ones. */
  | {
      /** Selects this form. */
      kind: 'ones';
    }
  /**
   * 0, 1, 2, … (wraps or rounds as the element type's conversion does); `along` as for seq. Text: arange(along=last).
   */
  | {
      /** Selects this form. */
      kind: 'arange';
      /** Over the whole buffer ('all', the default) or along its last dimension ('last'). */
      along?: SequenceAxis;
    }
  /**
   * start, start + step, start + 2·step, … over the whole buffer (`along: 'all'`, the default), or along the last
   * dimension, repeated over the leading ones (`along: 'last'`): element i is start + (i mod lastDim)·step, what an
   * arange over a shaped tensor gives. Without a shape the last dimension is the whole buffer.
   * Text: seq(start,step) or seq(start,step,along=last).
   */
  | {
      /** Selects this form. */
      kind: 'seq';
      /** The first value. */
      start: number;
      /** The difference between neighbours. */
      step: number;
      /** Over the whole buffer ('all', the default) or along its last dimension ('last'). */
      along?: SequenceAxis;
    }
  /**
   * Exact device bytes, little-endian, as many as the buffer holds (length × the element's size): data a service
   * decoded from base64, say. Text: data(<base64>).
   */
  | {
      /** Selects this form. */
      kind: 'data';
      /** The bytes, exactly the buffer's size. */
      bytes: Uint8Array;
    };

/** A by-value scalar: `i32=1024`. i64/u64 values are always bigint, bool values boolean, others number. */
export interface ScalarArgSpec {
  /** Selects this form. */
  kind: 'scalar';
  /** The C type: 'i32', 'f32', 'bool' ... */
  type: ArgScalarType;
  /** The value passed to the kernel. */
  value: number | bigint | boolean;
  /** The argument's name (`n@i32=1024`). */
  name?: string;
}

/** A device buffer passed as a pointer: `ptr:f32[1024]=uniform(-1,1)`. */
export interface BufferArgSpec {
  /** Selects this form. */
  kind: 'buffer';
  /** The element type: 'f32', 'i32', 'u8' ... */
  dtype: BufferDType;
  /** Elements, not bytes (for a shape, the product of its dimensions). */
  length: number;
  /** The dimensions, outermost first, when the buffer was declared with a shape (`ptr:f32[64,128]`); row-major. */
  shape?: number[];
  /** 'in': filled before launch; 'out': written by the kernel (default 'in' with an init, 'out' without). */
  role: 'in' | 'out';
  /**
   * How the buffer is filled before the launch; undefined when the spec gives none (an input then holds
   * uniform(-1,1) for floats or randint over ±100, an output is poisoned).
   */
  init: InitSpec | undefined;
  /** The argument's name (`x@ptr:f32[N]`), for matching a reference's arguments to the candidate's. */
  name?: string;
}

/**
 * One kernel argument and how to make it: a by-value scalar or a device buffer. parseArgSpec() reads the text form
 * (`i32=1024`, `ptr:f32[1M]=uniform(-1,1)`).
 */
export type ArgSpec = ScalarArgSpec | BufferArgSpec;

const INIT_FORMS =
  'uniform(lo,hi), normal(mean,std), randint(lo,hi), const(v), zeros, ones, arange, seq(start,step) or data(base64)';
/** Argument names: C identifiers. */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const NAME_FORM = 'a name of letters, digits and _ (not starting with a digit) before @, such as x@ptr:f32[N]';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

// Decimal (with optional fraction and exponent) or hex integer, optionally signed.
const LITERAL = /^[+-]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$/;

function fail(ctor: typeof TypeError | typeof RangeError, text: string, expected: string): Error {
  return new ctor(`Expected ${expected} but received the argument spec '${text}'`);
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
  const range = DTYPE_INFO[type].range;
  if (range !== undefined) {
    const [min, max] = range;
    if (lit.int === undefined || lit.int < min || lit.int > max) {
      throw fail(RangeError, text, `an integer in [${min}, ${max}] for ${type}`);
    }
    const value = type === 'i64' || type === 'u64' ? lit.int : Number(lit.int);
    return { kind: 'scalar', type, value };
  }
  const max = DTYPE_INFO[type].maxFinite ?? Number.MAX_VALUE;
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

/** An init's arguments: the numbers in order, then `key=value` pairs (`uniform(-1,1,seed=7)`). */
interface InitArgs {
  numbers: number[];
  named: Map<string, string>;
}

/**
 * The arguments of `name(a,b,key=v)`: `count` numbers (each a literal), then named ones of the `keys` allowed;
 * otherwise a TypeError naming the form.
 */
function initArgs(
  text: string,
  form: string,
  argsText: string | undefined,
  count: number,
  keys: readonly string[] = [],
): InitArgs {
  const parts = argsText === undefined || argsText.trim() === '' ? [] : argsText.split(',').map((a) => a.trim());
  const named = new Map<string, string>();
  while (parts.length > 0) {
    const m = /^([a-z]+)\s*=\s*(.*)$/.exec(parts[parts.length - 1]!);
    if (m === null) break;
    const key = m[1]!;
    if (!keys.includes(key) || named.has(key)) {
      const allowed =
        keys.length === 0 ? 'no named arguments' : `named arguments ${keys.map((k) => `${k}=`).join(', ')}`;
      throw fail(TypeError, text, `${form} with ${allowed}`);
    }
    named.set(key, m[2]!.trim());
    parts.pop();
  }
  if (parts.length !== count) throw fail(TypeError, text, form);
  const numbers = parts.map((p) => {
    const lit = parseLiteral(p);
    if (lit === undefined) throw fail(TypeError, text, `${form} with number arguments`);
    if (!Number.isFinite(lit.num)) throw fail(RangeError, text, `${form} with finite arguments`);
    return lit.num;
  });
  return { numbers, named };
}

/** The `seed=` of a random init: a non-negative safe integer. */
function seedOf(text: string, form: string, args: InitArgs): { seed?: number } {
  const t = args.named.get('seed');
  if (t === undefined) return {};
  const lit = parseLiteral(t);
  if (lit === undefined || lit.int === undefined) throw fail(TypeError, text, `${form} with an integer seed=`);
  if (lit.int < 0n || lit.int > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw fail(RangeError, text, `${form} with a seed in [0, ${Number.MAX_SAFE_INTEGER}]`);
  }
  return { seed: Number(lit.int) };
}

/** The `along=` of a sequence: 'all' or 'last'. */
function alongOf(text: string, form: string, args: InitArgs): { along?: SequenceAxis } {
  const t = args.named.get('along');
  if (t === undefined) return {};
  if (t !== 'all' && t !== 'last') throw fail(TypeError, text, `${form} with along=all or along=last`);
  return { along: t };
}

function parseInit(text: string, dtype: BufferDType, length: number, initText: string): InitSpec {
  const m = /^([a-z]+)\s*(?:\((.*)\))?$/s.exec(initText);
  if (m === null) throw fail(TypeError, text, `an init such as ${INIT_FORMS}`);
  const name = m[1] ?? '';
  const argsText = m[2];
  const info = DTYPE_INFO[dtype];
  const intRange = info.range;
  const isInt = intRange !== undefined;
  const floatMax = info.maxFinite ?? Number.MAX_VALUE;
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
      const args = initArgs(text, form, argsText, 2, ['seed']);
      const [a = 0, b = 0] = args.numbers;
      // Real-valued draws into an integer buffer would be silently truncated; randint says what is meant.
      if (isInt) throw fail(TypeError, text, `randint(lo,hi) rather than ${name} for the integer buffer ${dtype}`);
      const seed = seedOf(text, form, args);
      if (name === 'uniform') {
        if (!(a < b)) throw fail(RangeError, text, 'uniform(lo,hi) with lo < hi');
        fits(a, 'uniform(lo,hi) with lo');
        fits(b, 'uniform(lo,hi) with hi');
        return { kind: 'uniform', lo: a, hi: b, ...seed };
      }
      if (!(b >= 0)) throw fail(RangeError, text, 'normal(mean,std) with std >= 0');
      fits(a, 'normal(mean,std) with mean');
      return { kind: 'normal', mean: a, std: b, ...seed };
    }
    case 'randint': {
      const args = initArgs(text, 'randint(lo,hi)', argsText, 2, ['seed']);
      const [lo = 0, hi = 0] = args.numbers;
      if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi)) {
        throw fail(RangeError, text, 'randint(lo,hi) with integer bounds');
      }
      if (!(lo < hi)) throw fail(RangeError, text, 'randint(lo,hi) with lo < hi (hi is exclusive)');
      fits(lo, 'randint(lo,hi) with lo');
      fits(hi - 1, 'randint(lo,hi) with hi - 1');
      return { kind: 'randint', lo, hi, ...seedOf(text, 'randint(lo,hi)', args) };
    }
    case 'const': {
      const [value = 0] = initArgs(text, 'const(v)', argsText, 1).numbers;
      fits(value, 'const(v) with v');
      return { kind: 'const', value };
    }
    case 'seq': {
      const args = initArgs(text, 'seq(start,step)', argsText, 2, ['along']);
      const [start = 0, step = 0] = args.numbers;
      fits(start, 'seq(start,step) with start');
      if (isInt && !Number.isSafeInteger(step)) {
        throw fail(RangeError, text, `seq(start,step) with an integer step for ${dtype}`);
      }
      return { kind: 'seq', start, step, ...alongOf(text, 'seq(start,step)', args) };
    }
    case 'arange': {
      const args = initArgs(text, 'arange (no arguments)', argsText, 0, ['along']);
      return { kind: 'arange', ...alongOf(text, 'arange', args) };
    }
    case 'data': {
      const b64 = (argsText ?? '').replace(/\s+/g, '');
      if (!BASE64.test(b64))
        throw fail(TypeError, text, 'data(<base64>) with standard base64 (A-Z a-z 0-9 + /, = padding)');
      const bytes = new Uint8Array(Buffer.from(b64, 'base64'));
      const want = length * info.bytes;
      if (bytes.byteLength !== want) {
        throw fail(
          RangeError,
          text,
          `data(<base64>) of exactly ${want} bytes (${length} × ${dtype}), not ${bytes.byteLength}`,
        );
      }
      return { kind: 'data', bytes };
    }
    case 'zeros':
    case 'ones':
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
  const dims = body
    .slice(open + 1, close)
    .split(',')
    .map((d) => parseLength(text, d));
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
    init = parseInit(text, dtype, length, rest.slice(1).trim());
  }
  const spec: BufferArgSpec = {
    kind: 'buffer',
    dtype,
    length,
    role: role ?? (init === undefined ? 'out' : 'in'),
    init,
  };
  if (dims.length > 1) spec.shape = dims;
  return spec;
}

/**
 * Parses one `--arg` spec (the grammar is at the top of this file).
 *
 * Scalars are `<type>=<value>` (`i32=1024`, `f32=-2.5e-3`, `u32=0xff`, `bool=true`, `i64=9007199254740993`).
 * Buffers are `ptr:<dtype>[<length>]`, then optionally `=<init>`, then optionally `:in` or `:out`; the length may use
 * `*` and the 1024-based suffixes k and M (`ptr:f32[4M]=uniform(-1,1)`, `ptr:u8[1024*1024]:out`), and a shape lists
 * dimensions (`ptr:f32[64,128]`). Either may be named: `x@ptr:f32[1M]=uniform(-1,1)`, `n@i32=1024`.
 *
 * @throws TypeError when the text does not follow the grammar (unknown type, bad literal, unknown init, bad name).
 * @throws RangeError when a value is outside what its type holds (`u8=300`, `i32=1.5`, `uniform(2,1)`, length 0).
 * @example parseArgSpec('ptr:f32[1k]') // { kind: 'buffer', dtype: 'f32', length: 1024, role: 'out', init: undefined }
 * @example parseArgSpec('y@ptr:f32[8]:out')
 * // { kind: 'buffer', dtype: 'f32', length: 8, role: 'out', init: undefined, name: 'y' }
 */
export function parseArgSpec(text: string): ArgSpec {
  if (typeof text !== 'string') throw typeError('an argument spec', 'a string such as f32=2.5 or ptr:f32[N]', text);
  let spec = text.trim();
  let name: string | undefined;
  const at = spec.indexOf('@');
  if (at >= 0) {
    name = spec.slice(0, at).trim();
    if (!NAME.test(name)) throw fail(TypeError, text, NAME_FORM);
    spec = spec.slice(at + 1).trim();
  }
  const parsed = parseUnnamed(text, spec);
  if (name !== undefined) parsed.name = name;
  return parsed;
}

function parseUnnamed(text: string, spec: string): ArgSpec {
  if (/^ptr\s*:/.test(spec)) return parseBuffer(text, spec.slice(spec.indexOf(':') + 1));
  const eq = spec.indexOf('=');
  if (eq < 0) {
    if (spec === 'ptr' || spec.startsWith('ptr[')) throw fail(TypeError, text, 'a buffer such as ptr:f32[1024]');
    throw fail(TypeError, text, '<type>=<value> such as i32=1024, or a buffer such as ptr:f32[1024]');
  }
  return parseScalar(text, spec.slice(0, eq).trim(), spec.slice(eq + 1).trim());
}

/** Parses every `--arg` spec in order; the first bad one throws (see parseArgSpec), and so does a name used twice. */
export function parseArgSpecs(list: readonly string[]): ArgSpec[] {
  if (!Array.isArray(list)) throw typeError('argument specs', 'an array of strings', list);
  const specs = list.map((text) => parseArgSpec(text));
  const seen = new Set<string>();
  specs.forEach((s, i) => {
    if (s.name === undefined) return;
    if (seen.has(s.name)) throw fail(TypeError, list[i]!, `a name not used by an earlier argument ('${s.name}' is)`);
    seen.add(s.name);
  });
  return specs;
}

/** The kernel signature the specs describe: scalars by their type, buffers as 'ptr' (lib/core/args.ts ScalarType). */
export function signatureOf(specs: readonly ArgSpec[]): Array<ArgScalarType | 'ptr'> {
  return specs.map((s) => (s.kind === 'scalar' ? s.type : 'ptr'));
}

/** How a buffer takes part: read only, read and written (an output with an initial value), or written only. */
export type BufferRole = 'in' | 'inout' | 'out';
export function roleOf(spec: BufferArgSpec): BufferRole {
  return spec.role === 'in' ? 'in' : spec.init !== undefined ? 'inout' : 'out';
}

/** 'x' (argument 2), or argument 2: how messages name an argument. */
export function argumentLabel(spec: ArgSpec, index: number): string {
  return spec.name !== undefined ? `'${spec.name}' (argument ${index})` : `argument ${index}`;
}

const INIT_KINDS = ['uniform', 'normal', 'randint', 'const', 'zeros', 'ones', 'arange', 'seq', 'data'] as const;

/**
 * Validates argument specs in object form, as a service builds them (text from parseArgSpec passes): kinds, types,
 * lengths and shapes, roles, inits (a data init holds exactly the buffer's bytes; seeds are non-negative safe
 * integers; along is 'all' or 'last'), and names (C identifiers, unique). Returns `io`.
 *
 * @throws TypeError / RangeError naming the field, e.g. `io[1].init.bytes`.
 */
export function checkArgSpecs(io: readonly ArgSpec[], where = 'io'): readonly ArgSpec[] {
  if (!Array.isArray(io)) throw typeError(where, 'an array of argument specs (see parseArgSpec)', io);
  const names = new Set<string>();
  io.forEach((a: ArgSpec, i) => {
    const at = `${where}[${i}]`;
    if (typeof a !== 'object' || a === null) throw typeError(at, 'an argument spec (see parseArgSpec)', a);
    if (a.name !== undefined) {
      if (typeof a.name !== 'string' || !NAME.test(a.name))
        throw typeError(`${at}.name`, 'a C identifier such as x or out_0', a.name);
      if (names.has(a.name)) throw typeError(`${at}.name`, 'a name no other argument has', a.name);
      names.add(a.name);
    }
    if (a.kind === 'scalar') {
      if (a.type !== 'bool' && !isDType(a.type))
        throw typeError(`${at}.type`, `a scalar type (${DTYPES.join(' ')} bool)`, a.type);
      return;
    }
    if (a.kind !== 'buffer') throw typeError(`${at}.kind`, "'buffer' or 'scalar'", (a as { kind: unknown }).kind);
    if (!isDType(a.dtype)) throw typeError(`${at}.dtype`, `an element type (${DTYPES.join(' ')})`, a.dtype);
    if (typeof a.length !== 'number' || !Number.isSafeInteger(a.length) || a.length < 1) {
      throw (typeof a.length === 'number' ? rangeError : typeError)(`${at}.length`, 'a positive integer', a.length);
    }
    if (a.shape !== undefined) {
      if (!Array.isArray(a.shape) || a.shape.length === 0 || !a.shape.every((d) => Number.isSafeInteger(d) && d > 0)) {
        throw typeError(`${at}.shape`, 'an array of positive integers', a.shape);
      }
      const product = a.shape.reduce((x, y) => x * y, 1);
      if (product !== a.length)
        throw rangeError(`${at}.shape`, `dimensions whose product is the length ${a.length}`, a.shape);
    }
    if (a.role !== 'in' && a.role !== 'out') throw typeError(`${at}.role`, "'in' or 'out'", a.role);
    if (a.init !== undefined) checkInit(a, `${at}.init`);
  });
  return io;
}

function checkInit(a: BufferArgSpec, at: string): void {
  const init = a.init as InitSpec & Record<string, unknown>;
  if (typeof init !== 'object' || init === null || !(INIT_KINDS as readonly unknown[]).includes(init.kind)) {
    throw typeError(at, `an init { kind: ${INIT_KINDS.map((k) => `'${k}'`).join(' | ')}, ... }`, init);
  }
  const finite = (key: string): void => {
    const v = init[key];
    if (typeof v !== 'number' || !Number.isFinite(v)) throw typeError(`${at}.${key}`, 'a finite number', v);
  };
  switch (init.kind) {
    case 'uniform':
      finite('lo');
      finite('hi');
      break;
    case 'normal':
      finite('mean');
      finite('std');
      break;
    case 'randint':
      finite('lo');
      finite('hi');
      break;
    case 'const':
      finite('value');
      break;
    case 'seq':
      finite('start');
      finite('step');
      break;
    case 'data': {
      const want = a.length * DTYPE_INFO[a.dtype].bytes;
      if (!(init.bytes instanceof Uint8Array))
        throw typeError(`${at}.bytes`, `a Uint8Array of ${want} bytes`, init.bytes);
      if (init.bytes.byteLength !== want) {
        throw rangeError(
          `${at}.bytes.byteLength`,
          `exactly ${want} bytes (${a.length} × ${a.dtype})`,
          init.bytes.byteLength,
        );
      }
      break;
    }
    default:
      break;
  }
  if ('seed' in init && init.seed !== undefined) {
    if (init.kind !== 'uniform' && init.kind !== 'normal' && init.kind !== 'randint') {
      throw typeError(`${at}.seed`, 'no seed: only uniform, normal and randint draw random values', init.seed);
    }
    const seed = init.seed;
    if (typeof seed !== 'number' || !Number.isSafeInteger(seed) || seed < 0) {
      throw (typeof seed === 'number' ? rangeError : typeError)(
        `${at}.seed`,
        `an integer in [0, ${Number.MAX_SAFE_INTEGER}]`,
        seed,
      );
    }
  }
  if ('along' in init && init.along !== undefined) {
    if (init.kind !== 'seq' && init.kind !== 'arange')
      throw typeError(`${at}.along`, 'no along: only seq and arange run along an axis', init.along);
    if (init.along !== 'all' && init.along !== 'last') throw typeError(`${at}.along`, "'all' or 'last'", init.along);
  }
}
