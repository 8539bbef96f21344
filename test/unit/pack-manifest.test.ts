// SPDX-License-Identifier: MIT
// scripts/pack-manifest.mjs, the package.json that `npm pack` ships: the publish copy's fields, and real `npm pack`
// runs on a small package with the same prepack and postpack steps (fast: no addon, no dist). The packed package
// itself is test/unit/package.test.ts's.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error a plain .mjs script without types
import { publishManifest } from '../../scripts/pack-manifest.mjs';

const root = new URL('../..', import.meta.url).pathname;
const repoManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
const clean = publishManifest as (manifest: Record<string, unknown>) => Record<string, unknown>;
const hasNpm = spawnSync('sh', ['-c', 'command -v npm']).status === 0;

describe('the publish copy of package.json', () => {
  it("keeps the install script and every runtime field, in order, and drops a clone's", () => {
    const out = clean(repoManifest);
    expect(out.scripts).toEqual({ install: 'node scripts/install.mjs' });
    for (const field of ['devDependencies', 'workspaces']) expect(out).not.toHaveProperty(field);
    const runtime = Object.keys(repoManifest).filter((k) => !['devDependencies', 'workspaces'].includes(k));
    expect(Object.keys(out)).toEqual(runtime);
    for (const key of runtime.filter((k) => k !== 'scripts')) expect(out[key]).toEqual(repoManifest[key]);
  });

  it("leaves docs/deploying.md, the service's guide, out of the package's files", () => {
    const files = repoManifest.files as string[];
    expect(files).not.toContain('docs');
    expect(files).not.toContain('docs/deploying.md');
    expect(files).toEqual(expect.arrayContaining(['docs/api', 'docs/benchmarking.md', 'docs/errors.md']));
  });

  it("runs as the repository's prepack's last step and as its postpack", () => {
    const scripts = repoManifest.scripts as Record<string, string>;
    expect(scripts.prepack).toMatch(/ && node scripts\/pack-manifest\.mjs publish$/);
    expect(scripts.postpack).toBe('node scripts/pack-manifest.mjs restore');
  });
});

(hasNpm ? describe : describe.skip)(`npm pack with it${hasNpm ? '' : ' [skipped: npm is not on PATH]'}`, () => {
  const work = mkdtempSync(join(tmpdir(), 'cudakit-pack-manifest-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  /** A package like this one: a clone's fields, and prepack / postpack calling the script. */
  function makePackage(name: string): { dir: string; text: string } {
    const dir = join(work, name);
    mkdirSync(join(dir, 'scripts'), { recursive: true });
    mkdirSync(join(dir, 'server'));
    cpSync(join(root, 'scripts', 'pack-manifest.mjs'), join(dir, 'scripts', 'pack-manifest.mjs'));
    writeFileSync(join(dir, 'scripts', 'install.mjs'), '');
    writeFileSync(join(dir, 'index.js'), 'export {};\n');
    writeFileSync(join(dir, 'server', 'package.json'), '{ "name": "server", "version": "1.0.0", "private": true }\n');
    const manifest = {
      name,
      version: '1.0.0',
      type: 'module',
      files: ['index.js', 'scripts/install.mjs'],
      scripts: {
        install: 'node scripts/install.mjs',
        prepare: 'node -e "0"',
        prepack: 'node scripts/pack-manifest.mjs publish',
        postpack: 'node scripts/pack-manifest.mjs restore',
        test: 'node -e "0"',
      },
      dependencies: {},
      devDependencies: { typescript: '*' },
      workspaces: ['server'],
    };
    // Written as a person would (not as the script writes JSON): what comes back must be these very bytes.
    const text = `${JSON.stringify(manifest, null, 4)}\n\n`;
    writeFileSync(join(dir, 'package.json'), text);
    return { dir, text };
  }

  const npm = (dir: string, args: string[]) =>
    spawnSync('npm', args, {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_offline: 'true' },
    });

  it('packs the publish copy, and puts the working copy back byte for byte', () => {
    const { dir, text } = makePackage('packed');
    const out = join(work, 'out');
    mkdirSync(out);
    const r = npm(dir, ['pack', '--json', '--pack-destination', out]);
    expect(r.status, r.stderr).toBe(0);
    const [{ filename }] = JSON.parse(r.stdout.slice(r.stdout.search(/^\[/m))) as [{ filename: string }];
    const tar = spawnSync('tar', ['-xzOf', join(out, filename), 'package/package.json'], { encoding: 'utf8' });
    const packed = JSON.parse(tar.stdout) as Record<string, unknown>;
    expect(packed.scripts).toEqual({ install: 'node scripts/install.mjs' });
    expect(packed).not.toHaveProperty('devDependencies');
    expect(packed).not.toHaveProperty('workspaces');
    expect(packed).toMatchObject({ name: 'packed', version: '1.0.0', type: 'module' });
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(text);
    expect(existsSync(join(dir, 'package.json.packing'))).toBe(false);
  });

  it('swaps nothing when npm could not write the tarball: the pack fails with package.json as it was', () => {
    const { dir, text } = makePackage('unwritable');
    const r = npm(dir, ['pack', '--pack-destination', join(work, 'does-not-exist')]);
    expect(r.status).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/pack-manifest: npm cannot write the tarball there \(.*no such directory\)/);
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(text);
    expect(existsSync(join(dir, 'package.json.packing'))).toBe(false);
  });

  it('refuses to swap over a working copy left by a pack that did not finish, and restore puts it back', () => {
    const { dir, text } = makePackage('left');
    const script = join(dir, 'scripts', 'pack-manifest.mjs');
    const run = (command: string) => spawnSync(process.execPath, [script, command], { cwd: dir, encoding: 'utf8' });
    expect(run('publish').status).toBe(0); // as prepack leaves it, before npm packs
    expect(readFileSync(join(dir, 'package.json.packing'), 'utf8')).toBe(text);
    const again = run('publish');
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/package\.json\.packing is left from a pack that did not finish: run 'node scripts/);
    expect(run('restore').status).toBe(0);
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(text);
    expect(existsSync(join(dir, 'package.json.packing'))).toBe(false);
    expect(run('restore').status).toBe(0); // nothing to put back: nothing done
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(text);
  });
});
