// SPDX-License-Identifier: MIT
// DeviceFacts from cudakit's Device: what the probe reports of every GPU and a worker of its own. None of these
// queries needs a CUDA context (cuDeviceGet*, cuDeviceTotalMem), so the probe and a worker between jobs create none.
import { type Device, probe } from 'cudakit';
import type { DeviceFacts } from '../gpu/protocol.js';

/** The facts of `device`; `ordinal` as the caller enumerates (the probe: PCI bus order). */
export function deviceFacts(device: Device, ordinal = device.ordinal): DeviceFacts {
  const machine = probe();
  return {
    ordinal,
    uuid: device.uuid,
    name: device.name,
    arch: device.arch,
    totalMemoryBytes: device.totalMemoryBytes,
    multiprocessorCount: device.multiprocessorCount,
    driverVersion: machine.driverVersion ?? 'unknown',
    nvrtcVersion: machine.nvrtcVersion,
  };
}
