// SPDX-License-Identifier: MIT
// probe(): what this machine can do, without ever throwing.
import { remedyFor } from './errors.js';
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
  /**
   * What to do about `reason`: the remedy a CudaError gives for each thing missing (install the driver, NVRTC ...),
   * one line each; undefined when nothing is missing.
   */
  remedy: string | undefined;
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
  const remedies: string[] = [];
  const remedy = (code: string | undefined): void => {
    const r = code === undefined ? undefined : remedyFor(code);
    if (r !== undefined && !remedies.includes(r)) remedies.push(r);
  };
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
      remedy(d.initError ?? d.code);
    } else {
      deviceCount = n.deviceGetCount();
      if (deviceCount === 0) {
        reasons.push('the driver reports no CUDA devices');
        remedy('CUDA_ERROR_NO_DEVICE');
      }
    }
    const r = n.nvrtcStatus();
    if (r.loaded) nvrtc = version(r.version);
    else {
      reasons.push(`${r.code}: ${r.message} (tried: ${r.tried.join('; ')})`);
      remedy(r.code);
    }
  } catch (e) {
    reasons.push((e as Error).message);
  }
  return {
    ok: deviceCount > 0,
    driverVersion,
    nvrtcVersion: nvrtc,
    deviceCount,
    reason: reasons.length > 0 ? reasons.join('\n') : undefined,
    remedy: remedies.length > 0 ? remedies.join('\n') : undefined,
  };
}
