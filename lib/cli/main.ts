#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// The `cudakit` command line: `info`, `compile`, `bench`, `eval` and `profile`, dispatched from here (flags.ts has
// the words, output.ts the terminal, one file per command). main() returns the exit code and never exits the
// process, so tests run it in-process with their own stdout and stderr.
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { benchCommand } from './bench.js';
import { compileCommand } from './compile.js';
import { evalCommand } from './eval.js';
import { COMMAND_NAMES, type CommandName, OK, USAGE, USAGE_TEXT, UsageError, commandHelp } from './flags.js';
import { infoCommand } from './info.js';
import { type CliIO, Output } from './output.js';
import { profileCommand } from './profile.js';

export type { CliIO } from './output.js';

const isCommand = (name: string): name is CommandName => (COMMAND_NAMES as string[]).includes(name);

function version(): string {
  return (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
}

/**
 * Runs one command line (without the `node cudakit` part) and resolves to the exit code: 0 ok, 1 correctness check
 * failed, 2 usage, compile or CUDA error. Never exits the process and never rejects.
 */
export async function main(argv: string[], io?: CliIO): Promise<number> {
  const o = new Output(
    io ?? {
      stdout: process.stdout,
      stderr: process.stderr,
      isTTY: { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true },
      columns: process.stdout.columns,
    },
  );
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'help': {
        // `cudakit help bench` is `cudakit bench --help`.
        const [topic, ...extra] = rest;
        if (topic === undefined) {
          o.out(USAGE_TEXT);
          return OK;
        }
        if (!isCommand(topic) || extra.length > 0) {
          throw new UsageError(`help takes one command (${COMMAND_NAMES.join(', ')}), got '${rest.join(' ')}'`);
        }
        o.out(commandHelp(topic));
        return OK;
      }
      case '--help':
      case '-h':
        o.out(USAGE_TEXT);
        return OK;
      case '--version':
      case '-v':
        o.out(`cudakit ${version()}\n`);
        return OK;
      case 'info':
        return infoCommand(rest, o);
      case 'compile':
        return await compileCommand(rest, o);
      case 'bench':
        return await benchCommand(rest, o);
      case 'eval':
        return await evalCommand(rest, o);
      case 'profile':
        return await profileCommand(rest, o);
      case undefined:
        o.err(USAGE_TEXT);
        return USAGE;
      default:
        throw new UsageError(`unknown command '${command}' (commands: ${[...COMMAND_NAMES, 'help'].join(', ')})`);
    }
  } catch (e) {
    o.clearProgress();
    const message = e instanceof Error ? e.message : String(e);
    // A usage error may list several problems: one `cudakit:` line each.
    const lines = e instanceof UsageError ? message.split('\n') : [message];
    for (const line of lines) o.err(`cudakit: ${line.replace(/^cudakit: /, '')}\n`);
    if (process.env.CUDAKIT_DEBUG === '1' && e instanceof Error && !(e instanceof UsageError)) o.err(`${e.stack}\n`);
    return USAGE;
  }
}

/** True when this file is the process's script, also when started through an npm bin symlink. */
function isMainModule(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

// No top-level await: a spec module may import the package while this file is running a bench.
if (isMainModule()) {
  // `cudakit compile x.cu | head` closes stdout early: that is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
  });
  void main(process.argv.slice(2)).then((code) => (process.exitCode = code));
}
