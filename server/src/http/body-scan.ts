// SPDX-License-Identifier: MIT
// Following a JSON body as it arrives: where a route's body schema bounds the length of strings (stringBoundsOf), and
// the scanner (JsonScanner) that tracks nesting and names, counts the characters of each bounded string and notes the
// long string values. body.ts refuses a body with a string over its bound as soon as it is seen (overBoundError, the
// schema's own answer) and parses the long strings one by one from the body's bytes (parseBody). Pure: no I/O.

/** Where a body schema bounds the length of strings. */
export interface StringBounds {
  /** The most characters (code points, as ajv counts them) a string here may have; undefined: no bound. */
  maxChars?: number;
  /** An object's properties by name. */
  properties?: Map<string, StringBounds>;
  /** An object's other properties (a record's values). */
  other?: StringBounds;
  /** An array's items. */
  items?: StringBounds;
}

interface JsonSchema {
  type?: unknown;
  maxLength?: unknown;
  properties?: Record<string, unknown>;
  patternProperties?: Record<string, unknown>;
  additionalProperties?: unknown;
  items?: unknown;
  anyOf?: unknown[];
  oneOf?: unknown[];
}

/** Schemas nest no deeper in this service; deeper ones are taken as unbounded rather than walked. */
const MAX_SCHEMA_DEPTH = 32;

function typesOf(schema: JsonSchema): string[] | undefined {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((t): t is string => typeof t === 'string');
  return undefined;
}

function isEmpty(b: StringBounds): boolean {
  return b.maxChars === undefined && b.properties === undefined && b.other === undefined && b.items === undefined;
}

/** What holds in both places: a bound only where each has one (the larger), undefined where either has none. */
function either(a: StringBounds | undefined, b: StringBounds | undefined): StringBounds | undefined {
  if (a === undefined || b === undefined) return undefined;
  const out: StringBounds = {};
  if (a.maxChars !== undefined && b.maxChars !== undefined) out.maxChars = Math.max(a.maxChars, b.maxChars);
  if (a.properties !== undefined && b.properties !== undefined) {
    const properties = new Map<string, StringBounds>();
    for (const [key, bounds] of a.properties) {
      const merged = either(bounds, b.properties.get(key) ?? b.other);
      if (merged !== undefined) properties.set(key, merged);
    }
    if (properties.size > 0) out.properties = properties;
  }
  const other = either(a.other, b.other);
  if (other !== undefined) out.other = other;
  const items = either(a.items, b.items);
  if (items !== undefined) out.items = items;
  return isEmpty(out) ? undefined : out;
}

/**
 * Where `schema` (a route's JSON schema of its body) bounds strings. Only what holds for every value the schema
 * accepts: of a union, a bound that each branch accepting that kind of value has; anything the walk does not
 * understand ($ref, allOf, a pattern other than any name) is unbounded. A string longer than these bounds is
 * refused by the schema too.
 */
export function stringBoundsOf(schema: unknown, depth = 0): StringBounds | undefined {
  if (depth > MAX_SCHEMA_DEPTH || typeof schema !== 'object' || schema === null) return undefined;
  const s = schema as JsonSchema;
  const branches = s.anyOf ?? s.oneOf;
  if (Array.isArray(branches)) {
    let strings: StringBounds | undefined;
    let objects: StringBounds | undefined;
    let arrays: StringBounds | undefined;
    const seen = { string: false, object: false, array: false };
    for (const branch of branches) {
      const types = typeof branch === 'object' && branch !== null ? typesOf(branch as JsonSchema) : undefined;
      // A branch of any type (Unknown, a nested union) could be anything: nothing here is bounded.
      if (types === undefined) return undefined;
      const bounds = stringBoundsOf(branch, depth + 1);
      for (const kind of ['string', 'object', 'array'] as const) {
        if (!types.includes(kind)) continue;
        const part = bounds === undefined ? undefined : { ...bounds };
        const merged = (current: StringBounds | undefined) => (seen[kind] ? either(current, part) : part);
        if (kind === 'string') strings = merged(strings);
        else if (kind === 'object') objects = merged(objects);
        else arrays = merged(arrays);
        seen[kind] = true;
      }
    }
    const out: StringBounds = {};
    if (strings?.maxChars !== undefined) out.maxChars = strings.maxChars;
    if (objects?.properties !== undefined) out.properties = objects.properties;
    if (objects?.other !== undefined) out.other = objects.other;
    if (arrays?.items !== undefined) out.items = arrays.items;
    return isEmpty(out) ? undefined : out;
  }
  const types = typesOf(s);
  if (types === undefined) return undefined;
  const out: StringBounds = {};
  if (types.includes('string') && typeof s.maxLength === 'number') out.maxChars = s.maxLength;
  if (types.includes('object')) {
    if (s.properties !== undefined) {
      const properties = new Map<string, StringBounds>();
      for (const [key, value] of Object.entries(s.properties)) {
        const bounds = stringBoundsOf(value, depth + 1);
        if (bounds !== undefined) properties.set(key, bounds);
      }
      if (properties.size > 0) out.properties = properties;
    }
    const patterns = Object.entries(s.patternProperties ?? {});
    if (patterns.length === 1 && /^\^\(?\.\*\)?\$$/.test(patterns[0]![0])) {
      const other = stringBoundsOf(patterns[0]![1], depth + 1);
      if (other !== undefined) out.other = other;
    } else if (patterns.length === 0 && typeof s.additionalProperties === 'object') {
      const other = stringBoundsOf(s.additionalProperties, depth + 1);
      if (other !== undefined) out.other = other;
    }
  }
  if (types.includes('array')) {
    const items = stringBoundsOf(s.items, depth + 1);
    if (items !== undefined) out.items = items;
  }
  return isEmpty(out) ? undefined : out;
}

/** A string longer than its schema allows, as ajv reports one: the JSON pointer of the string and its bound. */
export interface StringOverBound {
  instancePath: string;
  maxChars: number;
}

interface Frame {
  array: boolean;
  bounds: StringBounds | undefined;
  /** The current property's name (undefined while a name is read, or for a name not kept). */
  key: string | undefined;
  /** An object expecting a property name next. */
  expectsKey: boolean;
  index: number;
}

/** A string value of a JSON text: its bytes between the quotes, [start, end). */
export interface StringSpan {
  start: number;
  end: number;
  /** Whether it holds an escape (\n, \u0041 ...). */
  escaped: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Longer property names are no schema property's: they are not kept. */
const MAX_KEY_BYTES = 256;
/**
 * Nesting followed in full (a frame per level); deeper levels are only counted, so that a body of 64 MiB of '[' costs
 * a counter, not 64 million frames. Every schema here is far shallower.
 */
const MAX_SCAN_DEPTH = 64;
/** A string value this long (bytes) is a long one: parseBody takes it out of the text before JSON.parse. */
export const LONG_STRING_BYTES = 64 * 1024;

/**
 * Follows a JSON text as it arrives: counts the characters of each string the schema bounds and reports the first one
 * over its bound, and notes where the long string values are. It does not check the syntax (JSON.parse does, later):
 * it only tracks nesting, names and strings. Characters are counted as ajv counts them (code points), never more: an
 * escape is one, a UTF-8 sequence one, an escaped high surrogate none (its low half counts). A property name written
 * with escapes is not recognised (its value goes unbounded). A name given twice has each of its values counted,
 * though JSON.parse keeps only the last: such a body is refused for its first value.
 */
export class JsonScanner {
  readonly #root: StringBounds | undefined;
  readonly #stack: Frame[] = [];
  /** Bytes fed before the current chunk. */
  #offset = 0;
  #inString = false;
  #isKey = false;
  /** The bound of the string being read (undefined: unbounded). */
  #maxChars: number | undefined;
  #chars = 0;
  /** 0: none; 1: after a backslash; 2 to 5: reading the hex digits of \u. */
  #escape = 0;
  #hex = 0;
  #keyBytes: number[] | undefined;
  #stringStart = 0;
  #escaped = false;
  #rootDone = false;
  /** Levels of nesting past MAX_SCAN_DEPTH: counted, not followed. */
  #deep = 0;
  /** The long string values (LONG_STRING_BYTES or more), in order. */
  readonly longStrings: StringSpan[] = [];

  constructor(root: StringBounds | undefined) {
    this.#root = root;
  }

  /** Follows `chunk`; the first string over its bound, or undefined. */
  feed(chunk: Buffer): StringOverBound | undefined {
    let i = 0;
    const n = chunk.length;
    try {
      while (i < n) {
        if (this.#inString) {
          i = this.#maxChars === undefined && !this.#isKey ? this.#skipString(chunk, i) : this.#countString(chunk, i);
          if (this.#maxChars !== undefined && this.#chars > this.#maxChars) {
            return { instancePath: this.#pointer(), maxChars: this.#maxChars };
          }
          continue;
        }
        const b = chunk[i++]!;
        switch (b) {
          case QUOTE:
            this.#startString(this.#offset + i);
            break;
          case 0x7b: // {
          case 0x5b: {
            // [
            if (this.#deep > 0 || this.#stack.length >= MAX_SCAN_DEPTH) {
              this.#deep++;
              break;
            }
            const array = b === 0x5b;
            this.#stack.push({ array, bounds: this.#valueBounds(), key: undefined, expectsKey: !array, index: 0 });
            break;
          }
          case 0x7d: // }
          case 0x5d: // ]
            if (this.#deep > 0) this.#deep--;
            else this.#stack.pop();
            break;
          case 0x2c: {
            // ,
            if (this.#deep > 0) break;
            const top = this.#stack[this.#stack.length - 1];
            if (top?.array === true) top.index++;
            else if (top !== undefined) top.expectsKey = true;
            break;
          }
          default:
            break;
        }
      }
      return undefined;
    } finally {
      this.#offset += n;
    }
  }

  /** The bounds of a value starting now. */
  #valueBounds(): StringBounds | undefined {
    const top = this.#stack[this.#stack.length - 1];
    if (top === undefined) {
      if (this.#rootDone) return undefined;
      this.#rootDone = true;
      return this.#root;
    }
    if (top.array) return top.bounds?.items;
    if (top.key === undefined) return undefined;
    return top.bounds?.properties?.get(top.key) ?? top.bounds?.other;
  }

  #startString(start: number): void {
    const top = this.#stack[this.#stack.length - 1];
    this.#inString = true;
    this.#escape = 0;
    this.#chars = 0;
    this.#stringStart = start;
    this.#escaped = false;
    if (this.#deep > 0) {
      // Past the depth followed, a name and a value look alike: neither is bounded nor taken out as long.
      this.#isKey = false;
      this.#maxChars = undefined;
      this.#stringStart = Number.POSITIVE_INFINITY;
      return;
    }
    this.#isKey = top !== undefined && !top.array && top.expectsKey;
    if (this.#isKey) {
      top!.expectsKey = false;
      top!.key = undefined;
      this.#keyBytes = [];
      this.#maxChars = undefined;
    } else {
      this.#maxChars = this.#valueBounds()?.maxChars;
    }
  }

  /** The string ends at `end` (its closing quote). */
  #endString(end: number): void {
    this.#inString = false;
    if (this.#isKey) {
      const top = this.#stack[this.#stack.length - 1]!;
      top.key = this.#keyBytes === undefined ? undefined : Buffer.from(this.#keyBytes).toString('utf8');
      this.#keyBytes = undefined;
    } else if (end - this.#stringStart >= LONG_STRING_BYTES) {
      this.longStrings.push({ start: this.#stringStart, end, escaped: this.#escaped });
    }
  }

  /** An unbounded value: skips to its closing quote without looking at the bytes between (memchr). */
  #skipString(chunk: Buffer, i: number): number {
    const n = chunk.length;
    while (i < n) {
      if (this.#escape === 1) {
        this.#escape = 0;
        i++;
        continue;
      }
      const quote = chunk.indexOf(QUOTE, i);
      const slash = chunk.indexOf(BACKSLASH, i);
      if (slash >= 0 && (quote < 0 || slash < quote)) {
        this.#escape = 1;
        this.#escaped = true;
        i = slash + 1;
        continue;
      }
      if (quote < 0) return n;
      this.#endString(this.#offset + quote);
      return quote + 1;
    }
    return n;
  }

  /** A bounded value or a name: counts its characters (and keeps a name's bytes). */
  #countString(chunk: Buffer, i: number): number {
    const n = chunk.length;
    while (i < n) {
      const b = chunk[i++]!;
      if (this.#escape === 1) {
        if (b === 0x75) {
          this.#escape = 2;
          this.#hex = 0;
        } else {
          this.#escape = 0;
          this.#chars++;
        }
        continue;
      }
      if (this.#escape >= 2) {
        this.#hex = this.#hex * 16 + hexValue(b);
        if (++this.#escape === 6) {
          this.#escape = 0;
          // A high surrogate and its low half are one code point: the low half counts it.
          if (this.#hex < 0xd800 || this.#hex > 0xdbff) this.#chars++;
        }
        continue;
      }
      if (b === BACKSLASH) {
        this.#escape = 1;
        this.#escaped = true;
        // A name with an escape is not recognised: its raw bytes are not its text.
        this.#keyBytes = undefined;
        continue;
      }
      if (b === QUOTE) {
        this.#endString(this.#offset + i - 1);
        return i;
      }
      // Every byte but a UTF-8 continuation byte starts a code point.
      if ((b & 0xc0) !== 0x80) this.#chars++;
      if (this.#keyBytes !== undefined) {
        if (this.#keyBytes.length < MAX_KEY_BYTES) this.#keyBytes.push(b);
        else this.#keyBytes = undefined;
      }
      if (this.#maxChars !== undefined && this.#chars > this.#maxChars) return i;
    }
    return n;
  }

  /** The JSON pointer of the string being read, as ajv's instancePath. */
  #pointer(): string {
    return this.#stack
      .map((f) => (f.array ? String(f.index) : (f.key ?? '').replaceAll('~', '~0').replaceAll('/', '~1')))
      .map((part) => `/${part}`)
      .join('');
  }
}

function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  return 0;
}

/** The error Fastify's validation would raise for `over`, so that every route answers it in its own error shape. */
export function overBoundError(over: StringOverBound): Error {
  const message = `must NOT have more than ${over.maxChars} characters`;
  return Object.assign(new Error(`body${over.instancePath} ${message}`), {
    statusCode: 400,
    code: 'FST_ERR_VALIDATION',
    validationContext: 'body',
    validation: [{ instancePath: over.instancePath, keyword: 'maxLength', params: { limit: over.maxChars }, message }],
  });
}
