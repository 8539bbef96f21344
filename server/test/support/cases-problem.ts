// SPDX-License-Identifier: MIT
// A small problem with cases and registry folders holding it, for the tests of the registry, the submissions to a
// problem and the redaction of its hidden cases.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ADD = `extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
`;

/** Two public cases and two hidden ones (one named, one named by its dimensions). */
export const ADD_PROBLEM = {
  name: 'add',
  description: 'c = a + b',
  dims: { n: { min: 1, max: 1 << 20, description: 'elements' } },
  args: ['a@ptr:f32[n]=normal(0,1)', 'b@ptr:f32[n]=normal(0,1)', 'c@ptr:f32[n]:out', 'n@i32=n'],
  reference: { source: { file: 'reference.cu' }, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 },
  timing: { bytes: '12 * n', flops: 'n' },
  cases: [
    { name: 'small', dims: { n: 1024 } },
    { dims: { n: 4096 } },
    { name: 'odd-secret', dims: { n: 1001 }, visibility: 'hidden' },
    { dims: { n: 777 }, visibility: 'hidden' },
  ],
};

/** What of ADD_PROBLEM's hidden cases must never reach a client: their names and their dimensions' values. */
export const HIDDEN_MARKS = ['odd-secret', '1001', 'n=777', '777'];

/** ADD_PROBLEM's folder and files under a registry, to spread into registry(). */
export const ADD_FILES = { 'add/problem.json': ADD_PROBLEM, 'add/reference.cu': ADD };

/** A registry folder with the given files (path → content; objects are written as JSON); pushed onto `made`. */
export function registry(files: Record<string, string | object>, made: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-problem-cases-'));
  made.push(dir);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}
