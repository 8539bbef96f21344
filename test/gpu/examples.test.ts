// Every example runs end to end (the README's main job included), and those that print results print the right ones.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { expect, it } from 'vitest';
import { describeGpu } from '../helpers.js';

const root = new URL('../..', import.meta.url).pathname;
// *.bench.ts files are spec files for `cudakit bench` (test/gpu/cli.test.ts runs saxpy.bench.ts through it) that
// also evaluate themselves when run as a script.
const examples = readdirSync(new URL('../../examples', import.meta.url)).filter((f) => f.endsWith('.ts'));

function runExample(file: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', `examples/${file}`], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** What an example prints when its results are right (read from the example: values it computes, not timings). */
const OUTPUT: Record<string, (stdout: string) => void> = {
  // 100 increments run one by one twice (a warm-up and a timed run), then once as a graph: 300
  'graphs.ts': (stdout) => {
    expect(stdout).toMatch(
      new RegExp(
        /^captured 100 kernel nodes\n/.source +
          /100 launches: \d+ µs one by one, \d+ µs as one graph\n/.source +
          /x\[0\] = 300 \(expected 300\)\n$/.source,
      ),
    );
  },
  // 1.5 · 2, 1.5 · (1/3) in double precision, 3 · -7; each template instantiation by its mangled name
  'templates.ts': (stdout) => {
    expect(stdout).toBe(
      [
        'lowered names: {',
        "  'scale<float>': '_Z5scaleIfEvPT_S0_i',",
        "  'scale<double>': '_Z5scaleIdEvPT_S0_i',",
        "  'scale<int>': '_Z5scaleIiEvPT_S0_i'",
        '}',
        'float : 3',
        'double: 0.5',
        'int   : -21',
        '',
      ].join('\n'),
    );
  },
  // saxpy with a = 3, x = 1, y = 2: 5; then the time of a second saxpy, in ms
  'readme-tour.ts': (stdout) => {
    const m = /^5\n(\d+(?:\.\d+)?(?:e-\d+)?) ms\n$/.exec(stdout);
    expect(m, stdout).not.toBeNull();
    const ms = Number(m![1]);
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThan(1000);
  },
};

it('expects results only of examples that exist', () => {
  for (const file of Object.keys(OUTPUT)) expect(examples).toContain(file);
});

describeGpu('examples', () => {
  it.each(examples)('%s', (file) => {
    const r = runExample(file);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.length).toBeGreaterThan(0);
    OUTPUT[file]?.(r.stdout); // the examples that print results: the right ones
  });
});
