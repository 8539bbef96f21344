// SPDX-License-Identifier: MIT
// What makes two submissions the same one: a hash of the job and its options, however their JSON is written (an
// Idempotency-Key's retry must carry the same body; another body under the same key is a 422).
import { createHash } from 'node:crypto';

/** sha256 of a value's canonical JSON (keys sorted): the same job and options, however written, hash the same. */
export function hashOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}
