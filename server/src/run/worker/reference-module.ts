// SPDX-License-Identifier: MIT
// A problem's JavaScript reference, installed by the operator (submit/problems.ts checks the folder and names the
// module): imported here, in the worker only, so that no operator code runs in the server's process.
import { pathToFileURL } from 'node:url';
import type { JsReference } from 'cudakit';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/**
 * Imports a JavaScript reference installed by the operator (in the worker only).
 * @throws TypeError when the module does not export `reference` as a function.
 */
export async function importJsReference(modulePath: string): Promise<JsReference> {
  const module = (await import(pathToFileURL(modulePath).href)) as { reference?: unknown; default?: unknown };
  const reference = module.reference ?? (isObject(module.default) ? module.default.reference : module.default);
  if (typeof reference !== 'function') {
    throw new TypeError(
      `Expected a function exported as 'reference' for the problem's reference module ${modulePath} ` +
        `but received ${typeof reference}`,
    );
  }
  return reference as JsReference;
}
