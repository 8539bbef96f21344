// SPDX-License-Identifier: MIT
// The one bounded wait of the tests: it polls a condition and throws on timeout, naming what it waited for, so that a
// wait can never end quietly and let the test go on as if the condition held.

export interface UntilOptions {
  /** How long to wait; default 5 s. */
  timeoutMs?: number;
  /** What the wait is for, as the error says it; a function is asked at the timeout (to show the state then). */
  what?: string | (() => string);
  /** How long between two looks; default 5 ms. */
  pollMs?: number;
}

/** Polls `condition` until it holds; throws after `timeoutMs`, naming `what` (by default, the condition's code). */
export async function until(
  condition: () => boolean | Promise<boolean>,
  { timeoutMs = 5_000, what, pollMs = 5 }: UntilOptions = {},
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) {
      const said = typeof what === 'function' ? what() : (what ?? String(condition).replace(/\s+/g, ' '));
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${said}`);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** Waits until a GPU slot is idle; the error shows the slot as it stood then. */
export function untilIdle(slot: { readonly state: string; info(): unknown }, timeoutMs = 5_000): Promise<void> {
  return until(() => slot.state === 'idle', {
    timeoutMs,
    what: () => `the slot to be idle: ${JSON.stringify(slot.info())}`,
  });
}
