// SPDX-License-Identifier: MIT
// A Python kernel of the compatible routes (kernel_type torch, torch_cuda, triton or multi_kernel, with a server
// started with --python), mapped onto the job's PythonJob.
//
// A Python reference (ref_kernel): its inputs are the candidate's input buffers, the same bytes (the original
// materialised each kernel's inputs from one seed, so a reference and a candidate with the same specs saw the same
// values; here they are shared outright): an input tensor takes the candidate's input of the same name, else the next
// of the candidate's inputs not taken by name, and must have its element type and size. The reference's outputs (its
// return values, in order) stand for the candidate's output tensors, in order; their count is checked when it runs.
//
// A Python candidate (custom_kernel, or /evaluate's kernel): the job's arguments are its tensors, each a cudakit
// buffer made as a CUDA kernel's would be (the same seeded inputs, poisoned outputs), and it must declare its outputs
// (role output or inout, with dtype and shape): its return values, or for Triton its output arguments, are read into
// them in order, and the check compares them. Its scalars stay with its PythonJob.
import type { EvalArgObject, EvalBufferArg } from 'cudakit';
import type { PythonJobArg, PythonKernelSpec } from '../run/protocol.js';
import type { PythonKernelType, RunnerDType } from '../run/python-runner.js';
import { CompatClientError } from './errors.js';
import { type ArgSpec, CUDAKIT_DTYPES, type KernelCode } from './schemas.js';
import { tensorOf } from './tensors.js';

/** Metadata a Python kernel's entry point is found by (the runner reads these; other keys are dropped). */
const METADATA_KEYS = ['function_name', 'class_name', 'method_name', 'entry_point', 'kernel_name'] as const;

const numel = (shape: readonly number[]): number => shape.reduce((n, d) => n * d, 1);

/**
 * ref_kernel in Python as the job's PythonJob's reference, its inputs taken from `candidate`'s arguments (the job's
 * args).
 * @throws CompatClientError (400) naming the field, for io the mapping cannot follow.
 */
export function pythonReferenceOf(key: string, ref: KernelCode, candidate: readonly EvalArgObject[]): PythonKernelSpec {
  const type = ref.kernel_type as PythonKernelType;
  const io = ref.io ?? undefined;
  if (io === undefined) {
    throw new CompatClientError(
      `A Python ${key} needs io here: its input tensors' names and shapes say which of custom_kernel's inputs it gets`,
      { field: `${key} -> io` },
    );
  }
  const inputs = candidate.flatMap((a, i) => (a.kind === 'buffer' && a.role !== 'out' ? [i] : []));
  const outputs = candidate.flatMap((a, i) => (a.kind === 'buffer' && a.role === 'out' ? [i] : []));
  const taken = new Set<number>();
  const byName = new Map(inputs.map((i) => [candidate[i]!.name ?? '', i]));
  // First the names that match, so a positional match never takes an input another argument names.
  for (const a of io.args)
    if (a.type === 'tensor' && (a.role ?? 'input') !== 'output') {
      const i = byName.get(a.name);
      if (i !== undefined) taken.add(i);
    }
  const free = inputs.filter((i) => !taken.has(i));
  const args = io.args.map((a, k) => argOf(a, `${key} -> io -> args -> ${k}`, candidate, byName, free));
  return { ...kernelOf(ref), args, outputs };
}

/** What the runner loads of a Python kernel: its type, source, entry-point metadata and Triton launch. */
function kernelOf(k: KernelCode): Pick<PythonKernelSpec, 'type' | 'source' | 'metadata' | 'launch'> {
  const launch = k.io?.launch ?? undefined;
  const metadata: Record<string, string> = {};
  for (const name of METADATA_KEYS) {
    const v = (k.metadata as Record<string, unknown> | null | undefined)?.[name];
    if (typeof v === 'string') metadata[name] = v.slice(0, 200);
  }
  return {
    type: k.kernel_type as PythonKernelType,
    source: k.source_code,
    metadata,
    launch:
      launch === undefined || launch === null
        ? null
        : {
            ...(launch.grid === undefined || launch.grid === null
              ? {}
              : { grid: { x: launch.grid.x ?? 1, y: launch.grid.y ?? 1, z: launch.grid.z ?? 1 } }),
            ...(typeof launch.num_warps === 'number' ? { num_warps: launch.num_warps } : {}),
            ...(typeof launch.num_stages === 'number' ? { num_stages: launch.num_stages } : {}),
          },
  };
}

/** Python's identifiers (ASCII): a Triton constexpr is passed by its name, and every name names a file. */
const PYTHON_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A Python candidate as the job's arguments (its tensors) and its PythonJob's candidate; its name for the report. */
export interface PythonCandidate {
  args: EvalBufferArg[];
  candidate: PythonKernelSpec;
  /** Its entry point's name where the metadata gives one, else its kernel type: the job's kernel and name. */
  name: string;
}

/**
 * custom_kernel (or /evaluate's kernel) in Python as the job's arguments and PythonJob candidate.
 * @throws CompatClientError (400) naming the field, for io the mapping cannot follow.
 */
export function pythonCandidateOf(key: string, k: KernelCode): PythonCandidate {
  const io = k.io ?? undefined;
  if (io === undefined) {
    throw new CompatClientError(
      `A Python ${key} needs io here: its tensors' dtypes and shapes, and which of them are its outputs`,
      { field: `${key} -> io` },
    );
  }
  const args: EvalBufferArg[] = [];
  const pythonArgs = io.args.map((a, i): PythonJobArg => {
    const field = `${key} -> io -> args -> ${i}`;
    if (!PYTHON_NAME.test(a.name)) {
      throw new CompatClientError(`Argument names are Python identifiers here: '${a.name.slice(0, 60)}' is not`, {
        field: `${field} -> name`,
      });
    }
    const role = a.role ?? 'input';
    if (role !== 'input' && role !== 'output' && role !== 'inout') {
      throw new CompatClientError(`Unknown role '${role.slice(0, 40)}': input, output or inout`, {
        field: `${field} -> role`,
      });
    }
    if (a.type !== 'tensor') return scalarOf(a, field);
    const buffer = tensorOf(a, role === 'input' ? 'in' : 'out', role === 'inout', field);
    args.push(buffer);
    const dtype = (a.tensor_spec?.data?.dtype ?? a.tensor_spec?.dtype ?? 'float32') as RunnerDType;
    const shape = buffer.shape === undefined ? [buffer.length ?? 1] : [...buffer.shape];
    return { name: a.name, kind: 'tensor', dtype, shape, role, from: args.length - 1 };
  });
  const outputs = args.flatMap((a, i) => (a.role === 'out' ? [i] : []));
  if (outputs.length === 0) {
    throw new CompatClientError(
      `A Python ${key} declares its outputs here: give each tensor it returns (or, for Triton, writes) an io ` +
        "argument with role 'output' and its tensor_spec's dtype and shape",
      { field: `${key} -> io -> args` },
    );
  }
  const metadata = (k.metadata ?? {}) as Record<string, unknown>;
  const entry = ['function_name', 'kernel_name', 'class_name', 'entry_point']
    .map((m) => metadata[m])
    .find((v): v is string => typeof v === 'string' && PYTHON_NAME.test(v));
  return { args, candidate: { ...kernelOf(k), args: pythonArgs, outputs }, name: entry ?? k.kernel_type };
}

/** A scalar argument of a Python kernel: its value as given, a Triton constexpr when is_meta. */
function scalarOf(a: ArgSpec, field: string): PythonJobArg {
  if (a.type !== 'int' && a.type !== 'float' && a.type !== 'str' && a.type !== 'bool') {
    throw new CompatClientError(`Unknown type '${a.type.slice(0, 40)}': tensor, int, float, str or bool`, {
      field: `${field} -> type`,
    });
  }
  const v = a.value;
  if (v === undefined || v === null) {
    if (a.is_meta === true) throw new CompatClientError('A meta argument needs a value here', { field });
    throw new CompatClientError(`A scalar argument needs a value (type '${a.type}')`, { field: `${field} -> value` });
  }
  return { name: a.name, kind: 'scalar', dtype: a.type, value: v, role: 'input', meta: a.is_meta === true };
}

function argOf(
  a: ArgSpec,
  field: string,
  candidate: readonly EvalArgObject[],
  byName: Map<string, number>,
  free: number[],
): PythonJobArg {
  const role = a.role ?? 'input';
  if (role !== 'input' && role !== 'output' && role !== 'inout') {
    throw new CompatClientError(`Unknown role '${role.slice(0, 40)}': input, output or inout`, {
      field: `${field} -> role`,
    });
  }
  if (a.type !== 'tensor') return scalarOf(a, field);
  const spec = a.tensor_spec ?? undefined;
  const dtype = (spec?.dtype ?? 'float32') as RunnerDType;
  if (!Object.hasOwn(CUDAKIT_DTYPES, dtype)) {
    throw new CompatClientError(`Unknown dtype '${String(dtype).slice(0, 40)}'`, {
      field: `${field} -> tensor_spec -> dtype`,
    });
  }
  const shape = spec?.shape ?? [];
  if (shape.length === 0 || !shape.every((d) => Number.isSafeInteger(d) && d >= 1)) {
    throw new CompatClientError('A tensor argument needs tensor_spec.shape, of positive dimensions', {
      field: `${field} -> tensor_spec -> shape`,
    });
  }
  if (role === 'output') return { name: a.name, kind: 'tensor', dtype, shape, role: 'output' };
  const from = byName.get(a.name) ?? free.shift();
  if (from === undefined) {
    throw new CompatClientError(
      `ref_kernel's input '${a.name.slice(0, 60)}' has no input tensor of custom_kernel to take its bytes from ` +
        '(none of that name, and none left in order)',
      { field },
    );
  }
  const c = candidate[from] as Extract<EvalArgObject, { kind: 'buffer' }>;
  const cLength = c.shape === undefined ? (c.length ?? 0) : numel(c.shape);
  if (CUDAKIT_DTYPES[dtype] !== c.dtype || numel(shape) !== cLength) {
    throw new CompatClientError(
      `ref_kernel's input '${a.name.slice(0, 60)}' (${dtype}[${shape.join(', ')}]) takes custom_kernel's ` +
        `'${String(c.name).slice(0, 60)}', which is ${c.dtype} × ${cLength}: give them the same dtype and size`,
      { field },
    );
  }
  return { name: a.name, kind: 'tensor', dtype, shape, role: role === 'inout' ? 'inout' : 'input', from };
}
