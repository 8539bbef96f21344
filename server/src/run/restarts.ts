// SPDX-License-Identifier: MIT
// A slot's restart bookkeeping: why it replaced its worker (a failed start, a kill for a deadline or a cancel, a
// crash ...), counted in all and per reason for /v1/gpus and the metrics.
import type { SlotOutcome } from './pool.js';

/** Why a slot replaced its worker (the metrics' label). */
export type RestartReason =
  'start-failed' | 'spare-exited' | 'idle-exit' | 'exit-before-job' | 'timeout' | 'cancelled' | 'protocol' | 'crash';

/** The restarts of one slot: in all, and by reason (a reason appears once it has happened). */
export class RestartCounts {
  #total = 0;
  readonly #byReason: Partial<Record<RestartReason, number>> = {};

  count(reason: RestartReason): void {
    this.#total++;
    this.#byReason[reason] = (this.#byReason[reason] ?? 0) + 1;
  }

  get total(): number {
    return this.#total;
  }

  /** A copy of the counts by reason. */
  byReason(): Partial<Record<RestartReason, number>> {
    return { ...this.#byReason };
  }
}

/** A killed job's child: killed for its deadline, a cancel, or a broken protocol. */
export function killReasonOf(outcome: SlotOutcome): RestartReason {
  return outcome.kind === 'timeout' ? 'timeout' : outcome.kind === 'cancelled' ? 'cancelled' : 'protocol';
}
