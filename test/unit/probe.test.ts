import { describe, expect, it } from 'vitest';
import { probe } from '../../lib/index.js';

describe('probe()', () => {
  it('never throws and is self-consistent', () => {
    const p = probe();
    expect(typeof p.ok).toBe('boolean');
    expect(p.ok).toBe(p.deviceCount > 0);
    if (!p.ok) expect(p.reason).toBeTruthy();
    if (p.nvrtcVersion !== undefined) expect(p.nvrtcVersion).toMatch(/^\d+\.\d+$/);
  });
});
