// The package as users get it: `npm pack`, installed into an empty folder with install scripts disabled, loads its
// prebuild and works from ESM and CommonJS. (The prebuild is this checkout's build, placed where prebuildify puts it.)
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;
const npm = (args: string[], cwd: string): string =>
  execFileSync('npm', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' },
  });

describe('npm package', () => {
  it('builds the addon once: no script runs as a hook of build or build:native', () => {
    // npm runs `pre<name>` and `post<name>` around `npm run <name>`:
    // a script named `prebuild` compiled the addon twice.
    const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const hooks = Object.keys(scripts).filter((name) => /^(pre|post)(build|build:native|build:ts)$/.test(name));
    expect(hooks).toEqual([]);
  });

  it.skipIf(!existsSync(join(root, 'dist/index.js')) || !existsSync(join(root, 'build/Release/cudakit.node')))(
    'packs, installs without install scripts and imports (ESM and CJS)',
    () => {
      const stage = mkdtempSync(join(tmpdir(), 'cudakit-stage-'));
      for (const f of ['package.json', 'README.md', 'binding.gyp', 'dist', 'native', 'docs']) {
        if (existsSync(join(root, f))) cpSync(join(root, f), join(stage, f), { recursive: true });
      }
      mkdirSync(join(stage, 'prebuilds/linux-x64'), { recursive: true });
      cpSync(join(root, 'build/Release/cudakit.node'), join(stage, 'prebuilds/linux-x64/cudakit.node'));
      npm(['pack', '--ignore-scripts', '--pack-destination', stage], stage);
      const tarball = readdirSync(stage).find((f) => f.endsWith('.tgz'))!;
      const app = mkdtempSync(join(tmpdir(), 'cudakit-app-'));
      writeFileSync(join(app, 'package.json'), '{ "name": "app", "version": "1.0.0", "private": true }');
      try {
        npm(
          [
            'install',
            '--ignore-scripts',
            '--no-package-lock',
            '--fetch-retries=0',
            '--fetch-timeout=10000',
            join(stage, tarball),
          ],
          app,
        );
      } catch (e) {
        // No registry reachable (a machine without network access): unpack the tarball as npm would and take its
        // dependencies from ours.
        if (!/EAI_AGAIN|ENOTFOUND|ECONNREFUSED|ENETUNREACH|ETIMEDOUT/.test(String((e as Error).message))) throw e;
        const into = join(app, 'node_modules', 'cudakit');
        mkdirSync(into, { recursive: true });
        execFileSync('tar', ['-xzf', join(stage, tarball), '-C', into, '--strip-components=1']);
        for (const dep of ['node-gyp-build', 'node-addon-api'])
          cpSync(join(root, 'node_modules', dep), join(app, 'node_modules', dep), { recursive: true });
      }
      expect(existsSync(join(app, 'node_modules/cudakit/build'))).toBe(false); // nothing was compiled
      const esm = execFileSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          "import { probe, Program } from 'cudakit'; const p = probe(); console.log(typeof p.ok, typeof Program)",
        ],
        { cwd: app, encoding: 'utf8' },
      );
      expect(esm.trim()).toBe('boolean function');
      const cjs = execFileSync(
        process.execPath,
        ['-e', "const c = require('cudakit'); console.log(typeof c.Device, typeof c.native().stats)"],
        { cwd: app, encoding: 'utf8' },
      );
      expect(cjs.trim()).toBe('function function');
    },
    180_000,
  );
});
