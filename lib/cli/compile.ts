// SPDX-License-Identifier: MIT
// `cudakit compile file.cu`: NVRTC's verdict, warnings in the compiler's format, and per kernel what the GPU says
// of it (registers, spills, shared and constant memory, occupancy).
import { writeFileSync } from 'node:fs';
import { CompileError, Device, type KernelFunction, type Module, parseDiagnostics, probe } from '../index.js';
import { type SourceText, compileSource, externCKernels, readSource } from '../eval/index.js';
import { COMPILE_FLAGS, OK, USAGE, USAGE_TEXT, UsageError, compileOptionsFrom, parseCommand } from './flags.js';
import {
  type Output,
  firstLine,
  formatBytes,
  formatDiagnostic,
  gotCount,
  paint,
  reportCompileFailure,
  row,
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

/** What the driver says of a kernel known by name only (module.getFunction: no signature needed). */
function kernelFacts(kernel: KernelFunction, device: Device, o: Output): string {
  const a = kernel.attributes;
  let text = `${paint(o.color, '1', kernel.name)}\n`;
  text += row('registers', `${a.numRegs} per thread`);
  text += row('shared memory', `${formatBytes(a.sharedSizeBytes)} static per block`);
  const spills =
    a.localSizeBytes > 0
      ? paint(o.color, '33', `${formatBytes(a.localSizeBytes)} per thread: spills to local memory (slow)`)
      : '0 B (no spills)';
  text += row('local memory', spills);
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

export async function compileCommand(args: string[], o: Output): Promise<number> {
  const { values, positionals } = parseCommand('compile', args, { ...COMPILE_FLAGS, out: { type: 'string' } });
  if (values.help === true) {
    o.out(USAGE_TEXT);
    return OK;
  }
  if (positionals.length !== 1) {
    throw new UsageError(`compile takes one source file${gotCount(positionals)} (see cudakit --help)`);
  }
  const file = positionals[0]!;
  const options = compileOptionsFrom(values);
  const src = readSourceFile(file);
  // Without a GPU there is no architecture to default to: say which option is missing instead of the API's words.
  if (options.arch === undefined && options.target !== 'ptx') {
    const p = probe();
    if (!p.ok) {
      throw new UsageError(
        'compile needs --arch (e.g. --arch sm_90) or --ptx: there is no GPU to take the architecture from ' +
          `(${firstLine(p.reason)})`,
      );
    }
  }
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

  const p = probe();
  if (!p.ok) {
    // The loader's list of paths tried belongs to `cudakit info`; here the reason is enough.
    const reason = firstLine(p.reason).replace(/ \(tried: .*\)$/, '');
    o.out(row('not shown', `registers, spills, shared/const memory and occupancy need a GPU: ${reason}`));
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
