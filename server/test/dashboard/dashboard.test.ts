// SPDX-License-Identifier: MIT
// The dashboard (server/src/dashboard): its pages through inject(), as a browser without JavaScript gets them
// (escaping of what a job holds, filters and paging, 404s, the way to sign in, sessions and CSRF, the summary as
// JSON, the assets and the Content-Security-Policy), /v1/stream over a loopback socket, and then the whole thing in
// headless Chromium (Debian's /usr/bin/chromium through playwright-core; no browser is ever downloaded): a job
// reaching its verdict live, its result with the SVG histogram, signing in and out, the keyboard, a 390 px screen,
// the bytes a page costs, and no console error or CSP violation. Without the binary the browser tests skip and say
// why, unless CUDAKIT_REQUIRE_SERVICES=1 (then they fail). CUDAKIT_WRITE_SCREENSHOT=1 writes docs/img/dashboard.png.
import { existsSync, mkdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { BenchResult, BenchSample, CheckResult, DeviceMetrics, EvalReport } from 'cudakit';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/shared.js';
import { parseTokens, tokenDigest } from '../../src/http/auth.js';
import { Sessions } from '../../src/dashboard/session.js';
import { newJobId } from '../../src/store/ids.js';
import { H200_BENCH_ENV } from '../../../test/support/devices.js';
import { SAXPY } from '../../../test/support/kernels.js';
import { until } from '../../../test/support/until.js';
import { TOKENS, auth, closeApps, harness, keepApp, type Harness, type Who } from '../support/app-harness.js';
import { fakeGpus, scriptByName } from '../support/fake-pool.js';
import { body, settled } from '../support/helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = fileURLToPath(new URL('../../../docs/img/dashboard.png', import.meta.url));
const HTML = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

afterEach(closeApps);

// ---------------------------------------------------------------------------------------------------------------
// A result with everything a report can show: what a GPU worker sends for a saxpy with a reference kernel, timed,
// with device metrics and one compile warning.

// saxpy with a variable it never uses, on line 3: the compile warning the report shows in the source.
const UNUSED = SAXPY.replace('  if (i < n)', '  int unused = 0;\n  if (i < n)');
const N = 16 * 2 ** 20;

function saxpyBody(name: string): Record<string, unknown> {
  return {
    name,
    source: { text: UNUSED, name: 'saxpy.cu' },
    kernel: 'saxpy',
    grid: N / 256,
    block: 256,
    args: ['f32=2.5', 'ptr:f32[16M]=uniform(-1,1)', 'ptr:f32[16M]=uniform(-1,1):out', `i32=${N}`],
    reference: { source: { text: SAXPY, name: 'reference.cu' }, kernel: 'saxpy' },
    timing: { bytes: 12 * N },
  };
}

/** Type-7 quantile of sorted values. */
function quantile(sorted: readonly number[], p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  return sorted[lo]! + (h - lo) * ((sorted[Math.min(lo + 1, sorted.length - 1)] ?? sorted[lo]!) - sorted[lo]!);
}

function timing(): BenchResult {
  let seed = 7;
  const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const samples: BenchSample[] = Array.from({ length: 400 }, (_, i) => {
    const noise = (random() + random() + random() - 1.5) * 0.0009;
    const rejected = i % 97 === 50;
    const gpuMs = 0.0524 + noise + (random() < 0.04 ? 0.002 * random() : 0) + (rejected ? 0.006 : 0);
    return {
      gpuMs,
      eventMs: gpuMs + 0.0021,
      launchUs: 4.1,
      clockMHz: rejected ? 1290 : 1980,
      inputSet: i % 4,
      rejected,
    };
  });
  const accepted = samples.filter((s) => !s.rejected).map((s) => s.gpuMs);
  const sorted = [...accepted].sort((a, b) => a - b);
  const mean = accepted.reduce((a, b) => a + b, 0) / accepted.length;
  const stdev = Math.sqrt(accepted.reduce((a, b) => a + (b - mean) ** 2, 0) / (accepted.length - 1));
  const median = quantile(sorted, 0.5);
  return {
    name: 'saxpy',
    mode: 'cold',
    preset: 'default',
    timer: 'cupti',
    samples,
    stats: {
      n: accepted.length,
      min: sorted[0]!,
      max: sorted[sorted.length - 1]!,
      mean,
      median,
      p10: quantile(sorted, 0.1),
      p25: quantile(sorted, 0.25),
      p75: quantile(sorted, 0.75),
      p90: quantile(sorted, 0.9),
      p99: quantile(sorted, 0.99),
      stdev,
      relStdev: stdev / mean,
      iqr: quantile(sorted, 0.75) - quantile(sorted, 0.25),
      mad: 0.0002,
      ciLow: quantile(sorted, 0.46),
      ciHigh: quantile(sorted, 0.54),
    },
    rejected: samples.length - accepted.length,
    warmupRuns: 20,
    wallMs: 1840,
    converged: true,
    stopReason: 'precision',
    clockMHz: 1980,
    throughput: {
      gbPerS: (12 * N) / (median * 1e6),
      percentOfPeakBandwidth: 89.4,
      percentOfPeakBandwidthLow: 88.7,
      percentOfPeakBandwidthHigh: 90.1,
      peakBandwidth: { gbPerS: 4305, lowGbPerS: 4290, highGbPerS: 4318, method: 'memcpy', repetitions: 20 },
    },
    // Timed with CUPTI, by another NVRTC and Node than the common fake.
    env: {
      ...H200_BENCH_ENV,
      nvrtcVersion: '12.8',
      node: 'v20.20.2',
      eventOverheadMs: 0.0021,
      cupti: { available: true, path: '/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13', version: 130001 },
    },
    warnings: [],
  };
}

function checkResult(): CheckResult {
  const trials = [0, 1, 2, 3, 4].map((trial) => ({
    trial,
    seed: `0x${(0x9e3779b97f4a7c15n + BigInt(trial)).toString(16)}`,
    passed: true,
    defence: undefined,
    mismatches: [],
    detail: undefined,
    error: undefined,
    maxAbsError: 2.38e-7,
    maxRelError: 1.19e-7,
    toleranceUsed: 0.37,
    relNormError: 3.1e-8,
    matchedRatio: 1,
  }));
  return {
    passed: true,
    defence: undefined,
    trials,
    mismatches: [],
    error: undefined,
    nondeterministicElements: 0,
    nondeterministicBeyondTolerance: 0,
    summary: 'PASS: 5 trials, worst element at 37% of its tolerance (max abs error 2.38e-7, max rel error 1.19e-7)',
    maxAbsError: 2.38e-7,
    maxRelError: 1.19e-7,
    toleranceUsed: 0.37,
    relNormError: 3.1e-8,
    matchedRatio: 1,
  };
}

function deviceMetrics(): DeviceMetrics {
  const speedOfLight = {
    'gpu__time_duration.sum': { value: 50_112, unit: 'nsecond' },
    'dram__throughput.avg.pct_of_peak_sustained_elapsed': { value: 91.84, unit: '%' },
    'sm__throughput.avg.pct_of_peak_sustained_elapsed': { value: 18.2, unit: '%' },
  };
  const memory = {
    'dram__bytes_read.sum': { value: 134_217_728, unit: 'byte' },
    'dram__bytes_write.sum': { value: 67_108_864, unit: 'byte' },
    'lts__t_sector_hit_rate.pct': { value: 0.41, unit: '%' },
  };
  const occupancy = {
    sm__maximum_warps_per_active_cycle_pct: { value: 100, unit: '%' },
    'sm__warps_active.avg.pct_of_peak_sustained_active': { value: 87.43, unit: '%' },
    launch__occupancy_limit_registers: { value: 8, unit: 'block' },
  };
  return {
    kernel: 'saxpy',
    metrics: { ...speedOfLight, ...memory, ...occupancy },
    groups: { speedOfLight, memory, occupancy },
    ncuVersion: '2025.3.1.0',
    command: ['ncu', '--csv', '--page', 'raw'],
    unavailable: [],
    wallMs: 2310,
  };
}

function saxpyReport(name: string): EvalReport & { deviceMetrics: DeviceMetrics } {
  const facts = (role: 'candidate' | 'reference', source: string) => ({
    kernel: 'saxpy',
    loweredName: 'saxpy',
    source,
    target: 'cubin' as const,
    arch: 'sm_90',
    nvrtcVersion: '12.8',
    compileMs: role === 'candidate' ? 38.2 : 35.9,
    cached: false as const,
    flags: ['--gpu-architecture=sm_90', '-std=c++17'],
    log: role === 'candidate' ? 'saxpy.cu(3): warning #177-D: variable "unused" was declared but never referenced' : '',
    diagnostics:
      role === 'candidate'
        ? [
            {
              file: 'saxpy.cu',
              line: 3,
              column: 7,
              severity: 'warning' as const,
              message: 'variable "unused" was declared but never referenced',
            },
          ]
        : [],
    registers: role === 'candidate' ? 16 : 14,
    spillBytes: 0,
    sharedSizeBytes: 0,
    constSizeBytes: 0,
    maxThreadsPerBlock: 1024,
  });
  return {
    name,
    passed: true,
    phase: undefined,
    error: undefined,
    phases: (['validate', 'compile', 'load', 'check', 'time', 'recheck'] as const).map((phase, i) => ({
      phase,
      ms: [0.4, 74.1, 2.2, 61.8, 1840, 22.5][i]!,
    })),
    compile: { candidate: facts('candidate', 'saxpy.cu'), reference: facts('reference', 'reference.cu') },
    check: {
      reference: 'saxpy in reference.cu',
      passed: true,
      requireDeterminism: false,
      before: checkResult(),
      afterTiming: checkResult(),
    },
    timing: timing(),
    comparison: undefined,
    warnings: [],
    deviceMetrics: deviceMetrics(),
  };
}

/** A harness whose 'saxpy…' jobs end with the full report after `delayMs`; other names as the fake pool says. */
async function saxpyHarness(options: Parameters<typeof harness>[0] = {}, delayMs = 20): Promise<Harness> {
  const h = await harness({ gpus: fakeGpus(2), ...options });
  h.pool.script = (job) =>
    job.name?.startsWith('saxpy') === true
      ? { delayMs, outcome: { kind: 'report', report: saxpyReport(job.name), device: undefined } }
      : scriptByName(job);
  return h;
}

// ---------------------------------------------------------------------------------------------------------------
// Helpers

async function submit(app: App, who: Who, payload: object): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/v1/evaluations', headers: auth(who), payload });
  expect(res.statusCode).toBe(202);
  return res.json().id as string;
}

function page(app: App, url: string, headers: Record<string, string> = {}) {
  return app.inject({ method: 'GET', url, headers: { ...HTML, ...headers } });
}

/** The ids of the rows of a list page (the row <template> has an empty one). */
function rowIds(html: string): string[] {
  return [...html.matchAll(/<tr data-id="(ev_[0-9A-Z]+)"/g)].map((m) => m[1]!);
}

function setCookies(res: { headers: Record<string, unknown> }): string[] {
  const h = res.headers['set-cookie'];
  return h === undefined ? [] : Array.isArray(h) ? (h as string[]) : [String(h)];
}

/** name=value pairs of Set-Cookie lines, as a Cookie header. */
function cookieHeader(lines: readonly string[]): string {
  return lines.map((l) => l.split(';')[0]!).join('; ');
}

function csrfOf(html: string): string {
  const token = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  expect(token).toBeDefined();
  return token!;
}

function form(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString();
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** Signs in through the form: the browser's cookies afterwards (CSRF nonce and session). */
async function signIn(app: App, token: string): Promise<string> {
  const signin = await app.inject({ method: 'GET', url: '/signin' });
  const nonce = cookieHeader(setCookies(signin));
  const res = await app.inject({
    method: 'POST',
    url: '/signin',
    headers: { ...FORM, cookie: nonce },
    payload: form({ csrf: csrfOf(signin.body), token, next: '/' }),
  });
  expect(res.statusCode).toBe(303);
  return `${nonce}; ${cookieHeader(setCookies(res))}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Without JavaScript

describe('pages', () => {
  it('escapes everything a job holds: its name, source and messages', async () => {
    const { app, service } = await harness();
    const hostile = `<img src=x onerror=alert(1)>"'&`;
    const source = `// </code></li></ol><script>alert(2)</script>\n${String(body().source)}`;
    const id = await submit(app, 'alice', body('incorrect', { name: `incorrect:${hostile}`, source }));
    await settled(service, id);
    for (const url of ['/', `/evaluations/${id}`]) {
      const res = await page(app, url, auth('alice'));
      expect(res.statusCode).toBe(200);
      expect(res.body).not.toContain('<img src=x');
      expect(res.body).not.toContain('<script>alert');
      expect(res.body).toContain('&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;');
      // The one script is the dashboard's own file; no inline handlers or styles anywhere.
      expect(res.body.match(/<script/g)).toHaveLength(1);
      expect(res.body).toMatch(/<script src="\/assets\/dashboard\.[0-9a-f]{12}\.js" defer><\/script>/);
      expect(res.body).not.toMatch(/<[^>]*\son[a-z]+\s*=/i);
      expect(res.body).not.toMatch(/<[^>]*\sstyle\s*=/i);
    }
    const result = (await page(app, `/evaluations/${id}`, auth('alice'))).body;
    expect(result).toContain('&lt;/code&gt;&lt;/li&gt;&lt;/ol&gt;&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(result).toContain('3 of 32 elements differ'); // the report's error, shown
    expect(result).toContain('data-value="INCORRECT"');
  });

  it('lists only your evaluations, filtered by status and verdict, a page at a time', async () => {
    const { app, service } = await harness({ gpus: fakeGpus(4) });
    const mine: string[] = [];
    for (let i = 0; i < 24; i++) mine.push(await submit(app, 'alice', body(`pass-${i}`)));
    for (let i = 0; i < 3; i++) mine.push(await submit(app, 'alice', body(`incorrect:${i}`)));
    const bobs = await submit(app, 'bob', body('bob-only'));
    for (const id of [...mine, bobs]) await settled(service, id);

    const first = await page(app, '/', auth('alice'));
    expect(first.statusCode).toBe(200);
    const firstIds = rowIds(first.body);
    expect(firstIds).toEqual([...mine].reverse().slice(0, 25)); // newest first
    const next = /<a rel="next" href="([^"]+)"/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
    expect(next).toMatch(/^\/\?cursor=ev_/);
    const second = await page(app, next!, auth('alice'));
    expect(rowIds(second.body)).toEqual([...mine].reverse().slice(25));
    expect(second.body).toContain('>First page</a>');
    expect(second.body).not.toContain('rel="next"');
    expect([...firstIds, ...rowIds(second.body)]).not.toContain(bobs);

    const incorrect = await page(app, '/?status=succeeded&verdict=INCORRECT', auth('alice'));
    expect(rowIds(incorrect.body)).toEqual(mine.slice(24).reverse());
    expect(incorrect.body).toContain('<option selected>INCORRECT</option>');
    const failed = await page(app, '/?status=failed&verdict=', auth('alice'));
    expect(rowIds(failed.body)).toEqual([]);
    expect(failed.body).toContain('No evaluation matches these filters.');

    for (const url of ['/?status=finished', '/?verdict=BROKEN', '/?cursor=nope']) {
      const bad = await page(app, url, auth('alice'));
      expect(bad.statusCode).toBe(400);
      expect(bad.headers['content-type']).toContain('text/html');
    }

    // The admin scope sees every principal's, and may pick one.
    const all = await page(app, '/', auth('root'));
    expect(rowIds(all.body)).toContain(bobs);
    expect(all.body).toContain('<th scope="col">Principal</th>');
    expect(rowIds((await page(app, '/?principal=bob', auth('root'))).body)).toEqual([bobs]);
    // Another principal's name in the URL is ignored without the admin scope.
    expect(rowIds((await page(app, '/?principal=bob', auth('alice'))).body)).not.toContain(bobs);
  });

  it('answers 404 for an unknown evaluation and for anyone else’s', async () => {
    const { app, service } = await harness();
    const bobs = await submit(app, 'bob', body());
    await settled(service, bobs);
    for (const url of ['/evaluations/ev_01ARZ3NDEKTSV4RRFFQ69G5FAV', '/evaluations/nope', `/evaluations/${bobs}`]) {
      const res = await page(app, url, auth('alice'));
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.body).toContain('Not found');
    }
    expect((await page(app, `/evaluations/${bobs}`, auth('bob'))).statusCode).toBe(200);
    expect((await page(app, `/evaluations/${bobs}`, auth('root'))).statusCode).toBe(200);
  });

  it('shows a result: check vs tolerance, histogram, compile facts, metrics, diagnostics in the source', async () => {
    const h = await saxpyHarness({}, 5);
    const id = await submit(h.app, 'alice', { ...saxpyBody('saxpy'), deviceMetrics: true });
    await settled(h.service, id);
    const html = (await page(h.app, `/evaluations/${id}`, auth('alice'))).body;
    expect(html).toContain('data-value="PASSED"');
    expect(html).toMatch(/<meter[^>]* value="0.37"/);
    expect(html).toContain('37.0 %</strong> of its tolerance used by the worst element');
    expect(html).toMatch(/<svg class="chart histogram"/);
    expect(html.match(/<rect class="bar"/g)!.length).toBeGreaterThan(5);
    expect(html).toMatch(/<svg class="chart samples"/);
    expect(html).toContain('<dt>Registers</dt><dd>16 per thread</dd>');
    expect(html).toContain('<dt>Spills</dt><dd>none</dd>');
    expect(html).toContain('100.0 % theoretical, 87.4 % achieved');
    expect(html).toContain('<h3>Speed of light</h3>');
    expect(html).toContain('134,217,728 byte (128 MiB)');
    // The warning under line 3 of the candidate, with a link to it.
    expect(html).toContain('<a href="#L3">line 3</a>');
    expect(html).toMatch(/<li id="L3" class="flagged"><code> {2}int unused = 0;<\/code><span class="diag"/);
    expect(html).toContain('variable &quot;unused&quot; was declared but never referenced');
    expect(html).toContain('<h3>reference: <code>reference.cu</code></h3>');
  });

  it('shows what a job that failed or has not ended has', async () => {
    const { app, service, pool } = await harness();
    const crashed = await submit(app, 'alice', body('crash'));
    await settled(service, crashed);
    const crash = (await page(app, `/evaluations/${crashed}`, auth('alice'))).body;
    expect(crash).toContain('data-value="failed"');
    expect(crash).toContain('data-value="CRASHED"');
    expect(crash).toContain('Segmentation fault');
    expect(crash).toContain('data-follow="false"');

    const running = await submit(app, 'alice', body('hang'));
    const queued = await submit(app, 'alice', body('hang'));
    await until(async () => (await service.get(running))?.phase === 'check');
    const run = (await page(app, `/evaluations/${running}`, auth('alice'))).body;
    expect(run).toContain('data-value="running"');
    expect(run).toContain('data-follow="true"');
    expect(run).toContain('<span class="muted small" data-job-phase>check</span>');
    const wait = (await page(app, `/evaluations/${queued}`, auth('alice'))).body;
    expect(wait).toContain('1st in the queue · 1 of 1 GPU of its class busy');
    await service.cancel(queued);
    pool.finish(running);
    await settled(service, running);
  });

  it('answers GET / with Accept: application/json with the service summary', async () => {
    const { app, service } = await harness({ gpus: fakeGpus(2) });
    await settled(service, await submit(app, 'alice', body()));
    await until(() => service.slots().every((s) => s.state === 'idle'));
    const res = await app.inject({
      method: 'GET',
      url: '/',
      headers: { ...auth('viewer'), accept: 'application/json' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    expect(res.headers.vary).toBe('Accept');
    expect(res.json()).toEqual({
      gpus: fakeGpus(2).map((g) => ({
        uuid: g.uuid,
        name: 'NVIDIA H200',
        arch: 'sm_90',
        state: 'idle',
        jobs: expect.any(Number),
        restarts: 0,
        shared: false,
        lastError: null,
      })),
      reason: null,
      queue: { depth: 0 },
      jobs: { queued: 0, running: 0, succeeded: 1, failed: 0, cancelled: 0 },
      accepting: true,
    });
    const unauthorized = await app.inject({ method: 'GET', url: '/', headers: { accept: 'application/json' } });
    expect(unauthorized.statusCode).toBe(401);
    // The compatible POST / is still the original's compare.
    expect((await app.inject({ method: 'POST', url: '/', headers: auth('alice'), payload: {} })).statusCode).toBe(400);
  });

  it('serves script and style sheet under content hashes, cached for long; pages with a strict CSP', async () => {
    const { app } = await harness({ tokens: undefined });
    const res = await page(app, '/');
    expect(res.statusCode).toBe(200);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toContain('unsafe');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-store');
    const assets = [...res.body.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toHaveLength(2);
    for (const url of assets) {
      const asset = await app.inject({ method: 'GET', url });
      expect(asset.statusCode).toBe(200);
      expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(asset.headers['content-type']).toMatch(url.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
    }
    expect((await app.inject({ method: 'GET', url: '/assets/dashboard.000000000000.js' })).statusCode).toBe(404);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Sessions

describe('sign-in', () => {
  it('sends a browser without a session to the sign-in form, and an API client a 401', async () => {
    const { app } = await harness();
    const home = await page(app, '/');
    expect(home.statusCode).toBe(303);
    expect(home.headers.location).toBe('/signin');
    const deep = await page(app, '/evaluations/ev_01ARZ3NDEKTSV4RRFFQ69G5FAV?x=1');
    expect(deep.headers.location).toBe(
      `/signin?next=${encodeURIComponent('/evaluations/ev_01ARZ3NDEKTSV4RRFFQ69G5FAV?x=1')}`,
    );
    expect((await app.inject({ method: 'GET', url: '/' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/v1/stream' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/v1/evaluations', headers: HTML })).statusCode).toBe(401);
  });

  it('has no sign-in without tokens: every page is the principal local’s', async () => {
    const { app } = await harness({ tokens: undefined });
    const home = await page(app, '/');
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain('<strong>local</strong> <span class="small">(loopback, no sign-in)</span>');
    expect(home.body).not.toContain('/signout');
    expect((await page(app, '/signin')).statusCode).toBe(404);
  });

  it('exchanges a token for an HttpOnly, SameSite=Strict, signed session cookie, for GET routes only', async () => {
    const { app } = await harness();
    const signin = await app.inject({ method: 'GET', url: '/signin?next=%2F%3Fstatus%3Dqueued' });
    expect(signin.statusCode).toBe(200);
    const [nonceCookie] = setCookies(signin);
    expect(nonceCookie).toMatch(/^cudakit_csrf=[\w-]{22}; Path=\/; HttpOnly; SameSite=Strict$/);
    const res = await app.inject({
      method: 'POST',
      url: '/signin',
      headers: { ...FORM, cookie: cookieHeader([nonceCookie!]) },
      payload: form({ csrf: csrfOf(signin.body), token: 'alice-token', next: '/?status=queued' }),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/?status=queued');
    const [session] = setCookies(res);
    expect(session).toMatch(/^cudakit_session=[\w-]+\.[\w-]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    expect(session).not.toContain('alice-token');
    const cookie = cookieHeader([nonceCookie!, session!]);

    const home = await page(app, '/', { cookie });
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain('Signed in as <strong>alice</strong>');
    expect(home.body).toContain('<form method="post" action="/signout">');
    expect((await app.inject({ method: 'GET', url: '/v1/evaluations', headers: { cookie } })).statusCode).toBe(200);
    // Not for anything that changes state, nor for the admin routes.
    const post = await app.inject({ method: 'POST', url: '/v1/evaluations', headers: { cookie }, payload: body() });
    expect(post.statusCode).toBe(401);
    const reprobe = await app.inject({ method: 'POST', url: '/v1/gpus/GPU-0/reprobe', headers: { cookie } });
    expect(reprobe.statusCode).toBe(401);
    // A signed-in browser asking for the form goes where it was going.
    expect((await app.inject({ method: 'GET', url: '/signin?next=/x', headers: { cookie } })).headers.location).toBe(
      '/x',
    );
    // A cookie changed by hand is no session.
    const forged = cookie.replace(/cudakit_session=([\w-]+)\./, (_m, b: string) => {
      const payload = JSON.parse(Buffer.from(b, 'base64url').toString()) as { s: string[] };
      payload.s = ['read', 'admin'];
      return `cudakit_session=${Buffer.from(JSON.stringify(payload)).toString('base64url')}.`;
    });
    expect((await page(app, '/', { cookie: forged })).statusCode).toBe(303);
  });

  it('refuses a wrong token, a token without the read scope, and a form without its CSRF token', async () => {
    const writer = parseTokens(`writer:${tokenDigest('writer-token')}:submit`, 'tokens');
    const { app } = await harness({ tokens: [...TOKENS, ...writer] });
    const signin = await app.inject({ method: 'GET', url: '/signin' });
    const cookie = cookieHeader(setCookies(signin));
    const csrf = csrfOf(signin.body);
    const post = (fields: Record<string, string>, headers: Record<string, string> = { cookie }) =>
      app.inject({ method: 'POST', url: '/signin', headers: { ...FORM, ...headers }, payload: form(fields) });

    const wrong = await post({ csrf, token: 'guess' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).toContain('<p class="alert" role="alert">That token is not valid.</p>');
    expect(setCookies(wrong).some((c) => c.startsWith('cudakit_session='))).toBe(false);
    const noRead = await post({ csrf, token: 'writer-token' });
    expect(noRead.statusCode).toBe(403);
    expect(noRead.body).toContain('lacks the &#39;read&#39; scope');
    for (const [fields, headers] of [
      [{ token: 'alice-token' }, { cookie }],
      [{ csrf: 'x'.repeat(43), token: 'alice-token' }, { cookie }],
      [{ csrf, token: 'alice-token' }, {}], // the token without the browser's nonce cookie
    ] as const) {
      const refused = await post(fields, headers);
      expect(refused.statusCode).toBe(403);
      expect(refused.body).toContain('CSRF token is missing or wrong');
      expect(setCookies(refused).some((c) => c.startsWith('cudakit_session='))).toBe(false);
    }
    // Somewhere else to go after signing in is not taken.
    const offsite = await post({ csrf, token: 'alice-token', next: '//evil.example/' });
    expect(offsite.headers.location).toBe('/');
  });

  it('signs out with the CSRF token only', async () => {
    const { app } = await harness();
    const cookie = await signIn(app, 'alice-token');
    const home = await page(app, '/', { cookie });
    const csrf = csrfOf(home.body);
    const refused = await app.inject({ method: 'POST', url: '/signout', headers: { ...FORM, cookie }, payload: '' });
    expect(refused.statusCode).toBe(403);
    const out = await app.inject({
      method: 'POST',
      url: '/signout',
      headers: { ...FORM, cookie },
      payload: form({ csrf }),
    });
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/signin');
    expect(setCookies(out)).toContain('cudakit_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0');
  });

  it('marks the cookie Secure behind a TLS proxy', async () => {
    const { app } = await harness({ trustProxy: true });
    const signin = await app.inject({ method: 'GET', url: '/signin', headers: { 'x-forwarded-proto': 'https' } });
    expect(setCookies(signin)[0]).toMatch(/; Secure$/);
    const res = await app.inject({
      method: 'POST',
      url: '/signin',
      headers: { ...FORM, cookie: cookieHeader(setCookies(signin)), 'x-forwarded-proto': 'https' },
      payload: form({ csrf: csrfOf(signin.body), token: 'alice-token' }),
    });
    expect(setCookies(res)[0]).toMatch(/^cudakit_session=.*; Secure$/);
  });

  it('accepts its cookies in every process with the same secret, and in no other', async () => {
    const secret = 'a shared secret of at least thirty-two bytes';
    const one = await harness({ sessionSecret: secret });
    const two = await harness({ sessionSecret: secret });
    const other = await harness({ sessionSecret: `${secret}, but another` });
    const cookie = await signIn(one.app, 'alice-token');
    expect((await page(two.app, '/', { cookie })).body).toContain('Signed in as <strong>alice</strong>');
    expect((await page(other.app, '/', { cookie })).statusCode).toBe(303);
    expect(() => new Sessions({ secret: 'short', tokens: TOKENS })).toThrow(
      new RangeError('Expected a session secret of at least 32 bytes but received 5'),
    );
  });

  it('ends a session at its expiry, and when its name has no token with the read scope left', () => {
    let nowMs = 1_000_000;
    const secret = 's'.repeat(32);
    const sessions = new Sessions({ secret, tokens: TOKENS, ttlMs: 60_000, now: () => nowMs });
    const value = sessions.issue({ name: 'root', scopes: new Set(['submit', 'read', 'admin']) });
    expect(sessions.verify(value)).toEqual({ name: 'root', scopes: new Set(['read', 'admin']) });
    nowMs += 60_000;
    expect(sessions.verify(value)).toBeUndefined();
    nowMs -= 1;
    const rootReadOnly = parseTokens(`root:${tokenDigest('new-root-token')}:read`, 'tokens');
    const demoted = new Sessions({ secret, tokens: rootReadOnly, now: () => nowMs });
    expect(demoted.verify(value)).toEqual({ name: 'root', scopes: new Set(['read']) });
    const gone = new Sessions({ secret, tokens: TOKENS.filter((t) => t.name !== 'root'), now: () => nowMs });
    expect(gone.verify(value)).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------------------------
// /v1/stream over a socket

describe('GET /v1/stream', () => {
  it('sends the summary, then each of your jobs as it starts and ends, with heartbeats', async () => {
    const { app, service } = await harness();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    let text = '';
    const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/stream', headers: auth('alice') }, (res) => {
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
    });
    req.end();
    try {
      await until(() => text.includes('event: summary'));
      await until(() => text.includes(': heartbeat'));
      const bobs = await submit(app, 'bob', body());
      await settled(service, bobs);
      const id = await submit(app, 'alice', body('sleep:30'));
      await settled(service, id);
      await until(() => text.includes('"status":"succeeded"'));
      const jobs = [...text.matchAll(/event: job\ndata: (.*)\n/g)].map((m) => JSON.parse(m[1]!) as { id: string });
      expect(new Set(jobs.map((j) => j.id))).toEqual(new Set([id])); // never bob's
      expect(jobs.at(-1)).toMatchObject({
        id,
        name: 'sleep:30',
        status: 'succeeded',
        verdict: 'PASSED',
        principal: 'alice',
      });
      const summaries = [...text.matchAll(/event: summary\ndata: (.*)\n/g)].map((m) => JSON.parse(m[1]!));
      expect(summaries.at(-1).jobs.succeeded).toBe(2);

      // A job another process of a deployment ran (only the shared store knows it) shows up too.
      const elsewhere = { ...(await service.get(id))!, id: newJobId(), idempotencyKey: undefined };
      await service.store.insert({ ...elsewhere, status: 'queued', finishedAt: undefined, report: undefined });
      await service.store.finish(elsewhere.id, { ...elsewhere, status: 'succeeded', atMs: Date.now() });
      await until(() => text.includes(`"id":"${elsewhere.id}"`), {
        timeoutMs: 5000,
        what: 'the job of another process',
      });
    } finally {
      req.destroy();
    }
  });

  it('keeps the number of streams bounded', async () => {
    const { app } = await harness({ tokens: undefined });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const statuses: number[] = [];
    const requests = Array.from({ length: 65 }, () =>
      httpRequest({ host: '127.0.0.1', port, path: '/v1/stream' }, (res) => {
        statuses.push(res.statusCode!);
        res.resume();
      }),
    );
    for (const r of requests) r.end();
    try {
      await until(() => statuses.length === 65, { timeoutMs: 10_000, what: 'every stream to answer' });
      expect(statuses.filter((s) => s === 200)).toHaveLength(64);
      expect(statuses.filter((s) => s === 503)).toHaveLength(1);
    } finally {
      for (const r of requests) r.destroy();
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// In a browser

const browserMissing = !existsSync(CHROMIUM);
const mustRun = process.env.CUDAKIT_REQUIRE_SERVICES === '1';

// Skipped, saying why, on a machine without the binary; CUDAKIT_REQUIRE_SERVICES=1 makes that a failure instead.
describe.skipIf(browserMissing && !mustRun)(`in Chromium${browserMissing ? ` (${CHROMIUM} is absent)` : ''}`, () => {
  let browser: Browser;
  let h: Harness;
  let base: string;

  beforeAll(async () => {
    if (browserMissing)
      throw new Error(`CUDAKIT_REQUIRE_SERVICES=1, but ${CHROMIUM} is absent: apt-get install chromium`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    h = await saxpyHarness({}, 20);
    keepApp(h);
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    await browser?.close();
    h?.service.close();
    await h?.app.close();
  });

  /** A browser context whose pages report console errors, uncaught exceptions and CSP violations into `problems`. */
  async function context(problems: string[]): Promise<BrowserContext> {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await ctx.addInitScript(
      'document.addEventListener("securitypolicyviolation", (e) => ' +
        'console.error("CSP violation: " + e.violatedDirective + " " + e.blockedURI));',
    );
    ctx.on('page', (p) => watch(p, problems));
    return ctx;
  }

  function watch(p: Page, problems: string[]): void {
    p.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    p.on('pageerror', (e) => problems.push(e.message));
  }

  async function signInAs(p: Page, token: string): Promise<void> {
    await p.goto(`${base}/`);
    expect(new URL(p.url()).pathname).toBe('/signin');
    await p.getByLabel('Token').fill(token);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.waitForURL(`${base}/`);
  }

  /** Submits through the API over the socket, as a client elsewhere would; returns the id. */
  async function submitOver(who: Who, payload: object): Promise<string> {
    const res = await fetch(`${base}/v1/evaluations`, {
      method: 'POST',
      headers: { ...auth(who), 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { id: string }).id;
  }

  it('signs in, follows a job to its verdict live, opens it, and signs out', async () => {
    const problems: string[] = [];
    const ctx = await context(problems);
    const p = await ctx.newPage();
    const bobs = await submitOver('bob', body('bob-only'));
    await settled(h.service, bobs);

    await signInAs(p, 'alice-token');
    const cookies = await ctx.cookies();
    const session = cookies.find((c) => c.name === 'cudakit_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', secure: false, path: '/' });
    await p.locator('[data-live-status][data-state="open"]').waitFor({ timeout: 10_000 });
    const succeeded = Number(await p.locator('[data-summary-root] [data-cell="succeeded"]').textContent());

    // Submitted elsewhere, seen here: the row appears, runs and gets its verdict without a reload.
    await p.evaluate('window.stayedOnThisPage = true');
    const id = await submitOver('alice', saxpyBody('saxpy live'));
    const row = p.locator(`tr[data-id="${id}"]`);
    await row.locator('[data-cell="verdict"][data-value="PASSED"]').waitFor({ timeout: 10_000 });
    expect(await row.locator('[data-cell="status"]').textContent()).toBe('succeeded');
    expect(await row.locator('[data-cell="name"]').textContent()).toBe('saxpy live');
    await expect
      .poll(async () => Number(await p.locator('[data-summary-root] [data-cell="succeeded"]').textContent()), {
        timeout: 10_000,
      })
      .toBe(succeeded + 1);
    expect(await p.evaluate('window.stayedOnThisPage')).toBe(true);
    // A read token sees its own jobs only.
    expect(await p.locator(`tr[data-id="${bobs}"]`).count()).toBe(0);

    // Its result: the histogram is drawn, bars and all.
    await row.locator('[data-cell="name"]').click();
    await p.waitForURL(`${base}/evaluations/${id}`);
    expect(await p.locator('h1').textContent()).toBe('saxpy live');
    expect(await p.locator('svg.histogram rect.bar').count()).toBeGreaterThan(5);
    const box = await p.locator('svg.histogram').boundingBox();
    expect(box!.width).toBeGreaterThan(300);
    expect(await p.locator('svg.samples path.points').count()).toBe(1);

    await p.getByRole('button', { name: 'Sign out' }).click();
    await p.waitForURL(`${base}/signin`);
    expect((await ctx.cookies()).some((c) => c.name === 'cudakit_session')).toBe(false);
    await p.goto(`${base}/`);
    expect(new URL(p.url()).pathname).toBe('/signin');
    expect(problems).toEqual([]);
    await ctx.close();
  });

  it('follows a running evaluation and shows its result when it ends', async () => {
    const problems: string[] = [];
    const ctx = await context(problems);
    const p = await ctx.newPage();
    await signInAs(p, 'alice-token');
    const id = await submitOver('alice', body('hang'));
    await until(async () => (await h.service.get(id))?.phase === 'check');
    await p.goto(`${base}/evaluations/${id}`);
    await p.locator('[data-live-status][data-state="open"]').waitFor({ timeout: 10_000 });
    expect(await p.locator('[data-cell="job-status"]').textContent()).toBe('running');
    expect(await p.locator('[data-job-phase]').textContent()).toBe('check');
    expect(await p.locator('svg.histogram').count()).toBe(0);
    h.pool.finish(id, { kind: 'report', report: saxpyReport('hang'), device: undefined });
    await p.locator('svg.histogram rect.bar').first().waitFor({ timeout: 10_000 });
    expect(await p.locator('[data-cell="job-status"]').textContent()).toBe('succeeded');
    expect(await p.locator('.badges [data-value="PASSED"]').count()).toBe(1);
    expect(problems).toEqual([]);
    await ctx.close();
  });

  it('refuses a wrong token and a form without its CSRF token with a message, others’ jobs with a 404', async () => {
    const problems: string[] = [];
    const ctx = await context(problems);
    const p = await ctx.newPage();
    await p.goto(`${base}/signin`);
    await p.getByLabel('Token').fill('not-a-token');
    await p.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => p.getByRole('alert').textContent(), { timeout: 10_000 }).toBe('That token is not valid.');

    await p.evaluate('document.querySelector("input[name=csrf]").remove()');
    await p.getByLabel('Token').fill('alice-token');
    await p.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => p.getByRole('alert').textContent(), { timeout: 10_000 })
      .toContain('CSRF token is missing or wrong');
    expect((await ctx.cookies()).some((c) => c.name === 'cudakit_session')).toBe(false);

    const bobs = await submitOver('bob', body('bob-only'));
    await signInAs(p, 'viewer-token');
    expect(await p.locator('tr[data-id^="ev_"]').count()).toBe(0);
    const response = await p.goto(`${base}/evaluations/${bobs}`);
    expect(response!.status()).toBe(404);
    // The browser logs each refused document (401, 403, 404); nothing else may appear.
    expect(problems.filter((m) => !/status of 40[134]/.test(m))).toEqual([]);
    await ctx.close();
  });

  it('is usable by keyboard, fits 390 px, and costs under 200 KB gzipped', async () => {
    const id = await submitOver('alice', saxpyBody('saxpy'));
    await settled(h.service, id);
    const problems: string[] = [];
    const ctx = await context(problems);
    const p = await ctx.newPage();
    await signInAs(p, 'alice-token');

    // Tab from the top reaches the filters and then the job's link; Enter opens it.
    const reached: string[] = [];
    for (let i = 0; i < 40 && !reached.includes(`/evaluations/${id}`); i++) {
      await p.keyboard.press('Tab');
      reached.push(
        String(await p.evaluate('document.activeElement.id || document.activeElement.getAttribute("href")')),
      );
    }
    expect(reached).toContain('status');
    expect(reached).toContain('verdict');
    expect(reached.indexOf('status')).toBeLessThan(reached.indexOf(`/evaluations/${id}`));
    const outline = await p.evaluate('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).toBe('solid');
    await p.keyboard.press('Enter');
    await p.waitForURL(`${base}/evaluations/${id}`);

    if (process.env.CUDAKIT_WRITE_SCREENSHOT === '1') {
      mkdirSync(dirname(SCREENSHOT), { recursive: true });
      await p.screenshot({ path: SCREENSHOT });
    }

    // 390 px wide: nothing scrolls sideways, on the list or on the result.
    await p.setViewportSize({ width: 390, height: 844 });
    for (const url of ['/', `/evaluations/${id}`]) {
      await p.goto(`${base}${url}`);
      expect(await p.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    }

    // The result page's HTML, script and style sheet, gzipped.
    const headers = { ...auth('alice'), ...HTML };
    const html = await (await fetch(`${base}/evaluations/${id}`, { headers })).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toHaveLength(2);
    let gzipped = gzipSync(html).length;
    for (const url of assets) gzipped += gzipSync(await (await fetch(`${base}${url}`)).text()).length;
    expect(gzipped).toBeLessThan(200 * 1024);
    expect(problems).toEqual([]);
    await ctx.close();
  });
});
