// SPDX-License-Identifier: MIT
// `cudakit compile file.cu`: NVRTC's verdict, warnings in the compiler's format, and per kernel what the GPU says
// of it (registers, spills, shared and constant memory, occupancy), or without a GPU what ptxas says.
import { writeFileSync } from 'node:fs';
import { CompileError, Device, type KernelFunction, type Module, parseDiagnostics, probe } from '../index.js';
import { type SourceText, compileSource, externCKernels, readSource } from '../eval/index.js';
import { COMPILE_FLAGS, OK, USAGE, UsageError, commandHelp, compileOptionsFrom, parseCommand } from './flags.js';
import {
  type Output,
  firstLine,
  formatBytes,
  formatDiagnostic,
  gotCount,
  paint,
  reportCompileFailure,
  row,
  shortReason,
  systemMessage,
} from './output.js';

/** Reads a source file named on the command line; an unreadable one is a usage error naming it. */
export function readSourceFile(path: string): SourceText {
  try {
    return readSource({ file: path }, undefined, path);
  } catch (e) {
    throw new UsageError(`cannot read ${path}: ${systemMessage(e)}`);
  }
}

/** The rows the driver and ptxas both give: registers, static shared memory, local memory. */
function commonRows(name: string, registers: number, sharedBytes: number, local: string, o: Output): string {
  return (
    `${paint(o.color, '1', name)}\n` +
    row('registers', `${registers} per thread`) +
    row('shared memory', `${formatBytes(sharedBytes)} static per block`) +
    row('local memory', local)
  );
}

const slow = (o: Output, text: string): string => paint(o.color, '33', `${text}: spills to local memory (slow)`);

/** What the driver says of a kernel known by name only (module.getFunction: no signature needed). */
function kernelFacts(kernel: KernelFunction, device: Device, o: Output): string {
  const a = kernel.attributes;
  const local = a.localSizeBytes > 0 ? slow(o, `${formatBytes(a.localSizeBytes)} per thread`) : '0 B (no spills)';
  let text = commonRows(kernel.name, a.numRegs, a.sharedSizeBytes, local, o);
  text += row('constant memory', formatBytes(a.constSizeBytes));
  const { blockSize } = kernel.suggestedBlockSize();
  const blocks = kernel.maxActiveBlocksPerMultiprocessor(blockSize);
  const smThreads = device.attribute('MAX_THREADS_PER_MULTIPROCESSOR');
  const pct = Math.round((100 * blocks * blockSize) / smThreads);
  const perSM = `${blocks} block${blocks === 1 ? '' : 's'}/SM at the suggested ${blockSize} threads/block`;
  text += row('occupancy', `${perSM} · ${pct}% of ${smThreads} threads/SM`);
  text += row('max block', `${a.maxThreadsPerBlock} threads`);
  return text;
}

/** ptxas's verbose report (`--ptxas-options=-v`) of one kernel: what a CUBIN compile tells without a GPU. */
export interface PtxasFacts {
  registers: number;
  /** Static shared memory per block. */
  sharedBytes: number;
  /** Local memory per thread: the stack frame, spills included. */
  stackFrameBytes: number;
  spillStoreBytes: number;
  spillLoadBytes: number;
}

/** The flag that makes ptxas report registers, spills and shared memory into NVRTC's log. */
export const PTXAS_VERBOSE = '--ptxas-options=-v';

/** ptxas's report in an NVRTC log, per kernel, by its lowered (compiled) name. */
export function ptxasFacts(log: string): Map<string, PtxasFacts> {
  const facts = new Map<string, PtxasFacts>();
  let entry: PtxasFacts | undefined; // the kernel being compiled
  let properties: PtxasFacts | undefined; // the kernel whose stack frame line comes next (not a device function)
  for (const line of log.split('\n')) {
    let m: RegExpExecArray | null;
    if ((m = /Compiling entry function '([^']+)'/.exec(line)) !== null) {
      entry = { registers: 0, sharedBytes: 0, stackFrameBytes: 0, spillStoreBytes: 0, spillLoadBytes: 0 };
      facts.set(m[1]!, entry);
    } else if ((m = /Function properties for (\S+)/.exec(line)) !== null) {
      properties = facts.get(m[1]!);
    } else if ((m = /(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads/.exec(line)) !== null) {
      if (properties !== undefined) {
        properties.stackFrameBytes = Number(m[1]);
        properties.spillStoreBytes = Number(m[2]);
        properties.spillLoadBytes = Number(m[3]);
      }
      properties = undefined;
    } else if ((m = /Used (\d+) registers/.exec(line)) !== null && entry !== undefined) {
      entry.registers = Number(m[1]);
      entry.sharedBytes = Number(/(\d+) bytes smem/.exec(line)?.[1] ?? 0);
    }
  }
  return facts;
}

function ptxasKernelFacts(name: string, f: PtxasFacts, o: Output): string {
  const frame = `${formatBytes(f.stackFrameBytes)} per thread`;
  const spilled = f.spillStoreBytes + f.spillLoadBytes > 0;
  const local = spilled
    ? slow(o, `${frame}, ${formatBytes(f.spillStoreBytes)} stored, ${formatBytes(f.spillLoadBytes)} loaded`)
    : f.stackFrameBytes > 0
      ? `${frame} (stack frame, no spills)`
      : '0 B (no spills)';
  return commonRows(name, f.registers, f.sharedBytes, local, o);
}

export async function compileCommand(args: string[], o: Output): Promise<number> {
  const { values, positionals } = parseCommand('compile', args, { ...COMPILE_FLAGS, out: { type: 'string' } });
  if (values.help === true) {
    o.out(commandHelp('compile'));
    return OK;
  }
  if (positionals.length !== 1) {
    throw new UsageError(`compile takes one source file${gotCount(positionals)} (see cudakit --help)`);
  }
  const file = positionals[0]!;
  const options = compileOptionsFrom(values);
  const src = readSourceFile(file);
  const p = probe();
  // Without a GPU there is no architecture to default to: say which option is missing instead of the API's words.
  if (options.arch === undefined && options.target !== 'ptx' && !p.ok) {
    throw new UsageError(
      'compile needs --arch (e.g. --arch sm_90) or --ptx: there is no GPU to take the architecture from ' +
        `(${firstLine(p.reason)})`,
    );
  }
  // Without a GPU, ptxas tells what the driver would have: registers, spills and shared memory (CUBIN only).
  const viaPtxas = !p.ok && options.target !== 'ptx';
  if (viaPtxas) options.extraFlags = [...(options.extraFlags ?? []), PTXAS_VERBOSE];
  const shown = { text: src.text, name: src.name, includeDirs: [src.dir!, ...(options.includePaths ?? [])] };
  let code;
  try {
    code = await compileSource(src, options);
  } catch (e) {
    if (!(e instanceof CompileError)) throw e;
    reportCompileFailure(e, shown, o);
    return USAGE;
  }

  // Warnings go to stderr in the compiler's format, where editors and CI annotators look for them.
  const diagnostics = parseDiagnostics(code.log, src.text);
  for (const d of diagnostics) o.err(formatDiagnostic(d, shown, o.errColor));
  const warnings = diagnostics.filter((d) => d.severity === 'warning').length;
  if (values.out !== undefined) {
    try {
      writeFileSync(values.out, code.bytes);
    } catch (e) {
      throw new UsageError(`cannot write ${values.out}: ${systemMessage(e)}`);
    }
  }

  const how = code.compileMs !== undefined ? `${Math.round(code.compileMs)} ms` : `from the ${code.cached} cache`;
  o.out(
    `${paint(o.color, '1', src.name)} → ${code.target.toUpperCase()} for ${code.arch ?? "NVRTC's default arch"} · ` +
      `${formatBytes(code.bytes.byteLength)} · NVRTC ${code.nvrtcVersion} · ${how}\n`,
  );
  o.out(row('flags', code.options.join(' ') || '(none)'));
  if (warnings > 0) o.out(row('warnings', `${warnings} (on stderr)`));
  if (values.out !== undefined) o.out(row('wrote', values.out));

  const names = [...new Set([...externCKernels(src.text), ...(options.nameExpressions ?? [])])];
  const listed = names.map((n) => {
    const lowered = code.loweredNames[n];
    return lowered !== undefined && lowered !== n ? `${n} (${lowered})` : n;
  });
  const none = 'none found (extern "C" __global__ kernels are listed; name C++ ones with --name-expression)';
  o.out(row('kernels', listed.length > 0 ? listed.join(', ') : none));

  if (!p.ok) {
    const reason = shortReason(p.reason);
    if (!viaPtxas) {
      const what = 'registers, spills and shared memory come from ptxas, for CUBIN (without --ptx);';
      o.out(row('not shown', `${what} occupancy needs a GPU: ${reason}`));
      return OK;
    }
    o.out(row('not shown', `occupancy needs a GPU (the figures below are ptxas's): ${reason}`));
    const facts = ptxasFacts(code.log);
    for (const name of names) {
      const f = facts.get(code.loweredNames[name] ?? name);
      const missing = `${paint(o.color, '1', name)}\n${row('not shown', 'ptxas did not report this kernel')}`;
      o.out(`\n${f !== undefined ? ptxasKernelFacts(name, f, o) : missing}`);
    }
    return OK;
  }
  const device = Device.get(0);
  let module: Module;
  try {
    module = device.loadModule(code);
  } catch (e) {
    const why = firstLine((e as Error).message);
    const on = `${device.name} (${device.arch})`;
    o.out(row('not shown', `registers, spills and occupancy: the code does not load on ${on}: ${why}`));
    return OK;
  }
  try {
    for (const name of names) {
      o.out('\n');
      try {
        o.out(kernelFacts(module.getFunction(name), device, o));
      } catch (e) {
        o.out(`${paint(o.color, '1', name)}\n${row('not shown', firstLine((e as Error).message))}`);
      }
    }
  } finally {
    module.dispose();
  }
  return OK;
}
