// SPDX-License-Identifier: MIT
// scripts/prebuild.mjs (npm pack's prepack) never leaves out a prebuild the README promises without being told to:
// with no cross compiler on PATH it fails and says what to install, unless CUDAKIT_PREBUILD_SKIP names the arch.
// --dry-run stops before any compile.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const SCRIPT = new URL('../../scripts/prebuild.mjs', import.meta.url).pathname;
/** A PATH with Node and a shell and nothing else: no cross compiler. */
const bare = mkdtempSync(join(tmpdir(), 'cudakit-bare-path-'));
symlinkSync(process.execPath, join(bare, 'node'));
symlinkSync('/bin/sh', join(bare, 'sh'));
afterAll(() => rmSync(bare, { recursive: true, force: true }));

function prebuild(env: Record<string, string>): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [SCRIPT, '--dry-run'], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe.skipIf(process.platform !== 'linux' || process.arch !== 'x64')('prebuilds [linux-x64 hosts]', () => {
  it('fails without the arm64 cross compiler, naming the package to install and the way to skip', () => {
    const r = prebuild({ PATH: bare });
    expect(r.status).toBe(1);
    expect(r.out).toContain('linux-arm64 cannot be built here: no aarch64-linux-gnu-g++');
    expect(r.out).toContain('apt-get install g++-aarch64-linux-gnu');
    expect(r.out).toContain('CUDAKIT_PREBUILD_SKIP=arm64');
  });

  it('packs without arm64 only when told, and says the README no longer holds', () => {
    const r = prebuild({ PATH: bare, CUDAKIT_PREBUILD_SKIP: 'arm64' });
    expect(r.status).toBe(0);
    expect(r.out).toContain('linux-arm64 skipped (CUDAKIT_PREBUILD_SKIP)');
    expect(r.out).toContain("README's platforms and package sizes do not hold");
    expect(r.out).toContain('would build linux-x64\n');
  });
});
