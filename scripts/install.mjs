#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// The package's install script. Uses the addon that node-gyp-build resolves (build/Release, then
// prebuilds/<platform>-<arch>) when it loads; otherwise compiles it from source with node-gyp, as node-gyp-build's
// own install script does. When neither works it prints one message (what was tried, why each failed, what to
// install, where node-gyp's full output is) and exits 1. CUDAKIT_BUILD_FROM_SOURCE=1 skips the prebuild: an
// environment variable of cudakit's own, which npm passes on without a word, where npm 11 warns that it will stop
// accepting the older `--build-from-source` and `npm_config_build_from_source=true` (both still work).
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const platform = `${process.platform}-${process.arch}`;
const glibc = process.report?.getReport().header.glibcVersionRuntime;
const prebuildsDir = join(root, 'prebuilds');
const prebuilt = existsSync(prebuildsDir) ? readdirSync(prebuildsDir).filter((d) => !d.startsWith('.')) : [];

/** Loads the addon in a child process (a crash fails the child, not the install): undefined, or why it failed. */
function tryAddon() {
  const nodeGypBuild = createRequire(import.meta.url).resolve('node-gyp-build');
  const probe = `
    const load = require(${JSON.stringify(nodeGypBuild)});
    let file;
    try { file = load.path(${JSON.stringify(root)}); } catch (e) { console.log(JSON.stringify({})); process.exit(); }
    try { require(file); console.log(JSON.stringify({ file, ok: true })); }
    catch (e) { console.log(JSON.stringify({ file, error: e.message.split('\\n')[0] })); }`;
  const r = spawnSync(process.execPath, ['-e', probe], { encoding: 'utf8' });
  let found = {};
  try {
    found = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '');
  } catch {
    found = { error: r.signal ? `loading it crashed (${r.signal})` : `the load test failed: ${r.stderr.trim()}` };
  }
  if (found.ok) return undefined;
  if (found.file === undefined && found.error === undefined) return `none for ${platform} in this package`;
  return `${found.file ? relative(root, found.file) : 'the addon'} did not load: ${found.error}`;
}

/** Runs `node-gyp rebuild` with its output in a log file; undefined, or the one line that says why it failed. */
function compile(log) {
  const nodeGyp = process.env.npm_config_node_gyp;
  const [command, args] = nodeGyp ? [process.execPath, [nodeGyp, 'rebuild']] : ['node-gyp', ['rebuild']];
  const fd = openSync(log, 'w');
  const r = spawnSync(command, args, { cwd: root, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  if (r.status === 0) return undefined;
  if (r.error) return `${command} could not be run (${r.error.message})`;
  const lines = readFileSync(log, 'utf8').split('\n');
  const why =
    lines.find((l) => /\berror\b:/.test(l) && !l.startsWith('gyp ')) ??
    lines.find((l) => l.startsWith('gyp ERR! stack Error:'))?.slice('gyp ERR! stack '.length) ??
    `exit ${r.status ?? r.signal}`;
  return why.trim();
}

/** The build tools that are not on PATH, as the message names them. */
function missingTools() {
  const has = (names) =>
    names.some((name) =>
      (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, name))),
    );
  const missing = [];
  const cxx = process.env.CXX?.split(' ')[0];
  if (!has(cxx ? [cxx] : ['c++', 'g++', 'clang++'])) missing.push(`a C++17 compiler (${cxx ?? 'g++ or clang++'})`);
  if (!has(['make'])) missing.push('make');
  if (!process.env.npm_config_python && !process.env.PYTHON && !has(['python3'])) missing.push('python3');
  return missing;
}

/** Why the prebuild is skipped ('CUDAKIT_BUILD_FROM_SOURCE=1'), or undefined when it is tried. */
function buildFromSource(env) {
  const own = env.CUDAKIT_BUILD_FROM_SOURCE;
  if (own === '1' || own === 'true') return `CUDAKIT_BUILD_FROM_SOURCE=${own}`;
  // npm's own spelling, which npm 11 warns about: `--build-from-source` reaches the script as this variable.
  if (env.npm_config_build_from_source === 'true') return '--build-from-source';
  return undefined;
}

const facts = `${platform}, ${glibc ? `glibc ${glibc}, ` : ''}Node ${process.version}`;
const fromSource = buildFromSource(process.env);
const prebuild = fromSource !== undefined ? `skipped (${fromSource})` : tryAddon();
if (prebuild !== undefined) {
  const logDir = mkdtempSync(join(tmpdir(), 'cudakit-install-'));
  const log = join(logDir, 'node-gyp.log');
  const failure = compile(log);
  if (failure === undefined) {
    rmSync(logDir, { recursive: true, force: true });
  } else {
    const missing = missingTools();
    console.error(
      [
        `cudakit: could not install the native addon (${facts}).`,
        '  Tried:',
        `    1. the prebuild: ${prebuild}`,
        `    2. compiling it from source with node-gyp: ${failure}`,
        ...(missing.length > 0 ? [`  Not found on PATH: ${missing.join(', ')}.`] : []),
        '  To fix: install a C++17 compiler, make and python3 (Debian/Ubuntu: apt-get install g++ make python3;',
        '  RHEL/Fedora: dnf install gcc-c++ make python3), then install cudakit again; no CUDA toolkit is needed.',
        ...(prebuilt.length > 0
          ? [`  Or use a platform it has prebuilds for: ${prebuilt.join(', ')}, glibc 2.28+.`]
          : []),
        `  node-gyp's full output: ${log}`,
      ].join('\n'),
    );
    process.exitCode = 1;
  }
}
