// SPDX-License-Identifier: MIT
// TypeBox schemas of the v1 API: one schema gives the route's validation, its TypeScript type and its part
// of the OpenAPI document. The request body is an EvalJob with the service's fields beside it, or a submission to a
// problem with cases (`problem` names it; grid, block and sharedMemBytes are then over its dimensions). The schemas
// check shapes only where cudakit's validateJob is not authoritative; args, fills, grids and check options stay
// permissive here and are checked in depth by validateJob, whose messages are better than a schema's.
import { type Static, Type } from 'typebox';
import type { SlotState } from '../../run/pool.js';
import { VERDICTS, type Verdict } from '../../judge/verdict.js';
import { API_ERRORS, type ApiErrorCode } from '../../errors.js';
import { GPU_CLASS_PATTERN } from '../../run/pool.js';
import { PRINCIPAL_PATTERN } from '../auth.js';
import { PRIORITY } from '../../schedule/queue.js';
import { LEADERBOARD_LIMIT_MAX, LEADERBOARD_OFFSET_MAX } from '../../store/leaderboard.js';
import { ARGS_MAX, MAX_QUEUE_SECONDS, SOURCE_CHARS_MAX, TIMEOUT_SECONDS } from '../../submit/fields.js';

// ---------------------------------------------------------------------------------------------------------------
// Body limits (the service fields' bounds and the size caps are submit/fields.ts's).

/** Request bodies: the evaluation route carries tensor literals, every other route is small. */
export const SUBMIT_BODY_LIMIT_BYTES = 64 * 2 ** 20;
export const BODY_LIMIT_BYTES = 2 ** 20;

// ---------------------------------------------------------------------------------------------------------------
// Request body

/** A source as text: a service never reads a file of its own host (`{ file }` is refused). */
const Source = Type.Union(
  [
    Type.String({ maxLength: SOURCE_CHARS_MAX }),
    Type.Object(
      { text: Type.String({ maxLength: SOURCE_CHARS_MAX }), name: Type.Optional(Type.String({ maxLength: 256 })) },
      { additionalProperties: false },
    ),
  ],
  { description: 'CUDA C++ source text, or { text, name } (a file on the server is never read)' },
);

/**
 * Compile options without the ones that reach the server's file system (includePaths, cache.dir) or are the
 * server's to decide. Flags are checked against an allow-list by the service.
 */
const Compile = Type.Object(
  {
    target: Type.Optional(Type.Union([Type.Literal('cubin'), Type.Literal('ptx')])),
    arch: Type.Optional(Type.String({ maxLength: 32 })),
    std: Type.Optional(Type.String({ maxLength: 16 })),
    defines: Type.Optional(Type.Unknown({ description: "{ N: 256 } or ['N=256']" })),
    fastMath: Type.Optional(Type.Boolean()),
    lineInfo: Type.Optional(Type.Boolean()),
    debug: Type.Optional(Type.Boolean()),
    maxRegisters: Type.Optional(Type.Integer({ minimum: 1, maximum: 255 })),
    extraFlags: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 64 })),
    nameExpressions: Type.Optional(Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 64 })),
    cudaIncludes: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const Headers = Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: SOURCE_CHARS_MAX }), {
  maxProperties: 64,
  description: 'In-memory headers for #include "name"',
});
const Dim3 = Type.Unknown({
  description: "A number or [x], [x, y], [x, y, z]; to a problem with cases, each may be over its dims: 'cdiv(n, 256)'",
});
const Arg = Type.Union([Type.String({ maxLength: 4096 }), Type.Object({}, { additionalProperties: true })], {
  description: "An argspec such as 'ptr:f32[1M]=uniform(-1,1)' or { kind: 'buffer', ... } (checked by validateJob)",
});
/** A reference or baseline kernel; its source and compile options are checked like the job's by the service. */
const KernelRef = Type.Object({}, { additionalProperties: true, description: 'EvalKernelRef or { expected }' });

/** A problem's name: its folder's under --problems-dir. */
const PROBLEM_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';

export const SubmitBody = Type.Object(
  {
    problem: Type.Optional(
      Type.String({
        pattern: PROBLEM_NAME_PATTERN,
        description:
          'A problem with cases (GET /v1/problems) this is a submission to: then source, kernel, grid, block and ' +
          'optionally sharedMemBytes, compile, headers and name, and no other job field',
      }),
    ),
    name: Type.Optional(Type.String({ maxLength: 256 })),
    source: Source,
    kernel: Type.String({ minLength: 1, maxLength: 4096 }),
    headers: Type.Optional(Headers),
    compile: Type.Optional(Compile),
    grid: Dim3,
    block: Dim3,
    sharedMemBytes: Type.Optional(Type.Unknown({ description: 'Bytes; to a problem with cases, over its dims' })),
    cooperative: Type.Optional(Type.Boolean()),
    clusterDim: Type.Optional(Dim3),
    signature: Type.Optional(Type.Array(Type.Unknown(), { maxItems: ARGS_MAX })),
    args: Type.Optional(
      Type.Array(Arg, { maxItems: ARGS_MAX, description: 'Required, unless reference names a problem (its args)' }),
    ),
    reference: Type.Optional(KernelRef),
    compare: Type.Optional(KernelRef),
    check: Type.Optional(Type.Object({}, { additionalProperties: true })),
    timing: Type.Optional(Type.Object({}, { additionalProperties: true })),
    zeroOnFree: Type.Optional(Type.Boolean()),
    mode: Type.Optional(Type.Unknown({ deprecated: true })),
    preset: Type.Optional(Type.Unknown({ deprecated: true })),
    bytes: Type.Optional(Type.Unknown({ deprecated: true })),
    flops: Type.Optional(Type.Unknown({ deprecated: true })),
    // The service's own fields.
    timeoutSeconds: Type.Optional(
      Type.Integer({
        minimum: TIMEOUT_SECONDS.min,
        maximum: TIMEOUT_SECONDS.max,
        // No schema default: a job's is TIMEOUT_SECONDS.default, a submission to a problem's the maximum (fields.ts).
        description:
          `Execution budget from the GPU lease to the result (default ${TIMEOUT_SECONDS.default}; ` +
          `${TIMEOUT_SECONDS.max} for a submission to a problem with cases)`,
      }),
    ),
    maxQueueSeconds: Type.Optional(
      Type.Integer({
        minimum: MAX_QUEUE_SECONDS.min,
        maximum: MAX_QUEUE_SECONDS.max,
        default: MAX_QUEUE_SECONDS.default,
        description: 'How long the job may wait for a GPU before it fails with QUEUE_TIMEOUT',
      }),
    ),
    priority: Type.Optional(Type.Integer({ minimum: PRIORITY.min, maximum: PRIORITY.max, default: PRIORITY.default })),
    gpu: Type.Optional(
      Type.String({
        pattern: GPU_CLASS_PATTERN.source,
        default: 'any',
        description: "'any', or a GPU class: 'H200', 'H100', 'sm_90'",
      }),
    ),
    deviceMetrics: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);
export type SubmitBody = Static<typeof SubmitBody>;

// ---------------------------------------------------------------------------------------------------------------
// Parameters and query strings

export const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: "'ev_' + a ULID" }) });

export const GetQuery = Type.Object({
  wait: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 60, description: 'Long-poll: wait up to this many seconds for the end' }),
  ),
});

export const EventsQuery = Type.Object({
  lastEventId: Type.Optional(
    Type.Integer({ minimum: 0, description: 'Resume after this event (for clients that cannot send Last-Event-ID)' }),
  ),
});

export const DeleteQuery = Type.Object({
  purge: Type.Optional(Type.Boolean({ description: 'Delete a finished evaluation and its events' })),
});

const Status = Type.Union(
  [
    Type.Literal('queued'),
    Type.Literal('running'),
    Type.Literal('succeeded'),
    Type.Literal('failed'),
    Type.Literal('cancelled'),
  ],
  { description: 'Whether the service finished: failed means it could not (the verdict is about the kernel)' },
);
const VerdictSchema = Type.Unsafe<Verdict>({ type: 'string', enum: [...VERDICTS] });

export const ListQuery = Type.Object({
  status: Type.Optional(Status),
  verdict: Type.Optional(VerdictSchema),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(Type.String({ maxLength: 64, description: 'next of the previous page' })),
  principal: Type.Optional(Type.String({ maxLength: 128, description: 'Admin scope only: another principal' })),
});

const gpuClassQuery = (description: string) =>
  Type.String({
    pattern: GPU_CLASS_PATTERN.source,
    description: `A GPU class: 'H200', 'H100', 'sm_90' (${description})`,
  });

export const ProblemParams = Type.Object({
  name: Type.String({ pattern: PROBLEM_NAME_PATTERN, description: 'A problem with cases (GET /v1/problems)' }),
});

/** No other key: a board is read by class and page only (`?principal=` is refused, not ignored). */
export const LeaderboardQuery = Type.Object(
  {
    gpuClass: Type.Optional(gpuClassQuery("default: the class of most of this server's GPUs")),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LEADERBOARD_LIMIT_MAX, default: 20 })),
    offset: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: LEADERBOARD_OFFSET_MAX,
        default: 0,
        description: 'next of the previous page',
      }),
    ),
  },
  { additionalProperties: false },
);

export const LeaderboardEntryParams = Type.Object({
  name: ProblemParams.properties.name,
  who: Type.String({
    pattern: PRINCIPAL_PATTERN.source,
    description: 'A principal (a name of the tokens file), or the display name its entries show',
  }),
});

export const LeaderboardRemoveQuery = Type.Object(
  { gpuClass: Type.Optional(gpuClassQuery("only this class's board; default: every board of the problem")) },
  { additionalProperties: false },
);

export const LeaderboardReverifyQuery = Type.Object(
  { gpuClass: Type.Optional(gpuClassQuery('the board; default: the class most of the GPUs here are of')) },
  { additionalProperties: false },
);

// ---------------------------------------------------------------------------------------------------------------
// Responses

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const QueueInfo = Type.Object({
  position: Type.Integer({ description: '1-based place among the jobs a GPU of its class takes first; 0: not queued' }),
  ahead: Type.Integer(),
  running: Type.Integer({ description: 'Jobs running on the GPUs of its class' }),
  gpus: Type.Integer({ description: 'GPUs of its class' }),
});

const Links = Type.Object({ self: Type.String(), events: Type.String() });

export const Submitted = Type.Object({
  id: Type.String(),
  status: Status,
  queue: QueueInfo,
  links: Links,
});

const ErrorInfo = Type.Object({ code: Type.String(), message: Type.String(), phase: Type.Optional(Type.String()) });

const GpuRef = Type.Object({
  uuid: Type.String(),
  name: Type.Optional(Type.String()),
  arch: Type.Optional(Type.String()),
});

export const Evaluation = Type.Object({
  id: Type.String(),
  principal: Type.String(),
  status: Status,
  phase: Nullable(Type.String()),
  verdict: Nullable(VerdictSchema),
  createdAt: Type.String({ format: 'date-time' }),
  startedAt: Nullable(Type.String({ format: 'date-time' })),
  finishedAt: Nullable(Type.String({ format: 'date-time' })),
  queueWaitMs: Nullable(Type.Number()),
  queue: Nullable(QueueInfo),
  gpu: Nullable(GpuRef),
  options: Type.Object({
    timeoutSeconds: Type.Integer(),
    maxQueueSeconds: Type.Integer(),
    priority: Type.Integer(),
    gpu: Type.String(),
    deviceMetrics: Type.Boolean(),
  }),
  /** cudakit's EvalReport as the worker sent it (64-bit values as strings). */
  report: Type.Unknown({
    description:
      "cudakit's EvalReport (null before the result); for a problem with cases its ProblemReport, each hidden case " +
      'only { index, visibility, ran, passed } and, once every case passed, { scored: { speedup } }',
  }),
  problem: Type.Optional(Type.String({ description: 'The problem with cases the evaluation is a submission to' })),
  score: Type.Optional(
    Type.Number({ description: "A problem's score where every case passed: the geometric mean of the speedups" }),
  ),
  scoreLow: Type.Optional(Type.Number({ description: "Lower end of the score's 95 % interval" })),
  scoreHigh: Type.Optional(Type.Number({ description: "Upper end of the score's 95 % interval" })),
  error: Nullable(ErrorInfo),
  links: Links,
});
export type Evaluation = Static<typeof Evaluation>;

export const EvaluationSummary = Type.Object({
  id: Type.String(),
  status: Status,
  verdict: Nullable(VerdictSchema),
  phase: Nullable(Type.String()),
  name: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  finishedAt: Nullable(Type.String({ format: 'date-time' })),
  links: Links,
});

export const EvaluationList = Type.Object({
  items: Type.Array(EvaluationSummary),
  next: Nullable(Type.String()),
});

export const Cancelled = Type.Object({
  id: Type.String(),
  status: Type.Union([Type.Literal('cancelling'), Type.Literal('cancelled')]),
});

export const Slot = Type.Object({
  uuid: Type.String(),
  name: Type.String(),
  arch: Type.String(),
  classes: Type.Array(Type.String()),
  state: Type.Unsafe<SlotState>({ type: 'string', enum: ['starting', 'idle', 'busy', 'restarting', 'quarantined'] }),
  jobs: Type.Integer(),
  restarts: Type.Integer(),
  lastError: Nullable(Type.String()),
  shared: Type.Boolean(),
  totalMemoryBytes: Type.Number(),
  lanes: Type.Optional(
    Type.Integer({
      description:
        'Jobs it may have at once (--lanes): one on the GPU, the others starting, compiling or waiting for their turn',
    }),
  ),
  running: Type.Optional(Type.Integer({ description: 'Jobs on it now' })),
  python: Type.Optional(
    Nullable(
      Type.Object(
        {
          path: Type.String(),
          python: Type.String(),
          torch: Type.String(),
          triton: Nullable(Type.String()),
          cudaVersion: Nullable(Type.String()),
        },
        { description: "Its host's Python for the Python kernel types (--python): null without one" },
      ),
    ),
  ),
});

export const GpuList = Type.Object({
  gpus: Type.Array(Slot),
  reason: Nullable(Type.String({ description: 'Why there is no GPU, when there is none' })),
});

/** A size of a problem: a number, or a dimension expression over a problem with cases' dimensions ('12 * n'). */
const Size = Type.Union([Type.Number(), Type.String()]);

/**
 * The installed problems. A single-shape problem (a job names it as reference: { problem }) shows its argspecs, its
 * reference's kind, bytes and flops; a problem with cases (kind 'cases': a submission names it as problem) shows its
 * dimensions with their bounds, its arguments, bytes and flops over them, its public cases and how many hidden ones it
 * has: a hidden case's name and dimensions are never shown.
 */
export const ProblemList = Type.Object({
  problems: Type.Array(
    Type.Object({
      name: Type.String(),
      description: Type.String(),
      kind: Type.Optional(
        Type.Literal('cases', { description: 'A problem with cases; absent: a single-shape reference problem' }),
      ),
      args: Type.Array(Type.Unknown(), {
        description: "The kernel's arguments (a problem with cases': over its dims)",
      }),
      reference: Type.Union([Type.Literal('cuda'), Type.Literal('javascript'), Type.Literal('expected')], {
        description: "What a kernel is checked against ('expected': every case's expected outputs)",
      }),
      dims: Type.Optional(
        Type.Record(
          Type.String(),
          Type.Object({ min: Type.Integer(), max: Type.Integer(), description: Type.Optional(Type.String()) }),
          { description: 'A problem with cases: its dimensions and the bounds of their values' },
        ),
      ),
      cases: Type.Optional(
        Type.Array(Type.Object({ name: Type.String(), dims: Type.Record(Type.String(), Type.Integer()) }), {
          description: 'A problem with cases: its public cases',
        }),
      ),
      hiddenCases: Type.Optional(Type.Integer({ description: 'A problem with cases: how many hidden cases it has' })),
      bytes: Type.Optional(Size),
      flops: Type.Optional(Size),
    }),
  ),
});

/**
 * A page of a problem's leaderboard on one GPU class: each principal's best PASSED submission, best first. An entry
 * shows its display name, never its principal, job, source or a hidden case.
 */
export const Leaderboard = Type.Object({
  problem: Type.String(),
  gpuClass: Type.String(),
  entries: Type.Array(
    Type.Object(
      {
        rank: Type.Integer({ description: '1 for the best' }),
        displayName: Type.String({ description: "The principal's pseudonym ('anon-' and 10 hex digits)" }),
        score: Type.Number({ description: 'The geometric mean over the cases of the speedups (problem-report.ts)' }),
        scoreLow: Type.Number({ description: "Lower end of the score's 95 % interval" }),
        scoreHigh: Type.Number({ description: "Upper end of the score's 95 % interval" }),
        submittedAt: Type.String({ format: 'date-time' }),
        gpuClass: Type.String(),
        status: Type.Union([Type.Literal('provisional'), Type.Literal('confirmed')], {
          description: "'provisional' until a re-run confirms the score",
        }),
      },
      { additionalProperties: false },
    ),
  ),
  next: Nullable(Type.Integer({ description: 'The offset of the next page; null after the last' })),
});
export type Leaderboard = Static<typeof Leaderboard>;

export const LeaderboardRemoved = Type.Object({
  problem: Type.String(),
  removed: Type.Integer({ description: 'How many entries were removed (one per GPU class at most)' }),
});

export const LeaderboardReverify = Type.Object({
  problem: Type.String(),
  gpuClass: Type.String(),
  id: Type.String({ description: "The re-run's evaluation (GET /v1/evaluations/{id}), under the entry's principal" }),
});

export const ErrorBody = Type.Object({
  statusCode: Type.Integer(),
  /** One of API_ERRORS (errors.ts). */
  code: Type.Unsafe<ApiErrorCode>({ type: 'string', enum: Object.keys(API_ERRORS) }),
  error: Type.String(),
  message: Type.String(),
  details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
});
export type ErrorBody = Static<typeof ErrorBody>;
