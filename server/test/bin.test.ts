// SPDX-License-Identifier: MIT
// The cudakit-server command in a checkout: `npm install` links it (node_modules/.bin), and it runs from the sources
// while the server is not built, so `npx cudakit-server` never goes to the registry for it.
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from '../bench/binary.js';

const LINK = join(ROOT, 'node_modules', '.bin', 'cudakit-server');

it('npm install links cudakit-server, which prints its usage from the sources', () => {
  expect(existsSync(LINK)).toBe(true);
  expect(realpathSync(LINK)).toBe(join(ROOT, 'server', 'bin', 'cudakit-server.mjs'));
  const r = spawnSync(LINK, ['--help'], { encoding: 'utf8', cwd: ROOT, timeout: 30_000 });
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout).toMatch(/^Usage: cudakit-server/);
  const bad = spawnSync(LINK, ['--port', 'x'], { encoding: 'utf8', cwd: ROOT, timeout: 30_000 });
  expect(bad.status).toBe(2);
  expect(bad.stderr).toContain("Expected an integer from 0 to 65535 for --port but received 'x'");
});
