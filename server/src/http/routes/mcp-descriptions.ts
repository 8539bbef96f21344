// SPDX-License-Identifier: MIT
// What the MCP tools (http/routes/mcp.ts) tell a model: the server's instructions and each tool's description. Each
// description explains its request in full and ends with a complete example (the tests validate each against its
// tool's schema and run it), since a model cannot look up the original server. Pure text: the kernel types a side
// takes come from the caller, tried against the compatible mapping there.
import { DEFAULT_LAUNCH_LIMITS } from '../../submit/admission.js';
import {
  COMPAT_KERNEL_TYPES,
  type CompareRequest,
  type EvaluationRequest,
  type CompatKernelType,
} from '../../compat/schemas.js';

const VECTOR_ADD =
  '__global__ void vector_add(const float* a, const float* b, float* c, int n) { ' +
  'int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }';
const VECTOR_ADD_REF =
  '__global__ void vector_add_ref(const float* a, const float* b, float* c, int n) { ' +
  'for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i]; }';

const tensor = (name: string, role: 'input' | 'output') => ({
  name,
  type: 'tensor',
  role,
  tensor_spec: { shape: [1024], dtype: 'float32' },
});

/** c = a + b over 1024 floats, checked without a reference (every output written, finite) and timed. */
export const EVALUATE_EXAMPLE: EvaluationRequest = {
  kernel: {
    source_code: VECTOR_ADD,
    kernel_type: 'cuda',
    io: {
      args: [
        tensor('a', 'input'),
        tensor('b', 'input'),
        tensor('c', 'output'),
        { name: 'n', type: 'int', value: 1024 },
      ],
      launch: { grid: { x: 4 }, block: { x: 256 } },
    },
  },
};

/** The same kernel against a reference kernel with the same arguments (its io left out: the custom kernel's). */
export const COMPARE_EXAMPLE: CompareRequest = {
  custom_kernel: EVALUATE_EXAMPLE.kernel,
  ref_kernel: { source_code: VECTOR_ADD_REF, kernel_type: 'cuda' },
};

/** The example get_evaluation shows: an id as evaluate_kernel's answer gives it (job_id). */
const GET_EXAMPLE = { id: 'ev_01JD3Q9W6V8G2T5R7K4M1N0P3X', wait: 30 };

const quoted = (values: readonly string[]): string => values.map((v) => `'${v}'`).join(', ');

/** Which kernel types a side takes, and why not the others. */
function kernelTypesText(taken: readonly CompatKernelType[], required: string): string {
  const refused = COMPAT_KERNEL_TYPES.filter((t) => !taken.includes(t));
  return (
    `kernel_type ${required}: ${quoted(taken)} (CUDA C++, compiled with NVRTC).` +
    (refused.length === 0
      ? ''
      : ` The original server's other types (${quoted(refused)}) are refused: they need Python (PyTorch, ` +
        'Triton), which this server does not run.')
  );
}

const L = DEFAULT_LAUNCH_LIMITS;
const LAUNCH_TEXT =
  'launch: { grid: {x, y, z}, block: {x, y, z}, shared_mem_bytes } (any part left out: grid 1 x 1 x 1, block ' +
  "256 x 1 x 1, 0 bytes of dynamic shared memory). The GPUs' limits hold: at most " +
  `${L.maxThreadsPerBlock.max} threads per block (x and y at most ${L.maxBlockDim[0].max}, z at most ` +
  `${L.maxBlockDim[2].max}), grid x at most ` +
  `${L.maxGridDim[0].max}, y and z at most ${L.maxGridDim[1].max}, shared_mem_bytes at most the smallest GPU's ` +
  `opt-in maximum (${L.maxSharedMemoryBytes.max} bytes on an H200); a launch over one is refused, naming it.`;

/** One KernelCode's fields, `indent` deep; `io` says whether and why io may be left out. */
function kernelFields(taken: readonly CompatKernelType[], io: string, indent: string): string[] {
  const i = indent;
  return [
    `${i}- source_code (required): CUDA C++ source text with the __global__ function to run. #include reaches ` +
      "CUDA's own headers only.",
    `${i}- ${kernelTypesText(taken, '(required)')}`,
    `${i}- io ${io}: the kernel's arguments and its launch.`,
    `${i}  - args: one per kernel parameter, in order (at most 64). Each has a name (a C identifier) and a type:`,
    `${i}    - a tensor, a device buffer: { name, type: 'tensor', role: 'input' (default), 'output' or 'inout', ` +
      "tensor_spec: { shape: [d0, d1, ...], dtype: 'float32' (default), 'float64', 'float16', 'bfloat16', " +
      "'float8_e4m3fn', 'float8_e5m2', 'int64', 'int32', 'int16', 'int8', 'uint8' or 'bool', init } }. " +
      "init: { kind: 'randn' (default, with mean, std), 'uniform' (low, high), 'zeros', 'ones', 'full' " +
      "(fill_value) or 'arange' (start, step), seed }; an " +
      'output without init starts filled with a poison value, so elements the kernel never writes are caught.',
    `${i}    - a scalar, passed by value: { name, type: 'int', 'float' or 'bool', value }: int is a 32-bit int ` +
      "(64-bit when the value needs it), float a 32-bit float; dtype: 'int64', 'float64' ... gives another width.",
    `${i}  - ${LAUNCH_TEXT}`,
    `${i}- metadata (optional): { kernel_name: the __global__ function to run (default: the first in ` +
      "source_code), compiler_options: NVRTC flags such as '-DN=4', '--use_fast_math' (an allow-list) }.",
  ];
}

const COMMON_FIELDS = [
  '- num_trials (optional, default 100): the fewest timed samples (1 to 10000).',
  '- timeout (optional, default 120): seconds the evaluation may take once a GPU runs it (5 to 600).',
];

const cudakitText = (expected: boolean): string =>
  '- cudakit (optional): { ' +
  (expected
    ? 'expected: { <output tensor name>: { data_b64: base64 of its exact bytes, little-endian, C order; dtype, ' +
      "shape, compress: 'zlib' } } the outputs to check against (without it the check needs no reference: every " +
      'output element written and finite, inputs unchanged, two runs agreeing); '
    : '') +
  "timing: { mode: 'cold' (L2 flushed before each sample, default), 'hot' or 'graph'; preset: 'quick', " +
  "'default' or 'rigorous' }; gpu: a GPU class from list_gpus ('H200', 'sm_90'; default 'any'); " +
  'max_queue_seconds: how long to wait for a GPU (default 300); device_metrics: true for Nsight Compute counters }.';

/** `value` as JSON on one line: `{ "a": [1, 2] }`. */
function flatJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(flatJson).join(', ')}]`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  return entries.length === 0
    ? '{}'
    : `{ ${entries.map(([k, v]) => `${JSON.stringify(k)}: ${flatJson(v)}`).join(', ')} }`;
}

/**
 * `value` as indented JSON, each array or object on one line where it fits in `width` columns (`column`: where it
 * starts), so that an example reads in a few lines rather than one per number.
 */
function compactJson(value: unknown, indent = '', column = 0, width = 120): string {
  const flat = flatJson(value);
  if (column + flat.length <= width || typeof value !== 'object' || value === null) return flat;
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    return `[\n${value.map((v) => inner + compactJson(v, inner, inner.length, width)).join(',\n')}\n${indent}]`;
  }
  const lines = Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => {
      const key = `${inner}${JSON.stringify(k)}: `;
      return key + compactJson(v, inner, key.length, width);
    });
  return `{\n${lines.join(',\n')}\n${indent}}`;
}

const example = (value: unknown): string[] => [
  'Example (complete; it runs as it is):',
  '```json',
  compactJson(value),
  '```',
];

export function evaluateDescription(taken: readonly CompatKernelType[]): string {
  return [
    "Compile a CUDA C++ kernel with NVRTC, check its outputs and time it on one of this server's GPUs, and wait " +
      'for the verdict (PASSED, COMPILE_ERROR, INCORRECT, TIMEOUT, ...): as text, and as structured content in the ' +
      "original evaluation server's EvaluationResponse (POST /evaluate's answer). A kernel that does not compile or " +
      'computes wrong values is a result, not a tool error; a request this server cannot run is a tool error ' +
      'naming the field.',
    '',
    'Arguments:',
    '- kernel (required): the kernel to evaluate.',
    ...kernelFields(taken, '(required: without it the kernel has no arguments)', '  '),
    ...COMMON_FIELDS,
    cudakitText(true),
    '',
    ...example(EVALUATE_EXAMPLE),
  ].join('\n');
}

export function compareDescription(
  custom: readonly CompatKernelType[],
  reference: readonly CompatKernelType[],
): string {
  return [
    'Check a CUDA kernel (custom_kernel) against a CUDA reference kernel (ref_kernel) on the same inputs, time ' +
      'both in interleaved rounds, and wait for the verdict and the speedup with its 95% interval: as text, and ' +
      "as structured content in the original evaluation server's CompareResponse (POST /compare's answer). Wrong " +
      'values or a kernel that does not compile are a result, not a tool error.',
    '',
    'Arguments:',
    '- custom_kernel (required): the kernel under test.',
    ...kernelFields(custom, '(required: without it the kernel has no arguments)', '  '),
    '- ref_kernel (required): the reference, the same fields.',
    `  - ${kernelTypesText(reference, '(required)')}`,
    "  - io (optional): left out, the reference takes custom_kernel's arguments and launch, and is timed as the " +
      "baseline. Its own args (other order, other scalars) are matched to custom_kernel's tensors by name; it " +
      'is then only checked against, not timed.',
    '- atol, rtol (optional, default 0.01 each): an element passes when |got - expected| <= atol + rtol * |expected|.',
    ...COMMON_FIELDS,
    cudakitText(false),
    '',
    ...example(COMPARE_EXAMPLE),
  ].join('\n');
}

/** get_evaluation's description. */
export const GET_EVALUATION_DESCRIPTION = [
  'An evaluation by id: status (queued, running, succeeded, failed, cancelled), phase, verdict and, once ' +
    "finished, cudakit's whole report; what GET /v1/evaluations/{id} answers. One's own evaluations only.",
  '',
  'Arguments:',
  "- id (required): the evaluation's id, 'ev_' and 26 characters: the job_id of an evaluate_kernel or " +
    'compare_kernels answer, or the id a still-running one names.',
  '- wait (optional, 0 to 60): seconds to wait for the evaluation to end before answering; answers at ' +
    'once without it.',
  '',
  ...example(GET_EXAMPLE).map((line) => line.replace('it runs as it is', 'with an id of yours')),
].join('\n');

/** list_gpus's description. */
export const LIST_GPUS_DESCRIPTION = [
  "This server's GPUs: name, architecture, the classes a request may ask for (cudakit.gpu: 'H200', " +
    "'sm_90', 'any'), each worker's state and jobs run; why there is none, when there is none. What GET " +
    '/v1/gpus answers.',
  '',
  'Arguments: none.',
  '',
  ...example({}),
].join('\n');

/** list_problems's description. */
export const LIST_PROBLEMS_DESCRIPTION = [
  "The problems this server serves: each one's name and description, its kernel's arguments and what a kernel " +
    "is checked against. A problem with cases (kind 'cases') also gives its dimensions with their bounds, its " +
    'public cases (name and dimensions) and how many hidden cases it has: nothing else of a hidden case is ever ' +
    "shown. Its leaderboard is get_leaderboard's. What GET /v1/problems answers.",
  '',
  'Arguments: none.',
  '',
  ...example({}),
].join('\n');

/** The example get_leaderboard shows: a problem the server ships, on an H200. */
const LEADERBOARD_EXAMPLE = { problem: 'vector-add', gpuClass: 'H200', limit: 10 };

/** get_leaderboard's description. */
export const GET_LEADERBOARD_DESCRIPTION = [
  "A problem's leaderboard on a GPU class: each principal's best PASSED submission, best first (the higher " +
    'score; on a tie the earlier submission), with its rank, display name, score and 95 % interval, submission ' +
    "time, GPU class and status ('provisional' until a re-run confirms it). The score is the geometric mean over " +
    "the problem's cases of the reference's time over the kernel's. What GET /v1/problems/{name}/leaderboard " +
    'answers.',
  '',
  'Arguments:',
  '- problem (required): the name of a problem with cases, as list_problems gives it.',
  "- gpuClass (optional): a GPU class, as list_gpus gives them ('H200', 'sm_90'); default the class most of this " +
    "server's GPUs are of.",
  '- limit (optional, 1 to 100, default 20): how many entries, from the top.',
  "- offset (optional, 0 to 100000, default 0): how many to skip: the next page's, as '(more from offset N)' says.",
  '',
  ...example(LEADERBOARD_EXAMPLE),
].join('\n');

/** The server's instructions, in its answer to initialize. */
export const INSTRUCTIONS =
  "CUDA kernel evaluation on this host's GPUs. evaluate_kernel and compare_kernels queue a job and wait for its " +
  'verdict (PASSED, COMPILE_ERROR, INCORRECT, ...); get_evaluation reads a job by id; list_gpus shows the GPUs; ' +
  "list_problems lists the problems served and get_leaderboard a problem's leaderboard.";
