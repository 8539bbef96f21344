// SPDX-License-Identifier: MIT
// The probe child: the service's only look at the GPUs (the API process never loads the addon). Prints one JSON line,
// `{"devices": DeviceFacts[], "reason": string | undefined}`, and exits. The parent runs it with
// CUDA_DEVICE_ORDER=PCI_BUS_ID, so ordinals are nvidia-smi's indices. No CUDA context is created.
import { Device, probe } from 'cudakit';
import type { DeviceFacts } from '../protocol.js';
import { deviceFacts } from './facts.js';

const machine = probe();
const devices: DeviceFacts[] = [];
const problems: string[] = [];
for (let i = 0; i < machine.deviceCount; i++) {
  try {
    devices.push(deviceFacts(Device.get(i), i));
  } catch (e) {
    problems.push(`device ${i}: ${(e as Error).message}`); // one broken GPU does not hide the others
  }
}
const reasons = [...(machine.ok ? [] : [machine.reason ?? 'no CUDA device']), ...problems];
const reason = reasons.length > 0 ? reasons.join('\n') : undefined;
process.stdout.write(`${JSON.stringify({ devices, reason })}\n`);
