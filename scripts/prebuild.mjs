#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// Builds the prebuilds that the package ships (`npm run build:prebuilds`; `npm pack` runs it as prepack):
// prebuilds/linux-x64/cudakit.node, and prebuilds/linux-arm64/cudakit.node, cross-compiled with Debian's
// g++-aarch64-linux-gnu when it is installed. prebuildify drives node-gyp (N-API: one binary for every Node
// ≥ 20.19) with CUDAKIT_PORTABLE=1, binding.gyp's portable build: libstdc++ linked in, glibc 2.28 floor. Each arch
// builds in a staging copy of binding.gyp and native/, so build/ (a development build) is left alone, and the
// result is refused when it needs a glibc above the floor or any GLIBCXX/CXXABI version (check-prebuild.mjs).
// Without --arch it builds every arch the README promises (PROMISED), and fails when a cross compiler for one is
// missing, unless CUDAKIT_PREBUILD_SKIP names that arch: a package packed without it must not go out unnoticed (the
// README's sizes and platforms assume both).
//   npm run build:prebuilds [-- --arch x64,arm64] [-- --out DIR] [-- --dry-run]   (DIR/prebuilds/; default: the package)
// Run it through npm, which gives node-gyp its configuration (nodedir) and puts its bundled node-gyp on PATH.
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeNeeds, readNeeds } from './check-prebuild.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const prebuildify = createRequire(import.meta.url).resolve('prebuildify/bin.js');
// The cross toolchains' prefixes by target arch (Debian: g++-aarch64-linux-gnu ...), for a host of another arch.
const CROSS = { arm64: 'aarch64-linux-gnu-', x64: 'x86_64-linux-gnu-' };

const onPath = (command) => spawnSync('sh', ['-c', `command -v "${command}"`], { stdio: 'ignore' }).status === 0;

/** The prebuilds the package ships, as the README says. */
const PROMISED = ['x64', 'arm64'];
/** Archs the packer agreed to leave out (CUDAKIT_PREBUILD_SKIP=arm64). */
const SKIP_ENV = 'CUDAKIT_PREBUILD_SKIP';

/**
 * The archs to build: those asked for, else every promised one.
 *
 * @throws Error when a promised arch cannot be built here and SKIP_ENV does not name it.
 */
function targets(requested) {
  if (requested !== undefined) return requested.split(',').filter(Boolean);
  const skip = new Set((process.env[SKIP_ENV] ?? '').split(',').map((a) => a.trim()));
  const archs = [];
  for (const arch of PROMISED) {
    const prefix = arch === process.arch ? '' : CROSS[arch];
    if (prefix === '' || onPath(`${prefix}g++`)) {
      archs.push(arch);
      continue;
    }
    const install = `g++-${prefix.slice(0, -1).replace(/_/g, '-')}`;
    if (!skip.has(arch)) {
      throw new Error(
        `linux-${arch} cannot be built here: no ${prefix}g++ (Debian: apt-get install ${install}). The README ` +
          `promises it; to pack without it anyway, set ${SKIP_ENV}=${arch}`,
      );
    }
    console.warn(
      `prebuild: linux-${arch} skipped (${SKIP_ENV}): this package has no linux-${arch} prebuild, so the ` +
        "README's platforms and package sizes do not hold for it",
    );
  }
  return archs;
}

/** Builds one arch in its own staging folder; resolves to the built file, or rejects with the log's tail. */
function build(arch) {
  const prefix = arch === process.arch ? '' : CROSS[arch];
  if (prefix === undefined || (prefix !== '' && !onPath(`${prefix}g++`))) {
    return Promise.reject(new Error(`no cross compiler for ${arch}${prefix ? ` (${prefix}g++)` : ''}`));
  }
  const staging = mkdtempSync(join(tmpdir(), `cudakit-prebuild-${arch}-`));
  cpSync(join(root, 'binding.gyp'), join(staging, 'binding.gyp'));
  cpSync(join(root, 'native'), join(staging, 'native'), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(staging, 'node_modules')); // binding.gyp resolves node-addon-api
  const env = { ...process.env, CUDAKIT_PORTABLE: '1' };
  const args = [prebuildify, '--napi', '--strip', '--name=cudakit', `--target=${process.versions.node}`];
  args.push(`--arch=${arch}`, `--cwd=${staging}`, `--node-gyp=${process.env.npm_config_node_gyp ?? 'node-gyp'}`);
  if (prefix !== '') {
    Object.assign(env, { CC: `${prefix}gcc`, CXX: `${prefix}g++`, LINK: `${prefix}g++`, AR: `${prefix}ar` });
    args.push(`--strip-bin=${prefix}strip`);
  }
  const log = join(staging, 'build.log');
  const fd = openSync(log, 'w');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: staging, env, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) return resolve({ staging, file: join(staging, 'prebuilds', `linux-${arch}`, 'cudakit.node') });
      const tail = readFileSync(log, 'utf8').trimEnd().split('\n').slice(-25).join('\n');
      reject(new Error(`prebuildify failed (${signal ?? `exit ${code}`}); the end of ${log}:\n${tail}`));
    });
  });
}

async function main() {
  if (process.platform !== 'linux') throw new Error('prebuilds are built on Linux only');
  const { values } = parseArgs({
    options: { arch: { type: 'string' }, out: { type: 'string' }, 'dry-run': { type: 'boolean' } },
  });
  const out = values.out ?? root;
  const archs = targets(values.arch);
  if (values['dry-run']) {
    console.log(`prebuild: would build ${archs.map((a) => `linux-${a}`).join(', ')}`);
    return;
  }
  const results = await Promise.allSettled(archs.map(build));
  let failed = false;
  results.forEach((result, i) => {
    const name = `linux-${archs[i]}`;
    if (result.status === 'rejected') {
      console.error(`prebuild: ${name}: ${result.reason.message}`);
      failed = true;
      return;
    }
    const { staging, file } = result.value;
    const dest = join(out, 'prebuilds', name, 'cudakit.node');
    const needs = readNeeds(file);
    const line = describeNeeds(relative(out, dest), needs);
    if (needs.arch !== archs[i] || needs.aboveFloor.length > 0 || needs.cxx.length > 0) {
      console.error(`prebuild: ${line}; not copied (the build is in ${staging})`);
      failed = true;
      return;
    }
    mkdirSync(join(out, 'prebuilds', name), { recursive: true });
    copyFileSync(file, dest);
    rmSync(staging, { recursive: true, force: true });
    console.log(`prebuild: ${line}, ${(statSync(dest).size / 2 ** 20).toFixed(1)} MiB`);
  });
  if (failed) process.exitCode = 1;
}

main().catch((e) => {
  console.error(`prebuild: ${e.message}`);
  process.exitCode = 1;
});
