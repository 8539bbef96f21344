// SPDX-License-Identifier: MIT
// The original server's errors for the compatible routes (routes.ts): one table of every error answer they give
// (COMPAT_ERRORS: its status, its shape, Retry-After, its text), which error is which answer (compatErrorOf), its
// ClientError and validation errors, and Fastify's validation errors in pydantic's words. The original has no code
// field, so a name of the table is never sent; server/docs/compat.md lists the table (a test keeps the two the same).
import { InvalidJobError } from 'cudakit';
import type { ApiErrorCode, RetryAfter } from '../errors.js';
import type { ValidationErrorItem } from './schemas.js';

/**
 * How an error answer is laid out, as the original's handler of that kind lays it out: 'validation' (its pydantic
 * ValidationError) `{ error: 'Invalid request format', validation_errors, status: 'client_error' }`, 'client_error'
 * (its ClientError) `{ error, details, status: 'client_error' }`, 'error' (its HTTPException) `{ error, status:
 * 'error' }`, 'job_error' its create_error_response (with `job_id` where there is a job), 'unhealthy' its /health's
 * `{ status: 'unhealthy', error }`.
 */
export type CompatShape = 'validation' | 'client_error' | 'error' | 'job_error' | 'unhealthy';

export interface CompatErrorSpec {
  status: number;
  shape: CompatShape;
  /** Whether Retry-After comes with it; its seconds are those of the service's error (ServiceError). */
  retryAfter: RetryAfter;
  /** The service's own codes (API_ERRORS) answered as this entry; a client_error's `details.code` is one of them. */
  codes: readonly ApiErrorCode[];
  /** The answer's `error`, its {placeholders} filled by compatMessage; '' where the error's own message is sent. */
  message: string;
  /** When it is answered, for server/docs/compat.md. */
  when: string;
}

export const COMPAT_ERRORS = {
  INVALID_REQUEST: {
    status: 400,
    shape: 'validation',
    retryAfter: 'never',
    codes: ['FST_ERR_VALIDATION', 'FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_EMPTY_JSON_BODY'],
    message: 'Invalid request format',
    when: 'the body is not JSON, or does not fit the request models: each field in `validation_errors`',
  },
  CLIENT_ERROR: {
    status: 400,
    shape: 'client_error',
    retryAfter: 'never',
    codes: ['ERR_INVALID_JOB'],
    message: '',
    when:
      "the original's business rules in its words, what the CUDA mapping cannot take, and cudakit's own checks " +
      '(`Invalid job: ...`, each problem in `details.problems`)',
  },
  BAD_REQUEST: {
    status: 400,
    shape: 'client_error',
    retryAfter: 'never',
    codes: ['FST_ERR_CTP_INVALID_CONTENT_LENGTH', 'INVALID_CONTENT_ENCODING', 'CLIENT_CLOSED', 'BAD_REQUEST'],
    message: '',
    when:
      'a body that cannot be read (`Content-Length` not its length, gzip that is not gzip, a client gone while its ' +
      'body waited), or another client error raised below the routes; `details.code` names it',
  },
  UNKNOWN_GPU_CLASS: {
    status: 400,
    shape: 'client_error',
    retryAfter: 'never',
    codes: ['UNKNOWN_GPU_CLASS'],
    message: '',
    when: '`cudakit.gpu` names a class no GPU here is of; `details.code` names it',
  },
  UNAUTHORIZED: {
    status: 401,
    shape: 'error',
    retryAfter: 'never',
    codes: ['UNAUTHORIZED'],
    message: '',
    when: 'no bearer token, or one this server does not know (with `WWW-Authenticate`)',
  },
  FORBIDDEN: {
    status: 403,
    shape: 'error',
    retryAfter: 'never',
    codes: ['FORBIDDEN'],
    message: '',
    when: "the token lacks the route's scope (with `WWW-Authenticate`)",
  },
  JOB_NOT_FOUND: {
    status: 404,
    shape: 'error',
    retryAfter: 'never',
    codes: ['JOB_NOT_FOUND'],
    message: 'Job {job_id} not found',
    when: "`GET /job/{job_id}`: no job with this id, or another principal's",
  },
  BODY_TOO_LARGE: {
    status: 413,
    shape: 'client_error',
    retryAfter: 'never',
    codes: ['FST_ERR_CTP_BODY_TOO_LARGE'],
    message: '',
    when: "the body is over its route's limit (inflated, when gzip or deflate); `details.code` names it",
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    shape: 'client_error',
    retryAfter: 'never',
    codes: ['FST_ERR_CTP_INVALID_MEDIA_TYPE', 'UNSUPPORTED_CONTENT_ENCODING'],
    message: '',
    when:
      'a content type other than JSON (`text/plain` too), or a `Content-Encoding` other than gzip, deflate or ' +
      'identity; `details.code` names it',
  },
  RATE_LIMITED: {
    status: 429,
    shape: 'error',
    retryAfter: 'always',
    codes: ['RATE_LIMITED'],
    message: '',
    when: 'over the submission budget, shared with `POST /v1/evaluations`',
  },
  QUEUE_FULL_FOR_PRINCIPAL: {
    status: 429,
    shape: 'error',
    retryAfter: 'always',
    codes: ['QUEUE_FULL_FOR_PRINCIPAL'],
    message: '',
    when: 'the principal has as many jobs queued as one may',
  },
  JOB_TIMED_OUT: {
    status: 500,
    shape: 'job_error',
    retryAfter: 'never',
    codes: [],
    message:
      'Job timed out after {seconds} seconds; it goes on: GET /job/{job_id} or /v1/evaluations/{job_id} ' +
      'for its result',
    when: 'the synchronous wait ran out before the job ended; the job goes on',
  },
  JOB_FAILED: {
    status: 500,
    shape: 'job_error',
    retryAfter: 'never',
    codes: [],
    message: '{code}: {message}',
    when:
      'the service could not finish the job (`QUEUE_TIMEOUT`, `WORKER_FAILED`, `INTERRUPTED`: its error; ' +
      '`Job failed with unknown error` without one)',
  },
  JOB_CANCELLED: {
    status: 500,
    shape: 'job_error',
    retryAfter: 'never',
    codes: [],
    message: 'Job was cancelled',
    when: 'the job was cancelled (`DELETE /v1/evaluations/{id}`) before it ended',
  },
  UNHEALTHY: {
    status: 500,
    shape: 'unhealthy',
    retryAfter: 'never',
    codes: [],
    message: '',
    when: "`GET /health`: the job store failed; `error` is the store's message",
  },
  INTERNAL: {
    status: 500,
    shape: 'job_error',
    retryAfter: 'never',
    codes: [],
    message: 'Internal server error (see the server log)',
    when: "a fault of the server's, or a job store that does not answer (the log has the details); no `job_id`",
  },
  NO_GPU: {
    status: 503,
    shape: 'error',
    retryAfter: 'sometimes',
    codes: ['NO_GPU'],
    message: '',
    when: 'no GPU to run on (only once the body is found valid); Retry-After only where one may come back',
  },
  NO_GPU_OF_CLASS: {
    status: 503,
    shape: 'error',
    retryAfter: 'always',
    codes: ['NO_GPU_OF_CLASS'],
    message: '',
    when: 'every GPU of the class the job asks for is quarantined',
  },
  QUEUE_FULL: {
    status: 503,
    shape: 'error',
    retryAfter: 'always',
    codes: ['QUEUE_FULL'],
    message: '',
    when: 'the queue holds as many jobs as it may',
  },
  SHUTTING_DOWN: {
    status: 503,
    shape: 'error',
    retryAfter: 'always',
    codes: ['SHUTTING_DOWN'],
    message: '',
    when: 'the server is draining and takes no new jobs',
  },
  TOO_MANY_LARGE_BODIES: {
    status: 503,
    shape: 'error',
    retryAfter: 'always',
    codes: ['TOO_MANY_LARGE_BODIES'],
    message: '',
    when: 'as many large bodies are being read as may be, and more wait',
  },
} as const satisfies Record<string, CompatErrorSpec>;

export type CompatErrorName = keyof typeof COMPAT_ERRORS;

/** The entries answered in the original's create_error_response. */
export type CompatJobErrorName = {
  [K in CompatErrorName]: (typeof COMPAT_ERRORS)[K]['shape'] extends 'job_error' ? K : never;
}[CompatErrorName];

/** An entry's message with its {placeholders} filled (in one pass: a value's own braces stay as they are). */
export function compatMessage(name: CompatErrorName, values: Record<string, string | number> = {}): string {
  return COMPAT_ERRORS[name].message.replace(/\{(\w+)\}/g, (all, key: string) =>
    Object.hasOwn(values, key) ? String(values[key]) : all,
  );
}

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
    super(COMPAT_ERRORS.INVALID_REQUEST.message);
    this.name = 'CompatValidationError';
    this.errors = errors;
  }
}

/** The entry each of the service's codes is answered as. */
const BY_CODE = new Map<string, CompatErrorName>(
  (Object.entries(COMPAT_ERRORS) as [CompatErrorName, CompatErrorSpec][]).flatMap(([name, spec]) =>
    spec.codes.map((code) => [code, name] as const),
  ),
);

/**
 * The entry an error of these routes is answered as: the original's own errors, then Fastify's and the service's by
 * their code; a client error with a code the table lacks is a plain 400 (as the v1 API answers it), anything else a
 * fault of the server's.
 */
export function compatErrorOf(error: unknown): CompatErrorName {
  if (error instanceof CompatValidationError) return 'INVALID_REQUEST';
  if (error instanceof CompatClientError || error instanceof InvalidJobError) return 'CLIENT_ERROR';
  const { validation, statusCode, code } = (error ?? {}) as {
    validation?: unknown;
    statusCode?: unknown;
    code?: unknown;
  };
  if (Array.isArray(validation)) return 'INVALID_REQUEST';
  if (typeof statusCode !== 'number') return 'INTERNAL';
  const named = typeof code === 'string' ? BY_CODE.get(code) : undefined;
  if (named !== undefined) return named;
  return statusCode >= 400 && statusCode < 500 ? 'BAD_REQUEST' : 'INTERNAL';
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
