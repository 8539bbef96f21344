// SPDX-License-Identifier: MIT
// Request bodies with bounded memory. Fastify's own parsers hold a body three times over while they read and parse it
// (the chunks, their concatenation, the decoded text), and nothing bounded how many were read at once: eight 60 MB
// bodies took a server past 850 MB. Here:
// - a body over LARGE_BODY_BYTES (by its Content-Length, or once a chunked or compressed one has passed it) needs
//   slots to be read: one per LARGE_BODY_SLOT_BYTES it may reach (a body of unknown length: as many as the route's
//   limit needs), of a few per process. The others wait for their turn a bounded time, then are answered 503 with
//   Retry-After; a waiting body is not read at all (it stays in the socket buffers, and the client's).
// - JSON and text bodies are read into memory reserved for them and returned to the system the moment their text
//   exists; JSON's long strings are decoded one by one from those bytes rather than from one text of the whole body
//   (parseBody), so a large body costs its size twice at the most, and once after it is parsed.
// - on the routes that take large bodies, the strings their schema bounds (a kernel's source, 262,144 characters)
//   are counted as the body arrives: a body with a longer one is answered as the schema would answer it as soon as
//   it is seen, without reading the rest.
// - gzip and deflate bodies are inflated as a stream, the body limit counted on the inflated bytes.
import { isAscii } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { createGunzip, createInflate, type Gunzip, type Inflate } from 'node:zlib';
import { Readable } from 'node:stream';
import { errorCodes, type FastifyReply, type FastifyRequest } from 'fastify';
import { ServiceError } from '../errors.js';
import type { App } from './shared.js';

/** A body over this many bytes is large: it needs slots to be read. */
export const LARGE_BODY_BYTES = 2 ** 20;
/** A large body takes one slot per this many bytes it may reach (begun). */
export const LARGE_BODY_SLOT_BYTES = 32 * 2 ** 20;
/** Slots per process unless configured otherwise: two large bodies of up to 32 MiB at once, or one larger. */
export const DEFAULT_LARGE_BODIES = 2;
/** How long a large body waits for its slots before it is answered 503. */
export const LARGE_BODY_WAIT_MS = 10_000;
/** Large bodies that may wait for slots at once; beyond, 503 at once. */
export const LARGE_BODY_MAX_WAITING = 16;
/** What a 503 for a large body asks the client to wait. */
const LARGE_BODY_RETRY_AFTER_SECONDS = 5;

const {
  FST_ERR_CTP_BODY_TOO_LARGE,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH,
  FST_ERR_CTP_EMPTY_JSON_BODY,
  FST_ERR_CTP_INVALID_JSON_BODY,
} = errorCodes;

// ---------------------------------------------------------------------------------------------------------------
// Slots

interface Waiter {
  slots: number;
  grant: () => void;
}

/**
 * Gives out `slots` slots to read large bodies with, several to a body that needs several (never more than there
 * are). First come, first served: a body that needs two is not passed by later ones that need one. A request waits
 * at most `waitMs`, and at most `maxWaiting` wait.
 */
export class BodySlots {
  readonly slots: number;
  readonly #waitMs: number;
  readonly #maxWaiting: number;
  #free: number;
  readonly #waiting: Waiter[] = [];

  constructor(slots: number, waitMs = LARGE_BODY_WAIT_MS, maxWaiting = LARGE_BODY_MAX_WAITING) {
    if (!Number.isInteger(slots) || slots < 1) {
      throw new RangeError(`Expected an integer of at least 1 for slots but received ${String(slots)}`);
    }
    this.slots = slots;
    this.#free = slots;
    this.#waitMs = waitMs;
    this.#maxWaiting = maxWaiting;
  }

  /** Slots in use. */
  get inUse(): number {
    return this.slots - this.#free;
  }

  /** Requests waiting for slots. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** The slots a body that may reach `bytes` takes. */
  slotsFor(bytes: number): number {
    return Math.min(this.slots, Math.max(1, Math.ceil(bytes / LARGE_BODY_SLOT_BYTES)));
  }

  /**
   * `count` slots, as the function that gives them back (once; later calls do nothing).
   *
   * @throws ServiceError 503 with Retry-After when they are not free within the wait, or too many wait already; the
   *   signal's reason when it aborts first (the client left).
   */
  async acquire(count: number, signal?: AbortSignal): Promise<() => void> {
    const n = Math.min(this.slots, Math.max(1, count));
    if (this.#waiting.length === 0 && this.#free >= n) {
      this.#free -= n;
      return this.#releaser(n);
    }
    if (this.#waiting.length >= this.#maxWaiting) throw this.#busy();
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        slots: n,
        grant: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const leave = (error: unknown): void => {
        const i = this.#waiting.indexOf(waiter);
        if (i >= 0) this.#waiting.splice(i, 1);
        signal?.removeEventListener('abort', onAbort);
        clearTimeout(timer);
        reject(error);
        // The first in line left: those behind it may fit now.
        if (i === 0) this.#grant();
      };
      const onAbort = (): void => leave(signal?.reason);
      const timer = setTimeout(() => leave(this.#busy()), this.#waitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
    });
    return this.#releaser(n);
  }

  /** Hands free slots to the first in line while they fit. */
  #grant(): void {
    for (let next = this.#waiting[0]; next !== undefined && next.slots <= this.#free; next = this.#waiting[0]) {
      this.#waiting.shift();
      this.#free -= next.slots;
      next.grant();
    }
  }

  #releaser(n: number): () => void {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#free += n;
      this.#grant();
    };
  }

  #busy(): ServiceError {
    const message =
      `The server is reading as many request bodies over ${LARGE_BODY_BYTES} bytes as it reads at once, and ` +
      `more wait; retry in ${LARGE_BODY_RETRY_AFTER_SECONDS} s`;
    return new ServiceError('TOO_MANY_LARGE_BODIES', message, LARGE_BODY_RETRY_AFTER_SECONDS);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Bounded strings of a route's body schema

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
function overBoundError(over: StringOverBound): Error {
  const message = `must NOT have more than ${over.maxChars} characters`;
  return Object.assign(new Error(`body${over.instancePath} ${message}`), {
    statusCode: 400,
    code: 'FST_ERR_VALIDATION',
    validationContext: 'body',
    validation: [{ instancePath: over.instancePath, keyword: 'maxLength', params: { limit: over.maxChars }, message }],
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Reading

/** A request's slot, given back when its body is parsed, or at the latest when it is answered or abandoned. */
const held = new WeakMap<FastifyRequest, () => void>();

function release(request: FastifyRequest): void {
  held.get(request)?.();
  held.delete(request);
}

/** Takes the slots of a body that may reach `bytes`, once per request; what the request waits is bounded by `slots`. */
async function acquireFor(slots: BodySlots, request: FastifyRequest, bytes: number): Promise<void> {
  if (held.has(request)) return;
  const gone = new AbortController();
  const onClose = (): void =>
    gone.abort(new ServiceError('CLIENT_CLOSED', 'The client closed the connection while its body waited'));
  request.raw.once('close', onClose);
  try {
    held.set(request, await slots.acquire(slots.slotsFor(bytes), gone.signal));
  } finally {
    request.raw.off('close', onClose);
  }
}

/** A declared Content-Length, or undefined. */
function declaredLength(request: FastifyRequest): number | undefined {
  const header = request.headers['content-length'];
  return header !== undefined && /^\d{1,16}$/.test(header) ? Number(header) : undefined;
}

function encodingOf(request: FastifyRequest): string {
  return String(request.headers['content-encoding'] ?? 'identity')
    .trim()
    .toLowerCase();
}

function tooLarge(what?: string): Error {
  return what === undefined
    ? new FST_ERR_CTP_BODY_TOO_LARGE()
    : new ServiceError('FST_ERR_CTP_BODY_TOO_LARGE', `Request body is too large (${what})`);
}

/**
 * The body a preParsing hook hands on when its length is not known up front (chunked, gzip, deflate): the inflated
 * bytes, the limit counted on them (and on the encoded bytes), a slot taken once they pass LARGE_BODY_BYTES.
 * Fastify's own readers (the dashboard's form parser) read it too: `receivedEncodedLength` is theirs.
 */
class CountedBody extends Readable {
  receivedEncodedLength = 0;
  #received = 0;
  readonly #source: Readable;
  readonly #encoding: string;
  readonly #limit: number;
  readonly #slot: () => Promise<void>;
  #slotted: boolean;
  #inflater: Gunzip | Inflate | undefined;
  /** Where the bytes come from once it is read: the inflater, or the request. */
  #out: Readable | undefined;
  #waiting = false;
  #onEncoded: ((chunk: Buffer) => void) | undefined;

  constructor(source: Readable, encoding: string, limit: number, slotted: boolean, slot: () => Promise<void>) {
    super();
    this.#source = source;
    this.#encoding = encoding;
    this.#limit = limit;
    this.#slotted = slotted;
    this.#slot = slot;
  }

  /**
   * Starts reading the request, at the first read: a body nobody reads (a route that answers 415 first) is never
   * touched here, and no error of it can go unheard.
   */
  #start(): Readable {
    const source = this.#source;
    if (this.#encoding !== 'identity') {
      const inflater = this.#encoding === 'deflate' ? createInflate() : createGunzip();
      this.#inflater = inflater;
      this.#onEncoded = (chunk: Buffer) => {
        if (this.destroyed) return;
        this.receivedEncodedLength += chunk.length;
        if (this.receivedEncodedLength > this.#limit) this.#fail(tooLarge(this.#encoding));
        else if (!inflater.write(chunk)) source.pause();
      };
      source.on('data', this.#onEncoded);
      inflater.on('drain', () => source.resume());
      source.on('end', () => inflater.end());
      inflater.on('error', (e: Error) => {
        const message = `The ${this.#encoding} body does not inflate: ${e.message}`;
        this.#fail(new ServiceError('INVALID_CONTENT_ENCODING', message));
      });
    }
    const out = this.#inflater ?? source;
    out.on('data', (chunk: Buffer) => this.#take(chunk, out));
    out.on('end', () => this.push(null));
    source.on('error', (e: Error) => this.#fail(e));
    source.on('aborted', () => this.#fail(new Error('The client aborted its body')));
    return out;
  }

  #take(chunk: Buffer, out: Readable): void {
    if (this.destroyed) return;
    this.#received += chunk.length;
    if (this.#inflater === undefined) this.receivedEncodedLength = this.#received;
    if (this.#received > this.#limit) {
      this.#fail(tooLarge(this.#inflater === undefined ? undefined : 'inflated'));
      return;
    }
    if (!this.#slotted && this.#received > LARGE_BODY_BYTES) {
      // Large after all: this chunk and the rest wait for the slots.
      this.#slotted = true;
      this.#waiting = true;
      out.pause();
      this.#slot().then(
        () => {
          this.#waiting = false;
          if (this.push(chunk)) out.resume();
        },
        (e: unknown) => this.#fail(e as Error),
      );
      return;
    }
    if (!this.push(chunk)) out.pause();
  }

  /** Ends it with `error` for its reader; without one (a parser that gave up on it) quietly, never unheard. */
  #fail(error: Error): void {
    if (this.listenerCount('error') > 0) this.destroy(error);
    else this.destroy();
  }

  override _read(): void {
    this.#out ??= this.#start();
    if (!this.#waiting) this.#out.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.#onEncoded !== undefined) this.#source.off('data', this.#onEncoded);
    this.#inflater?.destroy();
    // What the client still sends is read and dropped, so that it reads the answer rather than a reset.
    if (this.#out !== undefined) this.#source.resume();
    callback(error);
  }
}

/** ES2024's resizable ArrayBuffer (Node 20 has it; the project's TypeScript lib is ES2023's). */
interface ResizableArrayBuffer extends ArrayBuffer {
  readonly maxByteLength: number;
  resize(byteLength: number): void;
}
const ResizableArrayBuffer = ArrayBuffer as unknown as new (
  byteLength: number,
  options: { maxByteLength: number },
) => ResizableArrayBuffer;

/**
 * A body's bytes, in memory of its own. A large one, or one of unknown length, goes into an ArrayBuffer reserved at the
 * most it may be (its Content-Length, else the route's limit) and grown in place as it arrives, so nothing is copied
 * twice; release() gives that memory back to the system at once (a resizable ArrayBuffer shrunk to 0 returns its
 * pages) rather than at some later garbage collection: the bytes are gone the moment their text exists. A small one
 * of known length is a plain buffer.
 */
class BodyBytes {
  readonly #memory: ArrayBuffer;
  readonly #resizable: ResizableArrayBuffer | undefined;
  length = 0;

  constructor(maxBytes: number, lengthKnown: boolean) {
    if (lengthKnown && maxBytes <= LARGE_BODY_BYTES) {
      this.#memory = new ArrayBuffer(maxBytes);
    } else {
      const initialBytes = Math.min(maxBytes, 64 * 1024);
      this.#resizable = new ResizableArrayBuffer(initialBytes, { maxByteLength: Math.max(maxBytes, 1) });
      this.#memory = this.#resizable;
    }
  }

  append(chunk: Buffer): void {
    const end = this.length + chunk.length;
    if (end > this.#memory.byteLength && this.#resizable !== undefined) {
      this.#resizable.resize(Math.min(this.#resizable.maxByteLength, Math.max(end, 2 * this.#resizable.byteLength)));
    }
    chunk.copy(new Uint8Array(this.#memory, this.length, chunk.length));
    this.length = end;
  }

  /** The bytes so far (a view: valid until release()). */
  get bytes(): Buffer {
    return Buffer.from(this.#memory, 0, this.length);
  }

  release(): void {
    this.#resizable?.resize(0);
    this.length = 0;
  }
}

/** Reads a whole body, following it with `scanner`: into memory reserved at its Content-Length when it has one. */
async function readAll(
  request: FastifyRequest,
  payload: Readable,
  scanner: JsonScanner | undefined,
): Promise<BodyBytes> {
  const declared = encodingOf(request) === 'identity' ? declaredLength(request) : undefined;
  const limit = request.routeOptions.bodyLimit;
  if (declared !== undefined && declared > limit) throw tooLarge();
  const body = new BodyBytes(declared ?? limit, declared !== undefined);
  try {
    // Not destroyed on an early refusal: the request's stream is its socket's, which still has the answer to carry.
    for await (const chunk of payload.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      const over = scanner?.feed(chunk);
      if (over !== undefined) throw overBoundError(over);
      if (body.length + chunk.length > (declared ?? limit)) {
        throw declared === undefined ? tooLarge() : new FST_ERR_CTP_INVALID_CONTENT_LENGTH();
      }
      body.append(chunk);
    }
    if (declared !== undefined && body.length !== declared) throw new FST_ERR_CTP_INVALID_CONTENT_LENGTH();
    return body;
  } catch (e) {
    body.release();
    // A stream of ours is ended (the request's stays open for the answer): none of its later errors goes unheard.
    if (payload !== request.raw) payload.destroy();
    throw e;
  }
}

const boundsBySchema = new WeakMap<object, StringBounds | null>();

/**
 * The scanner of a JSON body on a route that takes large bodies (on the others a body is 1 MiB at most, and its
 * strings are the schema's business): it notes the long strings and checks the strings the route's schema bounds.
 */
function scannerFor(request: FastifyRequest): JsonScanner | undefined {
  if (request.routeOptions.bodyLimit <= LARGE_BODY_BYTES) return undefined;
  const schema = request.routeOptions.schema?.body;
  if (typeof schema !== 'object' || schema === null) return new JsonScanner(undefined);
  let bounds = boundsBySchema.get(schema);
  if (bounds === undefined) {
    bounds = stringBoundsOf(schema) ?? null;
    boundsBySchema.set(schema, bounds);
  }
  return new JsonScanner(bounds ?? undefined);
}

/** No string of JSON text holds a raw control character. */
const CONTROL = /[\u0000-\u001f]/;

/**
 * JSON.parse of a body whose long string values were noted while it arrived, holding no long string more than twice
 * (its bytes and its text, only while it is decoded): JSON.parse of the whole text would hold the bytes, the text and
 * then a copy of every string. The long strings are cut out of the text, each replaced by a placeholder no client can
 * guess (a NUL, a per-body nonce, its index); what is left is parsed (names, nesting and small values: every check of
 * the parser, prototype poisoning included); each long string is decoded from its own bytes and put where its
 * placeholder is. The result is what JSON.parse of the whole text gives: an escape-free string is its UTF-8 decoded
 * and checked for raw control characters (latin1-decoded when it is ASCII: the same text, held outside V8's heap and
 * freed with the string), one with escapes is JSON.parse of its own quoted text. The body is released once its text
 * is out.
 */
export function parseBody(
  body: { readonly bytes: Buffer; release(): void },
  longStrings: readonly StringSpan[],
  parse: (text: string) => unknown,
): unknown {
  const bytes = body.bytes;
  if (longStrings.length === 0) {
    const text = bytes.toString('utf8');
    body.release();
    return parse(text);
  }
  const nonce = randomBytes(12).toString('hex');
  const parts: Buffer[] = [];
  let at = 0;
  longStrings.forEach((span, i) => {
    parts.push(bytes.subarray(at, span.start), Buffer.from(`\\u0000${nonce}:${i}`));
    at = span.end;
  });
  parts.push(bytes.subarray(at));
  const skeleton = Buffer.concat(parts).toString('utf8');
  const values = new Map<string, string>();
  longStrings.forEach((span, i) => {
    let value: unknown;
    if (span.escaped) {
      try {
        value = JSON.parse(bytes.toString('utf8', span.start - 1, span.end + 1));
      } catch {
        throw new FST_ERR_CTP_INVALID_JSON_BODY();
      }
    } else {
      const raw = bytes.subarray(span.start, span.end);
      value = isAscii(raw) ? raw.toString('latin1') : raw.toString('utf8');
      if (CONTROL.test(value as string)) throw new FST_ERR_CTP_INVALID_JSON_BODY();
    }
    values.set(`\u0000${nonce}:${i}`, value as string);
  });
  body.release();
  return replaceStrings(parse(skeleton), values);
}

/** `root` with each string value that is a key of `values` replaced by its value (in place, but for a root string). */
function replaceStrings(root: unknown, values: Map<string, string>): unknown {
  if (typeof root === 'string') return values.get(root) ?? root;
  let left = values.size;
  const stack: unknown[] = [root];
  while (stack.length > 0 && left > 0) {
    const node = stack.pop() as Record<string, unknown> | unknown[];
    const keys: Iterable<string | number> = Array.isArray(node) ? node.keys() : Object.keys(node);
    for (const key of keys) {
      const value = (node as Record<string | number, unknown>)[key];
      if (typeof value === 'string') {
        if (value.charCodeAt(0) !== 0) continue;
        const long = values.get(value);
        if (long === undefined) continue;
        (node as Record<string | number, unknown>)[key] = long;
        left--;
      } else if (typeof value === 'object' && value !== null) {
        stack.push(value);
      }
    }
  }
  return root;
}

export interface BodyOptions {
  /** Large bodies read at once. Default DEFAULT_LARGE_BODIES. */
  largeBodies?: number;
  /** How long a large body waits for a slot. Default LARGE_BODY_WAIT_MS. */
  waitMs?: number;
}

/**
 * Installs the body handling on `app`: the preParsing hook (encodings, limits, slots) and the JSON and text parsers.
 * Other parsers (the dashboard's form) read what the hook hands on.
 */
export function bodyHandling(app: App, options: BodyOptions = {}): BodySlots {
  const slots = new BodySlots(options.largeBodies ?? DEFAULT_LARGE_BODIES, options.waitMs ?? LARGE_BODY_WAIT_MS);
  const fastifyJson = app.getDefaultJsonParser('error', 'error');

  app.addHook('preParsing', async (request: FastifyRequest, _reply: FastifyReply, payload: Readable) => {
    const encoding = encodingOf(request);
    if (encoding !== 'identity' && encoding !== '' && !['gzip', 'x-gzip', 'deflate'].includes(encoding)) {
      const message = `Content-Encoding '${encoding.slice(0, 40)}' is not supported: use gzip, deflate or none`;
      throw new ServiceError('UNSUPPORTED_CONTENT_ENCODING', message);
    }
    const identity = encoding === 'identity' || encoding === '';
    const limit = request.routeOptions.bodyLimit;
    const declared = declaredLength(request);
    if (declared !== undefined && declared > limit) throw identity ? tooLarge() : tooLarge(encoding);
    const large = declared !== undefined && declared > LARGE_BODY_BYTES;
    // No body at all (a GET), or a plain body of a known length: read as it is, its length is its size.
    if (identity && declared === undefined && request.headers['transfer-encoding'] === undefined) return payload;
    if (identity && declared !== undefined) {
      if (large) await acquireFor(slots, request, declared);
      return payload;
    }
    // Compressed, or chunked: it may reach the route's limit, and counts as that once it is large.
    if (large) await acquireFor(slots, request, limit);
    const slot = (): Promise<void> => acquireFor(slots, request, limit);
    return new CountedBody(payload, identity ? 'identity' : encoding, limit, large, slot);
  });
  app.addHook('onResponse', async (request) => release(request));
  app.addHook('onRequestAbort', async (request) => release(request));

  // JSON only: text/plain (Fastify's other default) is a 415 like every other type, so a body a browser may send
  // cross-site without asking first (text/plain is such a "simple" request) never reaches a route.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  // Fastify's own JSON parser (secure-json-parse: a __proto__ or constructor.prototype name is a 400), called on text.
  const parse = (request: FastifyRequest) => (text: string) => {
    let result: { error: Error | null; body?: unknown } | undefined;
    (fastifyJson as unknown as (r: FastifyRequest, t: string, done: (e: Error | null, b?: unknown) => void) => void)(
      request,
      text,
      (error, body) => (result = { error, body }),
    );
    if (result === undefined) throw new Error("Fastify's JSON parser did not answer at once");
    if (result.error !== null) throw result.error;
    return result.body;
  };
  app.addContentTypeParser('application/json', async (request: FastifyRequest, payload: Readable) => {
    try {
      const scanner = scannerFor(request);
      const body = await readAll(request, payload, scanner);
      try {
        if (body.length === 0) throw new FST_ERR_CTP_EMPTY_JSON_BODY();
        return parseBody(body, scanner?.longStrings ?? [], parse(request));
      } finally {
        body.release();
      }
    } finally {
      release(request);
    }
  });
  return slots;
}
