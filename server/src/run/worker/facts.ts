// SPDX-License-Identifier: MIT
// DeviceFacts from cudakit's Device: what the probe reports of every GPU and a worker of its own. None of these
// queries needs a CUDA context (cuDeviceGet*, cuDeviceTotalMem), so the probe and a worker between jobs create none.
import { type Device, probe } from 'cudakit';
import { type DeviceFacts, type LaunchFacts, PORTABLE_CLUSTER_BLOCKS } from '../protocol.js';

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
    launch: launchFacts(device),
  };
}

/** The launch limits of `device`, from its attributes. */
export function launchFacts(device: Device): LaunchFacts {
  const a = (name: Parameters<Device['attribute']>[0]): number => device.attribute(name);
  let clusters = false;
  try {
    clusters = a('CLUSTER_LAUNCH') === 1;
  } catch {
    // A driver older than CUDA 11.8 does not know the attribute, nor clusters.
  }
  return {
    maxThreadsPerBlock: a('MAX_THREADS_PER_BLOCK'),
    maxBlockDim: [a('MAX_BLOCK_DIM_X'), a('MAX_BLOCK_DIM_Y'), a('MAX_BLOCK_DIM_Z')],
    maxGridDim: [a('MAX_GRID_DIM_X'), a('MAX_GRID_DIM_Y'), a('MAX_GRID_DIM_Z')],
    maxSharedMemoryPerBlockOptinBytes: a('MAX_SHARED_MEMORY_PER_BLOCK_OPTIN'),
    maxClusterBlocks: clusters ? PORTABLE_CLUSTER_BLOCKS : 0,
  };
}
