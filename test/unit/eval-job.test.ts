// SPDX-License-Identifier: MIT
// EvalJob without a GPU: validateJob (every problem, in the one message format; literal data; argspec strings and
// objects; the canonical form), evaluate()'s report for jobs that stop before the GPU, and the public types as a
// user's spec file sees them through the package name.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { prepareJob } from '../../lib/eval/validate.js';
import { EVAL_ERROR_KINDS } from '../../lib/eval/report.js';
import { type EvalError, type EvalJob, InvalidJobError, evaluate, parseArgSpec, validateJob } from '../../lib/index.js';
import { runScript } from '../child.js';

const root = new URL('../..', import.meta.url).pathname;
const base = { source: 'extern "C" __global__ void k(float* y) {}', kernel: 'k', grid: 1, block: 32 };
const job = (more: Record<string, unknown>): EvalJob => ({ ...base, args: ['ptr:f32[32]:out'], ...more }) as EvalJob;
const b64 = (bytes: ArrayLike<number>): string => Buffer.from(Uint8Array.from(bytes)).toString('base64');
const f32 = (...values: number[]): string => Buffer.from(new Float32Array(values).buffer).toString('base64');

/** The problems validateJob throws for `value` (it must throw). */
function problems(value: unknown): { path: string; message: string; type: string }[] {
  try {
    validateJob(value);
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidJobError);
    expect(e).toBeInstanceOf(TypeError);
    return [...(e as InvalidJobError).problems];
  }
  throw new Error('validateJob accepted the job');
}

describe('validateJob', () => {
  it('reports every problem, each in the one format, with its path and class', () => {
    const bad = {
      source: 5,
      kernel: '',
      grid: 0,
      block: [1, 2, 3, 4],
      extra: 1,
      mode: 'cold',
      args: ['f32', 'ptr:f32[4]=uniform(2,1)', { kind: 'buffer', dtype: 'f33' }, 'ptr:f32[4]:out'],
      check: { trials: 0, colour: 1 },
      timing: { preset: 'fast', mode: 'hot' },
    };
    let error: InvalidJobError | undefined;
    try {
      validateJob(bad);
    } catch (e) {
      error = e as InvalidJobError;
    }
    expect(error).toBeInstanceOf(InvalidJobError);
    expect(error!.code).toBe('ERR_INVALID_JOB');
    const list = error!.problems;
    expect(list.map((p) => `${p.type} ${p.path}`)).toEqual([
      'TypeError job.extra',
      'TypeError job.source',
      'TypeError job.kernel',
      'RangeError job.grid',
      'TypeError job.block',
      'TypeError job.args[0]',
      'RangeError job.args[1]',
      'TypeError job.args[2].dtype',
      'TypeError job.mode',
      'TypeError job.timing.preset',
      'TypeError job.check.colour',
      'RangeError job.check.trials',
    ]);
    const message = (path: string): string => list.find((p) => p.path === path)!.message;
    expect(message('job.grid')).toBe('Expected a positive integer for job.grid but received 0 of type number');
    expect(message('job.source')).toBe(
      "Expected CUDA source text, { file: 'path.cu' } or { text, name } for job.source but received 5 of type number",
    );
    expect(message('job.extra')).toMatch(/^Unknown field job\.extra; known fields: name, source, kernel, headers, /);
    expect(message('job.mode')).toBe(
      'Expected one place for mode: job.timing.mode (job.mode is its old name) for job.mode ' +
        "but received 'cold' of type string",
    );
    // argspec's own words, in the one format
    expect(message('job.args[0]')).toBe(
      'Expected <type>=<value> such as i32=1024, or a buffer such as ptr:f32[1024] for job.args[0] but received ' +
        "'f32' of type string",
    );
    expect(message('job.args[1]')).toBe(
      "Expected uniform(lo,hi) with lo < hi for job.args[1] but received 'ptr:f32[4]=uniform(2,1)' of type string",
    );
    expect(error!.message).toBe(
      `Invalid job (${list.length} problems):\n${list.map((p) => `  ${p.message}`).join('\n')}`,
    );
  });

  it('says what a non-object is, and one problem in one line', () => {
    expect(problems(null)).toEqual([
      {
        path: 'job',
        type: 'TypeError',
        message: 'Expected a job object { source, kernel, grid, block, args, ... } for job but received null',
      },
    ]);
    expect(() => validateJob(job({ kernel: 7 }))).toThrow(
      /^Invalid job: Expected the kernel name, a non-empty string for job\.kernel but received 7 of type number$/,
    );
  });

  it('takes argument specs as strings or objects, to the same specs', () => {
    const strings = [
      'f32=2.5',
      'i64=9007199254740993',
      'flag@bool=true',
      'x@ptr:f32[2,3]=uniform(-1,1)',
      'ptr:u8[4]=const(7):out',
      'ptr:f32[6]:out',
    ];
    const objects = [
      { kind: 'scalar', type: 'f32', value: 2.5 },
      { kind: 'scalar', type: 'i64', value: '9007199254740993' },
      { kind: 'scalar', type: 'bool', value: true, name: 'flag' },
      { kind: 'buffer', dtype: 'f32', shape: [2, 3], init: { kind: 'uniform', lo: -1, hi: 1 }, name: 'x' },
      { kind: 'buffer', dtype: 'u8', length: 4, init: { kind: 'const', value: 7 }, role: 'out' },
      { kind: 'buffer', dtype: 'f32', length: 6 },
    ];
    const fromObjects = prepareJob(job({ args: objects }));
    const fromStrings = prepareJob(job({ args: strings }));
    if (Array.isArray(fromObjects) || Array.isArray(fromStrings)) throw new Error('rejected');
    expect(fromObjects.args.map((a) => a.spec)).toEqual(strings.map((s) => parseArgSpec(s)));
    expect(fromStrings.args.map((a) => a.spec)).toEqual(strings.map((s) => parseArgSpec(s)));
    expect(fromObjects.args.map((a) => a.name)).toEqual([undefined, undefined, 'flag', 'x', undefined, undefined]);
    expect(fromObjects.signature).toEqual(['f32', 'i64', 'bool', 'ptr', 'ptr', 'ptr']);
    // Names, seeds of random fills and sequences along the last dimension, in either form.
    const pairs: [string, Record<string, unknown>][] = [
      [
        'x@ptr:f32[2,3]=seq(0,1,along=last)',
        {
          kind: 'buffer',
          dtype: 'f32',
          shape: [2, 3],
          init: { kind: 'seq', start: 0, step: 1, along: 'last' },
          name: 'x',
        },
      ],
      [
        'ptr:f32[8]=normal(0,1,seed=3)',
        { kind: 'buffer', dtype: 'f32', length: 8, init: { kind: 'normal', mean: 0, std: 1, seed: 3 } },
      ],
      [
        'ptr:i32[2,4]=arange(along=last):out',
        { kind: 'buffer', dtype: 'i32', shape: [2, 4], init: { kind: 'arange', along: 'last' }, role: 'out' },
      ],
      ['n@i32=8', { kind: 'scalar', type: 'i32', value: 8, name: 'n' }],
    ];
    const named = prepareJob(job({ args: pairs.map(([, o]) => o) }));
    if (Array.isArray(named)) throw new Error(named[0]!.message);
    expect(named.args.map((a) => a.spec)).toEqual(pairs.map(([t]) => parseArgSpec(t)));
    expect(named.args.map((a) => a.name)).toEqual(['x', undefined, undefined, 'n']);
    expect(
      problems(job({ args: ['x@ptr:f32[4]:out', { kind: 'buffer', dtype: 'f32', length: 4, name: 'x' }] })),
    ).toEqual([
      {
        path: 'job.args[1].name',
        type: 'TypeError',
        message: "Expected a name no other argument has for job.args[1].name but received 'x' of type string",
      },
    ]);
    // The object form gets argspec's checks of a fill against its element type, and its own of each field.
    expect(
      problems(
        job({
          args: [{ kind: 'buffer', dtype: 'u8', length: 4, init: { kind: 'const', value: 300 } }, 'ptr:f32[1]:out'],
        }),
      ),
    ).toEqual([
      {
        path: 'job.args[0].init',
        type: 'RangeError',
        message:
          'Expected const(v) with v an integer in [0, 255] for u8 for job.args[0].init ' +
          "but received 'ptr:u8[4]=const(300)' of type string",
      },
    ]);
    expect(
      problems(
        job({
          args: [
            { kind: 'buffer', dtype: 'f32', shape: [2, 3], length: 5 },
            { kind: 'buffer', dtype: 'f32', length: 0 },
            { kind: 'buffer', dtype: 'f32', length: 2, role: 'inout' },
            { kind: 'scalar', type: 'f32', value: [] },
            { kind: 'buffer', dtype: 'f32', length: 2, init: { kind: 'uniform', lo: 0 } },
            { kind: 'tensor' },
            { kind: 'buffer', dtype: 'f32', length: 2, name: 'not a name' },
          ],
        }),
      ).map((p) => p.message),
    ).toEqual([
      'Expected the product of shape (6) for job.args[0].length but received 5 of type number',
      'Expected a positive integer for job.args[1].length but received 0 of type number',
      "Expected 'in' or 'out' for job.args[2].role but received 'inout' of type string",
      'Expected a number, string or boolean for job.args[3].value but received an object of type Array',
      'Expected a finite number for job.args[4].init.hi but received undefined',
      "Expected 'scalar' or 'buffer' for job.args[5].kind but received 'tensor' of type string",
      "Expected a C identifier such as x or out_0 for job.args[6].name but received 'not a name' of type string",
    ]);
  });

  it('decodes literal data (base64, optionally zlib) to exactly the buffer size', () => {
    const data = (init: Record<string, unknown>): Record<string, unknown> => ({
      args: [{ kind: 'buffer', dtype: 'f32', length: 4, init: { kind: 'data', ...init } }, 'ptr:f32[4]:out'],
    });
    const ok = prepareJob(job(data({ base64: f32(1, 2, 3, 4) })));
    if (Array.isArray(ok)) throw new Error(ok[0]!.message);
    const bytes = (a: { spec: unknown }): Uint8Array => (a.spec as { init: { bytes: Uint8Array } }).init.bytes;
    expect(ok.args[0]!.spec).toMatchObject({ init: { kind: 'data' } });
    expect([...new Float32Array(bytes(ok.args[0]!).slice().buffer)]).toEqual([1, 2, 3, 4]);
    expect(ok.args[0]!.spec).toMatchObject({ kind: 'buffer', role: 'in', length: 4 });
    const zipped = prepareJob(
      job(
        data({
          base64: deflateSync(Buffer.from(new Float32Array([5, 6, 7, 8]).buffer)).toString('base64'),
          compress: 'zlib',
        }),
      ),
    );
    if (Array.isArray(zipped)) throw new Error(zipped[0]!.message);
    expect([...new Float32Array(bytes(zipped.args[0]!).slice().buffer)]).toEqual([5, 6, 7, 8]);
    // The canonical job keeps the base64: it stays JSON.
    expect(validateJob(job(data({ base64: f32(1, 2, 3, 4) }))).args[0]).toEqual({
      kind: 'buffer',
      dtype: 'f32',
      length: 4,
      init: { kind: 'data', base64: f32(1, 2, 3, 4) },
    });

    expect(problems(job(data({ base64: b64([0, 0, 0, 0]) })))[0]!.message).toBe(
      "Expected 16 bytes (4 × f32), not 4, for job.args[0].init.base64 but received 'AAAAAA==' of type string",
    );
    expect(problems(job(data({ base64: 'not base64!' })))[0]).toMatchObject({
      type: 'TypeError',
      path: 'job.args[0].init.base64',
    });
    // Inflating stops at the declared size: a small literal never becomes a large allocation.
    const bomb = deflateSync(Buffer.alloc(1 << 20)).toString('base64');
    expect(problems(job(data({ base64: bomb, compress: 'zlib' })))[0]!.message).toMatch(
      /^Expected zlib data of 16 bytes \(4 × f32\), not more than 16 bytes, for job\.args\[0\]\.init\.base64 but/,
    );
    expect(problems(job(data({ base64: f32(1, 2, 3, 4), compress: 'gzip' })))[0]!.path).toBe(
      'job.args[0].init.compress',
    );
  });

  it(
    'returns the canonical form: defaults it owns filled, BenchSpec fields moved, ' +
      'the rest left to the layers below',
    () => {
      const spec = { ...base, args: ['ptr:f32[32]:out'], bytes: 128, preset: 'quick', check: { atol: 1e-3 } };
      const canonical = validateJob(spec);
      expect(canonical).toEqual({
        ...base,
        args: ['ptr:f32[32]:out'],
        name: 'k',
        timing: { bytes: 128, preset: 'quick' },
        check: { atol: 1e-3 },
      });
      expect(validateJob(canonical)).toEqual(canonical); // idempotent
      expect(validateJob(job({ name: 'mine' })).name).toBe('mine');
      expect(spec).toHaveProperty('bytes'); // the input is not changed
      const roles = prepareJob(job({ args: ['ptr:f32[4]=ones', 'ptr:f32[4]', 'ptr:f32[4]=zeros:out'] }));
      if (Array.isArray(roles)) throw new Error(roles[0]!.message);
      expect(roles.args.map((a) => a.spec.kind === 'buffer' && a.spec.role)).toEqual(['in', 'out', 'out']);
    },
  );

  it('needs an output to check, unless nothing is checked', () => {
    expect(problems(job({ args: ['ptr:f32[4]=ones'] }))[0]!.message).toMatch(
      new RegExp(
        /^Expected an output buffer to check \(mark one with :out, e\.g\. 'ptr:f32\[N\]:out'\), /.source +
          /or check\.skip for job\.args/.source,
      ),
    );
    expect(() => validateJob(job({ args: ['ptr:f32[4]=ones'], check: { skip: true } }))).not.toThrow();
    expect(() => validateJob(job({ args: ['ptr:f32[4]=ones'], check: { withoutReference: 'skip' } }))).not.toThrow();
  });

  it('takes tolerances by element type in its check, and names every bad entry', () => {
    const ok = { f32: { atol: 1e-5 }, bf16: { rtol: 2e-2, atol: 0 } };
    expect(validateJob(job({ check: { tolerances: ok } })).check).toEqual({ tolerances: ok });
    const bad = problems(job({ check: { tolerances: { f33: { atol: 1 }, f16: { atol: -1, tol: 2 }, f64: 3 } } }));
    expect(bad.map((p) => p.path)).toEqual([
      'job.check.tolerances.f33',
      'job.check.tolerances.f16.tol',
      'job.check.tolerances.f16.atol',
      'job.check.tolerances.f64',
    ]);
    expect(problems(job({ check: { tolerances: [] } }))[0]!.message).toMatch(/tolerances by element type/);
  });

  it('takes a timing precision from ±0.25 % to ±5 % and a GPU-time cap in its rule, as the rule takes them', () => {
    const timing = { precision: 0.01, rule: { maxGpuMs: 250, timeoutMs: 5000 } };
    expect(validateJob(job({ timing })).timing).toEqual(timing);
    const bad = problems(job({ timing: { precision: 0.5, rule: { maxGpuMs: -1, colour: 1 } } }));
    expect(bad.map((p) => [p.path, p.type])).toEqual([
      ['job.timing.rule.colour', 'TypeError'],
      ['job.timing.rule.maxGpuMs', 'TypeError'],
      ['job.timing.precision', 'RangeError'],
    ]);
    expect(problems(job({ timing: { precision: 0.001 } }))[0]!.message).toMatch(/from 0\.0025 \(±0\.25 %\)/);
  });

  it('checks references: a kernel, expected outputs by name or index, never a function', () => {
    const expected = {
      args: [
        { kind: 'buffer', dtype: 'f32', length: 2, init: { kind: 'ones' } },
        { kind: 'buffer', dtype: 'f32', length: 2, name: 'y' },
      ],
    };
    const ok = prepareJob(job({ ...expected, reference: { expected: { y: { base64: f32(1, 1) } } } }));
    if (Array.isArray(ok)) throw new Error(ok[0]!.message);
    expect([...ok.expected!.keys()]).toEqual([1]);
    expect(
      problems(job({ ...expected, reference: { expected: { 0: { base64: f32(1, 1) }, z: { base64: f32(1) } } } })).map(
        (p) => p.message,
      ),
    ).toEqual([
      "Expected an output buffer of the job, by its name or index for job.reference.expected['0'] " +
        "but received '0' of type string",
      "Expected an output buffer of the job, by its name or index for job.reference.expected['z'] " +
        "but received 'z' of type string",
    ]);
    // Expected outputs are fixed: the inputs must be too.
    expect(
      problems(
        job({
          args: ['ptr:f32[2]=uniform(-1,1,seed=3)', 'ptr:f32[2]:out'],
          reference: { expected: { 1: { base64: f32(1, 1) } } },
        }),
      )[0]!.message,
    ).toBe(
      'Expected an input that is the same in every trial (data, const, zeros, ones, arange or seq) with expected ' +
        "outputs for job.args[0] but received 'uniform' of type string",
    );
    expect(problems(job({ reference: () => undefined }))[0]!.message).toMatch(
      /for job\.reference but received a function$/,
    );
    expect(
      problems(job({ reference: { source: { file: 1 }, kernel: 'r', grid: -1, colour: 2 } })).map((p) => p.path),
    ).toEqual(['job.reference.colour', 'job.reference.source', 'job.reference.grid']);
    expect(problems(job({ compare: { source: 'x', kernel: 'k', args: ['f32=1'] } })).map((p) => p.path)).toEqual([
      'job.compare.args',
    ]);
  });
});

describe('evaluate() without a GPU', () => {
  const KEYS = ['check', 'comparison', 'compile', 'error', 'name', 'passed', 'phase', 'phases', 'timing', 'warnings'];

  it('resolves to a report for an invalid job, with every problem', async () => {
    const report = await evaluate({ ...base, grid: 0, args: 'f32=1' } as unknown as EvalJob);
    expect(Object.keys(report).sort()).toEqual(KEYS);
    expect(report).toMatchObject({
      name: 'k',
      passed: false,
      phase: 'validate',
      check: undefined,
      timing: undefined,
      comparison: undefined,
      compile: {},
      error: { kind: 'invalid-job', code: 'ERR_INVALID_JOB' },
    });
    expect(report.error!.problems!.map((p) => p.path)).toEqual(['job.grid', 'job.args']);
    expect(report.phases.map((p) => p.phase)).toEqual(['validate']);
    expect(JSON.parse(JSON.stringify(report))).toMatchObject({ phase: 'validate', passed: false });
  });

  it("checks a reference kernel's own arguments against the candidate's before any work", async () => {
    const report = await evaluate(
      job({
        args: ['x@ptr:f32[4]=ones', 'y@ptr:f32[4]:out'],
        reference: { source: 'x', kernel: 'r', args: ['y@ptr:f32[4]:out', 'z@ptr:f32[4]:in'] },
      }),
    );
    expect(report).toMatchObject({ phase: 'validate', compile: {} });
    expect(report.error!.problems!.map((p) => p.path)).toEqual(['job.reference.args']);
    expect(report.error!.problems![0]!.message).toMatch(
      new RegExp(
        /^Expected arguments that match the candidate's \(.*'z'.*\) for job\.reference\.args /.source +
          /but received an object of type Array$/.source,
      ),
    );
  });

  it('stops before the first phase when the signal is aborted', async () => {
    const progress: unknown[] = [];
    const report = await evaluate(job({}), {
      signal: AbortSignal.abort(new Error('enough')),
      onProgress: (p) => progress.push(p),
    });
    expect(report).toMatchObject({ passed: false, phase: 'validate', error: { kind: 'aborted', code: 'ABORT_ERR' } });
    expect(report.error!.message).toBe('evaluate() was aborted before the validate phase: enough');
    expect(progress).toEqual([]);
  });

  it("without compile.arch, fails in the compile phase for the missing GPU: kind 'cuda', the driver's code", () => {
    // Forced in a child process, so on any machine: no driver, hence no GPU to take the architecture from.
    const r = runScript(
      `import { evaluate } from './lib/index.ts';
       const report = await evaluate({
         source: 'extern "C" __global__ void k(float* y) {}', kernel: 'k', grid: 1, block: 32,
         args: ['ptr:f32[32]:out'],
       });
       console.log(JSON.stringify({ phase: report.phase, error: report.error }));`,
      { env: { ...process.env, CUDAKIT_LIBCUDA_PATH: '/nonexistent/libcuda.so.1' } },
    );
    expect(r.stderr).toBe('');
    const { phase, error } = JSON.parse(r.stdout) as { phase: string; error: EvalError };
    expect(phase).toBe('compile');
    expect(error).toMatchObject({ kind: 'cuda', code: 'CUDA_DRIVER_NOT_FOUND', kernel: 'candidate', sticky: false });
    expect(error.message).toMatch(/^evaluate\(\): compile for the GPU's arch \(no compile\.arch\): /);
    expect(error.message).toContain('\n  Remedy: Install the NVIDIA driver');
  });

  it("rejects bad options: they are the caller's mistake, not the job's", async () => {
    await expect(evaluate(job({}), { reference: 5 } as never)).rejects.toThrow(
      'Expected a function for options.reference but received 5 of type number',
    );
    await expect(evaluate(job({}), { colour: 1 } as never)).rejects.toThrow(
      /^Unknown option options\.colour; known options: /,
    );
  });
});

describe("EvalError's kinds", () => {
  it("are the README's list, in its order", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    // "an `error` saying why (`kind`: 'invalid-job'; 'compile' with ...; ... 'exception' for anything else: ...)"
    const list = /an `error` saying why \(`kind`: (.*?'exception')/.exec(readme)?.[1];
    expect(list).toBeDefined();
    const listed = [...list!.matchAll(/(?:^|; )'([a-z-]+)'/g)].map((m) => m[1]);
    expect(listed).toEqual([...EVAL_ERROR_KINDS]);
  });

  it('are the type of EvalError.kind, both ways', () => {
    type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
    const same: Equal<EvalError['kind'], (typeof EVAL_ERROR_KINDS)[number]> = true;
    expect(same).toBe(true);
  });
});

describe('the public types, from a project that installs cudakit', () => {
  // Needs the build (dist/) and the TypeScript compiler (a dev dependency).
  it.skipIf(
    !existsSync(join(root, 'dist/eval/index.d.ts')) || !existsSync(join(root, 'node_modules/typescript/bin/tsc')),
  )(
    "a spec file type-checks with import type { EvalJob } from 'cudakit'",
    () => {
      const app = mkdtempSync(join(tmpdir(), 'cudakit-types-'));
      try {
        mkdirSync(join(app, 'node_modules'));
        symlinkSync(root, join(app, 'node_modules/cudakit'));
        writeFileSync(join(app, 'package.json'), '{ "name": "app", "private": true, "type": "module" }');
        writeFileSync(
          join(app, 'tsconfig.json'),
          JSON.stringify({
            compilerOptions: {
              module: 'NodeNext',
              moduleResolution: 'NodeNext',
              strict: true,
              noEmit: true,
              skipLibCheck: true,
              types: [],
            },
            files: ['saxpy.bench.ts', 'bad.bench.ts'],
          }),
        );
        writeFileSync(
          join(app, 'saxpy.bench.ts'),
          [
            "import type { EvalJob, EvalReport, JsReference } from 'cudakit';",
            'const job = {',
            "  source: { file: 'saxpy.cu' }, kernel: 'saxpy', grid: 4096, block: 256,",
            "  args: ['f32=2', 'ptr:f32[1M]=uniform(-1,1)', " +
              "{ kind: 'buffer', dtype: 'f32', length: 1 << 20, name: 'y' }, 'i32=1048576'],",
            "  timing: { preset: 'quick', bytes: 12 << 20 },",
            '} satisfies EvalJob;',
            'export default job;',
            'export const reference: JsReference = (args) => { void args; };',
            "export type Seen = EvalReport['phase'];",
          ].join('\n'),
        );
        writeFileSync(
          join(app, 'bad.bench.ts'),
          "import type { EvalJob } from 'cudakit';\n" +
            "export default { source: 'x', kernel: 'k', grid: 1, block: 1, args: [], colour: 1 } satisfies EvalJob;\n",
        );
        let out = '';
        try {
          execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', '.'], {
            cwd: app,
            encoding: 'utf8',
          });
        } catch (e) {
          out = String((e as { stdout?: string }).stdout);
        }
        // The good spec type-checks; the bad one fails on its unknown field and nothing else.
        expect(out.trim().split('\n')).toEqual([
          expect.stringMatching(/^bad\.bench\.ts\(2,\d+\): error TS2353: .*'colour'/),
        ]);
      } finally {
        rmSync(app, { recursive: true, force: true });
      }
    },
    60_000,
  );
});
