// SPDX-License-Identifier: MIT
// The dashboard's section for a Python reference (src/dashboard/report.ts): what it was, where it ran and its timing,
// or why it was not timed; every stored field read as untrusted JSON (escaped, wrong types ignored).
import { describe, expect, it } from 'vitest';
import { pythonCandidateSection, pythonReferenceSection } from '../../src/dashboard/report.js';

const html = (v: unknown): string => String(pythonReferenceSection(v));

describe('the Python reference section', () => {
  it('shows the kernel, its runtime and its timing', () => {
    const out = html({
      type: 'torch',
      entry: 'Model.forward',
      loadMs: 812.5,
      runtime: { python: '3.12.3', torch: '2.11.0+cu130', device: 'cuda' },
      timing: {
        stats: { median: 0.0123, ciLow: 0.012, ciHigh: 0.0125, n: 60 },
        stopReason: 'precision',
        timer: 'cuda-events',
      },
    });
    expect(out).toContain('Python reference');
    expect(out).toContain('Model.forward');
    expect(out).toContain('3.12.3 / 2.11.0+cu130 (cuda)');
    expect(out).toContain('95 % interval');
    expect(out).toContain('cuda-events');
  });

  it('says why it was not timed, escapes what it shows, and ignores fields of the wrong type', () => {
    const out = html({
      type: 'torch',
      entry: '<script>alert(1)</script>',
      notTimed: 'the kernel did not pass its check',
      timing: { stats: { median: 'fast' } },
    });
    expect(out).toContain('the kernel did not pass its check');
    expect(out).not.toContain('<script>');
    expect(out).toContain('&lt;script&gt;');
    expect(html(undefined)).toBe('');
    expect(html('torch')).toBe('');
  });

  it('shows a Python candidate the same way, under its own title', () => {
    const stored = {
      type: 'triton',
      entry: 'add',
      builds: 'kept',
      timing: { stats: { median: 0.02, n: 40 }, timer: 'cuda-events' },
    };
    const out = String(pythonCandidateSection(stored));
    expect(out).toContain('Python kernel');
    expect(out).toContain('kept from an earlier job (no cold build)');
    expect(String(pythonCandidateSection({ ...stored, builds: 'new' }))).toContain('made by this job');
    expect(String(pythonCandidateSection({ ...stored, builds: '<b>' }))).not.toContain('Builds');
    expect(out).toContain('id="python-candidate"');
    expect(out).not.toContain('Python reference');
    expect(out).toContain('triton');
  });
});
