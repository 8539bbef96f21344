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
// The slots are body-slots.ts; the scanner of bounded and long strings body-scan.ts.
import { isAscii } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { createGunzip, createInflate, type Gunzip, type Inflate } from 'node:zlib';
import { Readable } from 'node:stream';
import { errorCodes, type FastifyReply, type FastifyRequest } from 'fastify';
import { ServiceError } from '../errors.js';
import { JsonScanner, overBoundError, stringBoundsOf, type StringBounds, type StringSpan } from './body-scan.js';
import { BodySlots, DEFAULT_LARGE_BODIES, LARGE_BODY_BYTES, LARGE_BODY_WAIT_MS } from './body-slots.js';
import type { App } from './shared.js';

const {
  FST_ERR_CTP_BODY_TOO_LARGE,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH,
  FST_ERR_CTP_EMPTY_JSON_BODY,
  FST_ERR_CTP_INVALID_JSON_BODY,
} = errorCodes;

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
