// SPDX-License-Identifier: MIT
// scripts/install.mjs, run by itself in a copy of the package whose addon loads (this checkout's build/Release), on a
// PATH with no node-gyp: without a request to build from source it keeps the addon and says nothing; with one it skips
// the addon and tries to compile, which fails here and names the request in its message. (test/unit/package.test.ts
// installs the packed package for real.)
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;
const built = join(root, 'build', 'Release', 'cudakit.node');

(existsSync(built) ? describe : describe.skip)(
  `the install script's request to build from source${existsSync(built) ? '' : ' [skipped: no build/Release addon]'}`,
  () => {
    let work = '';
    let pkg = '';
    beforeAll(() => {
      work = mkdtempSync(join(tmpdir(), 'cudakit-install-script-'));
      pkg = join(work, 'cudakit');
      mkdirSync(join(pkg, 'scripts'), { recursive: true });
      mkdirSync(join(pkg, 'build', 'Release'), { recursive: true });
      mkdirSync(join(work, 'bin'));
      cpSync(join(root, 'scripts', 'install.mjs'), join(pkg, 'scripts', 'install.mjs'));
      cpSync(built, join(pkg, 'build', 'Release', 'cudakit.node'));
      symlinkSync(join(root, 'node_modules'), join(pkg, 'node_modules'));
    });
    afterAll(() => rmSync(work, { recursive: true, force: true }));

    /** The install script with only `env` (and a PATH without node-gyp or a compiler) in its environment. */
    function install(env: Record<string, string>): { status: number | null; stderr: string } {
      const r = spawnSync(process.execPath, [join(pkg, 'scripts', 'install.mjs')], {
        cwd: pkg,
        env: { PATH: join(work, 'bin'), TMPDIR: work, ...env },
        encoding: 'utf8',
        timeout: 60_000,
      });
      return { status: r.status, stderr: r.stderr };
    }

    it('keeps an addon that loads, and says nothing', () => {
      expect(install({})).toEqual({ status: 0, stderr: '' });
    });

    it.each([
      [{ CUDAKIT_BUILD_FROM_SOURCE: '1' }, 'CUDAKIT_BUILD_FROM_SOURCE=1'],
      [{ CUDAKIT_BUILD_FROM_SOURCE: 'true' }, 'CUDAKIT_BUILD_FROM_SOURCE=true'],
      // npm's older spelling (`--build-from-source` reaches the script as this variable) still works.
      [{ npm_config_build_from_source: 'true' }, '--build-from-source'],
    ])('with %o it skips the addon and compiles, naming %s', (env, named) => {
      const r = install(env);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/^cudakit: could not install the native addon/);
      expect(r.stderr).toContain(`    1. the prebuild: skipped (${named})\n`);
      expect(r.stderr).toContain('    2. compiling it from source with node-gyp: node-gyp could not be run');
    });

    it.each([[{ CUDAKIT_BUILD_FROM_SOURCE: '0' }], [{ CUDAKIT_BUILD_FROM_SOURCE: '' }]])(
      'with %o it keeps the addon',
      (env) => {
        expect(install(env)).toEqual({ status: 0, stderr: '' });
      },
    );
  },
);
