// SPDX-License-Identifier: MIT
// The cudakit command line run in-process, its output captured.
import { main } from '../../lib/cli/main.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the cudakit command line in-process with captured output; `isTTY` stands for a terminal. */
export async function cli(args: string[], isTTY = false): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    isTTY,
  });
  return { code, stdout, stderr };
}
