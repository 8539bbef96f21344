// SPDX-License-Identifier: MIT
// The worker protocol's guards, and its messages through the serialisation the IPC channel uses ('advanced': the
// structured clone of v8.serialize), which carries typed arrays and bigints as they are.
import { serialize, deserialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import {
  type ChildMessage,
  type ParentMessage,
  PROTOCOL_VERSION,
  WORKER_ENV,
  isChildMessage,
  isParentMessage,
} from '../../src/run/protocol.js';
import { describeMessage } from '../../src/run/child.js';

const job: ParentMessage = {
  v: 1,
  t: 'job',
  id: 'j1',
  job: { source: 'x', kernel: 'k', grid: [1, 1, 1], block: 256, args: ['i32=1'] },
  seedSalt: 'salt',
  deadlines: { jobMs: 1000, phaseMs: { compile: 500 } },
};

describe('protocol', () => {
  it('accepts every child message of this version, and nothing else', () => {
    const ok: ChildMessage[] = [
      { v: 1, t: 'ready', pid: 1 },
      { v: 1, t: 'phase', id: 'j', phase: 'check', atMs: 0 },
      { v: 1, t: 'progress', id: 'j', progress: { kind: 'phase', phase: 'time' } },
      { v: 1, t: 'fatal', id: undefined, error: { code: 'NO_DEVICE', message: 'none' } },
      { v: 1, t: 'gpu', id: 'j' },
    ];
    for (const m of ok) expect(isChildMessage(m)).toBe(true);
    const bad: unknown[] = [null, 'ready', 7, [], {}, { v: 2, t: 'ready', pid: 1 }, { v: 1, t: 'job' }, { t: 'ready' }];
    for (const m of bad) expect(isChildMessage(m)).toBe(false);
  });

  it('accepts every parent message of this version, and nothing else', () => {
    expect(isParentMessage(job)).toBe(true);
    expect(isParentMessage({ v: 1, t: 'shutdown' })).toBe(true);
    expect(isParentMessage({ v: 1, t: 'gpu', id: 'j' })).toBe(true);
    for (const m of [null, 'job', { v: 1, t: 'ready' }, { v: 0, t: 'shutdown' }])
      expect(isParentMessage(m)).toBe(false);
  });

  it('survives the advanced serialisation, typed arrays and bigints included', () => {
    expect(deserialize(serialize(job))).toEqual(job);
    const progress = {
      v: 1,
      t: 'progress',
      id: 'j',
      progress: { kind: 'custom', data: new Float32Array([1, 2]), n: 2n },
    };
    const back = deserialize(serialize(progress)) as typeof progress;
    expect(back.progress.data).toBeInstanceOf(Float32Array);
    expect(back.progress.n).toBe(2n);
    expect(isChildMessage(back)).toBe(true);
  });

  it('describes an unexpected message briefly, whatever it is', () => {
    expect(describeMessage({ a: 1n })).toBe('{"a":"1n"}');
    expect(describeMessage(undefined)).toBe('undefined');
    expect(describeMessage('x'.repeat(500))).toHaveLength(203);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(describeMessage(cyclic)).toBe('[object Object]');
  });

  it('names the environment it gives a worker', () => {
    expect(PROTOCOL_VERSION).toBe(1);
    expect(WORKER_ENV).toEqual({
      isolation: 'CUDAKIT_WORKER_ISOLATION',
      guard: 'CUDAKIT_WORKER_GUARD',
      context: 'CUDAKIT_WORKER_CONTEXT',
    });
  });
});
