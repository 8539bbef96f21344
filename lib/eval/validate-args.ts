// SPDX-License-Identifier: MIT
// A job's arguments for validateJob(): argspec strings and their object form, checked element by element, each problem
// in the library's one message format, and literal data decoded. validate.ts checks the rest of the job.
import { inflateSync } from 'node:zlib';
import { DTYPES, DTYPE_INFO, describe, isDType } from '../core/index.js';
import { type ArgSpec, type InitSpec, checkArgSpecs, parseArgSpec } from '../measure/index.js';

/** One thing wrong with a job. */
export interface JobProblem {
  /** Where, as a path from the job: 'job.args[2]', 'job.timing.preset'. */
  path: string;
  /** In the library's one format: `Expected <what> for <path> but received <value> of type <type>`. */
  message: string;
  /** TypeError for a wrong type or shape, RangeError for a value out of range. */
  type: 'TypeError' | 'RangeError';
}

/** @internal Where a validator notes what is wrong (validateJob's and validateProblem's collectors). */
export interface FaultNotes {
  type(path: string, expected: string, value: unknown): void;
  range(path: string, expected: string, value: unknown): void;
  keys(path: string, value: Record<string, unknown>, known: readonly string[]): void;
}

/** FaultNotes that keep their list (validateJob's collector). */
export interface FaultList extends FaultNotes {
  readonly list: JobProblem[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const SCALAR_TYPES = [...DTYPES, 'bool'];
const quoted = (list: readonly string[]): string => list.map((s) => `'${s}'`).join(', ');

/** Bytes of literal data (base64, maybe zlib): exactly `bytes` of them, or a problem. */
export function decodeData(
  p: FaultList,
  path: string,
  v: unknown,
  bytes: number,
  what: string,
): Uint8Array | undefined {
  if (!isObject(v)) return void p.type(path, '{ base64, compress? }', v);
  if (typeof v.base64 !== 'string') return void p.type(`${path}.base64`, 'a base64 string', v.base64);
  const compress = v.compress ?? 'none';
  if (compress !== 'none' && compress !== 'zlib') return void p.type(`${path}.compress`, "'none' or 'zlib'", compress);
  const text = v.base64.replace(/\s+/g, '');
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) {
    return void p.type(`${path}.base64`, 'base64 (A-Z a-z 0-9 + /, padded with =)', v.base64);
  }
  let data: Uint8Array = Buffer.from(text, 'base64');
  if (compress === 'zlib') {
    try {
      // Never inflate beyond what the buffer holds: a small literal must not become a huge allocation.
      data = inflateSync(data, { maxOutputLength: bytes + 1 });
    } catch (e) {
      const tooLarge = (e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
      const why = tooLarge ? `more than ${bytes} bytes` : 'not zlib data';
      return void p.range(`${path}.base64`, `zlib data of ${bytes} bytes (${what}), not ${why},`, v.base64);
    }
  }
  if (data.byteLength !== bytes) {
    return void p.range(`${path}.base64`, `${bytes} bytes (${what}), not ${data.byteLength},`, v.base64);
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** An argument after validation: its spec (literal data decoded into its init) and its name. */
export interface PreparedArg {
  /** The argument as check() and bench() take it (ArgSpec), its literal data decoded. */
  spec: ArgSpec;
  /** The argument's name in the job, if it has one. */
  name: string | undefined;
}

/**
 * An error of the measure layer as a problem: argspec's "Expected a number ... but received the argument spec
 * 'text'" in the one format at `path`; a message already in it ("Expected ... for job.args[1].init.bytes but
 * received ...") as it is.
 */
function argspecProblem(p: FaultList, path: string, e: unknown, value: unknown): void {
  const message = (e as Error).message;
  const type = e instanceof RangeError ? 'RangeError' : 'TypeError';
  const m = /^Expected (.*) but received the argument spec '[\s\S]*'$/.exec(message);
  if (m !== null) {
    if (type === 'RangeError') p.range(path, m[1]!, value);
    else p.type(path, m[1]!, value);
    return;
  }
  const own = /^Expected [\s\S]* for (\S+) but received /.exec(message);
  p.list.push({ path: own !== null ? own[1]! : path, message, type });
}

function parseSpec(p: FaultList, path: string, text: string, value: unknown): ArgSpec | undefined {
  try {
    return parseArgSpec(text);
  } catch (e) {
    argspecProblem(p, path, e, value);
    return undefined;
  }
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const INIT_FIELDS: Record<string, { numbers: readonly string[]; options: readonly string[] }> = {
  uniform: { numbers: ['lo', 'hi'], options: ['seed'] },
  normal: { numbers: ['mean', 'std'], options: ['seed'] },
  randint: { numbers: ['lo', 'hi'], options: ['seed'] },
  const: { numbers: ['value'], options: [] },
  seq: { numbers: ['start', 'step'], options: ['along'] },
  arange: { numbers: [], options: ['along'] },
  zeros: { numbers: [], options: [] },
  ones: { numbers: [], options: [] },
};

/** An init object as argspec text ('uniform(-1,1,seed=7)'), or undefined after a problem. */
function initText(p: FaultList, path: string, v: Record<string, unknown>): string | undefined {
  const form = typeof v.kind === 'string' ? INIT_FIELDS[v.kind] : undefined;
  const kinds = quoted([...Object.keys(INIT_FIELDS), 'data']);
  if (form === undefined) return void p.type(`${path}.kind`, `one of ${kinds}`, v.kind);
  p.keys(path, v, ['kind', ...form.numbers, ...form.options]);
  const parts: string[] = [];
  for (const f of form.numbers) {
    const x = v[f];
    if (typeof x !== 'number' || !Number.isFinite(x)) return void p.type(`${path}.${f}`, 'a finite number', x);
    parts.push(String(x));
  }
  for (const f of form.options) {
    const x = v[f];
    if (x === undefined) continue;
    if (f === 'seed' && typeof x !== 'number') return void p.type(`${path}.seed`, 'a non-negative integer', x);
    if (f === 'along' && x !== 'all' && x !== 'last') return void p.type(`${path}.along`, "'all' or 'last'", x);
    parts.push(`${f}=${String(x)}`);
  }
  return parts.length === 0 ? (v.kind as string) : `${v.kind as string}(${parts.join(',')})`;
}

function argObject(p: FaultList, path: string, v: Record<string, unknown>): PreparedArg | undefined {
  const name = v.name;
  if (name !== undefined && (typeof name !== 'string' || !NAME.test(name))) {
    p.type(`${path}.name`, 'a C identifier such as x or out_0', name);
  }
  const named = typeof name === 'string' && NAME.test(name) ? name : undefined;
  const withName = (spec: ArgSpec): PreparedArg => {
    if (named !== undefined) spec.name = named;
    return { spec, name: named };
  };
  if (v.kind === 'scalar') {
    p.keys(path, v, ['kind', 'type', 'value', 'name']);
    if (typeof v.type !== 'string' || !SCALAR_TYPES.includes(v.type)) {
      return void p.type(`${path}.type`, `one of ${SCALAR_TYPES.join(' ')}`, v.type);
    }
    const value = v.value;
    if (!['number', 'string', 'boolean'].includes(typeof value)) {
      return void p.type(`${path}.value`, 'a number, string or boolean', value);
    }
    const spec = parseSpec(p, `${path}.value`, `${v.type}=${String(value)}`, value);
    return spec === undefined ? undefined : withName(spec);
  }
  if (v.kind !== 'buffer') return void p.type(`${path}.kind`, "'scalar' or 'buffer'", v.kind);
  p.keys(path, v, ['kind', 'dtype', 'length', 'shape', 'role', 'init', 'name']);
  if (!isDType(v.dtype)) return void p.type(`${path}.dtype`, `one of ${DTYPES.join(' ')}`, v.dtype);
  const dtype = v.dtype;
  let dims: number[] | undefined;
  if (v.shape !== undefined) {
    const s = v.shape;
    if (!Array.isArray(s) || s.length === 0 || !s.every((d) => typeof d === 'number')) {
      return void p.type(`${path}.shape`, 'an array of positive integers', s);
    }
    if (!s.every((d: number) => Number.isSafeInteger(d) && d >= 1)) {
      return void p.range(`${path}.shape`, 'positive integers', s);
    }
    dims = s as number[];
  }
  if (v.length !== undefined) {
    const n = dims?.reduce((a, b) => a * b, 1);
    if (typeof v.length !== 'number') return void p.type(`${path}.length`, 'a positive integer', v.length);
    const at = `${path}.length`;
    if (!Number.isSafeInteger(v.length) || v.length < 1) return void p.range(at, 'a positive integer', v.length);
    if (n !== undefined && n !== v.length) return void p.range(at, `the product of shape (${n})`, v.length);
    dims ??= [v.length];
  }
  if (dims === undefined) return void p.type(`${path}.length`, 'a positive integer (or a shape)', v.length);
  if (v.role !== undefined && v.role !== 'in' && v.role !== 'out') {
    return void p.type(`${path}.role`, "'in' or 'out'", v.role);
  }
  let init = '';
  let data: Uint8Array | undefined;
  if (v.init !== undefined) {
    if (!isObject(v.init)) {
      return void p.type(`${path}.init`, "an init such as { kind: 'uniform', lo: -1, hi: 1 }", v.init);
    }
    if (v.init.kind === 'data') {
      p.keys(`${path}.init`, v.init, ['kind', 'base64', 'compress']);
      const length = dims.reduce((a, b) => a * b, 1);
      data = decodeData(p, `${path}.init`, v.init, length * DTYPE_INFO[dtype].bytes, `${length} × ${dtype}`);
      if (data === undefined) return undefined;
      init = '=zeros'; // a stand-in for the parse (and the role's default); the decoded bytes replace it below
    } else {
      const text = initText(p, `${path}.init`, v.init);
      if (text === undefined) return undefined;
      init = `=${text}`;
    }
  }
  const role = v.role === undefined ? '' : `:${v.role as string}`;
  // Through argspec's grammar, for its checks of the fill against the element type (const(300) for u8 ...).
  const text = `ptr:${dtype}[${dims.join(',')}]${init}${role}`;
  const spec = parseSpec(p, v.init !== undefined ? `${path}.init` : path, text, text);
  if (spec === undefined) return undefined;
  if (spec.kind === 'buffer' && data !== undefined) spec.init = { kind: 'data', bytes: data };
  return withName(spec);
}

export function args(p: FaultList, path: string, v: unknown): PreparedArg[] | undefined {
  if (!Array.isArray(v)) {
    return void p.type(path, "an array of argument specs such as 'f32=2.5' or { kind: 'buffer', ... }", v);
  }
  const before = p.list.length;
  const out: (PreparedArg | undefined)[] = v.map((a: unknown, i) => {
    const at = `${path}[${i}]`;
    if (typeof a === 'string') {
      const spec = parseSpec(p, at, a, a);
      return spec === undefined ? undefined : { spec, name: spec.name };
    }
    if (isObject(a)) return argObject(p, at, a);
    return void p.type(at, "an argument spec such as 'f32=2.5' or { kind: 'buffer', ... }", a);
  });
  const seen = new Set<string>();
  out.forEach((a, i) => {
    if (a?.name === undefined) return;
    if (seen.has(a.name)) p.type(`${path}[${i}].name`, 'a name no other argument has', a.name);
    seen.add(a.name);
  });
  if (!out.every((a) => a !== undefined) || p.list.length > before) return undefined;
  try {
    checkArgSpecs(
      out.map((a) => a.spec),
      path,
    ); // the measure layer's own rules for the object form, last
  } catch (e) {
    argspecProblem(p, path, e, v);
    return undefined;
  }
  return out;
}
