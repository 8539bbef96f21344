// SPDX-License-Identifier: MIT
// probe(): what this machine can do, without ever throwing.
import { getNative } from './native.js';

/** What `probe()` found: the driver, NVRTC and the devices, and why something is missing. */
export interface ProbeResult {
  /** True when a driver loaded and at least one device is present. */
  ok: boolean;
  /** The driver's CUDA version, e.g. '13.0'; undefined without a driver. */
  driverVersion: string | undefined;
  /** NVRTC's version, e.g. '12.8'; undefined without NVRTC. */
  nvrtcVersion: string | undefined;
  /** CUDA devices the driver reports; 0 without a driver. */
  deviceCount: number;
  /** Why `ok` is false (or what is missing, such as NVRTC), with what was tried; undefined when all is there. */
  reason: string | undefined;
}

const version = (v: number): string => `${Math.floor(v / 1000)}.${(v % 1000) / 10}`;

/**
 * What this machine can do: whether a driver loaded, its version, the number of devices and NVRTC's version. Never
 * throws, so it works on any machine, with or without a GPU: `reason` says what is missing and what was tried.
 * @example
 * const p = probe();
 * if (!p.ok) console.log(p.reason);
 */
export function probe(): ProbeResult {
  const reasons: string[] = [];
  let driverVersion: string | undefined;
  let nvrtc: string | undefined;
  let deviceCount = 0;
  try {
    const n = getNative();
    const d = n.driverStatus();
    if (d.version > 0) driverVersion = version(d.version);
    if (!d.loaded) {
      const why = d.initError !== undefined ? `cuInit failed: ${d.initError}` : `${d.code}: ${d.message}`;
      reasons.push(why + (d.tried.length > 0 ? ` (tried: ${d.tried.join('; ')})` : ''));
    } else {
      deviceCount = n.deviceGetCount();
      if (deviceCount === 0) reasons.push('the driver reports no CUDA devices');
    }
    const r = n.nvrtcStatus();
    if (r.loaded) nvrtc = version(r.version);
    else reasons.push(`${r.code}: ${r.message} (tried: ${r.tried.join('; ')})`);
  } catch (e) {
    reasons.push((e as Error).message);
  }
  return {
    ok: deviceCount > 0,
    driverVersion,
    nvrtcVersion: nvrtc,
    deviceCount,
    reason: reasons.length > 0 ? reasons.join('\n') : undefined,
  };
}
