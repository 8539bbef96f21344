// SPDX-License-Identifier: MIT
// A fake H200, as each layer reports it: its launch limits (cudakit's Device), its facts as a GPU worker's probe
// sends them (a slot's DeviceFacts) and the environment a benchmark on it records (BenchResult.env).
import type { BenchResult } from 'cudakit';
import type { DeviceFacts, LaunchFacts } from '../../server/src/run/protocol.js';

/** An H200's launch limits, as cudakit's Device reads them there. */
export const H200_LAUNCH: LaunchFacts = {
  maxThreadsPerBlock: 1024,
  maxBlockDim: [1024, 1024, 64],
  maxGridDim: [2 ** 31 - 1, 65_535, 65_535],
  maxSharedMemoryPerBlockOptinBytes: 232_448,
  maxClusterBlocks: 8,
};

/** The fake worker's GPU, as its probe reports it. */
export const H200_FACTS: DeviceFacts = {
  ordinal: 0,
  uuid: 'GPU-fa4e0000-0000-4000-8000-000000000000',
  name: 'NVIDIA H200',
  arch: 'sm_90',
  totalMemoryBytes: 150_000_000_000,
  multiprocessorCount: 132,
  driverVersion: '13.0',
  nvrtcVersion: '12.8',
  launch: H200_LAUNCH,
};

/** A benchmark's environment on that GPU: events timing, CUPTI not loaded. */
export const H200_BENCH_ENV: BenchResult['env'] = {
  device: 'NVIDIA H200',
  arch: 'sm_90',
  smCount: 132,
  l2Bytes: 50 * 2 ** 20,
  maxClockMHz: 1980,
  driverVersion: '13.0',
  nvrtcVersion: '13.0',
  cudakitVersion: '0.1.0',
  node: 'v20.19.0',
  eventOverheadMs: 0.002,
  cupti: { available: false, reason: 'CUPTI (libcupti) could not be loaded' },
};
