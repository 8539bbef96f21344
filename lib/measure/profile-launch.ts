// SPDX-License-Identifier: MIT
// The launch profile() hands to its child process (profile-child.ts) in a file: the module image, the kernel's
// symbol, the launch configuration and the argument specs. JSON, with tags for what JSON cannot carry: bigints (i64
// and u64 scalars), bytes (the image, data inits) and non-finite numbers.
import type { Dim3, Signature } from '../core/index.js';
import type { ArgSpec } from './argspec.js';

/** What the child prints once the launch has finished: profile() tells a failed launch from an unprofiled one. */
export const LAUNCHED_MARKER = 'cudakit-profile: launched';

/** One launch, as the child reads it. */
export interface LaunchFile {
  /** PTX, CUBIN or fatbin. */
  image: Uint8Array;
  /** The kernel's symbol in the image (a C++ kernel's mangled name). */
  symbol: string;
  signature: Signature;
  /** LaunchConfig without the stream (the child launches on the default stream). */
  config: { grid: Dim3; block: Dim3; sharedMemBytes?: number; cooperative?: boolean; clusterDim?: Dim3 };
  io: ArgSpec[];
  /** check()'s seed: the child builds the inputs of check()'s first trial. */
  seed: number;
}

export function encodeLaunch(launch: LaunchFile): string {
  return JSON.stringify(launch, function (this: Record<string, unknown>, key: string, v: unknown): unknown {
    // The replacer sees a Uint8Array's original through `this` (JSON.stringify would make it an object of indices).
    const raw = this[key];
    if (raw instanceof Uint8Array) {
      return { $bytes: Buffer.from(raw.buffer, raw.byteOffset, raw.length).toString('base64') };
    }
    if (typeof v === 'bigint') return { $bigint: v.toString() };
    if (typeof v === 'number' && !Number.isFinite(v)) return { $number: String(v) };
    return v;
  });
}

export function decodeLaunch(text: string): LaunchFile {
  return JSON.parse(text, (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    const t = v as { $bigint?: unknown; $bytes?: unknown; $number?: unknown };
    if (typeof t.$bigint === 'string') return BigInt(t.$bigint);
    if (typeof t.$bytes === 'string') return new Uint8Array(Buffer.from(t.$bytes, 'base64'));
    if (typeof t.$number === 'string') return Number(t.$number);
    return v;
  }) as LaunchFile;
}
