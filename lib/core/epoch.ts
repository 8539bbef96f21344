// SPDX-License-Identifier: MIT
// The launch epoch: a count of the streams disposed, which a launch config kept by a kernel cannot see for itself (it
// may name the stream), so that such a config is checked again at its next launch. Read at every launch with a kept
// config: one number, where reading the stream's handle would touch the stream and its handle.

/** Read it, never assign it (an imported binding is read-only; advanceLaunchEpoch() moves it). */
export let launchEpoch = 0;

/** A stream was disposed: kept launch configs are checked again at their next launch. */
export function advanceLaunchEpoch(): void {
  launchEpoch++;
}
