// SPDX-License-Identifier: MIT
// Finds a command on PATH without running a shell (nvidia-smi, setpriv): absent tools are normal, not errors.
import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

/** The absolute path of the executable `name` on PATH, or undefined. */
export async function findExecutable(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, name);
    try {
      await access(path, constants.X_OK);
      return path;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}
