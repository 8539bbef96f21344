// SPDX-License-Identifier: MIT
// Security, what a job asks of the compiler and the GPU (SECURITY.md's attack table): launches no GPU could make,
// includes that would reach the server's files in every spelling the preprocessor reads (and in kernel names and name
// expressions, which NVRTC writes as lines of a file of its own), #import and #embed, compiler flags that would read
// or write files, and sources and fills that are files. Admission refuses each before anything is queued, on
// POST /v1/evaluations, the compatible POST /evaluate and the MCP tools; what a worker does with what gets past it
// is host-files.nvrtc.test.ts's and containment.test.ts's. Each answer is checked for its status and for leaks; after
// each row the server still runs a correct job.
import { describe, expect, it } from 'vitest';
import type { Harness } from '../support/app-harness.js';
import { evaluateBody, settled } from '../support/helpers.js';
import { body, expectAnswer, expectError, mcpCall, mcpResult, sharedHarness, compatPost, submit } from './helpers.js';

let h: Harness;
sharedHarness((x) => (h = x));

const KERNEL = String(body().source);
const withLine = (line: string): string => `${line}\n${KERNEL}`;

/** A 400 whose details name `path` (the v1 routes' words), and no run of it. */
async function refused(payload: unknown, path: string, what: string): Promise<void> {
  const runs = h.pool.runs.length;
  const res = await submit(h, payload);
  const b = expectError(res, 400, res.json().code as string, what);
  expect(b.details, `${what}: ${res.body}`).toContainEqual({ path, message: expect.any(String) });
  expect(h.pool.runs.length, what).toBe(runs);
}

/** A compatible POST /evaluate refused with a 400 naming `field`, and the MCP tool's error for the same request. */
async function refusedElsewhere(request: Record<string, unknown>, field: string, what: string): Promise<void> {
  const res = await compatPost(h, '/evaluate', request);
  expectAnswer(res, 400, `/evaluate: ${what}`);
  expect(JSON.stringify(res.json()), `/evaluate: ${what}`).toContain(field);
  const mcp = await mcpCall(h, 'evaluate_kernel', request);
  expectAnswer(mcp, 200, `MCP: ${what}`);
  const result = mcpResult(mcp);
  expect(result.isError, `MCP: ${what}`).toBe(true);
  expect(result.text, `MCP: ${what}`).toContain(field);
}

/** Taken and run: the control that shows a refusal is the attack's, not the job's. */
async function taken(payload: unknown, what: string): Promise<void> {
  const res = await submit(h, payload);
  expectAnswer(res, 202, what);
  expect((await settled(h.service, res.json().id as string)).status, what).toBe('succeeded');
}

/** Every spelling of an #include the preprocessor reads as one that reaches the server's files. */
const INCLUDES: ReadonlyArray<[string, string]> = [
  ['absolute', '#include "/etc/passwd"'],
  ['absolute, spaced', '  #  include\t"/proc/self/environ"'],
  ['home', '#include "~/.ssh/id_rsa"'],
  ['<absolute>', '#include </etc/passwd>'],
  ['<../>', '#include <../../../../etc/passwd>'],
  ['<backslash>', '#include <..\\..\\etc\\passwd>'],
  ['../', '#include "../../../../etc/passwd"'],
  ['a/../', '#include "a/../../x.h"'],
  ['computed', '#define P "/etc/passwd"\n#include P'],
  ['computed by a function macro', '#define Q(x) #x\n#include Q(/etc/passwd)'],
  ['computed from __FILE__', '#include __FILE__'],
  ['a splice in the directive', '#inc\\\nlude "/etc/passwd"'],
  ['a splice in the name', '#include "/etc/pa\\\nsswd"'],
  ['a splice after #', '#\\\ninclude "../x.h"'],
  ['a CRLF splice', '#include \\\r\n"/etc/passwd"'],
  ['digraph', '%:include "/etc/passwd"'],
  ['digraph, <>', '%: include <../x.h>'],
  ['trigraph', '??=include "/etc/passwd"'],
  ['trigraph backslash', '#include "..??/x.h"'],
  ['a comment in the directive', '#include /* c */ "/etc/passwd"'],
  ['a comment after #', '#/**/include "/etc/passwd"'],
  ['after a comment', '/* c */ #include "/etc/passwd"'],
  ['after a quote in a comment', '// "\n#include "/etc/passwd"'],
  ['__has_include', '#if __has_include("/etc/passwd")\n#endif'],
  ['__has_include <>', '#if __has_include(</etc/shadow>)\n#endif'],
  ['__has_include computed', '#define P "/etc/passwd"\n#if __has_include(P)\n#endif'],
  ['__has_include_next', '#if __has_include_next("../x.h")\n#endif'],
  ['#include_next', '#include_next "/etc/passwd"'],
  ['#include_next <>', '#include_next <../x.h>'],
];

describe('security: what a job asks of the compiler and the GPU', () => {
  it('impossible launches (block 2048, grid y or z 65536, 2^40 bytes of shared memory): 400, every route', async () => {
    const launches: Array<[string, Record<string, unknown>, string]> = [
      ['block 2048', { block: 2048 }, 'body.block'],
      ['block 1024 x 2', { block: [1024, 2, 1] }, 'body.block'],
      ['block z 128', { block: [1, 1, 128] }, 'body.block'],
      ['grid y 65536', { grid: [1, 65_536, 1] }, 'body.grid'],
      ['grid z 65536', { grid: [1, 1, 65_536] }, 'body.grid'],
      ['grid x 2^31', { grid: 2 ** 31 }, 'body.grid'],
      ['2^40 bytes of shared memory', { sharedMemBytes: 2 ** 40 }, 'body.sharedMemBytes'],
      ['a cluster of 64', { clusterDim: [64, 1, 1] }, 'body.clusterDim'],
    ];
    for (const [what, launch, path] of launches) {
      await refused(body('pass', launch), path, what);
      // A reference's and a baseline's own launches are held to the same limits.
      const ref = { source: KERNEL, kernel: 'k', ...launch, clusterDim: undefined };
      if (launch.clusterDim === undefined) {
        await refused(body('pass', { reference: ref }), path.replace('body.', 'body.reference.'), `reference ${what}`);
        await refused(body('pass', { compare: ref }), path.replace('body.', 'body.compare.'), `baseline ${what}`);
      }
    }
    const io = evaluateBody().kernel.io;
    const compat: Array<[string, Record<string, unknown>, string]> = [
      ['block.x 2048', { grid: { x: 1 }, block: { x: 2048 } }, 'launch -> block'],
      ['grid.y 65536', { grid: { x: 1, y: 65_536 }, block: { x: 32 } }, 'launch -> grid'],
      ['grid.z 65536', { grid: { x: 1, z: 65_536 }, block: { x: 32 } }, 'launch -> grid'],
      ['2^40 bytes', { grid: { x: 1 }, block: { x: 32 }, shared_mem_bytes: 2 ** 40 }, 'launch -> shared_mem_bytes'],
    ];
    for (const [what, launch, field] of compat) {
      await refusedElsewhere(evaluateBody({}, { io: { ...io, launch } }), `kernel -> io -> ${field}`, what);
    }
    // At the limits, a job runs.
    await taken(
      body('pass', { block: [1024, 1, 1], grid: [1, 65_535, 65_535], sharedMemBytes: 1024 }),
      'at the limits',
    );
  });

  it('includes reaching host files (absolute, <…>, ../, computed, splices, digraphs, trigraphs): 400', async () => {
    for (const [what, line] of INCLUDES) {
      await refused(body('pass', { source: withLine(line) }), 'body.source', what);
    }
    // Wherever source text goes: { text }, a header, a reference's and a baseline's source and headers.
    const [, line] = INCLUDES[0]!;
    const ref = (more: Record<string, unknown>) => ({ source: KERNEL, kernel: 'k', ...more });
    for (const [where, payload, path] of [
      ['{ text }', body('pass', { source: { text: withLine(line), name: 'k.cu' } }), 'body.source'],
      ['a header', body('pass', { headers: { 'a.h': line } }), "body.headers['a.h']"],
      ['the reference', body('pass', { reference: ref({ source: withLine(line) }) }), 'body.reference.source'],
      ['the baseline', body('pass', { compare: ref({ source: { text: withLine(line) } }) }), 'body.compare.source'],
      [
        'a reference header',
        body('pass', { reference: ref({ headers: { 'b.h': line } }) }),
        "body.reference.headers['b.h']",
      ],
    ] as const) {
      await refused(payload, path, where);
    }
    // Kernel names and name expressions: NVRTC writes each as a line of a file of its own, so a line break in one
    // starts a directive of the client's (NVRTC 11.8 and 13.0 then read the file it names).
    const smuggled = 'k<1>\n#include "/etc/passwd"';
    for (const [where, payload, path] of [
      ['the kernel name', body('pass', { kernel: smuggled }), 'body.kernel'],
      ['the kernel name, digraph', body('pass', { kernel: 'k\n%:include "/etc/passwd"' }), 'body.kernel'],
      [
        'a name expression',
        body('pass', { compile: { nameExpressions: [smuggled] } }),
        'body.compile.nameExpressions[0]',
      ],
      ['the reference kernel', body('pass', { reference: ref({ kernel: smuggled }) }), 'body.reference.kernel'],
      ['the baseline kernel', body('pass', { compare: ref({ kernel: smuggled }) }), 'body.compare.kernel'],
      [
        'a reference name expression',
        body('pass', { reference: ref({ compile: { nameExpressions: ['k', smuggled] } }) }),
        'body.reference.compile.nameExpressions[1]',
      ],
    ] as const) {
      await refused(payload, path, where);
    }
    // The compatible routes and MCP: the same check, in their words.
    await refusedElsewhere(evaluateBody({}, { source_code: withLine(line) }), 'kernel -> source_code', 'source_code');
    await refusedElsewhere(
      evaluateBody({}, { metadata: { kernel_name: smuggled } }),
      'kernel -> metadata -> kernel_name',
      'kernel_name',
    );
    await refusedElsewhere(
      evaluateBody({}, { metadata: { kernel_name: 'fill', name_expressions: [smuggled] } }),
      'kernel -> metadata -> name_expressions',
      'name_expressions',
    );
    // What a job may include is taken: its in-memory headers, CUDA's own, and text that only looks like a directive.
    await taken(
      body('pass', { source: withLine('#include "a.h"\n#include "sub/b.h"'), headers: { 'a.h': '', 'sub/b.h': '' } }),
      'headers',
    );
    await taken(body('pass', { source: withLine('#include <cuda_fp16.h>') }), 'CUDA');
    await taken(body('pass', { source: withLine('const char* s = "\\n#include \\"/etc/passwd\\"";') }), 'a string');
    await taken(
      body('pass', { source: withLine('const char* r = R"x(\n#include "/etc/passwd"\n)x";') }),
      'a raw string',
    );
  });

  it('#import and #embed (and __has_embed) naming host files: 400 like #include', async () => {
    for (const [what, line] of [
      ['#import', '#import "/etc/passwd"'],
      ['#import <>', '#import </etc/passwd>'],
      ['#import ../', '%:import "../../../test/server/x.h"'],
      ['#embed', 'const char d[] = {\n#embed "/etc/passwd"\n};'],
      ['#embed <> with a limit', 'const char d[] = {\n#embed </etc/shadow> limit(10)\n};'],
      ['#embed computed', '#define P "/etc/passwd"\nconst char d[] = {\n#embed P\n};'],
      ['__has_embed', '#if __has_embed("/etc/passwd")\n#endif'],
    ] as const) {
      await refused(body('pass', { source: withLine(line) }), 'body.source', what);
      await refused(body('pass', { headers: { 'a.h': line } }), "body.headers['a.h']", `${what} in a header`);
    }
    await refusedElsewhere(
      evaluateBody({}, { source_code: withLine('#embed "/etc/passwd"') }),
      'kernel -> source_code',
      '#embed',
    );
  });

  it('flag smuggling: -I, --include-path, --pre-include, -include, -time, -rdc, -optf, -D and a newline', async () => {
    const flags = [
      '-I/etc',
      '-I',
      '/etc',
      '-isystem/etc',
      '--include-path=/etc',
      '--include-path',
      '--pre-include=/etc/passwd',
      '--pre-include',
      '-include',
      '-include=/etc/passwd',
      '-time=/etc/cron.d/x',
      '--time=x.csv',
      '--fdevice-time-trace=/etc/x',
      '-rdc=true',
      '--relocatable-device-code=true',
      '-dlto',
      '-optf',
      '-optf=/etc/flags',
      '--options-file=/etc/flags',
      '@/etc/flags',
      '-DX=1\n#include "/etc/passwd"',
      '--define-macro=X=1\r\n#include "/etc/passwd"',
      '-UX\n#include "/etc/passwd"',
      '--std=c++17 -I/etc',
      '--std=c++17\t--pre-include=/etc/passwd',
      '-arch=sm_90 -I/etc',
      '-ftz=true --pre-include=/etc/passwd',
      '-D X --pre-include=/etc/passwd',
      '--gpu-architecture=sm_90\u0000-I/etc',
    ];
    for (const [i, flag] of flags.entries()) {
      const what = JSON.stringify(flag);
      await refused(
        body('pass', { compile: { extraFlags: ['--use_fast_math', flag] } }),
        'body.compile.extraFlags[1]',
        what,
      );
      if (i % 4 === 0) {
        const ref = { source: KERNEL, kernel: 'k', compile: { extraFlags: [flag] } };
        await refused(body('pass', { reference: ref }), 'body.reference.compile.extraFlags[0]', `reference ${what}`);
      }
    }
    // The typed options that would reach files, or carry a line of their own.
    for (const [what, compile, path] of [
      ['includePaths', { includePaths: ['/etc'] }, 'body.compile.includePaths'],
      ['cache.dir', { cache: { dir: '/etc' } }, 'body.compile.cache'],
      ['defines with a newline', { defines: ['X=1\n#include "/etc/passwd"'] }, 'body.compile.defines[0]'],
      ['a define value with a newline', { defines: { X: '1\n#include "/etc/passwd"' } }, 'body.compile.defines.X'],
      ['std with a flag', { std: 'c++17 -I/etc' }, 'body.compile.std'],
      ['arch with a flag', { arch: 'sm_90 -I/etc' }, 'body.compile.arch'],
    ] as const) {
      const runs = h.pool.runs.length;
      const res = await submit(h, body('pass', { compile }));
      expectAnswer(res, 400, what);
      expect(JSON.stringify(res.json().details), what).toContain(path);
      expect(h.pool.runs.length).toBe(runs);
    }
    await refusedElsewhere(
      evaluateBody({}, { metadata: { kernel_name: 'fill', compiler_options: ['--pre-include=/etc/passwd'] } }),
      'kernel -> metadata -> compiler_options',
      'compiler_options',
    );
    // The allow-list's flags are taken.
    const allowed = ['-DN=4', '--define-macro=M=a', '--use_fast_math', '-lineinfo', '--std=c++17', '--ftz=true', '-w'];
    await taken(body('pass', { compile: { extraFlags: allowed, defines: { A: 1, B: 'x y' } } }), 'allowed flags');
  });

  it('file sources and file fills: 400; a source name is a label only', async () => {
    const ref = (more: Record<string, unknown>) => ({ source: KERNEL, kernel: 'k', ...more });
    const out = (init: Record<string, unknown>) => [
      { kind: 'buffer', dtype: 'f32', length: 32, role: 'out', init },
      'i32=32',
    ];
    for (const [what, payload, path] of [
      ['source { file }', body('pass', { source: { file: '/etc/passwd' } }), 'body.source'],
      ['source { file, text }', body('pass', { source: { file: 'k.cu', text: KERNEL } }), 'body.source'],
      [
        'reference { file }',
        body('pass', { reference: ref({ source: { file: '/etc/passwd' } }) }),
        'body.reference.source',
      ],
      ['baseline { file }', body('pass', { compare: ref({ source: { file: 'k.cu' } }) }), 'body.compare.source'],
      ['a header { file }', body('pass', { headers: { 'a.h': { file: '/etc/passwd' } } }), 'body.headers.a.h'],
      ['a file fill', body('pass', { args: out({ kind: 'file', path: '/etc/passwd' }) }), 'body.args[0].init'],
      ['data from a file', body('pass', { args: out({ kind: 'data', file: '/etc/passwd' }) }), 'body.args[0].init'],
      ['an argspec file()', body('pass', { args: ['ptr:f32[32]=file(/etc/passwd):out', 'i32=32'] }), 'body.args[0]'],
      [
        'an argspec data(path)',
        body('pass', { args: ['ptr:f32[32]=data(/etc/passwd):out', 'i32=32'] }),
        'body.args[0]',
      ],
      [
        'expected outputs from a file',
        body('pass', { reference: { expected: { '0': { file: '/etc/passwd' } } } }),
        "body.reference.expected['0']",
      ],
    ] as const) {
      const runs = h.pool.runs.length;
      const res = await submit(h, payload);
      expectAnswer(res, 400, what);
      expect(JSON.stringify(res.json().details), what).toContain(path);
      expect(h.pool.runs.length, what).toBe(runs);
    }
    const io = evaluateBody().kernel.io;
    const tensor = (spec: Record<string, unknown>) => ({
      io: {
        ...io,
        args: [{ name: 'y', type: 'tensor', role: 'output', tensor_spec: { shape: [32], ...spec } }, io.args[1]],
      },
    });
    for (const [what, kernel] of [
      ['data { file }', tensor({ data: { file: '/etc/passwd' } })],
      ['init kind file', tensor({ init: { kind: 'file', path: '/etc/passwd' } })],
    ] as const) {
      const res = await compatPost(h, '/evaluate', evaluateBody({}, kernel));
      expectAnswer(res, 400, `/evaluate ${what}`);
    }
    const expected = await compatPost(
      h,
      '/evaluate',
      evaluateBody({ cudakit: { expected: { y: { file: '/etc/passwd' } } } }),
    );
    expectAnswer(expected, 400, '/evaluate cudakit.expected { file }');
    // A source's name is what reports call it: the worker gives NVRTC a bare name of its own.
    await taken(body('pass', { source: { text: KERNEL, name: '/etc/passwd' } }), 'a source named like a host file');
  });
});
