// SPDX-License-Identifier: MIT
// The terminal: stdout and stderr with the TTY-dependent parts (colours, the progress line redrawn in place), and the
// small text helpers the commands share (rows, tables, byte sizes, compile diagnostics with the source line).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Diagnostic, parseDiagnostics } from '../index.js';
import { paint, row as reportRow } from '../eval/index.js';

/** Where main() writes. Defaults to the process's streams. */
export interface CliIO {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Whether stdout / stderr are terminals: colours need stdout, the progress line stderr. A boolean sets both. */
  isTTY?: boolean | { stdout: boolean; stderr: boolean };
}

/** stdout / stderr with the TTY-dependent parts: colours and the progress line. */
export class Output {
  readonly color: boolean;
  readonly errColor: boolean;
  readonly progress: boolean;
  #io: CliIO;
  #progressWidth = 0;

  constructor(io: CliIO) {
    this.#io = io;
    const tty = typeof io.isTTY === 'object' ? io.isTTY : { stdout: io.isTTY === true, stderr: io.isTTY === true };
    const noColor = (process.env.NO_COLOR ?? '') !== '';
    this.color = tty.stdout && !noColor;
    this.errColor = tty.stderr && !noColor;
    this.progress = tty.stderr;
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

/** A failed compile: every diagnostic with its source line, then one line saying how many errors, on stderr. */
export function reportCompileFailure(
  f: { code: string; log: string; diagnostics: readonly Diagnostic[] },
  src: ShownSource,
  o: Output,
): void {
  const diagnostics = f.diagnostics.length > 0 ? f.diagnostics : parseDiagnostics(f.log, src.text);
  for (const d of diagnostics) o.err(formatDiagnostic(d, src, o.errColor));
  const errors = diagnostics.filter((d) => d.severity === 'error' || d.severity === 'catastrophic error').length;
  if (errors > 0) {
    o.err(`cudakit: compile failed: ${errors} error${errors === 1 ? '' : 's'} in ${src.name}\n`);
  } else {
    // No diagnostics to point at (a bad option, an NVRTC failure): NVRTC's own words.
    const log = f.log.trim() === '' ? '' : `:\n${f.log.trim().replace(/^/gm, '  ')}`;
    o.err(`cudakit: compile failed: ${f.code} compiling ${src.name}${log}\n`);
  }
}
