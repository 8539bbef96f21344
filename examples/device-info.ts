// List devices and the facts that matter for kernels.
import { Device, probe } from '../lib/index.js';

const p = probe();
if (!p.ok) {
  console.log(`No usable CUDA device: ${p.reason}`);
  process.exit(0);
}
console.log(`driver CUDA ${p.driverVersion}, NVRTC ${p.nvrtcVersion ?? 'not found'}, ${p.deviceCount} device(s)`);
for (const d of Device.all()) {
  const { freeBytes, totalBytes } = d.memoryInfo();
  console.log(`#${d.ordinal} ${d.name} (${d.arch}, ${d.uuid}, PCI ${d.pciBusId})`);
  console.log(
    `   ${d.multiprocessorCount} SMs at ${(d.clockRateKHz / 1e6).toFixed(2)} GHz, L2 ${d.l2CacheBytes >> 20} MiB`,
  );
  console.log(`   memory ${(freeBytes / 2 ** 30).toFixed(1)} / ${(totalBytes / 2 ** 30).toFixed(1)} GiB free`);
  console.log(
    `   max ${d.maxThreadsPerBlock} threads/block, ` +
      `${d.attribute('MAX_SHARED_MEMORY_PER_BLOCK_OPTIN') >> 10} KiB shared/block (opt-in)`,
  );
}
