// SPDX-License-Identifier: MIT
// What a module image says about a kernel's parameters, read without the driver: from a CUBIN's
// .nv.info.<kernel> section (EIATTR_KPARAM_INFO records) or from a PTX .entry declaration.
// getKernel uses it to know how many parameters to ask cuFuncGetParamInfo about, so it never probes past the
// last one (a probe that fails is an API error under compute-sanitizer), and to check signatures on drivers
// older than CUDA 12.4.

export interface ParamInfo {
  offset: number;
  size: number;
}

const EIFMT_NVAL = 1;
const EIFMT_BVAL = 2;
const EIFMT_HVAL = 3;
const EIFMT_SVAL = 4;
const EIATTR_KPARAM_INFO = 0x17;

// '.nv.info.', the prefix of a kernel's attribute section name, as bytes.
const INFO_PREFIX = [0x2e, 0x6e, 0x76, 0x2e, 0x69, 0x6e, 0x66, 0x6f, 0x2e];

/**
 * Whether the NUL-terminated section name at `at` is '.nv.info.' + `symbol`, compared byte by byte with the
 * symbol's char codes (kernel symbols are ASCII): no string or buffer is made per section or per call.
 */
function isInfoSection(bytes: Uint8Array, at: number, symbol: string): boolean {
  const end = at + INFO_PREFIX.length + symbol.length;
  if (end >= bytes.length || bytes[end] !== 0) return false;
  for (let k = 0; k < INFO_PREFIX.length; k++) if (bytes[at + k] !== INFO_PREFIX[k]) return false;
  const base = at + INFO_PREFIX.length;
  for (let k = 0; k < symbol.length; k++) if (bytes[base + k] !== symbol.charCodeAt(k)) return false;
  return true;
}

/** A 64-bit little-endian field as a number, read as two 32-bit halves (getBigUint64 makes a BigInt per read). */
function u64At(dv: DataView, at: number): number {
  return dv.getUint32(at, true) + dv.getUint32(at + 4, true) * 2 ** 32;
}

/**
 * Parameters of `symbol` from a 64-bit little-endian CUBIN; undefined when this is not one or lacks the kernel.
 * getKernel runs it for every kernel it makes, so it allocates only its result.
 */
export function cubinParams(image: Uint8Array, symbol: string): ParamInfo[] | undefined {
  if (image.length < 64 || image[0] !== 0x7f || image[1] !== 0x45 || image[2] !== 0x4c || image[3] !== 0x46)
    return undefined;
  if (image[4] !== 2 || image[5] !== 1) return undefined; // ELFCLASS64, little-endian
  const dv = new DataView(image.buffer, image.byteOffset, image.byteLength);
  try {
    const shoff = u64At(dv, 0x28);
    const shentsize = dv.getUint16(0x3a, true);
    const shnum = dv.getUint16(0x3c, true);
    const shstrndx = dv.getUint16(0x3e, true);
    const names = u64At(dv, shoff + shstrndx * shentsize + 24);
    for (let i = 0; i < shnum; i++) {
      const o = shoff + i * shentsize;
      if (!isInfoSection(image, names + dv.getUint32(o, true), symbol)) continue;
      const start = u64At(dv, o + 24);
      const end = start + u64At(dv, o + 32);
      // Records in the order they come, each at its ordinal: ordinals 0..n-1, once each, or the list is not trusted.
      const params: ParamInfo[] = [];
      for (let p = start; p < end;) {
        const format = image[p]!;
        const attr = image[p + 1]!;
        if (format === EIFMT_SVAL) {
          const len = dv.getUint16(p + 2, true);
          if (attr === EIATTR_KPARAM_INFO && len >= 12) {
            const ordinal = dv.getUint16(p + 8, true);
            if (params[ordinal] !== undefined) return undefined;
            params[ordinal] = {
              offset: dv.getUint16(p + 10, true),
              size: (dv.getUint32(p + 12, true) >>> 18) & 0x3fff,
            };
          }
          p += 4 + len;
        } else if (format === EIFMT_HVAL || format === EIFMT_BVAL || format === EIFMT_NVAL) {
          p += 4; // every record has a 4-byte header; these carry at most 2 bytes of value inside it
        } else return undefined; // a format we do not know: do not guess
      }
      for (let k = 0; k < params.length; k++) if (params[k] === undefined) return undefined;
      return params;
    }
  } catch {
    return undefined; // truncated or not what it claimed to be
  }
  return undefined;
}

const PTX_SIZES: Record<string, number> = { 8: 1, 16: 2, 32: 4, 64: 8 };

/** Parameters of `symbol` from PTX text; undefined when the entry is not found. */
export function ptxParams(ptx: string, symbol: string): ParamInfo[] | undefined {
  const at = ptx.search(new RegExp(`\\.entry\\s+${symbol.replace(/[$.]/g, '\\$&')}\\s*\\(`));
  if (at < 0) {
    return new RegExp(`\\.entry\\s+${symbol.replace(/[$.]/g, '\\$&')}\\s*(\\{|$)`, 'm').test(ptx) ? [] : undefined;
  }
  const open = ptx.indexOf('(', at);
  const close = ptx.indexOf(')', open);
  if (close < 0) return undefined;
  const list = ptx.slice(open + 1, close).trim();
  if (list === '') return [];
  const out: ParamInfo[] = [];
  let offset = 0;
  for (const decl of list.split(',')) {
    const m = /\.param\s+(?:\.align\s+(\d+)\s+)?\.[usfb](8|16|32|64)\s+[\w$]+(?:\[(\d+)\])?/.exec(decl);
    if (!m) return undefined;
    const elem = PTX_SIZES[m[2]!]!;
    const size = elem * (m[3] !== undefined ? Number(m[3]) : 1);
    const align = m[1] !== undefined ? Number(m[1]) : elem;
    offset = Math.ceil(offset / align) * align;
    out.push({ offset, size });
    offset += size;
  }
  return out;
}

/** Parameters from whichever form the image is in; undefined for fatbins and anything unrecognized. */
export function imageParams(image: Uint8Array, symbol: string): ParamInfo[] | undefined {
  const fromCubin = cubinParams(image, symbol);
  if (fromCubin !== undefined) return fromCubin;
  const head = Buffer.from(image.buffer, image.byteOffset, Math.min(image.byteLength, 4096)).toString('latin1');
  if (!/\.version\s+\d/.test(head)) return undefined;
  return ptxParams(Buffer.from(image.buffer, image.byteOffset, image.byteLength).toString('latin1'), symbol);
}
