// SPDX-License-Identifier: MIT
// The files of a problem's folder, read once when the registry loads: a kernel's source named by `source.file` (only
// inside the folder, links followed and held to it too) becomes `{ text, name }`, so that no job, and no worker, ever
// carries a path of the server's; a JavaScript reference module is found by its fixed names.
import { existsSync, realpathSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';

/** The names a problem's JavaScript reference module may have, in the order they are looked for. */
export const JS_REFERENCE_FILES = ['reference.mjs', 'reference.js'] as const;

/** Says what is wrong with the problem's folder and throws (the registry's ProblemRegistryError, naming it). */
export type Fail = (why: string) => never;

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether `path` is `folder` or below it. */
function inside(folder: string, path: string): boolean {
  const rel = relative(folder, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** The JavaScript reference module of a folder, or undefined. */
export function jsReferenceOf(folder: string): string | undefined {
  return JS_REFERENCE_FILES.map((f) => join(folder, f)).find((f) => existsSync(f));
}

/**
 * The text of `file` (relative to `folder`), which must be a file inside the folder both as written and once its
 * links are followed. `what` names the field in messages ('reference.source.file').
 */
export function readInside(folder: string, file: string, what: string, fail: Fail): string {
  const path = resolve(folder, file);
  if (!inside(folder, path)) fail(`${what} '${file}' is outside the folder`);
  if (!existsSync(path)) fail(`${what} '${file}' does not exist`);
  // A link inside the folder may point anywhere: where it leads must be inside too.
  if (!inside(realpathSync(folder), realpathSync(path))) fail(`${what} '${file}' links outside the folder`);
  if (!statSync(path).isFile()) fail(`${what} '${file}' is not a file`);
  return readFileSync(path, 'utf8');
}

/**
 * A kernel reference with its `source: { file }` read (inside the folder only) into `{ text, name }`; any other
 * source is left as it is. `what` names the kernel in messages ('reference', 'baseline').
 */
export function withSourceRead(folder: string, kernel: unknown, what: string, fail: Fail): Record<string, unknown> {
  if (!isObject(kernel)) return fail(`${what} must be a kernel reference { source, kernel, ... }`);
  const ref = { ...kernel };
  const source = ref.source;
  if (isObject(source) && typeof source.file === 'string') {
    ref.source = { text: readInside(folder, source.file, `${what}.source.file`, fail), name: source.file };
  }
  return ref;
}
