// SPDX-License-Identifier: MIT
// The house rules on the code's shape, over lib/ and server/src: no import cycle (type-only imports included), so
// every file can be read after the files it stands on; and no file over MAX_FILE_LINES lines. A cycle fails here as
// its files in import order, a long file with its length. server/src's folders import one another downward only
// (SERVER_FOLDER_IMPORTS), and only main.ts and config.ts branch on the deployment mode.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Import, filesUnder, importsOf, root } from './imports.js';

export const MAX_FILE_LINES = 700;

/**
 * The imports by which an object of core/ names the type of the object that made it. A Device makes streams, buffers,
 * host registrations, modules and graphs, and each names its device (`stream.device: Device`); a Stream records
 * Events and captures Graphs, which take it; a Module makes Kernels and KernelFunctions, which name it. Two public
 * classes that name each other import each other, so these are the cycles lib/ keeps: each must stay an `import
 * type`, and without them the graph of lib/ has no cycle.
 */
const CORE_PARENT_TYPE_IMPORTS = [
  'lib/core/event.ts → lib/core/stream.ts',
  'lib/core/function.ts → lib/core/device.ts',
  'lib/core/function.ts → lib/core/module.ts',
  'lib/core/graph.ts → lib/core/device.ts',
  'lib/core/graph.ts → lib/core/stream.ts',
  'lib/core/host.ts → lib/core/device.ts',
  'lib/core/kernel.ts → lib/core/module.ts',
  'lib/core/memory.ts → lib/core/device.ts',
  'lib/core/module.ts → lib/core/device.ts',
  'lib/core/stream.ts → lib/core/device.ts',
];

/** server/src's files over MAX_FILE_LINES lines today. A new one fails; remove an entry once its file is split. */
const SERVER_KNOWN_LONG_FILES: string[] = [];

/** Each file's imports of other files of the set (a package's, node:*'s and other folders' are left out). */
type Graph = Map<string, Import[]>;

function importGraph(texts: ReadonlyMap<string, string>): Graph {
  return new Map(
    [...texts].map(([file, text]) => [file, importsOf(file, text).filter((i) => texts.has(i.target ?? ''))]),
  );
}

const read = (dir: string): Map<string, string> =>
  new Map(filesUnder(dir).map((f) => [f, readFileSync(join(root, f), 'utf8')]));

const edge = (i: Import): string => `${i.file} → ${i.target!}`;

/** The graph without the imports named in `dropped` ('a.ts → b.ts'). */
function without(graph: Graph, dropped: readonly string[]): Graph {
  return new Map([...graph].map(([file, imports]) => [file, imports.filter((i) => !dropped.includes(edge(i)))]));
}

/**
 * One cycle for each strongly connected group of files (Tarjan): the shortest way round from the group's first file
 * in name order, written 'a.ts → b.ts → a.ts'.
 */
export function cyclesOf(graph: Graph): string[] {
  const next = (f: string): string[] => [...new Set((graph.get(f) ?? []).map((i) => i.target!))];
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const groups: string[][] = [];
  const visit = (f: string): void => {
    index.set(f, index.size);
    low.set(f, index.get(f)!);
    stack.push(f);
    for (const g of next(f)) {
      if (!index.has(g)) {
        visit(g);
        low.set(f, Math.min(low.get(f)!, low.get(g)!));
      } else if (stack.includes(g)) {
        low.set(f, Math.min(low.get(f)!, index.get(g)!));
      }
    }
    if (low.get(f) === index.get(f)) groups.push(stack.splice(stack.indexOf(f)));
  };
  for (const f of [...graph.keys()].sort()) if (!index.has(f)) visit(f);
  return groups
    .filter((g) => g.length > 1 || next(g[0]!).includes(g[0]!))
    .map((g) => {
      const start = [...g].sort()[0]!;
      // Breadth first inside the group, back to the start: the shortest cycle through it.
      const from = new Map<string, string>();
      const queue = [start];
      while (queue.length > 0) {
        const f = queue.shift()!;
        for (const h of next(f).filter((x) => g.includes(x))) {
          if (h === start) {
            const path = [start];
            for (let at = f; at !== start; at = from.get(at)!) path.splice(1, 0, at);
            return [...path, start].join(' → ');
          }
          if (!from.has(h)) {
            from.set(h, f);
            queue.push(h);
          }
        }
      }
      throw new Error(`no way back to ${start}`); // unreachable: every file of a group reaches every other
    })
    .sort();
}

/** Whether `to` can be reached from `from` along the graph's imports. */
function reaches(graph: Graph, from: string, to: string): boolean {
  const seen = new Set([from]);
  const queue = [from];
  while (queue.length > 0) {
    for (const i of graph.get(queue.shift()!) ?? []) {
      if (i.target === to) return true;
      if (!seen.has(i.target!)) {
        seen.add(i.target!);
        queue.push(i.target!);
      }
    }
  }
  return false;
}

/**
 * What is wrong with a list of imports allowed to close a cycle: an entry that is no import (any more), or no longer
 * closes a cycle, or (with `typeOnly`) is not an `import type`.
 */
function staleEntries(graph: Graph, allowed: readonly string[], typeOnly: boolean): string[] {
  return allowed.flatMap((entry) => {
    const [from, to] = entry.split(' → ') as [string, string];
    const imports = (graph.get(from) ?? []).filter((i) => i.target === to);
    if (imports.length === 0) return [`${entry}: no such import; remove the entry`];
    if (!reaches(graph, to, from)) return [`${entry}: closes no cycle any more; remove the entry`];
    const values = imports.filter((i) => !i.typeOnly);
    return typeOnly ? values.map((i) => `${entry}: line ${i.line} imports values (an import type is allowed)`) : [];
  });
}

/** 'file: N lines' for each file of `texts` over `max` lines. */
export function longFiles(texts: ReadonlyMap<string, string>, max = MAX_FILE_LINES): string[] {
  return [...texts].flatMap(([file, text]) => {
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    return lines > max ? [`${file}: ${lines} lines (at most ${max})`] : [];
  });
}

describe('import cycles', () => {
  it('names each cycle by its files in import order, type-only imports included', () => {
    const texts = new Map([
      ['lib/measure/check.ts', "import { prepareInputs } from './inputs.js';"],
      ['lib/measure/inputs.ts', "import type { Reference } from './reference.js';"],
      ['lib/measure/reference.ts', "export { check } from './check.js';\nimport { row } from './format.js';"],
      ['lib/measure/format.ts', "import {\n  type Summary,\n} from './stats.js';"],
      ['lib/measure/stats.ts', "const { row } = await import('./format.js');"],
      ['lib/measure/random.ts', "import type { X } from './random.js';"],
      ['lib/measure/work.ts', "import { check } from './check.js';\nimport 'node:fs';"],
    ]);
    const graph = importGraph(texts);
    expect(cyclesOf(graph)).toEqual([
      'lib/measure/check.ts → lib/measure/inputs.ts → lib/measure/reference.ts → lib/measure/check.ts',
      'lib/measure/format.ts → lib/measure/stats.ts → lib/measure/format.ts',
      'lib/measure/random.ts → lib/measure/random.ts',
    ]);
    expect(graph.get('lib/measure/inputs.ts')![0]!.typeOnly).toBe(true);
    expect(graph.get('lib/measure/format.ts')![0]!.typeOnly).toBe(false); // verbatimModuleSyntax keeps the import
    expect(cyclesOf(without(graph, ['lib/measure/inputs.ts → lib/measure/reference.ts']))).toHaveLength(2);
    expect(staleEntries(graph, ['lib/measure/reference.ts → lib/measure/check.ts'], true)).toEqual([
      'lib/measure/reference.ts → lib/measure/check.ts: line 1 imports values (an import type is allowed)',
    ]);
    expect(staleEntries(graph, ['lib/measure/work.ts → lib/measure/check.ts'], false)).toEqual([
      'lib/measure/work.ts → lib/measure/check.ts: closes no cycle any more; remove the entry',
    ]);
  });

  it('lib/ has none but the parent types core/ names (CORE_PARENT_TYPE_IMPORTS)', () => {
    const graph = importGraph(read('lib'));
    expect(graph.size).toBeGreaterThan(50);
    expect(staleEntries(graph, CORE_PARENT_TYPE_IMPORTS, true)).toEqual([]);
    expect(cyclesOf(without(graph, CORE_PARENT_TYPE_IMPORTS))).toEqual([]);
  });

  it('server/src has none', () => {
    const graph = importGraph(read('server/src'));
    expect(graph.size).toBeGreaterThan(20);
    expect(cyclesOf(graph)).toEqual([]);
  });
});

describe(`files of at most ${MAX_FILE_LINES} lines`, () => {
  it('counts lines as wc -l does, a last line without a newline included', () => {
    const texts = new Map([
      ['a.ts', 'x\n'.repeat(MAX_FILE_LINES)],
      ['b.ts', 'x\n'.repeat(MAX_FILE_LINES) + 'x'],
    ]);
    expect(longFiles(texts)).toEqual([`b.ts: ${MAX_FILE_LINES + 1} lines (at most ${MAX_FILE_LINES})`]);
  });

  it('in lib/', () => {
    expect(longFiles(read('lib'))).toEqual([]);
  });

  it('in server/src, but the known ones (SERVER_KNOWN_LONG_FILES)', () => {
    const long = longFiles(read('server/src'));
    const known = (f: string): boolean => SERVER_KNOWN_LONG_FILES.some((k) => f.startsWith(`${k}:`));
    expect(long.filter((f) => !known(f))).toEqual([]);
    const split = SERVER_KNOWN_LONG_FILES.filter((k) => !long.some((f) => f.startsWith(`${k}:`)));
    expect(split.map((k) => `${k}: at most ${MAX_FILE_LINES} lines now, or gone; remove the entry`)).toEqual([]);
  });
});

/**
 * What each part of server/src may import of the others. Below everything: the stored record (store/) and the GPU
 * slots with their workers (run/); the judge maps a run's end to a record's; the schedule (the queue's two sides and
 * the dispatcher) stands on those three, the distributed mode's parts (cluster/) implement its seams, the submitting
 * side (submit/) admits into it, and service.ts composes them. The HTTP faces are on top: http/ registers the route
 * families, and compat/ and dashboard/ use its shared parts (the file-level cycle check keeps the two directions
 * apart). The leaves errors.ts and reachability.ts are anyone's; main.ts and config.ts assemble everything.
 */
const SERVER_FOLDER_IMPORTS: Record<string, readonly string[] | 'any'> = {
  store: [],
  run: [],
  judge: ['run', 'store'],
  schedule: ['judge', 'run', 'store'],
  cluster: ['run', 'schedule', 'store'],
  submit: ['judge', 'run', 'schedule', 'store'],
  'service.ts': ['run', 'schedule', 'store', 'submit'],
  compat: ['http', 'judge', 'run', 'schedule', 'service.ts', 'store', 'submit'],
  dashboard: ['http', 'judge', 'run', 'schedule', 'service.ts', 'store', 'submit'],
  http: ['compat', 'dashboard', 'judge', 'run', 'schedule', 'service.ts', 'store', 'submit'],
  'main.ts': 'any',
  'config.ts': 'any',
  'errors.ts': [],
  'reachability.ts': [],
};
const SERVER_LEAVES = ['errors.ts', 'reachability.ts'];
/** Single files below their folder's place, with why: a record holds a verdict, whose values are the judge's. */
const SERVER_FILE_IMPORTS = ['store → judge/verdict.ts'];

/** 'file → target (part → part)' for each import of server/src that SERVER_FOLDER_IMPORTS does not allow. */
export function folderViolations(graph: Graph): string[] {
  const partOf = (file: string): string => file.replace(/^server\/src\//, '').split('/')[0]!;
  const inside = (file: string): string => file.replace(/^server\/src\//, '');
  return [...graph.values()].flat().flatMap((i) => {
    const [from, to] = [partOf(i.file), partOf(i.target!)];
    const allowed = SERVER_FOLDER_IMPORTS[from];
    if (from === to || SERVER_LEAVES.includes(to) || allowed === 'any') return [];
    if (allowed?.includes(to) === true || SERVER_FILE_IMPORTS.includes(`${from} → ${inside(i.target!)}`)) return [];
    return [`${inside(i.file)}:${i.line} → ${inside(i.target!)} (${from} may not import ${to})`];
  });
}

describe("server/src's folders", () => {
  it('import one another downward only (SERVER_FOLDER_IMPORTS)', () => {
    const graph = importGraph(read('server/src'));
    const parts = new Set([...graph.keys()].map((f) => f.replace(/^server\/src\//, '').split('/')[0]!));
    expect([...parts].filter((p) => !(p in SERVER_FOLDER_IMPORTS))).toEqual([]); // a new folder gets its rule
    expect(folderViolations(graph)).toEqual([]);
  });

  it('finds an import against the rules, with its line', () => {
    const graph = importGraph(
      new Map([
        ['server/src/store/store.ts', "import type { Verdict } from '../judge/verdict.js';"],
        ['server/src/judge/verdict.ts', ''],
        [
          'server/src/run/slot.ts',
          "import { x } from '../errors.js';\nimport { admit } from '../submit/admission.js';",
        ],
        ['server/src/errors.ts', ''],
        ['server/src/submit/admission.ts', "import { Store } from '../store/store.js';"],
      ]),
    );
    expect(folderViolations(graph)).toEqual(['run/slot.ts:2 → submit/admission.ts (run may not import submit)']);
  });
});

describe("the server's modes", () => {
  /** A comparison with a mode's name: `role === 'api'`, `'agent' !== mode` ... */
  const MODE_BRANCH = /(?:===|!==)\s*'(?:embedded|api|agent)'|'(?:embedded|api|agent)'\s*(?:===|!==)/;
  /** The files that may know the mode: the flags (config.ts) and the assembly of each mode's parts (main.ts). */
  const KNOWING = ['server/src/main.ts', 'server/src/config.ts'];

  it('are branched on only where the parts are chosen (main.ts, config.ts); the rest follows from the parts', () => {
    const branches = [...read('server/src')].flatMap(([file, text]) =>
      KNOWING.includes(file)
        ? []
        : text.split('\n').flatMap((line, i) => (MODE_BRANCH.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(branches).toEqual([]);
  });

  it('finds a branch on the mode where there is one', () => {
    expect(MODE_BRANCH.test("if (this.role === 'agent') listen();")).toBe(true);
    expect(MODE_BRANCH.test("const runs = 'api' !== mode;")).toBe(true);
    expect(MODE_BRANCH.test("a.role === 'output'")).toBe(false);
  });
});
