// Every example runs end to end (the README's main job included).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { expect, it } from 'vitest';
import { describeGpu } from '../helpers.js';

const root = new URL('../..', import.meta.url).pathname;
// *.bench.ts files are spec files for `cudakit bench` (test/gpu/cli.test.ts runs saxpy.bench.ts through it) that
// also evaluate themselves when run as a script.
const examples = readdirSync(new URL('../../examples', import.meta.url)).filter((f) => f.endsWith('.ts'));

describeGpu('examples', () => {
  it.each(examples)('%s', (file) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', `examples/${file}`], {
      cwd: root,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.length).toBeGreaterThan(0);
  });
});
