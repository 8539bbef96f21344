// SPDX-License-Identifier: MIT
// The package as users get it. `npm pack` runs in a staged copy of the package, and its prepack builds the prebuilds
// (scripts/prebuild.mjs). objdump then reads what each prebuild needs: glibc 2.28 at most and no GLIBCXX or CXXABI
// version, so that it loads on RHEL 8, Debian 10 and Ubuntu 20.04. The tarball is installed into an empty project
// on a PATH that holds node, npm and sh only (no compiler, no make, no python3), with its dependencies packed from
// our node_modules and npm offline. With its prebuild it installs and works from ESM and CommonJS. Without one, or
// with one that does not load, the install and the import fail with cudakit's message. Skipped, with the reason,
// where npm is not on PATH.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probe } from '../../lib/index.js';

const root = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  files: string[];
  dependencies: Record<string, string>;
};
const FLOOR = '2.28';
const host = `linux-${process.arch}`;
// The other arch, cross-compiled where its Debian toolchain is installed (x64 host: g++-aarch64-linux-gnu).
const crossArch = process.arch === 'x64' ? 'arm64' : 'x64';
const crossPrefix = crossArch === 'arm64' ? 'aarch64-linux-gnu-' : 'x86_64-linux-gnu-';
const onPath = (command: string): boolean => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
const hasNpm = onPath('npm');
const hasCross = onPath(`${crossPrefix}g++`);

/** This environment without npm's own variables (a parent `npm test` sets them) or a compiler choice. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(npm_|CUDAKIT_|CC$|CXX$|LINK$|MAKE$|PYTHON$)/i.test(k)) env[k] = v;
  }
  return { ...env, npm_config_audit: 'false', npm_config_fund: 'false', ...extra };
}

interface Run {
  status: number | null;
  out: string;
  err: string;
}
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Run {
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

/** `objdump -T` of a shared object: the glibc versions it needs, its C++ runtime versions and its exports. */
function dynamicNeeds(file: string, objdump: string): { glibc: string[]; cxx: string[]; exports: string[] } {
  const table = execFileSync(objdump, ['-T', file], { encoding: 'utf8' });
  const glibc = [...new Set([...table.matchAll(/\bGLIBC_([0-9.]+)/g)].map((m) => m[1]!))];
  const cxx = [...new Set([...table.matchAll(/\b(?:GLIBCXX|CXXABI)_[0-9.]+/g)].map((m) => m[0]))];
  const exports = table
    .split('\n')
    .filter((line) => /\sg\s+DF \.text\s/.test(line))
    .map((line) => line.trim().split(/\s+/).at(-1)!);
  return { glibc, cxx, exports: exports.sort() };
}
const versionAbove = (v: string, floor: string): boolean => {
  const [a, b] = [v.split('.').map(Number), floor.split('.').map(Number)];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  }
  return false;
};
/** The ELF header's machine line, as readelf prints it (readelf reads every architecture). */
const machine = (file: string): string =>
  /Machine:\s+(.+)/.exec(execFileSync('readelf', ['-h', file], { encoding: 'utf8' }))![1]!.trim();
const needed = (file: string): string[] =>
  [...execFileSync('readelf', ['-d', file], { encoding: 'utf8' }).matchAll(/\(NEEDED\).*\[(.+)\]/g)].map((m) => m[1]!);

describe('npm package', () => {
  it('builds the addon once: no script runs as a hook of build or build:native', () => {
    // npm runs `pre<name>` and `post<name>` around `npm run <name>`:
    // a script named `prebuild` compiled the addon twice.
    const hooks = Object.keys(pkg.scripts).filter((name) => /^(pre|post)(build|build:native|build:ts)$/.test(name));
    expect(hooks).toEqual([]);
  });
});

(hasNpm ? describe : describe.skip)(`npm pack and install${hasNpm ? '' : ' [skipped: npm is not on PATH]'}`, () => {
  let work = '';
  let unpacked = ''; // the tarball's package/ folder
  let bare = ''; // node, npm and sh: no compiler, make or python3
  let tarball = '';
  let stage = ''; // the copy of the repository that is packed
  let packed: string[] = [];
  const depTarballs: string[] = [];
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'cudakit-package-'));
    unpacked = join(work, 'unpacked', 'package');
    bare = join(work, 'bin');
    // What npm pack reads and what prepack runs on; dist/ and prebuilds/ are built by the pack itself.
    stage = join(work, 'stage');
    mkdirSync(stage);
    const copied = [
      'package.json',
      ...pkg.files,
      'lib',
      'scripts',
      'tsconfig.json',
      'tsconfig.build.json',
      'typedoc.json',
      'LICENSE',
      'README.md',
    ];
    for (const f of copied.filter((f) => !['dist', 'prebuilds'].includes(f))) {
      if (existsSync(join(root, f))) cpSync(join(root, f), join(stage, f), { recursive: true });
    }
    symlinkSync(join(root, 'node_modules'), join(stage, 'node_modules'));
    const pack = run('npm', ['pack', '--json', '--pack-destination', work], stage, cleanEnv({ TMPDIR: work }), 480_000);
    if (pack.status !== 0) throw new Error(`npm pack failed (${pack.status}):\n${pack.out}\n${pack.err}`);
    // prepack's own lines come first on stdout, then npm's JSON.
    const report = JSON.parse(pack.out.slice(pack.out.search(/^\[/m))) as [
      { filename: string; files: { path: string }[] },
    ];
    tarball = join(work, report[0].filename);
    packed = report[0].files.map((f) => f.path);
    mkdirSync(join(work, 'unpacked'));
    execFileSync('tar', ['-xzf', tarball, '-C', join(work, 'unpacked')]);
    // cudakit's dependencies as tarballs of our own copies: the installs below need no registry.
    mkdirSync(join(work, 'deps'));
    for (const dep of Object.keys(pkg.dependencies)) {
      const r = run(
        'npm',
        ['pack', '--ignore-scripts', '--json', join(root, 'node_modules', dep)],
        join(work, 'deps'),
        cleanEnv(),
        60_000,
      );
      depTarballs.push(join(work, 'deps', (JSON.parse(r.out) as [{ filename: string }])[0].filename));
    }
    mkdirSync(bare);
    symlinkSync(process.execPath, join(bare, 'node'));
    symlinkSync(
      realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim()),
      join(bare, 'npm'),
    );
    symlinkSync('/bin/sh', join(bare, 'sh'));
  }, 600_000);

  /** A fresh project with `tgz` and the dependencies installed on the bare PATH, offline, install script allowed. */
  function install(name: string, tgz: string, flags: string[] = []): { app: string; result: Run } {
    const app = join(work, name);
    mkdirSync(app);
    // npm ≥ 11.19 runs a dependency's install script where package.json's allowScripts lists it.
    const manifest = { name, version: '1.0.0', private: true, allowScripts: { [`file:${tgz}`]: true } };
    writeFileSync(join(app, 'package.json'), JSON.stringify(manifest));
    const args = ['install', '--offline', '--no-package-lock', '--foreground-scripts', ...flags, tgz, ...depTarballs];
    // TMPDIR: the install script's node-gyp log goes to the work folder, removed with it.
    return { app, result: run('npm', args, app, cleanEnv({ PATH: bare, TMPDIR: work }), 120_000) };
  }

  /** The unpacked package with its prebuilds changed by `edit`, packed again. */
  function repack(name: string, edit: (dir: string) => void): string {
    const dir = join(work, name, 'package');
    cpSync(unpacked, dir, { recursive: true });
    edit(dir);
    execFileSync('tar', ['-czf', join(work, `${name}.tgz`), '-C', join(work, name), 'package']);
    return join(work, `${name}.tgz`);
  }

  /** Runs node with `args` in `app` on the bare PATH, with both CUDA libraries forced to missing files. */
  function node(app: string, args: string[]): string {
    const env = cleanEnv({
      PATH: bare,
      CUDAKIT_LIBCUDA_PATH: join(app, 'missing', 'libcuda.so.1'),
      CUDAKIT_NVRTC_PATH: join(app, 'missing', 'libnvrtc.so.13'),
    });
    return execFileSync(process.execPath, args, { cwd: app, env, encoding: 'utf8', timeout: 30_000 }).trim();
  }

  /** Checks the packed prebuild of `arch` against the floor, read with `objdump`; returns its exports. */
  function keepsToTheFloor(arch: string, objdump: string): string[] {
    const file = join(unpacked, 'prebuilds', `linux-${arch}`, 'cudakit.node');
    expect(machine(file)).toBe(arch === 'arm64' ? 'AArch64' : 'Advanced Micro Devices X86-64');
    const { glibc, cxx, exports } = dynamicNeeds(file, objdump);
    expect(glibc.length).toBeGreaterThan(0); // objdump read the version references
    expect(glibc.filter((v) => versionAbove(v, FLOOR))).toEqual([]);
    expect(cxx).toEqual([]);
    expect(needed(file)).not.toContain('libstdc++.so.6');
    return exports;
  }

  it(`npm pack runs prepack: prebuilds/${host}/cudakit.node and the API reference go into the tarball`, () => {
    expect(packed).toContain(`prebuilds/${host}/cudakit.node`);
    expect(packed).toContain('scripts/install.mjs');
    expect(packed).toContain('dist/index.js');
    expect(packed).toContain('dist/index.d.ts');
    expect(packed).toContain('docs/api/index.html');
    for (const f of ['LICENSE', 'README.md', 'CHANGELOG.md', 'SECURITY.md', 'docs/errors.md', 'docs/benchmarking.md'])
      expect(packed).toContain(f);
    expect(packed.filter((f) => f.startsWith('build/') || f.endsWith('.map'))).toEqual([]);
    expect(packed.includes(`prebuilds/linux-${crossArch}/cudakit.node`)).toBe(hasCross);
    // The service's deployment guide: the service is not in the package.
    expect(packed).not.toContain('docs/deploying.md');
  });

  it("packs a package.json with the install script alone, no clone's fields; the working copy stays as it was", () => {
    const manifest = JSON.parse(readFileSync(join(unpacked, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.scripts).toEqual({ install: 'node scripts/install.mjs' }); // no prepare, build, test ...
    for (const field of ['devDependencies', 'workspaces']) expect(manifest).not.toHaveProperty(field);
    const { scripts: _scripts, devDependencies: _dev, workspaces: _ws, ...runtime } = pkg as Record<string, unknown>;
    expect(manifest).toMatchObject(runtime);
    // postpack put the staged copy's own package.json back
    expect(readFileSync(join(stage, 'package.json'), 'utf8')).toBe(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(existsSync(join(stage, 'package.json.packing'))).toBe(false);
  });

  it(`the ${host} prebuild needs glibc ${FLOOR} at most, no GLIBCXX or CXXABI version, and no libstdc++`, () => {
    expect(keepsToTheFloor(process.arch, 'objdump')).toEqual([
      'napi_register_module_v1',
      'node_api_module_get_api_version_v1',
    ]);
  });

  it.skipIf(!hasCross)(
    `the linux-${crossArch} prebuild (cross-compiled) is an ${crossArch} ELF with the same exports and floor` +
      (hasCross ? '' : ` [skipped: no ${crossPrefix}g++; Debian: g++-${crossPrefix.slice(0, -1).replace(/_/g, '-')}]`),
    () => {
      const exports = keepsToTheFloor(crossArch, `${crossPrefix}objdump`);
      expect(exports).toEqual(dynamicNeeds(join(unpacked, 'prebuilds', host, 'cudakit.node'), 'objdump').exports);
    },
  );

  it('installs on a PATH with no compiler, make or python3: the install script takes the prebuild', () => {
    const { app, result } = install('app', tarball);
    expect(result.status, result.err).toBe(0);
    expect(result.out).toContain('> node scripts/install.mjs'); // the install script ran, and said nothing
    expect(existsSync(join(app, 'node_modules/cudakit/build'))).toBe(false); // nothing was compiled
    const esm = node(app, [
      '--input-type=module',
      '-e',
      `import { createRequire } from 'node:module';
       import { probe, native } from 'cudakit';
       const which = createRequire(import.meta.url)('node-gyp-build').path('node_modules/cudakit');
       let thrown;
       try { native().memFree('x'); } catch (e) { thrown = e.constructor.name + ': ' + e.message; }
       console.log(JSON.stringify({ which, probe: probe(), stats: typeof native().stats, thrown }));`,
    ]);
    const missing = (name: string): string => {
      const path = join(app, 'missing', name);
      return `${path}: ${path}: cannot open shared object file: No such file or directory`;
    };
    expect(JSON.parse(esm)).toEqual({
      which: join(app, 'node_modules/cudakit/prebuilds', host, 'cudakit.node'),
      probe: {
        ok: false,
        deviceCount: 0,
        reason:
          'CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library (libcuda.so.1) could not be loaded. ' +
          `(tried: ${missing('libcuda.so.1')})\n` +
          'NVRTC_NOT_FOUND: The NVRTC library (libnvrtc) could not be loaded. ' +
          `(tried: ${missing('libnvrtc.so.13')})`,
        remedy: expect.stringMatching(/^Install the NVIDIA driver .*\nInstall NVRTC /) as string,
      },
      stats: 'function',
      // A C++ exception, thrown and caught inside the addon: libstdc++ linked in, the unwinder from libgcc_s.
      thrown: 'TypeError: Expected a bigint or a non-negative integer for ptr but received a string',
    });
    const cjs = node(app, [
      '-e',
      "const c = require('cudakit'); console.log(typeof c.Device, typeof c.native().stats)",
    ]);
    expect(cjs).toBe('function function');
    // NVRTC where the machine has it, found as this checkout's build finds it: dlopen and dlsym at glibc's oldest
    // versions (native/compat.cc) work.
    const nvrtc = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', "import { probe } from 'cudakit'; console.log(probe().nvrtcVersion ?? 'none')"],
      { cwd: app, env: cleanEnv({ PATH: bare }), encoding: 'utf8', timeout: 30_000 },
    );
    expect(nvrtc.trim()).toBe(probe().nvrtcVersion ?? 'none');
  }, 180_000);

  it('with install scripts skipped (--ignore-scripts), the prebuild still loads', () => {
    const { app, result } = install('app-no-scripts', tarball, ['--ignore-scripts']);
    expect(result.status, result.err).toBe(0);
    expect(result.out).not.toContain('scripts/install.mjs');
    expect(node(app, ['-e', "console.log(typeof require('cudakit').native().nop)"])).toBe('function');
  }, 180_000);

  it('without a prebuild for the platform and no compiler, the install fails with one cudakit message', () => {
    const tgz = repack('no-prebuilds', (dir) => rmSync(join(dir, 'prebuilds'), { recursive: true }));
    const { result } = install('app-no-prebuilds', tgz);
    expect(result.status).not.toBe(0);
    const lines = result.err.split('\n').map((l) => l.replace(/^npm error /, ''));
    const start = lines.findIndex((l) => l.startsWith('cudakit: could not install the native addon'));
    expect(start, result.err).toBeGreaterThanOrEqual(0);
    expect(lines[start]).toMatch(new RegExp(`^cudakit: could not install the native addon \\(${host}, .*Node v`));
    expect(lines.slice(start + 1, start + 3)).toEqual([
      '  Tried:',
      `    1. the prebuild: none for ${host} in this package`,
    ]);
    // node-gyp stops at the first missing tool (python3 here, unless npm's configuration names one).
    expect(lines[start + 3]).toMatch(/^ {4}2\. compiling it from source with node-gyp: Error: \S/);
    expect(lines[start + 4]).toMatch(
      /^ {2}Not found on PATH: a C\+\+17 compiler \(g\+\+ or clang\+\+\), make(, python3)?\.$/,
    );
    expect(lines[start + 5]).toMatch(/^ {2}To fix: install a C\+\+17 compiler, make and python3 \(Debian/);
    expect(result.err).not.toMatch(/gyp ERR!|\n\s+at /); // no node-gyp log, no stack
    const log = /node-gyp's full output: (\S+)/.exec(result.err)?.[1];
    expect(log).toBeDefined();
    expect(log!.startsWith(work)).toBe(true);
    expect(readFileSync(log!, 'utf8')).toContain('gyp ERR! stack Error: ');
  }, 180_000);

  it('with a prebuild that does not load, the install and the import name the file, the error and the remedy', () => {
    const tgz = repack('bad-prebuild', (dir) =>
      writeFileSync(join(dir, 'prebuilds', host, 'cudakit.node'), 'not a shared object\n'.repeat(64)),
    );
    const { result } = install('app-bad-prebuild', tgz);
    expect(result.status).not.toBe(0);
    expect(result.err).toContain(`1. the prebuild: prebuilds/${host}/cudakit.node did not load: `);
    expect(result.err).toContain('invalid ELF header');

    const { app, result: skipped } = install('app-bad-prebuild-no-scripts', tgz, ['--ignore-scripts']);
    expect(skipped.status, skipped.err).toBe(0);
    const thrown = node(app, [
      '--input-type=module',
      '-e',
      "import { native } from 'cudakit';\n" +
        'try { native(); } catch (e) { console.log(JSON.stringify([e.code, e.message])); }',
    ]);
    const [code, message] = JSON.parse(thrown) as [string, string];
    const dir = join(app, 'node_modules', 'cudakit');
    expect(code).toBe('ADDON_NOT_LOADED');
    expect(message.split('\n').slice(0, 2)).toEqual([
      expect.stringMatching(new RegExp(`^cudakit: the native addon could not be loaded \\(${host}, .*Node v`)),
      `  Tried: ${dir}/build/Release (a build from source), then ${dir}/prebuilds/${host} (the prebuild).`,
    ]);
    expect(message).toMatch(/\n {2}Failed: .*cudakit\.node: invalid ELF header\n/);
    expect(message).toContain('run `npm rebuild cudakit`');
    const shipped = readdirSync(join(dir, 'prebuilds')).sort().join(', ');
    expect(message).toContain(`This package has prebuilds for: ${shipped} (glibc 2.28 or newer).`);
  }, 180_000);
});
