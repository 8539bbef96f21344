// SPDX-License-Identifier: MIT
// A Python reference of the compatible routes (kernel_type torch, torch_cuda, triton or multi_kernel in ref_kernel,
// with a server started with --python): mapped onto the job's PythonJob. Its inputs are the CUDA candidate's input
// buffers, the same bytes (the original materialised each kernel's inputs from one seed, so a reference and a
// candidate with the same specs saw the same values; here they are shared outright): an input tensor takes the
// candidate's input of the same name, else the next of the candidate's inputs not taken by name, and must have its
// element type and size. The reference's outputs (its return values, in order) stand for the candidate's output
// tensors, in order; their count is checked when it runs.
import type { EvalArgObject } from 'cudakit';
import type { PythonJob, PythonJobArg } from '../run/protocol.js';
import type { PythonKernelType, RunnerDType } from '../run/python-runner.js';
import { CompatClientError } from './errors.js';
import { type ArgSpec, CUDAKIT_DTYPES, type KernelCode } from './schemas.js';

/** Metadata a Python kernel's entry point is found by (the runner reads these; other keys are dropped). */
const METADATA_KEYS = ['function_name', 'class_name', 'method_name', 'entry_point', 'kernel_name'] as const;

const numel = (shape: readonly number[]): number => shape.reduce((n, d) => n * d, 1);

/**
 * ref_kernel in Python as the job's PythonJob, its inputs taken from `candidate`'s arguments (the job's args).
 * @throws CompatClientError (400) naming the field, for io the mapping cannot follow.
 */
export function pythonReferenceOf(key: string, ref: KernelCode, candidate: readonly EvalArgObject[]): PythonJob {
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
  const launch = io.launch ?? undefined;
  const metadata: Record<string, string> = {};
  for (const name of METADATA_KEYS) {
    const v = (ref.metadata as Record<string, unknown> | null | undefined)?.[name];
    if (typeof v === 'string') metadata[name] = v.slice(0, 200);
  }
  return {
    reference: {
      type,
      source: ref.source_code,
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
      args,
      outputs,
    },
  };
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
  if (a.type !== 'tensor' && a.type !== 'int' && a.type !== 'float' && a.type !== 'str' && a.type !== 'bool') {
    throw new CompatClientError(`Unknown type '${a.type.slice(0, 40)}': tensor, int, float, str or bool`, {
      field: `${field} -> type`,
    });
  }
  if (a.type !== 'tensor') {
    const v = a.value;
    if (v === undefined || v === null) {
      if (a.is_meta === true) throw new CompatClientError('A meta argument needs a value here', { field });
      throw new CompatClientError(`A scalar argument needs a value (type '${a.type}')`, { field: `${field} -> value` });
    }
    return { name: a.name, kind: 'scalar', dtype: a.type, value: v, role: 'input', meta: a.is_meta === true };
  }
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
