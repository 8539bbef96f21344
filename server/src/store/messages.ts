// SPDX-License-Identifier: MIT
// How the stores' messages show a value they refuse (common.ts's checks and leaderboard.ts's), in the project's one
// message format: 'Expected … for name but received <value>'.

/** 'ev_…' of type string, 5 of type number: the value in the project's message format. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value.slice(0, 40)}' of type string`;
  if (value === null || value === undefined) return String(value);
  return typeof value === 'object' ? 'an object' : `${String(value)} of type ${typeof value}`;
}
