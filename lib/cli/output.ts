// SPDX-License-Identifier: MIT
// The terminal: stdout and stderr with the TTY-dependent parts (colours, the progress line redrawn in place), and the
// small text helpers the commands share (rows, tables, byte sizes, compile diagnostics with the source line).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Diagnostic, parseDiagnostics } from '../index.js';
import { externCKernels, paint, row as reportRow } from '../eval/index.js';

/** Where main() writes. Defaults to the process's streams. */
export interface CliIO {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Whether stdout / stderr are terminals: colours need stdout, the progress line stderr. A boolean sets both. */
  isTTY?: boolean | { stdout: boolean; stderr: boolean };
  /** The terminal's width, when stdout is one (process.stdout.columns). */
  columns?: number | undefined;
}

/**
 * Where text on stdout wraps: at COLUMNS when it is set (a positive integer), else at the terminal's width (80 when
 * it does not say) when stdout is a terminal, else nowhere (a file or a pipe gets whole lines).
 */
export function wrapColumns(
  env: Readonly<Record<string, string | undefined>>,
  tty: boolean,
  terminal?: number,
): number {
  const set = Number(env.COLUMNS);
  if (Number.isInteger(set) && set > 0) return set;
  if (!tty) return Infinity;
  return terminal !== undefined && terminal > 0 ? terminal : 80;
}

/** stdout / stderr with the TTY-dependent parts: colours and the progress line. */
export class Output {
  readonly color: boolean;
  readonly errColor: boolean;
  readonly progress: boolean;
  /** Where text on stdout wraps (wrapColumns): Infinity for no wrapping. */
  readonly columns: number;
  #io: CliIO;
  #progressWidth = 0;

  constructor(io: CliIO) {
    this.#io = io;
    const tty = typeof io.isTTY === 'object' ? io.isTTY : { stdout: io.isTTY === true, stderr: io.isTTY === true };
    const noColor = (process.env.NO_COLOR ?? '') !== '';
    this.color = tty.stdout && !noColor;
    this.errColor = tty.stderr && !noColor;
    this.progress = tty.stderr;
    this.columns = wrapColumns(process.env, tty.stdout, io.columns);
  }

  out(text: string): void {
    this.#io.stdout.write(text);
  }

  err(text: string): void {
    this.clearProgress();
    this.#io.stderr.write(text);
  }

  /** Rewrites the progress line in place (stderr terminals only). */
  showProgress(line: string): void {
    if (!this.progress) return;
    const pad = ' '.repeat(Math.max(0, this.#progressWidth - line.length));
    this.#io.stderr.write(`\r${line}${pad}`);
    this.#progressWidth = line.length;
  }

  clearProgress(): void {
    if (this.#progressWidth === 0) return;
    this.#io.stderr.write(`\r${' '.repeat(this.#progressWidth)}\r`);
    this.#progressWidth = 0;
  }
}

export { paint };

/** A report row of the CLI's own lines (its labels are shorter than a bench report's), ending the line. */
export const row = (label: string, value: string, width = 18): string => `${reportRow(label, value, width)}\n`;

/** Columns padded to their widest cell; numbers right-aligned. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const numeric = header.map((_, c) => rows.length > 0 && rows.every((r) => /^[\d.]/.test(r[c] ?? '')));
  const line = (cells: string[], head: boolean): string =>
    cells
      .map((cell, c) => (numeric[c] && !head ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(header, true), ...rows.map((r) => line(r, false))].join('\n') + '\n';
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)} ${units[i]}`;
}

/** 'no such file or directory' from "ENOENT: no such file or directory, open 'x.cu'". */
export function systemMessage(e: unknown): string {
  return String((e as Error)?.message ?? e)
    .replace(/^[A-Z]+: /, '')
    .replace(/, \w+ '[^']*'$/, '');
}

export function firstLine(text: string | undefined): string {
  return (text ?? 'unknown reason').split('\n')[0]!;
}

const TRIED = / \(tried: (.*)\)$/;

/** A reason's first line without the loader's list of paths tried (that list belongs to `cudakit info`). */
export const shortReason = (reason: string | undefined): string => firstLine(reason).replace(TRIED, '');

/** `text` as lines of at most `width` columns, broken at spaces (a longer word stays whole); later lines indented. */
export function wrap(text: string, width: number, indent = ''): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = indent + word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line];
}

/**
 * A reason (probe()'s, a loader's) as short lines for a terminal: each of its lines wrapped at `width` columns, and
 * its "(tried: a; b)" list one attempt a line.
 */
export function reasonLines(reason: string, width: number): string[] {
  return reason.split('\n').flatMap((line) => {
    const m = TRIED.exec(line);
    const tried = m === null ? [] : m[1]!.split('; ').map((attempt) => `tried ${attempt}`);
    return [m === null ? line : line.slice(0, m.index), ...tried].flatMap((l) => wrap(l, width, '  '));
  });
}

/** ', got 3' for a command that takes one file and was given three. */
export const gotCount = (positionals: string[]): string =>
  positionals.length > 1 ? `, got ${positionals.length}` : '';

/** A source as the diagnostics need it: its text under its name, and where its headers are. */
export interface ShownSource {
  text: string;
  name: string;
  /** Searched for headers named in diagnostics: the source's own directory first, then the include path. */
  includeDirs: readonly string[];
}

/** The text of line `line` of `file`: the program itself, or a header found as NVRTC names it or on the paths. */
function sourceLine(file: string, line: number, src: ShownSource): string | undefined {
  let text: string | undefined;
  if (file === src.name) text = src.text;
  else {
    for (const candidate of [file, ...src.includeDirs.map((d) => resolve(d, file))]) {
      try {
        text = readFileSync(candidate, 'utf8');
        break;
      } catch {
        // not here; try the next place
      }
    }
  }
  return text?.split('\n')[line - 1]?.replace(/\r$/, '');
}

/** `file:line:col: error: message`, the source line and a caret under the column (or the line's first character). */
export function formatDiagnostic(d: Diagnostic, src: ShownSource, color: boolean): string {
  const where = `${d.file}:${d.line}${d.column !== undefined ? `:${d.column}` : ''}`;
  const mild = d.severity === 'warning' || d.severity === 'remark';
  const severity = paint(color, mild ? '35;1' : '31;1', `${d.severity}:`);
  let out = `${paint(color, '1', `${where}:`)} ${severity} ${paint(color, '1', d.message)}\n`;
  const text = sourceLine(d.file, d.line, src);
  if (text !== undefined && text.trim() !== '') {
    const at = d.column !== undefined ? Math.min(d.column - 1, text.length) : text.length - text.trimStart().length;
    // Keep the tabs before the caret so it lines up however wide the terminal draws them.
    const pad = text.slice(0, at).replace(/[^\t]/g, ' ');
    out += `${text}\n${pad}${paint(color, '32;1', '^')}\n`;
  }
  return out;
}

/**
 * Kernels NVRTC could not find (name expressions it could not look up, in its `__nv_name_map` pseudo-file): what
 * `--kernel nope` gives, since a name that is not an extern "C" kernel is compiled as a name expression.
 */
function unknownKernels(log: string): string[] {
  return [...log.matchAll(/Input name expression was: "\s*(.*?)"\s*$/gm)].map((m) => m[1]!);
}

/**
 * A failed compile: every diagnostic with its source line (a kernel that is not there as one line naming it), then
 * one line saying how many errors, then what cudakit adds (CompileError.note: where a missing header was looked
 * for) and its remedy, on stderr.
 */
export function reportCompileFailure(
  f: {
    code: string;
    log: string;
    diagnostics: readonly Diagnostic[];
    note?: string | undefined;
    remedy?: string | undefined;
  },
  src: ShownSource,
  o: Output,
): void {
  const all = f.diagnostics.length > 0 ? f.diagnostics : parseDiagnostics(f.log, src.text);
  const unknown = unknownKernels(f.log);
  const diagnostics = unknown.length > 0 ? all.filter((d) => d.file !== '__nv_name_map') : all;
  for (const d of diagnostics) o.err(formatDiagnostic(d, src, o.errColor));
  const errors = diagnostics.filter((d) => d.severity === 'error' || d.severity === 'catastrophic error').length;
  if (errors > 0) {
    o.err(`cudakit: compile failed: ${errors} error${errors === 1 ? '' : 's'} in ${src.name}\n`);
  }
  const found = externCKernels(src.text);
  const known = found.length > 0 ? ` (extern "C" kernels in it: ${found.join(', ')})` : '';
  for (const name of unknown) o.err(`cudakit: no kernel named '${name}' in ${src.name}${known}\n`);
  if (errors === 0 && unknown.length === 0) {
    // No diagnostics to point at (a bad option, an NVRTC failure): NVRTC's own words.
    const log = f.log.trim() === '' ? '' : `:\n${f.log.trim().replace(/^/gm, '  ')}`;
    o.err(`cudakit: compile failed: ${f.code} compiling ${src.name}${log}\n`);
  }
  if (f.note !== undefined) {
    o.err(`${f.note.replace(/^/gm, '  ')}\n`); // e.g. where a missing header was looked for
    // The remedy that goes with the note (how to provide the header), in the command line's words where they differ.
    if (f.remedy !== undefined)
      o.err(`  Remedy: ${f.remedy.replace(/\bincludePaths\b/g, 'includePaths (-I <dir>)')}\n`);
  }
}
