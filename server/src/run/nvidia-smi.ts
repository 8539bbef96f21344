// SPDX-License-Identifier: MIT
// What nvidia-smi says about processes on the GPUs: whether a GPU is shared at probe time, and whether a killed
// worker's PID has left its GPU (the driver frees a context a little after the process is gone). Run as a command,
// so the API process never loads the driver itself.
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { findExecutable } from './which.js';

export interface ComputeApp {
  pid: number;
  /** The GPU's UUID (for a MIG slice: its parent GPU's). */
  uuid: string;
}

/** Whether the GPU `uuid` no longer lists process `pid`, waiting up to `timeoutMs`; false means it still does. */
export type GpuReleased = (pid: number, uuid: string, timeoutMs: number) => Promise<boolean>;

const QUERY_TIMEOUT_MS = 5_000;
const POLL_MS = 100;

let found: Promise<string | undefined> | undefined;

/** The nvidia-smi on PATH, or undefined (looked up once). */
export function nvidiaSmiPath(): Promise<string | undefined> {
  found ??= findExecutable('nvidia-smi');
  return found;
}

/** Parses `--query-compute-apps=pid,gpu_uuid --format=csv,noheader` output. */
export function parseComputeApps(csv: string): ComputeApp[] {
  const apps: ComputeApp[] = [];
  for (const line of csv.split('\n')) {
    const [pid, uuid] = line.split(',').map((s) => s.trim());
    if (pid !== undefined && /^\d+$/.test(pid) && uuid !== undefined && uuid !== '') apps.push({ pid: +pid, uuid });
  }
  return apps;
}

/** The processes with a CUDA context on any GPU; undefined when there is no nvidia-smi or it failed. */
export async function computeApps(): Promise<ComputeApp[] | undefined> {
  const smi = await nvidiaSmiPath();
  if (smi === undefined) return undefined;
  const args = ['--query-compute-apps=pid,gpu_uuid', '--format=csv,noheader'];
  return new Promise((resolve) => {
    execFile(smi, args, { timeout: QUERY_TIMEOUT_MS }, (error, stdout) =>
      resolve(error === null ? parseComputeApps(stdout) : undefined),
    );
  });
}

/**
 * The default GpuReleased: polls nvidia-smi until `pid` is gone. Matched by PID only: for a MIG slice nvidia-smi
 * names the parent GPU. Without nvidia-smi there is nothing to ask, and the process's exit has to do (true); while
 * nvidia-smi fails, the answer is unknown, and the timeout decides (false: the slot is quarantined).
 */
export const gpuReleasedBySmi: GpuReleased = async (pid, _uuid, timeoutMs) => {
  if ((await nvidiaSmiPath()) === undefined) return true;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const apps = await computeApps();
    if (apps !== undefined && !apps.some((a) => a.pid === pid)) return true;
    if (performance.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
};
