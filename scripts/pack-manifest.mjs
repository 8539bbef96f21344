#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// The package.json that `npm pack` puts in the tarball: the working copy without what only a clone needs (the dev
// scripts, `prepare` among them, devDependencies, workspaces), so that npm's approval prompt for install scripts
// shows the install script alone. npm packs the package.json it finds on disk after prepack, so:
//
//   node scripts/pack-manifest.mjs publish   (prepack's last step) keeps the working copy as package.json.packing
//                                             and writes the publish copy in its place;
//   node scripts/pack-manifest.mjs restore   (postpack) puts the working copy back.
//
// Nothing is swapped when a step before it fails, and a swap that cannot finish is undone at once. The one failure
// npm meets between the two scripts, a pack destination that cannot be written, is checked before the swap. After
// any other failure of `npm pack` itself, package.json.packing is still there (and `git status` shows package.json
// changed): `node scripts/pack-manifest.mjs restore` puts it back.
//
// To publish, pack first and publish the tarball (`npm publish cudakit-<version>.tgz`): the registry then takes its
// metadata from the tarball's package.json. `npm publish` from the folder reads package.json again after postpack
// and would send the working copy's scripts.
import { accessSync, constants, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The scripts a user's install runs: the only ones the published package keeps. */
const KEPT_SCRIPTS = ['install'];
/** Fields of a clone, not of the package: devDependencies, workspaces. */
const DEV_FIELDS = ['devDependencies', 'workspaces'];

/** The publish copy of `manifest`: the same fields in the same order, without those a clone alone needs. */
export function publishManifest(manifest) {
  const out = {};
  for (const [key, value] of Object.entries(manifest)) {
    if (DEV_FIELDS.includes(key)) continue;
    if (key === 'scripts') {
      const kept = Object.fromEntries(Object.entries(value).filter(([name]) => KEPT_SCRIPTS.includes(name)));
      if (Object.keys(kept).length > 0) out.scripts = kept;
      continue;
    }
    out[key] = value;
  }
  return out;
}

/** Why npm could not write the tarball to its destination (npm_config_pack_destination), or undefined. */
function unwritableDestination(env, dir) {
  const dest = resolve(dir, env.npm_config_pack_destination || '.');
  try {
    if (!statSync(dest).isDirectory()) return `${dest} is not a directory`;
    accessSync(dest, constants.W_OK);
  } catch (e) {
    return `${dest}: ${e.code === 'ENOENT' ? 'no such directory' : e.message}`;
  }
  return undefined;
}

function publish(dir) {
  const file = join(dir, 'package.json');
  const backup = join(dir, 'package.json.packing');
  if (existsSync(backup)) {
    throw new Error(`${backup} is left from a pack that did not finish: run 'node scripts/pack-manifest.mjs restore'`);
  }
  const why = unwritableDestination(process.env, dir);
  if (why !== undefined) throw new Error(`npm cannot write the tarball there (${why}); package.json is unchanged`);
  const text = readFileSync(file, 'utf8');
  const clean = `${JSON.stringify(publishManifest(JSON.parse(text)), null, 2)}\n`;
  renameSync(file, backup);
  try {
    writeFileSync(file, clean);
  } catch (e) {
    renameSync(backup, file); // the swap could not finish: the working copy goes back at once
    throw e;
  }
}

function restore(dir) {
  const backup = join(dir, 'package.json.packing');
  if (existsSync(backup)) renameSync(backup, join(dir, 'package.json'));
}

const [command] = process.argv.slice(2);
if (import.meta.url !== pathToFileURL(process.argv[1] ?? '').href) {
  // imported (a test of publishManifest): nothing to run
} else if (command === 'publish' || command === 'restore') {
  try {
    (command === 'publish' ? publish : restore)(process.cwd());
  } catch (e) {
    console.error(`pack-manifest: ${e.message}`);
    process.exitCode = 1;
  }
} else {
  console.error(`pack-manifest: expected a command, publish or restore, but received '${command ?? ''}'`);
  process.exitCode = 2;
}
