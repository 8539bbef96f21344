// SPDX-License-Identifier: MIT
// GpuGate: one GPU's turns. A GPU has one slot per lane (local-pool.ts), each running one job in a worker of its own,
// so that the next job's CPU work (its worker's start, validation, NVRTC) runs while another job uses the GPU. Their
// GPU work never overlaps: a job asks the gate for its turn before its first GPU work (protocol.ts, `gpu`) and holds
// it until its worker has exited (its CUDA context gone) or, after a kill, until the GPU has dropped its PID. Turns are
// given in the order asked. The gate also carries what concerns every lane of the GPU: a quarantine (the GPU keeps a
// killed worker's PID, or a worker cannot be killed) takes all of them out, and the PID the GPU kept is the GPU's.

export interface GpuQuarantine {
  reason: string;
  /** The killed worker's PID that the GPU kept, which a reprobe waits for the GPU to drop. */
  heldPid: number | undefined;
}

export class GpuGate {
  #holder: string | undefined;
  readonly #waiting: { id: string; granted: () => void }[] = [];
  #quarantine: GpuQuarantine | undefined;
  readonly #quarantineListeners = new Set<(q: GpuQuarantine, from: object) => void>();

  /** The job whose turn it is, or undefined. */
  get holder(): string | undefined {
    return this.#holder;
  }

  /** How many jobs wait for their turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Asks for job `id`'s turn: `granted` is called once it has come (at once when the GPU is free). */
  request(id: string, granted: () => void): void {
    if (this.#holder === id || this.#waiting.some((w) => w.id === id)) return;
    if (this.#holder === undefined) {
      this.#holder = id;
      granted();
    } else this.#waiting.push({ id, granted });
  }

  /** Ends job `id`'s turn, or its wait for one; the next waiting job's turn comes. Idempotent. */
  release(id: string): void {
    const at = this.#waiting.findIndex((w) => w.id === id);
    if (at >= 0) this.#waiting.splice(at, 1);
    if (this.#holder !== id) return;
    this.#holder = undefined;
    const next = this.#waiting.shift();
    if (next === undefined) return;
    this.#holder = next.id;
    next.granted();
  }

  /** The GPU's quarantine, while it lasts. */
  get quarantined(): GpuQuarantine | undefined {
    return this.#quarantine;
  }

  /** Quarantines the GPU: every other lane (`from` is the lane that found why) is told, once. */
  quarantine(q: GpuQuarantine, from: object): void {
    if (this.#quarantine !== undefined) return;
    this.#quarantine = q;
    for (const listener of [...this.#quarantineListeners]) listener(q, from);
  }

  /** Called with each quarantine and the lane it came from. */
  onQuarantine(listener: (q: GpuQuarantine, from: object) => void): void {
    this.#quarantineListeners.add(listener);
  }

  /** The GPU is usable again (a reprobe found its held PID dropped, or it kept none). */
  clearQuarantine(): void {
    this.#quarantine = undefined;
  }
}
