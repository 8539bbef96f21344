// SPDX-License-Identifier: MIT
// TypeBox mirror of the original evaluation server's request and response models (its pydantic v2 models), for the
// compatible routes (compat/routes.ts): the same field names and extra-key rules. KernelCode forbids unknown keys;
// every other model ignores them, as the original's do. Defaults inside nullable fields are applied by compat/jobs.ts
// (ajv applies none inside a union) and written in their descriptions. num_trials and timeout carry no bounds here:
// their bounds are business rules answered with the original's own messages (compat/jobs.ts), not schema errors.
// Extensions sit where the original ignores unknown keys: `cudakit` at the top level, `shared_mem_bytes` in a launch,
// `dtype` on a scalar argument. The contract: server/docs/compat.md.
import type { EvalBufferArg } from 'cudakit';
import { type Static, type TSchema, Type } from 'typebox';
import { ARGS_MAX, MAX_QUEUE_SECONDS, SOURCE_CHARS_MAX } from '../submit/fields.js';

/** The original's defaults (its shared/constants.py). */
export const COMPAT_DEFAULTS = { numTrials: 100, timeoutSeconds: 120, atol: 0.01, rtol: 0.01 } as const;
/** Its bounds, checked as business rules after parsing. */
export const COMPAT_NUM_TRIALS = { min: 1, max: 10_000 } as const;
export const COMPAT_TIMEOUT_SECONDS = { min: 5, max: 600 } as const;

export const COMPAT_KERNEL_TYPES = ['torch', 'torch_cuda', 'triton', 'cuda', 'multi_kernel'] as const;
export type CompatKernelType = (typeof COMPAT_KERNEL_TYPES)[number];

/** Element types of the original's tensors. */
export const COMPAT_DTYPES = [
  'float32',
  'float64',
  'float16',
  'bfloat16',
  'float8_e4m3fn',
  'float8_e5m2',
  'int64',
  'int32',
  'int16',
  'int8',
  'uint8',
  'bool',
] as const;
export type CompatDType = (typeof COMPAT_DTYPES)[number];

/**
 * The original's dtype → cudakit's buffer dtype. bool is a byte holding 0 or 1. float8_e4m3fn and float8_e5m2
 * (torch's names) are cudakit's additions.
 */
export const CUDAKIT_DTYPES: Readonly<Record<CompatDType, EvalBufferArg['dtype']>> = {
  float32: 'f32',
  float64: 'f64',
  float16: 'f16',
  bfloat16: 'bf16',
  float8_e4m3fn: 'f8e4m3',
  float8_e5m2: 'f8e5m2',
  int64: 'i64',
  int32: 'i32',
  int16: 'i16',
  int8: 'i8',
  uint8: 'u8',
  bool: 'u8',
};

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const open = { additionalProperties: true } as const;

// ---------------------------------------------------------------------------------------------------------------
// Requests

export const LaunchDim = Type.Object(
  {
    x: Type.Optional(Type.Integer({ description: 'Default 1' })),
    y: Type.Optional(Type.Integer({ description: 'Default 1' })),
    z: Type.Optional(Type.Integer({ description: 'Default 1' })),
  },
  open,
);

export const LaunchConfig = Type.Object(
  {
    grid: Type.Optional(Nullable(LaunchDim)),
    block: Type.Optional(Nullable(LaunchDim)),
    num_warps: Type.Optional(Nullable(Type.Integer({ description: 'Triton only' }))),
    num_stages: Type.Optional(Nullable(Type.Integer({ description: 'Triton only' }))),
    shared_mem_bytes: Type.Optional(
      Type.Integer({ minimum: 0, description: 'cudakit extension: dynamic shared memory per block, bytes' }),
    ),
  },
  open,
);

export const TensorInit = Type.Object(
  {
    kind: Type.Optional(Type.String({ description: 'randn (default), zeros, ones, uniform, full, arange' })),
    seed: Type.Optional(Nullable(Type.Integer())),
    mean: Type.Optional(Nullable(Type.Number())),
    std: Type.Optional(Nullable(Type.Number())),
    low: Type.Optional(Nullable(Type.Number())),
    high: Type.Optional(Nullable(Type.Number())),
    fill_value: Type.Optional(Nullable(Type.Number())),
    start: Type.Optional(Nullable(Type.Number())),
    step: Type.Optional(Nullable(Type.Number())),
  },
  open,
);

export const TensorData = Type.Object(
  {
    data_b64: Type.String({ description: 'base64 of the raw C-order bytes (little-endian)' }),
    dtype: Type.Optional(Type.String({ description: 'Default float32' })),
    shape: Type.Optional(Type.Array(Type.Integer(), { maxItems: 64 })),
    compress: Type.Optional(
      Type.Unsafe<'none' | 'zlib'>({ type: 'string', enum: ['none', 'zlib'], description: 'Default none' }),
    ),
  },
  open,
);
export type TensorData = Static<typeof TensorData>;

export const TensorSpec = Type.Object(
  {
    shape: Type.Optional(Type.Array(Type.Integer(), { maxItems: 64 })),
    dtype: Type.Optional(Type.String({ description: 'Default float32' })),
    init: Type.Optional(Nullable(TensorInit)),
    data: Type.Optional(Nullable(TensorData)),
  },
  open,
);

export const ArgSpec = Type.Object(
  {
    name: Type.String({ maxLength: 256 }),
    type: Type.String({ description: 'tensor, int, float, str or bool' }),
    value: Type.Optional(Nullable(Type.Union([Type.Number(), Type.String({ maxLength: 4096 }), Type.Boolean()]))),
    tensor_spec: Type.Optional(Nullable(TensorSpec)),
    role: Type.Optional(Type.String({ description: 'input (default), output or inout' })),
    is_meta: Type.Optional(Type.Boolean({ description: 'Triton constexpr; default false' })),
    dtype: Type.Optional(
      Type.String({ description: "cudakit extension: a scalar's width, e.g. 'int64' or 'float64'" }),
    ),
  },
  open,
);
export type ArgSpec = Static<typeof ArgSpec>;

export const IOContract = Type.Object(
  {
    args: Type.Array(ArgSpec, { maxItems: ARGS_MAX }),
    launch: Type.Optional(Nullable(LaunchConfig)),
  },
  open,
);
export type IOContract = Static<typeof IOContract>;

/**
 * The original's KernelCode with `kernelTypes` in kernel_type's enum; `io` optional and nullable, as the original has
 * it, or required (an MCP tool's schema says what this server needs: a CUDA candidate has no arguments without io).
 */
function kernelCode<Io extends TSchema>(kernelTypes: readonly CompatKernelType[], io: Io) {
  return Type.Object(
    {
      source_code: Type.String({ maxLength: SOURCE_CHARS_MAX }),
      kernel_type: Type.Unsafe<CompatKernelType>({ type: 'string', enum: [...kernelTypes] }),
      io,
      metadata: Type.Optional(
        Nullable(
          Type.Object(
            {},
            {
              additionalProperties: true,
              description: 'cuda: kernel_name, compiler_options, backend, name_expressions, jitify',
            },
          ),
        ),
      ),
    },
    { additionalProperties: false },
  );
}

export const KernelCode = kernelCode(COMPAT_KERNEL_TYPES, Type.Optional(Nullable(IOContract)));
export type KernelCode = Static<typeof KernelCode>;

/** The cudakit extension: what the original has no field for. */
export const CudakitOptions = Type.Object(
  {
    timing: Type.Optional(
      Type.Object(
        {
          mode: Type.Optional(
            Type.Unsafe<'cold' | 'hot' | 'graph'>({ type: 'string', enum: ['cold', 'hot', 'graph'] }),
          ),
          preset: Type.Optional(
            Type.Unsafe<'quick' | 'default' | 'rigorous'>({ type: 'string', enum: ['quick', 'default', 'rigorous'] }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    gpu: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' })),
    max_queue_seconds: Type.Optional(Type.Integer({ minimum: MAX_QUEUE_SECONDS.min, maximum: MAX_QUEUE_SECONDS.max })),
    device_metrics: Type.Optional(
      Type.Boolean({ description: "Nsight Compute metrics after the timing, in the original's categories" }),
    ),
    expected: Type.Optional(
      Type.Record(Type.String({ maxLength: 256 }), TensorData, {
        maxProperties: ARGS_MAX,
        description: '/evaluate: expected outputs by argument name (the reference without code)',
      }),
    ),
  },
  { additionalProperties: false, description: 'cudakit extension (the original ignores unknown top-level keys)' },
);
export type CudakitOptions = Static<typeof CudakitOptions>;

const numTrials = Type.Integer({ default: COMPAT_DEFAULTS.numTrials, description: '1 to 10000' });
const timeout = Type.Integer({ default: COMPAT_DEFAULTS.timeoutSeconds, description: 'Seconds, 5 to 600' });

export const EvaluationRequest = Type.Object(
  {
    kernel: KernelCode,
    num_trials: Type.Optional(numTrials),
    timeout: Type.Optional(timeout),
    cudakit: Type.Optional(CudakitOptions),
  },
  open,
);
export type EvaluationRequest = Static<typeof EvaluationRequest>;

export const CompareRequest = Type.Object(
  {
    ref_kernel: KernelCode,
    custom_kernel: KernelCode,
    num_trials: Type.Optional(numTrials),
    timeout: Type.Optional(timeout),
    atol: Type.Optional(Nullable(Type.Number({ description: `Default ${COMPAT_DEFAULTS.atol}` }))),
    rtol: Type.Optional(Nullable(Type.Number({ description: `Default ${COMPAT_DEFAULTS.rtol}` }))),
    cudakit: Type.Optional(CudakitOptions),
  },
  { ...open, description: 'Also the legacy { ref_code, custom_code } (Python: answered 400)' },
);
export type CompareRequest = Static<typeof CompareRequest>;

/**
 * POST /evaluate's request as the evaluate_kernel tool advertises it: kernel_type only one of `kernelTypes` (those
 * the server evaluates), io required. Every request it describes is one POST /evaluate takes.
 */
export function evaluateToolRequest(kernelTypes: readonly CompatKernelType[]) {
  return Type.Object({ ...EvaluationRequest.properties, kernel: kernelCode(kernelTypes, IOContract) }, open);
}

/**
 * POST /compare's request as the compare_kernels tool advertises it: each side's kernel types only those the server
 * takes there; the custom kernel's io required, the reference's optional (without it, the custom kernel's).
 */
export function compareToolRequest(
  customTypes: readonly CompatKernelType[],
  referenceTypes: readonly CompatKernelType[],
) {
  return Type.Object(
    {
      ...CompareRequest.properties,
      ref_kernel: kernelCode(referenceTypes, Type.Optional(Nullable(IOContract))),
      custom_kernel: kernelCode(customTypes, IOContract),
    },
    open,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Responses

export const RuntimeStats = Type.Object({
  mean: Type.Number(),
  std: Type.Number(),
  min: Type.Number(),
  max: Type.Number(),
  median: Type.Number(),
  percentile_95: Type.Number(),
  percentile_99: Type.Number(),
});
export type RuntimeStats = Static<typeof RuntimeStats>;

export const KernelMetadata = Type.Object(
  {
    gpu_id: Type.Integer(),
    kernel_name: Type.Optional(Type.String()),
    kernel_type: Type.Optional(Type.String()),
    gpu_type: Type.Optional(Type.String()),
    cuda_version: Type.Optional(Type.String()),
    profiling_method: Type.Optional(Type.String({ description: "'cudakit-cold': L2 flushed before every sample" })),
    cudakit: Type.Optional(Type.Unknown({ description: 'verdict, evaluation_id, median_ms, CI, check, warnings' })),
  },
  open,
);

export const KernelExecResult = Type.Object({
  compiled: Type.Boolean(),
  correctness: Type.Boolean(),
  runtime: Type.Number({ description: 'Mean ms of the custom kernel; 0 when it was not timed' }),
  metadata: KernelMetadata,
  runtime_stats: Type.Optional(RuntimeStats),
  compilation_error: Type.Optional(Type.String()),
  validation_error: Type.Optional(Type.String()),
});
export type KernelExecResult = Static<typeof KernelExecResult>;

export const EvaluationResponse = Type.Object({
  job_id: Type.String(),
  kernel_exec_result: KernelExecResult,
  pod_name: Type.String(),
  pod_ip: Type.String(),
  status: Type.Literal('success'),
  gpu_type: Type.Optional(Type.String()),
});
export type EvaluationResponse = Static<typeof EvaluationResponse>;

export const CompareResponse = Type.Object({
  job_id: Type.String(),
  kernel_exec_result: KernelExecResult,
  ref_runtime: RuntimeStats,
  pod_name: Type.String(),
  pod_ip: Type.String(),
  status: Type.Literal('success'),
  gpu_type: Type.Optional(Type.String()),
});
export type CompareResponse = Static<typeof CompareResponse>;

/** The original's create_error_response: a job that failed or a wait that ran out (500). */
export const JobErrorBody = Type.Object({
  kernel_exec_result: Type.Object({}),
  ref_runtime: Type.Object({}),
  pod_name: Type.String(),
  pod_ip: Type.String(),
  status: Type.Literal('error'),
  error: Type.String(),
  compilation_method: Type.String(),
  job_id: Type.Optional(Type.String()),
});
export type JobErrorBody = Static<typeof JobErrorBody>;

export const ValidationErrorItem = Type.Object({ field: Type.String(), message: Type.String(), type: Type.String() });
export type ValidationErrorItem = Static<typeof ValidationErrorItem>;

/**
 * Every 4xx of these routes (and a 503): the original's validation error (`validation_errors`), its ClientError
 * (`details`), or its HTTPException (`{ error, status: 'error' }`).
 */
export const ErrorBody = Type.Object({
  error: Type.String(),
  validation_errors: Type.Optional(Type.Array(ValidationErrorItem)),
  details: Type.Optional(Type.Unknown()),
  status: Type.String({ description: "'client_error' for a bad request, else 'error'" }),
});
export type ErrorBody = Static<typeof ErrorBody>;

export const JobStats = Type.Object({
  total_jobs: Type.Integer(),
  by_status: Type.Record(Type.String(), Type.Integer()),
  average_age: Type.Number({ description: 'Seconds' }),
});
export type JobStats = Static<typeof JobStats>;

export const Health = Type.Object({
  status: Type.Literal('healthy'),
  job_stats: JobStats,
  gpu_manager: Type.Object({ available_gpus: Type.Integer() }),
});

export const Unhealthy = Type.Object({ status: Type.Literal('unhealthy'), error: Type.String() });

export const JobIdParams = Type.Object({ job_id: Type.String({ maxLength: 256 }) });

export const JobStatus = Type.Object({
  job_id: Type.String(),
  status: Type.String({ description: 'submitted, completed or failed' }),
  created_at: Type.Number({ description: 'Unix time, seconds' }),
  error: Nullable(Type.String()),
});
export type JobStatus = Static<typeof JobStatus>;

const Metrics = Type.Object({}, open);

export const Stats = Type.Object({
  job_stats: JobStats,
  compilation_metrics: Metrics,
  profiling_metrics: Metrics,
  gpu_utilization: Metrics,
  throughput: Metrics,
  timestamp: Type.Number({ description: 'Unix time, seconds' }),
});
export type Stats = Static<typeof Stats>;

export const Cleanup = Type.Object({
  status: Type.Literal('cleanup_completed'),
  deleted: Type.Integer({ description: 'Finished evaluations deleted' }),
});
