// SPDX-License-Identifier: MIT
// Every error the service's own API answers (the v1 routes, the MCP endpoint's HTTP errors, the dashboard and the
// operations routes): one table of codes, their HTTP status, whether a Retry-After comes with them, and what they
// mean. Throw sites name a code and say what happened; the status comes from here, and an ErrorBody's `code` is one
// of these. The server README lists the table (a test keeps the two the same). The compatible routes answer in the
// original server's shapes (compat/).
import { STATUS_CODES } from 'node:http';

/** Whether an answer with this code carries Retry-After: always, never, or where waiting can help. */
export type RetryAfter = 'always' | 'never' | 'sometimes';

export interface ErrorSpec {
  status: number;
  retryAfter: RetryAfter;
  /** What the code means, for the README's table. */
  meaning: string;
}

export const API_ERRORS = {
  ERR_INVALID_JOB: {
    status: 400,
    retryAfter: 'never',
    meaning: 'the job has problems (without a GPU: its kernels do not compile); each in `details`, at its path',
  },
  FST_ERR_VALIDATION: {
    status: 400,
    retryAfter: 'never',
    meaning: "the request does not fit the route's schema; each problem in `details`",
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, retryAfter: 'never', meaning: 'the body is not JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, retryAfter: 'never', meaning: 'a JSON content type with no body' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    retryAfter: 'never',
    meaning: '`Content-Length` does not match the body',
  },
  INVALID_CONTENT_ENCODING: {
    status: 400,
    retryAfter: 'never',
    meaning: 'the body is not in its `Content-Encoding` (gzip that is not gzip)',
  },
  UNKNOWN_GPU_CLASS: { status: 400, retryAfter: 'never', meaning: 'no GPU here is of the class the job asks for' },
  INVALID_LAST_EVENT_ID: { status: 400, retryAfter: 'never', meaning: '`Last-Event-ID` is not an event of the stream' },
  INVALID_CURSOR: { status: 400, retryAfter: 'never', meaning: '`cursor` is not the `next` of an earlier page' },
  GPU_CLASS_REQUIRED: {
    status: 400,
    retryAfter: 'never',
    meaning: 'a leaderboard without `gpuClass` where no GPU here gives one',
  },
  CLIENT_CLOSED: {
    status: 400,
    retryAfter: 'never',
    meaning: 'the client closed the connection while its body waited',
  },
  BAD_REQUEST: { status: 400, retryAfter: 'never', meaning: 'any other request the server cannot read' },
  UNAUTHORIZED: { status: 401, retryAfter: 'never', meaning: 'no bearer token, or one this server does not know' },
  FORBIDDEN: { status: 403, retryAfter: 'never', meaning: 'the token lacks the scope the route needs' },
  NOT_FOUND: { status: 404, retryAfter: 'never', meaning: 'no such route or dashboard asset' },
  EVALUATION_NOT_FOUND: {
    status: 404,
    retryAfter: 'never',
    meaning: "no evaluation with this id that the principal may see (another principal's too)",
  },
  JOB_NOT_FOUND: {
    status: 404,
    retryAfter: 'never',
    meaning: 'the compatible `GET /job/{id}`: no job with this id that the principal may see',
  },
  GPU_NOT_FOUND: { status: 404, retryAfter: 'never', meaning: "no GPU with this UUID in the server's pool" },
  PROBLEM_NOT_FOUND: { status: 404, retryAfter: 'never', meaning: 'no problem with cases of this name here' },
  LEADERBOARD_ENTRY_NOT_FOUND: {
    status: 404,
    retryAfter: 'never',
    meaning: "no entry of this principal or display name on the problem's leaderboard",
  },
  METHOD_NOT_ALLOWED: { status: 405, retryAfter: 'never', meaning: 'a method the MCP endpoint does not take' },
  NOT_FINISHED: { status: 409, retryAfter: 'never', meaning: 'a purge of an evaluation that has not finished' },
  ALREADY_FINISHED: { status: 409, retryAfter: 'never', meaning: 'a cancel of an evaluation that has finished' },
  ENTRY_JOB_GONE: {
    status: 409,
    retryAfter: 'never',
    meaning: 'a re-verify of a leaderboard entry whose job retention deleted',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, retryAfter: 'never', meaning: "the body is over the route's limit" },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, retryAfter: 'never', meaning: 'a content type other than JSON' },
  UNSUPPORTED_CONTENT_ENCODING: {
    status: 415,
    retryAfter: 'never',
    meaning: 'a `Content-Encoding` other than gzip, deflate or identity, or one given twice',
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    retryAfter: 'never',
    meaning: 'an `Idempotency-Key` used within 24 hours for another body',
  },
  RATE_LIMITED: { status: 429, retryAfter: 'always', meaning: 'over the submissions (or sign-ins) per minute' },
  QUEUE_FULL_FOR_PRINCIPAL: {
    status: 429,
    retryAfter: 'always',
    meaning: 'the principal has as many evaluations queued as one may',
  },
  INTERNAL: { status: 500, retryAfter: 'never', meaning: "a fault of the server's (its log has the details)" },
  NO_GPU: {
    status: 503,
    retryAfter: 'sometimes',
    meaning: 'no GPU to run on; Retry-After only where one may come back (an API node whose agents re-announce)',
  },
  NO_GPU_OF_CLASS: {
    status: 503,
    retryAfter: 'always',
    meaning: 'every GPU of the class the job asks for is quarantined',
  },
  QUEUE_FULL: { status: 503, retryAfter: 'always', meaning: 'the queue holds as many evaluations as it may' },
  SHUTTING_DOWN: { status: 503, retryAfter: 'always', meaning: 'the server is draining and takes no new work' },
  TOO_MANY_LARGE_BODIES: { status: 503, retryAfter: 'always', meaning: 'large bodies are being read already' },
  TOO_MANY_STREAMS: { status: 503, retryAfter: 'always', meaning: 'as many summary streams are open as may be' },
  UNDER_PRESSURE: { status: 503, retryAfter: 'always', meaning: 'the server is overloaded (event loop or memory)' },
  STORE_UNAVAILABLE: { status: 503, retryAfter: 'always', meaning: 'the job store does not answer' },
} as const satisfies Record<string, ErrorSpec>;

export type ApiErrorCode = keyof typeof API_ERRORS;

/** Whether `code` is in the table. */
export function isApiErrorCode(code: unknown): code is ApiErrorCode {
  return typeof code === 'string' && Object.hasOwn(API_ERRORS, code);
}

/** An error the API answers with its code's status (4xx, or 503 for a service that cannot take work now). */
export class ServiceError extends Error {
  readonly statusCode: number;
  readonly code: ApiErrorCode;
  /** Seconds, for the Retry-After header of a 429 or 503. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ApiErrorCode, message: string, retryAfterSeconds?: number) {
    super(message);
    this.name = 'ServiceError';
    this.code = code;
    this.statusCode = API_ERRORS[code].status;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** 'Service Unavailable' for 503: the body's `error`. */
export function statusText(statusCode: number): string {
  return STATUS_CODES[statusCode] ?? 'Error';
}
