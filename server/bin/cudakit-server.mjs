#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// The cudakit-server command. It runs the built server (dist/main.js); in a checkout where the server is not built,
// it runs the sources through tsx (a development dependency), so `npx cudakit-server` works right after
// `npm install` in a clone instead of looking for the command on the registry.
import { existsSync } from 'node:fs';

const built = new URL('../dist/main.js', import.meta.url);
const source = new URL('../src/main.ts', import.meta.url);
let entry = built;
if (!existsSync(built)) {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    register = undefined;
  }
  if (!existsSync(source) || register === undefined) {
    process.stderr.write(
      'cudakit-server: the server is not built here (no dist/main.js): run `npm run build -w server`\n',
    );
    process.exit(2);
  }
  register();
  entry = source;
}
const { runCommand } = await import(entry.href);
runCommand(process.argv.slice(2));
