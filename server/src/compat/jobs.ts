// SPDX-License-Identifier: MIT
// The original evaluation server's requests in cudakit's terms, pure (no I/O): a request becomes the v1 body
// (an EvalJob and the service's fields) or a 400 in the original's words. The routes are routes.ts, the answers
// answers.ts; the contract is server/docs/compat.md.
import {
  PRESETS,
  type EvalArgObject,
  type EvalBufferArg,
  type EvalInit,
  type EvalKernelRef,
  type EvalScalarArg,
  type PresetName,
} from 'cudakit';
import { MAX_QUEUE_SECONDS } from '../submit/fields.js';
import {
  COMPAT_DEFAULTS,
  COMPAT_NUM_TRIALS,
  COMPAT_TIMEOUT_SECONDS,
  CUDAKIT_DTYPES,
  type ArgSpec,
  type CompareRequest,
  type CudakitOptions,
  type EvaluationRequest,
  type KernelCode,
  type CompatDType,
  type TensorData,
  type ValidationErrorItem,
} from './schemas.js';
import { CompatClientError, CompatValidationError } from './errors.js';
import type { PythonJob } from '../run/protocol.js';
import { type PythonCandidate, pythonCandidateOf, pythonReferenceOf } from './python-jobs.js';
import { compatDtype, or, tensorOf } from './tensors.js';

/** Why a reference that needs Python cannot run here, and what can take its place. */
export const REFERENCE_SUBSTITUTES = [
  "a CUDA reference: ref_kernel with kernel_type 'cuda' (its io matched to the custom kernel's by argument name)",
  'expected outputs: POST /evaluate with cudakit.expected { <output name>: TensorData } ' +
    '(or POST /v1/evaluations with reference.expected)',
  'a registry problem: POST /v1/evaluations with reference { problem: <name> } ' +
    '(GET /v1/problems lists those installed)',
] as const;

const SUPPORTED = ['cuda'];

/** How an operator enables the Python kernel types: said with every refusal of one. */
export const ENABLE_PYTHON =
  'the Python kernel types need a server started with --python PATH (a Python with PyTorch), which this one was not';

function pythonReference(kernel: string, kernelType: string): CompatClientError {
  return new CompatClientError(
    `kernel_type '${kernelType}' needs Python, which this server does not run: give a 'cuda' reference kernel, ` +
      `a registry problem, or expected outputs (${ENABLE_PYTHON})`,
    {
      kernel,
      kernel_type: kernelType,
      supported: SUPPORTED,
      substitutes: REFERENCE_SUBSTITUTES,
      enable: ENABLE_PYTHON,
    },
  );
}

function unsupportedCandidate(kernel: string, kernelType: string): CompatClientError {
  return new CompatClientError(
    `kernel_type '${kernelType}' needs Python, which this server does not run: only 'cuda' kernels ` +
      `(CUDA C++, compiled with NVRTC) are evaluated here (${ENABLE_PYTHON})`,
    { kernel, kernel_type: kernelType, supported: SUPPORTED, enable: ENABLE_PYTHON },
  );
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The original's business rules, its exact messages: after parsing, before anything else. */
function checkBounds(numTrials: number, timeoutSeconds: number): void {
  if (numTrials < COMPAT_NUM_TRIALS.min) {
    throw new CompatClientError('num_trials must be at least 1', { num_trials: numTrials });
  }
  if (numTrials > COMPAT_NUM_TRIALS.max) {
    throw new CompatClientError('num_trials cannot exceed 10000', { num_trials: numTrials });
  }
  if (timeoutSeconds < COMPAT_TIMEOUT_SECONDS.min) {
    throw new CompatClientError('timeout must be at least 5 seconds', { timeout: timeoutSeconds });
  }
  if (timeoutSeconds > COMPAT_TIMEOUT_SECONDS.max) {
    throw new CompatClientError('timeout cannot exceed 600 seconds', { timeout: timeoutSeconds });
  }
}

/**
 * The legacy compare form `{ ref_code, custom_code }` (both Python: the original read them as 'torch' and
 * 'torch_cuda'): its number fields are checked as the original does, then it is refused, naming the substitutes.
 * Returns without throwing when `body` is not that form.
 */
export function refuseLegacy(body: unknown): void {
  if (!isObject(body) || !('ref_code' in body) || !('custom_code' in body)) return;
  const problems: ValidationErrorItem[] = [];
  for (const key of ['ref_code', 'custom_code'] as const) {
    if (typeof body[key] !== 'string') {
      problems.push({ field: key, message: 'Input should be a valid string', type: 'string_type' });
    }
  }
  for (const key of ['num_trials', 'timeout'] as const) {
    const v = body[key];
    if (v !== undefined && !Number.isInteger(v)) {
      problems.push({ field: key, message: 'Input should be a valid integer', type: 'int_type' });
    }
  }
  if (problems.length > 0) throw new CompatValidationError(problems);
  // The original's legacy defaults: 100 trials, a 30 s timeout.
  checkBounds((body.num_trials as number | undefined) ?? 100, (body.timeout as number | undefined) ?? 30);
  throw new CompatClientError(
    "The legacy { ref_code, custom_code } form is Python (kernel_type 'torch' and 'torch_cuda'), which this " +
      "server does not run: give ref_kernel and custom_kernel with kernel_type 'cuda', or expected outputs",
    pythonReference('ref_code', 'torch').details,
  );
}

const SCALAR_WIDTHS: Record<string, Record<string, EvalScalarArg['type']>> = {
  int: { int64: 'i64', int32: 'i32', int16: 'i16', int8: 'i8', uint8: 'u8' },
  float: { float32: 'f32', float64: 'f64', float16: 'f16', bfloat16: 'bf16' },
};
const C_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** NVRTC optimises device code by default and has no -O levels: these host-compiler flags are dropped. */
const HOST_OPTIMISATION = /^-O[0-3s]?$/;

/** The original's LaunchConfig defaults: one block of 256 threads. */
const DEFAULT_GRID = { x: 1, y: 1, z: 1 };
const DEFAULT_BLOCK = { x: 256, y: 1, z: 1 };

function scalarOf(a: ArgSpec, field: string): EvalScalarArg {
  const v = a.value;
  if (v === undefined || v === null) {
    throw new CompatClientError(`A scalar argument needs a value (type '${a.type}')`, { field: `${field} -> value` });
  }
  if (a.type === 'bool') {
    if (typeof v !== 'boolean') throw new CompatClientError("A 'bool' argument needs true or false", { field });
    return { kind: 'scalar', type: 'bool', value: v, name: a.name };
  }
  const widths = SCALAR_WIDTHS[a.type]!;
  if (typeof v !== 'number' || (a.type === 'int' && !Number.isInteger(v))) {
    const what = a.type === 'int' ? 'an integer' : 'a number';
    throw new CompatClientError(`An '${a.type}' argument needs ${what} as its value`, { field: `${field} -> value` });
  }
  let type: EvalScalarArg['type'];
  if (a.dtype !== undefined) {
    const t = Object.hasOwn(widths, a.dtype) ? widths[a.dtype] : undefined;
    if (t === undefined) {
      throw new CompatClientError(
        `dtype '${a.dtype.slice(0, 40)}' is not a width of an '${a.type}' argument: ` +
          `one of ${Object.keys(widths).join(', ')}`,
        { field: `${field} -> dtype` },
      );
    }
    type = t;
  } else if (a.type === 'int') {
    // C's int unless the value needs more; a kernel taking a long long says so with dtype 'int64'.
    type = v >= -(2 ** 31) && v < 2 ** 31 ? 'i32' : 'i64';
  } else {
    type = 'f32';
  }
  return { kind: 'scalar', type, value: v, name: a.name };
}

/** An IOContract's args as cudakit argument objects, in order, with their names. */
function argsOf(args: readonly ArgSpec[], field: string, warnings: string[]): EvalArgObject[] {
  const compared = args.some((a) => a.type === 'tensor' && (a.role === 'output' || a.role === 'inout'));
  if (!compared && args.some((a) => a.type === 'tensor')) {
    warnings.push(`${field}: no tensor has role output or inout, so every tensor is compared (as the original does)`);
  }
  return args.map((a, i) => {
    const at = `${field} -> ${i}`;
    if (!C_NAME.test(a.name)) {
      throw new CompatClientError(
        `Argument names are C identifiers here (they match a reference's arguments): '${a.name.slice(0, 60)}' is not`,
        { field: `${at} -> name` },
      );
    }
    if (a.is_meta === true) {
      throw new CompatClientError('is_meta (a Triton constexpr) has no meaning for a CUDA kernel', {
        field: `${at} -> is_meta`,
      });
    }
    switch (a.type) {
      case 'tensor': {
        const role = a.role ?? 'input';
        if (role !== 'input' && role !== 'output' && role !== 'inout') {
          throw new CompatClientError(`Unknown role '${role.slice(0, 40)}': input, output or inout`, {
            field: `${at} -> role`,
          });
        }
        const out = role !== 'input' || !compared;
        return tensorOf(a, out ? 'out' : 'in', role === 'inout' || (out && role === 'input'), at);
      }
      case 'int':
      case 'float':
      case 'bool':
        return scalarOf(a, at);
      case 'str':
        throw new CompatClientError("A 'str' argument cannot be passed to a CUDA kernel", { field: `${at} -> type` });
      default:
        throw new CompatClientError(`Unknown argument type '${a.type.slice(0, 40)}': tensor, int, float, str or bool`, {
          field: `${at} -> type`,
        });
    }
  });
}

const stringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** The __global__ functions of a source, in order: the original's choice of entry point without kernel_name. */
export function globalFunctions(source: string): string[] {
  const text = source.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, '');
  const bounds = '(?:__launch_bounds__\\s*\\([^)]*\\)\\s*)?';
  const re = new RegExp(`__global__\\s+${bounds}(?:void|[\\w:]+)\\s+${bounds}(\\w+)\\s*\\(`, 'g');
  return [...text.matchAll(re)].map((m) => m[1]!);
}

/** One CUDA KernelCode in cudakit's terms. */
interface CudaKernel {
  source: string;
  kernel: string;
  compile: { extraFlags?: string[]; nameExpressions?: string[] };
  grid: [number, number, number];
  block: [number, number, number];
  sharedMemBytes: number | undefined;
  /** Its launch came from its own io (a reference without one takes the custom kernel's). */
  ownLaunch: boolean;
  args: EvalArgObject[] | undefined;
}

function cudaKernelOf(key: string, k: KernelCode, warnings: string[]): CudaKernel {
  const m = (k.metadata ?? {}) as Record<string, unknown>;
  const field = (name: string) => ({ field: `${key} -> metadata -> ${name}` });
  if (m.backend !== undefined && m.backend !== null && m.backend !== 'nvrtc') {
    throw new CompatClientError(
      `backend '${String(m.backend).slice(0, 40)}' is not available: kernels compile with NVRTC here ` +
        "(give backend 'nvrtc' or leave it out)",
      field('backend'),
    );
  }
  if (m.jitify !== undefined && m.jitify !== null && m.jitify !== false) {
    throw new CompatClientError('jitify is not available: kernels compile with NVRTC as they are', field('jitify'));
  }
  const compile: CudaKernel['compile'] = {};
  if (m.compiler_options !== undefined && m.compiler_options !== null) {
    if (!stringList(m.compiler_options)) {
      throw new CompatClientError('compiler_options is a list of strings', field('compiler_options'));
    }
    const dropped = m.compiler_options.filter((f) => HOST_OPTIMISATION.test(f));
    if (dropped.length > 0) {
      warnings.push(`${key}: ${dropped.join(' ')} dropped (NVRTC has no -O levels; device code is optimised)`);
    }
    const flags = m.compiler_options.filter((f) => !HOST_OPTIMISATION.test(f));
    if (flags.length > 0) compile.extraFlags = flags;
  }
  if (m.name_expressions !== undefined && m.name_expressions !== null) {
    if (!stringList(m.name_expressions)) {
      throw new CompatClientError('name_expressions is a list of strings', field('name_expressions'));
    }
    if (m.name_expressions.length > 0) compile.nameExpressions = m.name_expressions;
  }
  let kernel: string;
  if (m.kernel_name !== undefined && m.kernel_name !== null) {
    if (typeof m.kernel_name !== 'string' || m.kernel_name.trim() === '') {
      throw new CompatClientError('kernel_name is the name of a __global__ function', field('kernel_name'));
    }
    kernel = m.kernel_name.trim();
  } else {
    const found = globalFunctions(k.source_code);
    if (found.length === 0) {
      throw new CompatClientError('metadata.kernel_name is required: no __global__ function was found in source_code', {
        field: `${key} -> metadata -> kernel_name`,
      });
    }
    kernel = found[0]!;
    if (found.length > 1) {
      warnings.push(
        `${key}: no kernel_name; '${kernel}' is the first of ${found.length} kernels (the original's pick)`,
      );
    }
  }
  const launch = k.io?.launch ?? undefined;
  const dim = (d: { x?: number; y?: number; z?: number } | null | undefined, fallback: typeof DEFAULT_GRID) => {
    const v = d ?? fallback;
    return [v.x ?? 1, v.y ?? 1, v.z ?? 1] as [number, number, number];
  };
  // Their limits (the GPUs') are the service's admission's, as for every route: a 400 naming the limit's GPU.
  const grid = dim(launch?.grid, DEFAULT_GRID);
  const block = dim(launch?.block, DEFAULT_BLOCK);
  const args = k.io === undefined || k.io === null ? undefined : argsOf(k.io.args, `${key} -> io -> args`, warnings);
  return {
    source: k.source_code,
    kernel,
    compile,
    grid,
    block,
    sharedMemBytes: launch?.shared_mem_bytes,
    ownLaunch: launch !== undefined && launch !== null,
    args,
  };
}

/** What a request becomes: the v1 body (service.submit takes it), and what its answer needs. */
export interface CompatJob {
  kind: 'evaluate' | 'compare';
  /** The EvalJob with the service's fields beside it. */
  body: Record<string, unknown>;
  timeoutSeconds: number;
  maxQueueSeconds: number;
  /** For the answer: what the mapping decided that the client should know. */
  warnings: string[];
  /** The request's field ('custom_kernel -> io -> args -> 2') of a cudakit job path ('job.args[2].init'). */
  fieldOf(jobPath: string): string;
  /** A reference in Python (a server with --python), run beside the job by its runner. */
  python?: PythonJob;
}

function candidateBody(c: CudaKernel): Record<string, unknown> {
  const compile = Object.keys(c.compile).length === 0 ? {} : { compile: c.compile };
  return {
    name: c.kernel,
    source: c.source,
    kernel: c.kernel,
    ...compile,
    grid: c.grid,
    block: c.block,
    ...(c.sharedMemBytes === undefined ? {} : { sharedMemBytes: c.sharedMemBytes }),
    args: c.args,
  };
}

/** timing and the service's fields from num_trials, timeout and the cudakit extension. */
function serviceFields(numTrials: number, timeoutSeconds: number, ext: CudakitOptions | undefined) {
  const preset: PresetName = ext?.timing?.preset ?? 'default';
  // num_trials is the fewest samples the stopping rule takes; the preset's cap still holds.
  const minSamples = Math.min(numTrials, PRESETS[preset].maxSamples);
  const timing = { ...ext?.timing, rule: { minSamples } };
  const maxQueueSeconds = ext?.max_queue_seconds ?? MAX_QUEUE_SECONDS.default;
  return {
    timing,
    fields: {
      timeoutSeconds,
      maxQueueSeconds,
      ...(ext?.gpu === undefined ? {} : { gpu: ext.gpu }),
      ...(ext?.device_metrics === true ? { deviceMetrics: true } : {}),
    },
  };
}

function fieldMapper(candidate: string): (jobPath: string) => string {
  const rules: [RegExp, (m: RegExpExecArray) => string][] = [
    [/^job\.args\[(\d+)\]/, (m) => `${candidate} -> io -> args -> ${m[1]}`],
    [/^job\.args/, () => `${candidate} -> io -> args`],
    [/^job\.reference\.args\[(\d+)\]/, (m) => `ref_kernel -> io -> args -> ${m[1]}`],
    [/^job\.reference\.args/, () => 'ref_kernel -> io -> args'],
    [/^job\.reference\.expected\['([^']*)'\]/, (m) => `cudakit -> expected -> ${m[1]}`],
    [/^job\.(reference|compare)\.(grid|block)/, (m) => `ref_kernel -> io -> launch -> ${m[2]}`],
    [/^job\.(reference|compare)\.sharedMemBytes/, () => 'ref_kernel -> io -> launch -> shared_mem_bytes'],
    [/^job\.(reference|compare)\.compile\.extraFlags/, () => 'ref_kernel -> metadata -> compiler_options'],
    [/^job\.(reference|compare)\.compile\.nameExpressions/, () => 'ref_kernel -> metadata -> name_expressions'],
    [/^job\.(reference|compare)\.kernel/, () => 'ref_kernel -> metadata -> kernel_name'],
    [/^job\.(reference|compare)\.source/, () => 'ref_kernel -> source_code'],
    [/^job\.(reference|compare)/, () => 'ref_kernel'],
    [/^job\.(grid|block)/, (m) => `${candidate} -> io -> launch -> ${m[1]}`],
    [/^job\.sharedMemBytes/, () => `${candidate} -> io -> launch -> shared_mem_bytes`],
    [/^job\.compile\.extraFlags/, () => `${candidate} -> metadata -> compiler_options`],
    [/^job\.compile\.nameExpressions/, () => `${candidate} -> metadata -> name_expressions`],
    [/^job\.kernel/, () => `${candidate} -> metadata -> kernel_name`],
    [/^job\.source/, () => `${candidate} -> source_code`],
    [/^job\.check\.(atol|rtol)/, (m) => m[1]!],
    [/^job\.timing\.rule/, () => 'num_trials'],
    [/^job\.timing/, () => 'cudakit -> timing'],
  ];
  return (jobPath) => {
    for (const [re, to] of rules) {
      const m = re.exec(jobPath);
      if (m !== null) return to(m);
    }
    return 'body';
  };
}

/**
 * POST /evaluate's body (schema-valid) as a v1 body: the original's business rules first (its messages), then
 * the kernel type (only 'cuda'), then the IOContract → argspec mapping.
 *
 * @throws CompatClientError (400) in the original's ClientError shape.
 */
export function evaluateJob(request: EvaluationRequest, options: { python?: boolean } = {}): CompatJob {
  const numTrials = request.num_trials ?? COMPAT_DEFAULTS.numTrials;
  const timeoutSeconds = request.timeout ?? COMPAT_DEFAULTS.timeoutSeconds;
  checkBounds(numTrials, timeoutSeconds);
  const k = request.kernel;
  if (k.kernel_type === 'triton' && (k.io === undefined || k.io === null)) {
    throw new CompatClientError('Triton kernels require io_contract to be specified', { kernel_type: 'triton' });
  }
  if (k.kernel_type !== 'cuda') {
    if (options.python !== true) throw unsupportedCandidate('kernel', k.kernel_type);
    const { timing, fields } = serviceFields(numTrials, timeoutSeconds, request.cudakit);
    const c = pythonCandidateOf('kernel', k);
    const body = pythonCandidateBody(c);
    if (request.cudakit?.expected !== undefined) {
      body.reference = { expected: expectedOf(request.cudakit.expected, k.io!.args) };
    }
    return {
      kind: 'evaluate',
      body: { ...body, timing, ...fields },
      timeoutSeconds,
      maxQueueSeconds: fields.maxQueueSeconds,
      warnings: [],
      fieldOf: fieldMapper('kernel'),
      python: { candidate: c.candidate },
    };
  }
  if (k.io === undefined || k.io === null) {
    throw new CompatClientError('CUDA kernels require io_contract to be specified', { kernel_type: 'cuda' });
  }
  const warnings: string[] = [];
  const c = cudaKernelOf('kernel', k, warnings);
  const ext = request.cudakit;
  const body = candidateBody(c);
  if (ext?.expected !== undefined) body.reference = { expected: expectedOf(ext.expected, k.io.args) };
  const { timing, fields } = serviceFields(numTrials, timeoutSeconds, ext);
  return {
    kind: 'evaluate',
    body: { ...body, timing, ...fields },
    timeoutSeconds,
    maxQueueSeconds: fields.maxQueueSeconds,
    warnings,
    fieldOf: fieldMapper('kernel'),
  };
}

/** cudakit.expected: each key an output tensor of the kernel, each value its exact bytes. */
function expectedOf(expected: Record<string, TensorData>, args: readonly ArgSpec[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, data] of Object.entries(expected)) {
    const field = `cudakit -> expected -> ${name}`;
    const arg = args.find((a) => a.name === name);
    if (arg === undefined || arg.type !== 'tensor' || (arg.role ?? 'input') === 'input') {
      throw new CompatClientError(`cudakit.expected names '${name.slice(0, 60)}', which is not an output tensor`, {
        field,
      });
    }
    const want = arg.tensor_spec?.data?.dtype ?? arg.tensor_spec?.dtype ?? 'float32';
    const got = data.dtype ?? 'float32';
    if (got !== want) {
      throw new CompatClientError(`Expected output '${name}' is ${got.slice(0, 40)}, but the tensor is ${want}`, {
        field: `${field} -> dtype`,
      });
    }
    out[name] = { base64: data.data_b64, compress: data.compress ?? 'none' };
  }
  return out;
}

/** A Python candidate's job body: its source and entry point's name (nothing compiles them), its tensors as args. */
function pythonCandidateBody(c: PythonCandidate): Record<string, unknown> {
  const one = [1, 1, 1]; // a Python candidate launches itself: its job's launch is a placeholder
  return { name: c.name, source: c.candidate.source, kernel: c.name, grid: one, block: one, args: c.args };
}

/**
 * POST /compare with a Python custom_kernel: checked against a Python ref_kernel (each in a runner of its own, the
 * reference's inputs the candidate's by name), both timed; or against a CUDA ref_kernel (its own io, its buffers
 * matched to the candidate's by name), the check's reference only.
 */
function pythonCompareJob(request: CompareRequest, numTrials: number, timeoutSeconds: number): CompatJob {
  const { ref_kernel: ref, custom_kernel: custom } = request;
  if (request.cudakit?.expected !== undefined) {
    throw new CompatClientError("cudakit.expected belongs to /evaluate (a compare's reference is ref_kernel)", {
      field: 'cudakit -> expected',
    });
  }
  const c = pythonCandidateOf('custom_kernel', custom);
  const atol = request.atol ?? COMPAT_DEFAULTS.atol;
  const rtol = request.rtol ?? COMPAT_DEFAULTS.rtol;
  const { timing, fields } = serviceFields(numTrials, timeoutSeconds, request.cudakit);
  const job = { kind: 'compare', timeoutSeconds, maxQueueSeconds: fields.maxQueueSeconds } as const;
  const body = { ...pythonCandidateBody(c), check: { atol, rtol }, timing, ...fields };
  if (ref.kernel_type === 'cuda') {
    if (ref.io === undefined || ref.io === null) {
      throw new CompatClientError('CUDA kernels require io_contract to be specified', {
        kernel: 'ref_kernel',
        kernel_type: 'cuda',
      });
    }
    const warnings: string[] = [];
    const r = cudaKernelOf('ref_kernel', ref, warnings);
    const reference: EvalKernelRef & { args: EvalArgObject[] } = {
      source: r.source,
      kernel: r.kernel,
      name: r.kernel,
      ...(Object.keys(r.compile).length === 0 ? {} : { compile: r.compile }),
      // The candidate's launch is a placeholder: the reference's is always its own (the original's default).
      grid: r.grid,
      block: r.block,
      ...(r.sharedMemBytes === undefined ? {} : { sharedMemBytes: r.sharedMemBytes }),
      args: r.args!,
    };
    warnings.push(
      "ref_runtime is not measured: a CUDA ref_kernel of a Python custom_kernel is the check's reference only",
    );
    return {
      ...job,
      body: { ...body, reference },
      warnings,
      fieldOf: fieldMapper('custom_kernel'),
      python: { candidate: c.candidate },
    };
  }
  const reference = pythonReferenceOf('ref_kernel', ref, c.args);
  return {
    ...job,
    body,
    warnings: [],
    fieldOf: fieldMapper('custom_kernel'),
    python: { candidate: c.candidate, reference },
  };
}

const sameArgs = (a: readonly EvalArgObject[], b: readonly EvalArgObject[]): boolean =>
  JSON.stringify(a) === JSON.stringify(b);

/**
 * POST /compare's (and POST /'s) body (schema-valid) as a v1 body. A CUDA reference with the custom kernel's
 * io (or none of its own) is the compare baseline: checked against and timed (ref_runtime); one with other
 * arguments is the check's reference only (ref_runtime stays zero, with a warning).
 *
 * @throws CompatClientError (400) in the original's ClientError shape.
 */
export function compareJob(request: CompareRequest, options: { python?: boolean } = {}): CompatJob {
  const numTrials = request.num_trials ?? COMPAT_DEFAULTS.numTrials;
  const timeoutSeconds = request.timeout ?? COMPAT_DEFAULTS.timeoutSeconds;
  checkBounds(numTrials, timeoutSeconds);
  for (const key of ['ref_kernel', 'custom_kernel'] as const) {
    const k = request[key];
    if (k.kernel_type === 'triton' && (k.io === undefined || k.io === null)) {
      throw new CompatClientError('Triton kernels require io_contract to be specified', {
        kernel: key,
        kernel_type: 'triton',
      });
    }
  }
  const { ref_kernel: ref, custom_kernel: custom } = request;
  const python = ref.kernel_type !== 'cuda';
  if (python && options.python !== true) throw pythonReference('ref_kernel', ref.kernel_type);
  if (custom.kernel_type !== 'cuda') {
    if (options.python !== true) throw unsupportedCandidate('custom_kernel', custom.kernel_type);
    return pythonCompareJob(request, numTrials, timeoutSeconds);
  }
  if (custom.io === undefined || custom.io === null) {
    throw new CompatClientError('CUDA kernels require io_contract to be specified', {
      kernel: 'custom_kernel',
      kernel_type: 'cuda',
    });
  }
  if (request.cudakit?.expected !== undefined) {
    throw new CompatClientError("cudakit.expected belongs to /evaluate (a compare's reference is ref_kernel)", {
      field: 'cudakit -> expected',
    });
  }
  const warnings: string[] = [];
  const c = cudaKernelOf('custom_kernel', custom, warnings);
  const atol = request.atol ?? COMPAT_DEFAULTS.atol;
  const rtol = request.rtol ?? COMPAT_DEFAULTS.rtol;
  const { timing, fields } = serviceFields(numTrials, timeoutSeconds, request.cudakit);
  const job = (body: Record<string, unknown>): CompatJob => ({
    kind: 'compare',
    body: { ...body, check: { atol, rtol }, timing, ...fields },
    timeoutSeconds,
    maxQueueSeconds: fields.maxQueueSeconds,
    warnings,
    fieldOf: fieldMapper('custom_kernel'),
  });
  if (python) return { ...job(candidateBody(c)), python: { reference: pythonReferenceOf('ref_kernel', ref, c.args!) } };
  const r = cudaKernelOf('ref_kernel', ref, warnings);
  const kernelRef: EvalKernelRef = {
    source: r.source,
    kernel: r.kernel,
    name: r.kernel === c.kernel ? `${r.kernel} (reference)` : r.kernel,
    ...(Object.keys(r.compile).length === 0 ? {} : { compile: r.compile }),
    // Without its own launch, a reference runs with the custom kernel's.
    ...(r.ownLaunch ? { grid: r.grid, block: r.block } : {}),
    ...(r.sharedMemBytes === undefined ? {} : { sharedMemBytes: r.sharedMemBytes }),
  };
  const body = candidateBody(c);
  if (r.args === undefined || sameArgs(r.args, c.args!)) {
    body.compare = kernelRef;
  } else {
    body.reference = { ...kernelRef, args: r.args };
    warnings.push(
      "ref_runtime is not measured: ref_kernel's io differs from custom_kernel's, and a timed baseline runs on " +
        "the custom kernel's arguments (give both the same io to time the reference)",
    );
  }
  return job(body);
}
