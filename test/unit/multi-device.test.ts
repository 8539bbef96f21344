// SPDX-License-Identifier: MIT
// Two or more devices, without a driver: what is checked before any driver call (peer access of a device with itself,
// a stream of another device given to a copy), how copyFrom() names its path, and `cudakit info`'s peer matrix. The
// devices here are made directly (no driver is asked): a check that came after a driver call would fail here with
// CUDA_DRIVER_NOT_FOUND instead of the message expected, or with the driver's own answer where there is a GPU.
import { describe, expect, it } from 'vitest';
import { peerMatrix } from '../../lib/cli/info.js';
import { Device } from '../../lib/core/device.js';
import { INTERNAL } from '../../lib/core/lifetime.js';
import { DeviceBuffer } from '../../lib/core/memory.js';

const d0 = new Device(INTERNAL, 0, 0);
const d1 = new Device(INTERNAL, 1, 1);

describe('peer access arguments', () => {
  it('takes only a Device', () => {
    expect(() => d0.canAccessPeer(1 as never)).toThrow(
      new TypeError('Expected a Device for other but received 1 of type number'),
    );
    expect(() => d0.enablePeerAccess({ ordinal: 1 } as never)).toThrow(
      new TypeError('Expected a Device for other but received an object of type Object'),
    );
  });

  it('is between two devices: a device with itself is a RangeError', () => {
    const self = (n: number): RangeError =>
      new RangeError(
        `Expected a device other than device ${n} (peer access is between two devices) for other but received an ` +
          'object of type Device',
      );
    expect(() => d0.canAccessPeer(d0)).toThrow(self(0));
    expect(() => d1.enablePeerAccess(d1)).toThrow(self(1));
    expect(() => d1.enablePeerAccess(new Device(INTERNAL, 1, 1))).toThrow(self(1)); // the same ordinal
    expect(d1.hasPeerAccess(d0)).toBe(false);
  });
});

describe('copyFrom between devices', () => {
  const on0 = DeviceBuffer.fromPointer(0x10000n, 64, d0);
  const on1 = DeviceBuffer.fromPointer(0x20000n, 64, d1);

  it('names its path: within a device, or through the host without peer access', () => {
    // Zero bytes: the path is chosen, and nothing reaches the driver.
    expect(on0.copyFrom(DeviceBuffer.fromPointer(0x30000n, 0, d0))).toEqual({ via: 'device' });
    expect(on1.copyFrom(DeviceBuffer.fromPointer(0x30000n, 0, d0))).toEqual({ via: 'host' });
  });

  it("takes only a stream of the destination's device", () => {
    const wrong = (dst: number, src: number): TypeError =>
      new TypeError(
        `Expected a stream of device ${dst} (this buffer's) for options.stream but received a stream of device ${src}`,
      );
    expect(() => on1.copyFrom(on0, { stream: d0.defaultStream })).toThrow(wrong(1, 0));
    expect(() => on0.copyFrom(on1, { stream: d1.defaultStream })).toThrow(wrong(0, 1));
    // the same rule for host copies
    expect(() => on1.copyFromHost(new Uint8Array(4), { stream: d0.defaultStream })).toThrow(wrong(1, 0));
    expect(() => on1.copyToHost(new Uint8Array(4), { stream: d0.defaultStream })).toThrow(wrong(1, 0));
    expect(() => on1.copyFrom(on0, { stream: {} as never })).toThrow(
      new TypeError('Expected a Stream for options.stream but received an object of type Object'),
    );
  });
});

describe('cudakit info peer matrix', () => {
  it("gives row → column access, '—' on the diagonal and 'n/a' where the driver could not say", () => {
    const matrix = peerMatrix(3, (from, to) => {
      if (from === 2 && to === 0) throw new Error('driver error');
      return from + to !== 3;
    });
    expect(matrix).toBe(
      [
        "peer access (row device → column device's memory)",
        '#  0    1    2',
        '0  —    yes  yes',
        '1  yes  —    no',
        '2  n/a  no   —',
        '',
      ].join('\n'),
    );
  });
});
