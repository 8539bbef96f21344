// SPDX-License-Identifier: MIT
// The dashboard's problems pages (server/src/dashboard/problem-page.ts) through inject(), as a browser without
// JavaScript gets them: the list of the problems served, and a problem with cases' page with its dimensions, public
// cases (the hidden ones only counted), and its leaderboard by display name, a page at a time and per GPU class;
// never a principal, a job, a source or a hidden case; everything escaped; 404 and 400 pages for what is not there.
import { rmSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/shared.js';
import { newJobId } from '../../src/store/ids.js';
import { ProblemRegistry } from '../../src/submit/problems.js';
import { auth, closeApps, harness, namer, type Who } from '../support/app-harness.js';
import { ADD, ADD_FILES, ADD_PROBLEM, FILL_FILES, HIDDEN_MARKS, registry } from '../support/cases-problem.js';
import { settled } from '../support/helpers.js';

const HTML = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
const dirs: string[] = [];
afterEach(closeApps);
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** 'add' with a description that is markup, and the single-shape 'fill'. */
const MARKUP = { ...ADD_PROBLEM, description: 'c = a + b <img src=x onerror=alert(1)>' };
const problems = (): ProblemRegistry =>
  ProblemRegistry.load(registry({ ...ADD_FILES, 'add/problem.json': MARKUP, ...FILL_FILES }, dirs));

function page(app: App, url: string, who: Who = 'viewer') {
  return app.inject({ method: 'GET', url, headers: { ...HTML, ...auth(who) } });
}

/** The text of a page's leaderboard rows: rank, name, score, interval and status, a row each. */
function boardRows(html: string): string[] {
  const board = html.slice(html.indexOf('id="leaderboard"'));
  return [...board.matchAll(/<tr><td data-label="Rank" class="num">(\d+)<\/td>\s*<td[^>]*>([^<]*)<\/td>/g)].map(
    ([, rank, name]) => `${rank} ${name}`,
  );
}

describe('GET /problems', () => {
  it('lists the problems served: one with cases links to its page, a single-shape one does not', async () => {
    const { app } = await harness({ problems: problems() });
    const res = await page(app, '/problems');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.body).toContain('<a href="/problems/add">add</a>');
    expect(res.body).toContain('2 public, 2 hidden cases');
    expect(res.body).toContain('<td data-label="Problem">fill</td>');
    expect(res.body).toContain('c = a + b &lt;img src=x onerror=alert(1)&gt;');
    expect(res.body).not.toContain('<img src=x');
    for (const mark of HIDDEN_MARKS) expect(res.body, mark).not.toContain(mark);
  });
});

describe('GET /problems/{name}', () => {
  it('shows the dimensions, the public cases, the hidden ones counted, and the board by display name', async () => {
    const { app, service } = await harness({ problems: problems() });
    const name = await namer(app);
    const ids: string[] = [];
    for (const who of ['alice', 'bob'] as const) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/evaluations',
        headers: auth(who),
        payload: { problem: 'add', source: ADD, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 },
      });
      ids.push((res.json() as { id: string }).id);
      await settled(service, ids.at(-1)!);
    }
    const res = await page(app, '/problems/add');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain('<h1>add</h1>');
    expect(res.body).toContain('c = a + b &lt;img src=x onerror=alert(1)&gt;');
    expect(res.body).toContain('<td data-label="Bounds" class="num">1 – 1048576</td>');
    expect(res.body).toContain('<td data-label="Dimensions" class="mono">n=1024</td>');
    expect(res.body).toContain('and 2 hidden cases');
    expect(res.body).toContain('Leaderboard on H200');
    expect(boardRows(res.body)).toEqual([`1 ${name('alice')}`, `2 ${name('bob')}`]);
    for (const secret of ['alice', 'bob', ...ids, 'extern "C"', '<img src=x', ...HIDDEN_MARKS]) {
      expect(res.body, secret).not.toContain(secret);
    }
  });

  it('pages the board and links the GPU classes', async () => {
    const { app, service } = await harness({ problems: problems() });
    const name = await namer(app);
    const T0 = Date.UTC(2026, 10, 23, 12);
    for (let i = 0; i < 60; i++) {
      const principal = `p${i}`;
      const [score, submittedAt] = [100 - i, T0 + i];
      await service.store.recordScore({
        ...{ problem: 'add', gpuClass: 'H100', principal, displayName: name(principal), score },
        ...{ scoreLow: score, scoreHigh: score, jobId: newJobId(submittedAt), submittedAt, status: 'provisional' },
      });
    }
    const first = await page(app, '/problems/add?gpuClass=H100');
    expect(boardRows(first.body)).toHaveLength(50);
    expect(boardRows(first.body)[0]).toBe(`1 ${name('p0')}`);
    expect(first.body).toContain('<a rel="next" href="/problems/add?gpuClass=H100&amp;offset=50">Next page</a>');
    // The board shown, and the other class served here (the fake pool's H200).
    expect(first.body).toContain('<strong aria-current="page">H100</strong>');
    expect(first.body).toContain('<a href="/problems/add?gpuClass=H200">H200</a>');
    const second = await page(app, '/problems/add?gpuClass=H100&offset=50');
    expect(boardRows(second.body)).toEqual(Array.from({ length: 10 }, (_, i) => `${51 + i} ${name(`p${50 + i}`)}`));
    expect(second.body).toContain('<a href="/problems/add?gpuClass=H100">First page</a>');
    expect(second.body).not.toContain('rel="next"');
    expect((await page(app, '/problems/add')).body).toContain('No entry on H200 yet.');
  });

  it('answers 404 for a problem not served with cases and 400 for a hostile class or offset, as pages', async () => {
    const { app } = await harness({ problems: problems() });
    for (const url of ['/problems/nothing', '/problems/fill', '/problems/..%2Fadd', '/problems/%3Cb%3E']) {
      const res = await page(app, url);
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.body).not.toContain('<b>');
    }
    const bad = ['?gpuClass=%3Cb%3E', '?gpuClass=H200%20x', '?offset=-1', '?offset=1e3', '?offset=100001', '?offset=x'];
    for (const query of bad) {
      const res = await page(app, `/problems/add${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.body).toContain('Bad request');
      expect(res.body).not.toContain('<b>');
    }
  });

  it('needs the read scope: a browser without a session is sent to sign in', async () => {
    const { app } = await harness({ problems: problems() });
    const res = await app.inject({ method: 'GET', url: '/problems/add', headers: HTML });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/signin?next=${encodeURIComponent('/problems/add')}`);
    expect((await app.inject({ method: 'GET', url: '/problems' })).statusCode).toBe(401);
  });
});
