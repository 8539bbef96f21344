// SPDX-License-Identifier: MIT
// An API node's view of the GPUs (server/src/cluster/pool.ts) over a fake registry: a recheck before a refusal reads
// the registry again, concurrent rechecks share one read, and a burst of them costs at most one read per recheckMs.
import { describe, expect, it } from 'vitest';
import type { AgentEntry, RedisClusterBus } from '../../src/cluster/bus.js';
import { ClusterPool } from '../../src/cluster/pool.js';
import { fakeGpus } from '../support/fake-pool.js';

function agent(atMs: number): AgentEntry {
  const [gpu] = fakeGpus(1);
  const slot = {
    uuid: gpu!.uuid,
    name: gpu!.name,
    arch: gpu!.arch,
    classes: ['H200', 'sm_90', 'any'],
    state: 'idle' as const,
    jobs: 0,
    restarts: 0,
    lastError: undefined,
    shared: false,
    totalMemoryBytes: 150e9,
  };
  return {
    agentId: 'a1',
    host: 'f001',
    pid: 1,
    classes: slot.classes,
    slots: [slot],
    unavailableReason: undefined,
    atMs,
  };
}

/** A registry that starts empty; `register()` adds an agent. Counts the reads. */
function fakeRegistry() {
  let entries: AgentEntry[] = [];
  const registry = {
    reads: 0,
    register: () => (entries = [agent(0)]),
    /** A Redis restart without persistence: the registry is empty until the agents announce again. */
    empty: () => (entries = []),
    bus: {
      agents: async () => {
        registry.reads++;
        await new Promise((resolve) => setTimeout(resolve, 5));
        return entries;
      },
    } as unknown as RedisClusterBus,
  };
  return registry;
}

describe('ClusterPool.recheck', () => {
  it('sees an agent that registered after the last timed read; concurrent rechecks share one read', async () => {
    let nowMs = 1000;
    const registry = fakeRegistry();
    const pool = new ClusterPool({ bus: registry.bus, refreshMs: 60_000, recheckMs: 250, now: () => nowMs });
    await pool.start();
    expect(pool.unavailableReason).toBe('no GPU agent is connected');
    registry.register();
    // The timed read is a minute away: without a recheck the pool would refuse for that long.
    expect(pool.unavailableReason).toBe('no GPU agent is connected');
    const readsBefore = registry.reads;
    await Promise.all([pool.recheck(), pool.recheck(), pool.recheck()]);
    expect(registry.reads).toBe(readsBefore + 1);
    expect(pool.unavailableReason).toBeUndefined();
    expect(pool.serves('H200')).toBe(true);

    // Within recheckMs of the last read a recheck reads nothing; after it, once more.
    nowMs += 100;
    await pool.recheck();
    expect(registry.reads).toBe(readsBefore + 1);
    nowMs += 200;
    await pool.recheck();
    expect(registry.reads).toBe(readsBefore + 2);
    await pool.stop();
  });
});

describe('ClusterPool.unavailableRetryAfterSeconds', () => {
  it('asks for a retry in seconds while agents seen a moment ago re-announce, else in a minute', async () => {
    let nowMs = 1000;
    const registry = fakeRegistry();
    const pool = new ClusterPool({ bus: registry.bus, refreshMs: 60_000, now: () => nowMs });
    await pool.start();
    // No agent ever: a person must start one.
    expect(pool.unavailableRetryAfterSeconds).toBe(60);
    registry.register();
    await pool.refresh();
    expect(pool.unavailableReason).toBeUndefined();
    // Redis restarted: the registry is empty for a moment, and the agents are back within their next announcement.
    registry.empty();
    nowMs += 1500;
    await pool.refresh();
    expect(pool.unavailableReason).toBe('no GPU agent is connected');
    expect(pool.unavailableRetryAfterSeconds).toBe(2);
    // A minute on, none came back: they are gone.
    nowMs += 60_000;
    await pool.refresh();
    expect(pool.unavailableRetryAfterSeconds).toBe(60);
    await pool.stop();
  });
});
