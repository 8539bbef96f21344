// SPDX-License-Identifier: MIT
// Problems with cases through the v1 API, over a fake pool: GET /v1/problems shows a problem's dimensions, public
// cases and arguments and only the number of its hidden cases.
import { rmSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ProblemRegistry } from '../../src/submit/problems.js';
import { auth, closeApps, harness } from '../support/app-harness.js';
import { ADD_FILES, ADD_PROBLEM, HIDDEN_MARKS, registry } from '../support/cases-problem.js';

const dirs: string[] = [];
afterEach(closeApps);
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const FILL = { description: 'y = 1', args: ['y@ptr:f32[32]:out', 'n@i32=32'], timing: { bytes: 128 } };
const problems = (): ProblemRegistry =>
  ProblemRegistry.load(
    registry(
      { ...ADD_FILES, 'fill/problem.json': FILL, 'fill/reference.mjs': 'export const reference = ([y]) => y.fill(1);' },
      dirs,
    ),
  );

/** No hidden case's name or dimensions anywhere in `text`. */
function expectNoHidden(text: string): void {
  for (const mark of HIDDEN_MARKS) expect(text, `'${mark}' leaked`).not.toContain(mark);
}

describe('GET /v1/problems', () => {
  it('lists a problem with cases: its dimensions, public cases and arguments; its hidden cases counted', async () => {
    const { app } = await harness({ problems: problems() });
    const res = await app.inject({ method: 'GET', url: '/v1/problems', headers: auth('viewer') });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      problems: [
        {
          name: 'add',
          description: 'c = a + b',
          kind: 'cases',
          args: ADD_PROBLEM.args,
          reference: 'cuda',
          dims: { n: { min: 1, max: 1 << 20, description: 'elements' } },
          cases: [
            { name: 'small', dims: { n: 1024 } },
            { name: 'n=4096', dims: { n: 4096 } },
          ],
          hiddenCases: 2,
          bytes: '12 * n',
          flops: 'n',
        },
        { name: 'fill', description: 'y = 1', args: FILL.args, reference: 'javascript', bytes: 128 },
      ],
    });
    expectNoHidden(res.body);
  });
});
