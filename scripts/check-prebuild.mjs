#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// What a prebuild needs from the system it loads on, read with `objdump -T`: the glibc versions it references, and
// any GLIBCXX or CXXABI reference (libstdc++ must be linked in). scripts/prebuild.mjs refuses a prebuild above the
// floor; alone, this prints each file's needs and exits 1 when one is above it:
//   node scripts/check-prebuild.mjs prebuilds/*/cudakit.node
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/** The oldest glibc the prebuilds load on: RHEL 8, Debian 10, Ubuntu 20.04, as for Node 20's own binaries. */
export const GLIBC_FLOOR = '2.28';

// ELF e_machine → the Node arch, and the objdump that reads it on a host of another arch.
const MACHINES = {
  62: { arch: 'x64', objdump: 'x86_64-linux-gnu-objdump' },
  183: { arch: 'arm64', objdump: 'aarch64-linux-gnu-objdump' },
};

/** Compares dotted version numbers: negative, zero or positive. */
export function compareVersions(a, b) {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function elfMachine(file) {
  const header = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, 20, 0);
  } finally {
    closeSync(fd);
  }
  if (header.toString('latin1', 0, 4) !== '\x7fELF') throw new Error(`${file} is not an ELF file`);
  const machine = MACHINES[header.readUInt16LE(18)];
  if (machine === undefined) throw new Error(`${file}: ELF machine ${header.readUInt16LE(18)} is not x64 or arm64`);
  return machine;
}

/**
 * The needs of one shared object: its arch, the glibc versions it references (sorted, the newest last), those
 * above the floor, its GLIBCXX/CXXABI references and the symbols it exports.
 */
export function readNeeds(file) {
  const { arch, objdump } = elfMachine(file);
  const table = execFileSync(process.arch === arch ? 'objdump' : objdump, ['-T', file], { encoding: 'utf8' });
  const glibc = new Set();
  const cxx = new Set();
  const exports = [];
  for (const line of table.split('\n')) {
    for (const [, version] of line.matchAll(/\bGLIBC_([0-9.]+)/g)) glibc.add(version);
    for (const [name] of line.matchAll(/\b(?:GLIBCXX|CXXABI)_[0-9.]+/g)) cxx.add(name);
    const exported = /^[0-9a-f]+ g +DF \.text\s+[0-9a-f]+\s+\S+\s+(\S+)$/.exec(line);
    if (exported) exports.push(exported[1]);
  }
  const versions = [...glibc].sort(compareVersions);
  return {
    arch,
    glibc: versions,
    aboveFloor: versions.filter((v) => compareVersions(v, GLIBC_FLOOR) > 0),
    cxx: [...cxx].sort(),
    exports: exports.sort(),
  };
}

/** One line: what `file` needs, and whether it keeps to the floor. */
export function describeNeeds(file, needs) {
  const newest = needs.glibc.at(-1) ?? 'none';
  const ok = needs.aboveFloor.length === 0 && needs.cxx.length === 0;
  return (
    `${file} (${needs.arch}): glibc ${newest} at most (floor ${GLIBC_FLOOR}), ` +
    (needs.cxx.length === 0 ? 'no GLIBCXX/CXXABI' : `references ${needs.cxx.join(', ')}`) +
    (ok ? '' : `: above the floor${needs.aboveFloor.length > 0 ? ` (GLIBC_${needs.aboveFloor.join(', GLIBC_')})` : ''}`)
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  let failed = false;
  for (const file of process.argv.slice(2)) {
    const needs = readNeeds(file);
    console.log(describeNeeds(file, needs));
    failed ||= needs.aboveFloor.length > 0 || needs.cxx.length > 0;
  }
  process.exitCode = failed ? 1 : 0;
}
