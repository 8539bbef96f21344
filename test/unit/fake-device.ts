// SPDX-License-Identifier: MIT
// A device that keeps its memory in JavaScript: enough of Device and DeviceBuffer (alloc, subarray, copies, fill,
// dispose, synchronize) for the measure layer's input handling to run without a GPU. Every fill, synchronize and
// dispose is logged, in order.
import type { Device, DeviceBuffer } from '../../lib/index.js';

export class FakeBuffer {
  disposed = false;
  constructor(
    readonly device: FakeDevice,
    readonly memory: Uint8Array,
    readonly id: number,
  ) {}

  get byteLength(): number {
    return this.memory.length;
  }

  /** A device address: the buffer's id in the high bits, the byte offset in the low ones (FakeDevice.copy reads it). */
  get ptr(): bigint {
    return (BigInt(this.id + 1) << 32n) + BigInt(this.memory.byteOffset);
  }

  subarray(begin: number, end: number): FakeBuffer {
    return new FakeBuffer(this.device, this.memory.subarray(begin, end), this.id);
  }

  copyFromHost(src: ArrayBufferView): this {
    this.memory.set(new Uint8Array(src.buffer, src.byteOffset, src.byteLength));
    return this;
  }

  copyToHost(): Uint8Array {
    return new Uint8Array(this.memory);
  }

  fill(value: number): this {
    this.device.log.push(`fill ${this.id}`);
    this.memory.fill(value);
    return this;
  }

  dispose(): void {
    this.device.log.push(`dispose ${this.id}`);
    this.disposed = true;
  }
}

export class FakeDevice {
  readonly log: string[] = [];
  readonly buffers: FakeBuffer[] = [];

  alloc(bytes: number): FakeBuffer {
    const b = new FakeBuffer(this, new Uint8Array(bytes), this.buffers.length);
    this.buffers.push(b);
    return b;
  }

  synchronize(): void {
    this.log.push('synchronize');
  }

  /** A device-to-device copy between the addresses of two buffers (FakeBuffer.ptr), as a snapshot makes. */
  copy(from: bigint, to: bigint, bytes: number): void {
    const at = (address: bigint): Uint8Array => {
      const base = this.buffers[Number(address >> 32n) - 1]!.memory;
      const offset = Number(address & 0xffffffffn);
      return new Uint8Array(base.buffer, offset, bytes);
    };
    at(to).set(at(from));
  }

  /** As the measure layer's types want it. */
  get asDevice(): Device {
    return this as unknown as Device;
  }
}

export const asBuffers = (list: FakeBuffer[]): DeviceBuffer[] => list as unknown as DeviceBuffer[];

/** The elements of a fake buffer as a typed array over its memory (writes go to the buffer). */
export function view<
  T extends Float32ArrayConstructor | Float64ArrayConstructor | Int32ArrayConstructor | Uint8ArrayConstructor,
>(type: T, buffer: unknown): InstanceType<T> {
  const m = (buffer as FakeBuffer).memory;
  return new type(m.buffer as ArrayBuffer, m.byteOffset, m.byteLength / type.BYTES_PER_ELEMENT) as InstanceType<T>;
}

/**
 * A kernel on the fake device: `body` runs at launch with the launch's arguments (FakeBuffers and scalars), and may
 * throw a CudaError as a faulting kernel would. Enough of Kernel for check() and references.
 */
export function fakeKernel(
  device: FakeDevice,
  name: string,
  signature: readonly string[],
  body: (args: unknown[]) => void,
) {
  const kernel = {
    name,
    signature,
    device,
    launches: 0,
    launch(_config: unknown, ...args: unknown[]): void {
      kernel.launches++;
      body(args);
    },
  };
  return kernel;
}
