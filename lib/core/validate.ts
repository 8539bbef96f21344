// SPDX-License-Identifier: MIT
// Argument validation with one message format (sharp's is.mjs):
//   Expected <what> for <name> but received <value> of type <type>
// TypeError for a wrong type, RangeError for a value out of range; raised before any driver call.

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  const type = typeof value;
  if (type === 'string') return `'${String(value).slice(0, 40)}' of type string`;
  if (type === 'number' || type === 'boolean') return `${String(value)} of type ${type}`;
  if (type === 'bigint') return `${String(value)}n of type bigint`;
  if (type === 'function') return 'a function';
  const ctor = (value as { constructor?: { name?: string } }).constructor?.name;
  return `an object of type ${ctor ?? 'Object'}`;
}

export function typeError(name: string, expected: string, value: unknown): TypeError {
  return new TypeError(`Expected ${expected} for ${name} but received ${describe(value)}`);
}

export function rangeError(name: string, expected: string, value: unknown): RangeError {
  return new RangeError(`Expected ${expected} for ${name} but received ${describe(value)}`);
}

/** A non-negative safe integer (sizes, offsets, counts). */
export function checkSize(name: string, value: unknown, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number') throw typeError(name, 'a non-negative integer', value);
  if (!Number.isSafeInteger(value) || value < 0 || value > max) {
    throw rangeError(
      name,
      max === Number.MAX_SAFE_INTEGER ? 'a non-negative integer' : `an integer in [0, ${max}]`,
      value,
    );
  }
  return value;
}

/** A safe integer within [min, max]. */
export function checkInt(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number') throw typeError(name, `an integer in [${min}, ${max}]`, value);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw rangeError(name, `an integer in [${min}, ${max}]`, value);
  }
  return value;
}

export function checkPositiveInt(name: string, value: unknown, max = 2 ** 31 - 1): number {
  if (typeof value !== 'number') throw typeError(name, 'a positive integer', value);
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw rangeError(name, max === 2 ** 31 - 1 ? 'a positive integer' : `an integer in [1, ${max}]`, value);
  }
  return value;
}

export function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw typeError(name, 'a boolean', value);
  return value;
}

export function checkString(name: string, value: unknown): string {
  if (typeof value !== 'string') throw typeError(name, 'a string', value);
  return value;
}

export function checkObject(name: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw typeError(name, 'an object', value);
  return value as Record<string, unknown>;
}

/** Options objects: undefined is {}; unknown keys are a TypeError so typos do not pass silently. */
export function checkOptions<K extends string>(
  name: string,
  value: unknown,
  known: readonly K[],
): Partial<Record<K, unknown>> {
  if (value === undefined) return {};
  const o = checkObject(name, value);
  for (const key of Object.keys(o)) {
    if (!(known as readonly string[]).includes(key)) {
      throw new TypeError(`Unknown option ${name}.${key}; known options: ${known.join(', ')}`);
    }
  }
  return o as Partial<Record<K, unknown>>;
}

export function isBufferSource(value: unknown): value is ArrayBufferView | ArrayBuffer {
  return ArrayBuffer.isView(value) || value instanceof ArrayBuffer;
}
