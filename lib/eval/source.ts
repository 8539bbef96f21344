// SPDX-License-Identifier: MIT
// Kernel sources: reading them (text, or a file relative to a base directory), finding their extern "C" kernels, and
// compiling them with the kernels that are C++ names as name expressions. Shared by the pipeline and the CLI's
// `compile` command.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type CompileOptions, type ObjectCode, Program } from '../core/index.js';
import type { EvalSource } from './job.js';

/** A source read into memory. */
export interface SourceText {
  text: string;
  /** The name diagnostics use: the path as given, or the text's name. */
  name: string;
  /** Searched first for #include "...": a file's own directory, a text's base directory. */
  dir: string | undefined;
}

/**
 * Reads a job's source: text as it is (named `fallbackName` unless it has a name), a file relative to `baseDir`.
 *
 * @throws the file system's error for a file that cannot be read (its `code`: 'ENOENT', 'EACCES' ...).
 */
export function readSource(src: EvalSource, baseDir: string | undefined, fallbackName: string): SourceText {
  if (typeof src === 'string') return { text: src, name: fallbackName, dir: baseDir };
  if ('text' in src) return { text: src.text, name: src.name ?? fallbackName, dir: baseDir };
  const path = resolve(baseDir ?? '.', src.file);
  return { text: readFileSync(path, 'utf8'), name: src.name ?? src.file, dir: dirname(path) };
}

/** Kernel names declared `extern "C" __global__ void NAME(` (with __launch_bounds__ and the like allowed). */
export function externCKernels(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, '');
  // extern "C", then words (__global__, __launch_bounds__(...) ...), void, maybe __launch_bounds__(...), the name.
  const qualifiers = String.raw`((?:\w+(?:\s*\([^()]*\))?\s+)*?)`;
  const bounds = String.raw`(?:__launch_bounds__\s*\([^()]*\)\s*)?`;
  const re = new RegExp(String.raw`\bextern\s+"C"\s+${qualifiers}void\s+${bounds}([A-Za-z_]\w*)\s*\(`, 'g');
  const names: string[] = [];
  for (const m of code.matchAll(re)) {
    if (/\b__global__\b/.test(m[1] ?? '') && !names.includes(m[2]!)) names.push(m[2]!);
  }
  return names;
}

/**
 * NVRTC otherwise searches the directory of the program's name for #include "..." (the working directory for a bare
 * name): a source named '/etc/x.cu' could include "passwd". A job's own directory goes on the include path by name.
 */
export const NO_SOURCE_INCLUDE = '--no-source-include';

/**
 * The options a source compiles with: its directory first on the include path, NVRTC's own search of the program
 * name's directory off (NO_SOURCE_INCLUDE), and `kernels` that are not extern "C" (C++ names, template instances)
 * added as name expressions so they can be found by those names.
 */
export function sourceCompileOptions(
  src: SourceText,
  options: CompileOptions,
  kernels: readonly string[] = [],
): CompileOptions {
  const externC = externCKernels(src.text);
  const named = new Set(options.nameExpressions ?? []);
  for (const k of kernels) if (!externC.includes(k)) named.add(k);
  const own = src.dir !== undefined ? [src.dir] : [];
  const flags = options.extraFlags ?? [];
  const o: CompileOptions = {
    ...options,
    includePaths: [...own, ...(options.includePaths ?? [])],
    extraFlags: flags.includes(NO_SOURCE_INCLUDE) ? flags : [NO_SOURCE_INCLUDE, ...flags],
  };
  if (named.size > 0) o.nameExpressions = [...named];
  return o;
}

/**
 * Compiles a source with NVRTC off the event loop (see sourceCompileOptions).
 *
 * @throws CompileError with the diagnostics; TypeError / RangeError for bad options (no arch without a device ...).
 */
export function compileSource(
  src: SourceText,
  options: CompileOptions,
  kernels: readonly string[] = [],
  headers?: Readonly<Record<string, string>>,
): Promise<ObjectCode> {
  const program = new Program(src.text, headers === undefined ? { name: src.name } : { name: src.name, headers });
  return program.compileAsync(sourceCompileOptions(src, options, kernels));
}
