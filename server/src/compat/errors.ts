// SPDX-License-Identifier: MIT
// The original server's errors: its ClientError and validation answers, and Fastify's validation errors in
// pydantic's words, for the compatible routes (routes.ts). The contract is server/docs/compat.md.
import type { ValidationErrorItem } from './schemas.js';

/** The original's ClientError: 400 `{ error, details, status: 'client_error' }`. */
export class CompatClientError extends Error {
  readonly details: Record<string, unknown>;

  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'CompatClientError';
    this.details = details;
  }
}

/** The original's pydantic ValidationError: 400 `{ error: 'Invalid request format', validation_errors, ... }`. */
export class CompatValidationError extends Error {
  readonly errors: ValidationErrorItem[];

  constructor(errors: ValidationErrorItem[]) {
    super('Invalid request format');
    this.name = 'CompatValidationError';
    this.errors = errors;
  }
}

/** An ajv error as Fastify hands it over. */
export interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

const quotedList = (values: readonly unknown[]): string => {
  const q = values.map((v) => `'${String(v)}'`);
  return q.length <= 1 ? (q[0] ?? '') : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
};

/** pydantic's message and error type for an ajv error (undefined: a union branch's noise, not worth a line). */
function pydanticOf(e: AjvError): { message: string; type: string } | undefined {
  const p = e.params ?? {};
  switch (e.keyword) {
    case 'required':
      return { message: 'Field required', type: 'missing' };
    case 'additionalProperties':
      return { message: 'Extra inputs are not permitted', type: 'extra_forbidden' };
    case 'enum':
      return { message: `Input should be ${quotedList((p.allowedValues as unknown[]) ?? [])}`, type: 'enum' };
    case 'type': {
      const types: Record<string, [string, string]> = {
        integer: ['Input should be a valid integer', 'int_type'],
        number: ['Input should be a valid number', 'float_type'],
        string: ['Input should be a valid string', 'string_type'],
        boolean: ['Input should be a valid boolean', 'bool_type'],
        array: ['Input should be a valid list', 'list_type'],
        object: ['Input should be a valid dictionary', 'dict_type'],
      };
      const t = types[String(p.type)];
      return t === undefined ? undefined : { message: t[0], type: t[1] };
    }
    case 'maxLength':
      return { message: `String should have at most ${String(p.limit)} characters`, type: 'string_too_long' };
    case 'minLength':
      return { message: `String should have at least ${String(p.limit)} characters`, type: 'string_too_short' };
    case 'maxItems':
    case 'maxProperties':
      return { message: `Should have at most ${String(p.limit)} items`, type: 'too_long' };
    case 'minimum':
      return { message: `Input should be greater than or equal to ${String(p.limit)}`, type: 'greater_than_equal' };
    case 'maximum':
      return { message: `Input should be less than or equal to ${String(p.limit)}`, type: 'less_than_equal' };
    case 'pattern':
      return { message: `String should match pattern '${String(p.pattern)}'`, type: 'string_pattern_mismatch' };
    case 'anyOf':
      return undefined;
    default:
      return { message: e.message ?? 'is not valid', type: e.keyword ?? 'value_error' };
  }
}

/**
 * Fastify's validation errors as the original's `validation_errors`: pydantic's `loc` joined with ' -> '
 * ('kernel -> kernel_type'), its messages and error types, one entry per field (a nullable field's union is one).
 */
export function validationErrorsOf(errors: readonly AjvError[]): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  const seen = new Set<string>();
  for (const e of errors.slice(0, 50)) {
    const parts = (e.instancePath ?? '')
      .split('/')
      .slice(1)
      .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
    if (e.keyword === 'required') parts.push(String(e.params?.missingProperty));
    if (e.keyword === 'additionalProperties') parts.push(String(e.params?.additionalProperty));
    const field = parts.length === 0 ? 'body' : parts.join(' -> ');
    const what = pydanticOf(e);
    if (what === undefined || seen.has(field)) continue;
    seen.add(field);
    out.push({ field, ...what });
  }
  if (out.length === 0) out.push({ field: 'body', message: 'Input is not valid', type: 'value_error' });
  return out;
}
