// SPDX-License-Identifier: MIT
// Large literals split out of a job by hash and put back in their places (server/src/store/literals.ts).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { joinLiterals, splitLiterals } from '../../src/store/literals.js';

const MIN = 100; // longer than a hash (64 hex digits)
const big = (c: string) => c.repeat(MIN);

describe('literals stored by hash', () => {
  it('leaves a job without long strings as its JSON', () => {
    const job = { source: 'short', args: ['ptr:f32[4]', { init: { base64: 'AAAA' } }] };
    expect(splitLiterals(job, MIN)).toEqual({ json: JSON.stringify(job), literals: [] });
  });

  it('takes out every long string with its JSON pointer and hash, and puts each back', () => {
    const job = {
      args: ['i32=1', { kind: 'buffer', init: { kind: 'data', base64: big('A') } }, `x@ptr:u8[16]=data(${big('B')})`],
      reference: { expected: { 'a/b~c': { base64: big('A') } } },
    };
    const { json, literals } = splitLiterals(job, MIN);
    expect(literals.map(({ path, hash }) => ({ path, hash }))).toEqual([
      { path: '/args/1/init/base64', hash: createHash('sha256').update(big('A')).digest('hex') },
      {
        path: '/args/2',
        hash: createHash('sha256')
          .update(`x@ptr:u8[16]=data(${big('B')})`)
          .digest('hex'),
      },
      { path: '/reference/expected/a~1b~0c/base64', hash: literals[0]!.hash },
    ]);
    expect(json).not.toContain(big('A'));
    expect(json).not.toContain(big('B'));
    expect(joinLiterals(json, literals)).toEqual(job);
  });

  it('refuses a literal whose place is not in the job (an inconsistent store), instead of inventing one', () => {
    expect(() => joinLiterals('{"args":[]}', [{ path: '/args/0/init/base64', text: 'x' }])).toThrow(
      "A stored literal's place /args/0/init/base64 is not in its job",
    );
  });

  it('substitutes only at the stored places: a client string that looks like a hash stays as it was', () => {
    const hash = createHash('sha256').update(big('A')).digest('hex');
    const job = { name: hash, args: [big('A')] };
    const { json, literals } = splitLiterals(job, MIN);
    expect(literals).toHaveLength(1);
    expect(joinLiterals(json, literals)).toEqual(job);
  });
});
