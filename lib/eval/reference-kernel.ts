// SPDX-License-Identifier: MIT
// A job's CUDA reference kernel on its own, as check()'s ReferenceKernel: compiled as evaluate() compiles it (the
// job's compile options under its own, its headers, the device's arch) and loaded in a module of its own. For a
// candidate that evaluate() does not launch (a HostCandidate: a kernel another runtime runs, as the evaluation
// service's Python candidates), checked against the job's reference kernel.
import type { Device, LaunchConfig, Module } from '../core/index.js';
import { type ReferenceKernel, signatureOf } from '../measure/index.js';
import type { EvalJob } from './job.js';
import { launchConfigOf } from './pipeline.js';
import { compileSource, readSource } from './source.js';
import { InvalidJobError, prepareJob } from './validate.js';

/** A job's reference kernel, loaded: check()'s reference, what reports call it, and its module to dispose of. */
export interface LoadedReference {
  /** check()'s reference: the kernel, its launch, its own arguments where it has them. */
  reference: ReferenceKernel;
  /** 'scale_ref in reference.cu'. */
  label: string;
  /** Unloads its module. Idempotent; never throws. */
  dispose(): void;
  /** `using`: dispose(). */
  [Symbol.dispose](): void;
}

/**
 * Compiles and loads `job.reference` (a kernel: { source, kernel, ... }) on `device`, its launch the job's but for
 * what it sets itself, its arguments its own `args` where it has them (matched to the candidate's as evaluate()
 * matches them). Undefined for a job whose reference is no kernel (expected outputs, or none).
 *
 * @throws InvalidJobError for a job validateJob() refuses; CompileError when the reference does not compile;
 *   CudaError from the driver (loading, finding the kernel).
 */
export async function loadJobReference(
  job: EvalJob,
  device: Device,
  options: { baseDir?: string } = {},
): Promise<LoadedReference | undefined> {
  const prepared = prepareJob(job);
  if (Array.isArray(prepared)) throw new InvalidJobError(prepared);
  const r = prepared.job.reference;
  if (r === undefined || !('kernel' in r)) return undefined;
  const j = prepared.job;
  const src = readSource(r.source, options.baseDir, 'reference.cu');
  const compile = { ...j.compile, ...r.compile };
  if (compile.arch === undefined && compile.target !== 'ptx') compile.arch = device.arch;
  const code = await compileSource(src, compile, [r.kernel], r.headers ?? j.headers);
  const module: Module = device.loadModule(code);
  try {
    const io = prepared.referenceArgs?.map((a) => a.spec);
    const kernel = module.getKernel(r.kernel, io === undefined ? prepared.signature : signatureOf(io));
    const base = launchConfigOf(j);
    const config: LaunchConfig = { ...base, grid: r.grid ?? base.grid, block: r.block ?? base.block };
    const sharedMemBytes = r.sharedMemBytes ?? j.sharedMemBytes ?? 0;
    if (sharedMemBytes > 0) config.sharedMemBytes = sharedMemBytes;
    else delete config.sharedMemBytes;
    if (sharedMemBytes > kernel.attributes.maxDynamicSharedSizeBytes) kernel.setMaxDynamicSharedMemory(sharedMemBytes);
    const dispose = (): void => module.dispose(); // idempotent, never throws
    return {
      reference: { kernel, config, ...(io === undefined ? {} : { io }) },
      label: `${r.name ?? r.kernel} in ${src.name}`,
      dispose,
      [Symbol.dispose]: dispose,
    };
  } catch (e) {
    module.dispose();
    throw e;
  }
}
