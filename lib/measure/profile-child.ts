// SPDX-License-Identifier: MIT
// The process profile() runs under Nsight Compute: `node profile-child.js <launch.json>` (profile-launch.ts). It
// loads the module, builds the arguments from the argument specs as check() does for its first trial (the same seed
// gives the same inputs), launches the kernel once and waits for it. Nothing else here runs a kernel (inputs are
// copied, not filled), and ncu's kernel filter names this one anyway. Nothing is timed.
import { readFileSync } from 'node:fs';
import { Device, type Kernel, type Signature } from '../core/index.js';
import { type GuardedBuffer, prepareInputs, releaseBuffers, uploadGuarded } from './inputs.js';
import { LAUNCHED_MARKER, decodeLaunch } from './profile-launch.js';
import { splitmix64 } from './random.js';

function run(path: string): void {
  const launch = decodeLaunch(readFileSync(path, 'utf8'));
  const device = Device.get(0);
  const module = device.loadModule(launch.image);
  const kernel: Kernel<Signature> = module.getKernel(launch.symbol, launch.signature);
  const smem = launch.config.sharedMemBytes ?? 0;
  if (smem > kernel.attributes.maxDynamicSharedSizeBytes) kernel.setMaxDynamicSharedMemory(smem);
  // check()'s trial 0 draws from splitmix64(seed + 0).
  const inputs = prepareInputs(launch.io, splitmix64(BigInt(launch.seed)), device);
  const buffers: GuardedBuffer[] = [];
  const args = uploadGuarded(device, launch.io, inputs, 0, () => 0, buffers);
  device.synchronize();
  kernel.launch(launch.config, ...(args as never[]));
  device.synchronize();
  releaseBuffers(
    buffers.map((b) => b?.base),
    false,
  );
  process.stdout.write(`${LAUNCHED_MARKER} ${launch.symbol}\n`);
}

const file = process.argv[2];
try {
  if (file === undefined) throw new Error('usage: profile-child <launch.json>');
  run(file);
} catch (e) {
  process.stderr.write(`cudakit-profile: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}
