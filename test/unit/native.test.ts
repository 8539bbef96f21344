// SPDX-License-Identifier: MIT
// lib/core/native.ts: the object every native call goes through.
import { describe, expect, it } from 'vitest';
import { runScript } from '../child.js';

describe('the native layer object', () => {
  it('has fast properties, unlike the addon exports it copies, so a method lookup is not a hash probe', () => {
    // V8's own predicate, in a child process: it needs --allow-natives-syntax, which this process was not started with.
    const r = runScript(
      `
      import { createRequire } from 'node:module';
      import { getNative } from './lib/core/native.ts';
      const exports = createRequire(import.meta.url)('node-gyp-build')('.');
      const n = getNative();
      console.log(JSON.stringify({
        copied: n !== exports && Object.keys(n).length === Object.keys(exports).length,
        exportsFast: %HasFastProperties(exports),
        nativeFast: %HasFastProperties(n),
      }));
    `,
      { nodeFlags: ['--allow-natives-syntax'] },
    );
    expect(r.status, r.stderr).toBe(0);
    // exportsFast is false on Node 20 (why the copy is made); a V8 that keeps the exports fast is fine too.
    const seen = JSON.parse(r.stdout.trim()) as { copied: boolean; exportsFast: boolean; nativeFast: boolean };
    expect(seen.copied).toBe(true);
    expect(seen.nativeFast).toBe(true);
  });
});
