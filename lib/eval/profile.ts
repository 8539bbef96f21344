// SPDX-License-Identifier: MIT
// profileJob(): device metrics of a job's kernel. The measure layer's profile() takes one launch (compiled code, the
// kernel, its launch configuration, argument specs) and cannot know an EvalJob, which is this layer's; so the job is
// mapped onto it here, with the pipeline's own pieces: prepareJob's argument specs and signature, compileSource,
// launchConfigOf and check's seed. The launch profiled is the one evaluate() checks and times, on the inputs of the
// check's first trial.
import { checkOptions, typeError } from '../core/index.js';
import { type ProfileOptions, type ProfileResult, checkProfileOptions, profile } from '../measure/index.js';
import type { EvalJob } from './job.js';
import { launchConfigOf } from './pipeline.js';
import { compileSource, readSource } from './source.js';
import { InvalidJobError, prepareJob } from './validate.js';

/** Options of profileJob(): profile()'s, and where relative source files are read from. */
export interface ProfileJobOptions extends ProfileOptions {
  /** Where relative source files are read from, as EvalOptions.baseDir. Default: the working directory. */
  baseDir?: string;
}

/**
 * Device metrics of the job's candidate kernel from Nsight Compute (measure's profile(): one launch in a child
 * process under ncu, nothing timed). The job is validated and its kernel compiled as evaluate() does (the compile
 * cache makes that cheap after an evaluation); its reference, compare baseline, check and timing are not used.
 *
 * Resolves to `deviceMetrics: null` with a warning when ncu is missing, may not read the counters, times out or the
 * launch fails (see profile()).
 *
 * @throws InvalidJobError for an invalid job, CompileError when the kernel does not compile, the file system's error
 *   for an unreadable source, TypeError / RangeError for bad options: what the job or the caller gets wrong.
 * @example
 * const r = await profileJob(job, { metrics: ['dram__bytes_read.sum', 'dram__bytes_write.sum'] });
 */
export async function profileJob(job: EvalJob, options?: ProfileJobOptions): Promise<ProfileResult> {
  const { baseDir, ...own } = checkOptions('options', options, [
    'baseDir',
    'metrics',
    'sections',
    'ncu',
    'timeoutMs',
    'processGroup',
  ]) as ProfileJobOptions;
  if (baseDir !== undefined && typeof baseDir !== 'string') throw typeError('options.baseDir', 'a string', baseDir);
  checkProfileOptions(own); // before compiling
  const prep = prepareJob(job);
  if (Array.isArray(prep)) throw new InvalidJobError(prep);
  const j = prep.job;
  const src = readSource(j.source, baseDir, 'candidate.cu');
  const code = await compileSource(src, { ...j.compile }, [j.kernel], j.headers);
  const io = prep.args.map((a) => a.spec);
  const seed = j.check?.seed;
  return profile(
    {
      code,
      kernel: j.kernel,
      config: launchConfigOf(j),
      io,
      signature: prep.signature,
      ...(seed === undefined ? {} : { seed }),
    },
    own,
  );
}
