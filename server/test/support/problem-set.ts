// SPDX-License-Identifier: MIT
// The problem set the server ships, for the tests of every tier that walk it.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** server/problems/: one folder per problem. */
export const PROBLEMS_DIR = fileURLToPath(new URL('../../problems', import.meta.url));

/** The problems' folder names, sorted. */
export function problemNames(): string[] {
  return readdirSync(PROBLEMS_DIR, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}
