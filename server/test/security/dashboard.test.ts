// SPDX-License-Identifier: MIT
// Security, the dashboard (SECURITY.md's attack table): forms without their CSRF token or its cookie are refused; the
// session cookie counts for nothing that changes state; the cookies' flags; markup in every text field a page shows
// (the job, its report, the GPUs, the query) stays text; and next= never sends a browser to another site. Each
// answer is checked for its status and for leaks; after each row the server still runs a correct job.
import type { EvalReport } from 'cudakit';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/http/shared.js';
import type { Harness } from '../support/app-harness.js';
import { H200, fakeGpus, failedReport, passedReport, scriptByName } from '../support/fake-pool.js';
import { evaluateBody, settled } from '../support/helpers.js';
import { type Answer, auth, body, expectAnswer, securityHarness, sharedHarness, submit } from './helpers.js';

let h: Harness;
/** Harnesses a row made for itself: each must be alive after it too. */
const own: Harness[] = [];
sharedHarness((x) => (h = x), own);

const HTML = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

function setCookies(res: { headers: Record<string, unknown> }): string[] {
  const v = res.headers['set-cookie'];
  return v === undefined ? [] : Array.isArray(v) ? (v as string[]) : [String(v)];
}

/** name=value pairs of Set-Cookie lines, as a Cookie header. */
const cookieHeader = (lines: readonly string[]): string => lines.map((l) => l.split(';')[0]!).join('; ');

function csrfOf(html: string): string {
  const token = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  expect(token, 'the form has a CSRF token').toBeDefined();
  return token!;
}

const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();

let clients = 0;
/** A client address of its own: sign-in attempts are limited per address (20 a minute), and a row makes many. */
const client = () => ({ remoteAddress: `10.0.${(++clients >> 8) & 255}.${clients & 255}` });

/** A browser's first look at the sign-in form: its nonce cookie and the form's CSRF token. */
async function signInForm(app: App): Promise<{ cookie: string; csrf: string; res: Answer }> {
  const res = await app.inject({ method: 'GET', url: '/signin' });
  expectAnswer(res, 200, 'GET /signin');
  return { cookie: cookieHeader(setCookies(res)), csrf: csrfOf(res.body), res };
}

/** Signs in through the form: the browser's cookies afterwards (its CSRF nonce and its session). */
async function signIn(app: App, token: string): Promise<string> {
  const { cookie, csrf } = await signInForm(app);
  const res = await app.inject({
    method: 'POST',
    url: '/signin',
    headers: { ...FORM, cookie },
    payload: form({ csrf, token, next: '/' }),
    ...client(),
  });
  expectAnswer(res, 303, 'sign-in');
  return `${cookie}; ${cookieHeader(setCookies(res))}`;
}

describe('security: the dashboard', () => {
  it('CSRF: sign-in and sign-out without the form field or without its cookie are 403, changing nothing', async () => {
    const { cookie, csrf } = await signInForm(h.app);
    const other = await signInForm(h.app); // another browser: its own nonce and token
    const attempts: Array<[string, Record<string, string>, string | undefined]> = [
      ['no field', { token: 'alice-token' }, cookie],
      ['an empty field', { csrf: '', token: 'alice-token' }, cookie],
      ['no cookie', { csrf, token: 'alice-token' }, undefined],
      ["another browser's token", { csrf: other.csrf, token: 'alice-token' }, cookie],
      ['the nonce itself', { csrf: cookie.split('=')[1]!, token: 'alice-token' }, cookie],
      ['a token of the right length', { csrf: 'A'.repeat(csrf.length), token: 'alice-token' }, cookie],
    ];
    for (const [what, fields, withCookie] of attempts) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/signin',
        headers: { ...FORM, ...(withCookie === undefined ? {} : { cookie: withCookie }) },
        payload: form(fields),
        ...client(),
      });
      expectAnswer(res, 403, `sign-in, ${what}`);
      expect(res.body, what).toContain('CSRF token is missing or wrong');
      expect(
        setCookies(res).some((c) => c.startsWith('cudakit_session=')),
        what,
      ).toBe(false);
    }
    const session = await signIn(h.app, 'alice-token');
    const home = await h.app.inject({ method: 'GET', url: '/', headers: { ...HTML, cookie: session } });
    const signOutCsrf = csrfOf(home.body);
    for (const [what, fields, withCookie] of [
      ['no field', {}, session],
      ['no cookie', { csrf: signOutCsrf }, undefined],
      ["another browser's token", { csrf: other.csrf }, session],
    ] as const) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/signout',
        headers: { ...FORM, ...(withCookie === undefined ? {} : { cookie: withCookie }) },
        payload: form(fields),
      });
      expectAnswer(res, 403, `sign-out, ${what}`);
      expect(setCookies(res), what).toEqual([]);
    }
    // The session is still good; with its field and cookie the form signs out.
    expectAnswer(await h.app.inject({ method: 'GET', url: '/', headers: { ...HTML, cookie: session } }), 200, 'home');
    const out = await h.app.inject({
      method: 'POST',
      url: '/signout',
      headers: { ...FORM, cookie: session },
      payload: form({ csrf: signOutCsrf }),
    });
    expectAnswer(out, 303, 'sign-out');
  });

  it('the session cookie on POST and DELETE: 401 on every route that changes state, for an admin too', async () => {
    const live = (await submit(h, body('hang'))).json().id as string;
    const done = (await submit(h, body('pass'))).json().id as string;
    await settled(h.service, done);
    const runs = h.pool.runs.length;
    const compare = { ref_kernel: evaluateBody().kernel, custom_kernel: evaluateBody().kernel };
    for (const who of ['alice', 'root'] as const) {
      const cookie = await signIn(h.app, `${who}-token`);
      // The cookie does read.
      const list = await h.app.inject({ method: 'GET', url: '/v1/evaluations', headers: { cookie } });
      expectAnswer(list, 200, `${who}: GET /v1/evaluations`);
      const requests: Array<['POST' | 'DELETE' | 'GET', string, unknown]> = [
        ['POST', '/v1/evaluations', body()],
        ['DELETE', `/v1/evaluations/${live}`, undefined],
        ['DELETE', `/v1/evaluations/${done}?purge=true`, undefined],
        ['POST', '/evaluate', evaluateBody()],
        ['POST', '/compare', compare],
        ['POST', '/', compare],
        ['POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }],
        ['POST', '/admin/cleanup-jobs', undefined],
        ['POST', `/v1/gpus/${h.pool.slots()[0]!.uuid}/reprobe`, undefined],
        // Nor does it open the admin-only reads.
        ['GET', '/metrics', undefined],
      ];
      for (const [method, url, payload] of requests) {
        const res = await h.app.inject({
          method,
          url,
          headers: { cookie, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
          remoteAddress: '203.0.113.7',
        });
        expectAnswer(res, 401, `${who}'s cookie: ${method} ${url}`);
      }
    }
    expect((await h.service.get(live))?.status).toBe('running');
    expect((await h.service.get(done))?.status).toBe('succeeded');
    expect(h.pool.runs.length).toBe(runs);
    expect(h.pool.reprobed).toEqual([]);
    await h.app.inject({ method: 'DELETE', url: `/v1/evaluations/${live}`, headers: auth('alice') });
    await settled(h.service, live);
  });

  it('cookie flags: HttpOnly, SameSite=Strict, host-only, Path=/; Secure behind a TLS proxy only; signed', async () => {
    const { res } = await signInForm(h.app);
    const [nonce] = setCookies(res);
    expect(nonce).toMatch(/^cudakit_csrf=[\w-]{22}; Path=\/; HttpOnly; SameSite=Strict$/);
    const form0 = await signInForm(h.app);
    const signedIn0 = await h.app.inject({
      method: 'POST',
      url: '/signin',
      headers: { ...FORM, cookie: form0.cookie },
      payload: form({ csrf: form0.csrf, token: 'alice-token' }),
      ...client(),
    });
    expectAnswer(signedIn0, 303, 'sign-in');
    const [line] = setCookies(signedIn0);
    expect(line).toMatch(/^cudakit_session=[\w-]+\.[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    const cookie = `${form0.cookie}; ${cookieHeader([line!])}`;
    const session = /cudakit_session=([^;]+)/.exec(cookie)![1]!;
    // Neither the token nor anything but the name, its reading scopes and the expiry is in it.
    expect(line).not.toContain('alice-token');
    const payload = JSON.parse(Buffer.from(session.split('.')[0]!, 'base64url').toString()) as Record<string, unknown>;
    expect(Object.keys(payload).sort()).toEqual(['e', 'n', 's']);
    expect(payload).toMatchObject({ n: 'alice', s: ['read'] });
    // Signed: a cookie changed by hand (a name, a scope) is no session.
    for (const forged of [
      { ...payload, n: 'root' },
      { ...payload, s: ['read', 'admin'] },
    ]) {
      const value = `${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${session.split('.')[1]}`;
      const res = await h.app.inject({
        method: 'GET',
        url: '/v1/evaluations',
        headers: { cookie: `cudakit_session=${value}` },
      });
      expectAnswer(res, 401, `forged ${JSON.stringify(forged)}`);
    }
    // A client's X-Forwarded-Proto does not mark it Secure (it is not believed without trustProxy)...
    const plain = await h.app.inject({ method: 'GET', url: '/signin', headers: { 'x-forwarded-proto': 'https' } });
    expect(setCookies(plain)[0]).not.toContain('Secure');
    // ... behind a TLS proxy that is trusted, both cookies are Secure.
    const proxied = await securityHarness({ trustProxy: true });
    own.push(proxied);
    const tls = { 'x-forwarded-proto': 'https' };
    const signin = await proxied.app.inject({ method: 'GET', url: '/signin', headers: tls });
    expect(setCookies(signin)[0]).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
    const signedIn = await proxied.app.inject({
      method: 'POST',
      url: '/signin',
      headers: { ...FORM, ...tls, cookie: cookieHeader(setCookies(signin)) },
      payload: form({ csrf: csrfOf(signin.body), token: 'alice-token' }),
      ...client(),
    });
    expectAnswer(signedIn, 303, 'sign-in behind the proxy');
    expect(setCookies(signedIn)[0]).toMatch(
      /^cudakit_session=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200; Secure$/,
    );
    // Sign-out clears it with the same flags.
    const home = await h.app.inject({ method: 'GET', url: '/', headers: { ...HTML, cookie } });
    const out = await h.app.inject({
      method: 'POST',
      url: '/signout',
      headers: { ...FORM, cookie },
      payload: form({ csrf: csrfOf(home.body) }),
    });
    expect(setCookies(out)).toEqual(['cudakit_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0']);
  });

  it('XSS: markup in every text field a page shows (job, report, GPU, query) is text', async () => {
    const x = `<script>alert(1)</script><svg/onload=alert(2)>"'&`;
    const escaped = '&lt;script&gt;alert(1)&lt;/script&gt;&lt;svg/onload=alert(2)&gt;&quot;&#39;&amp;';
    const gpu = { ...H200, name: `H200 ${x}`, arch: 'sm_90' };
    const xh = await securityHarness({ gpus: fakeGpus(2, gpu) });
    own.push(xh);
    // Every string of the reports the worker sends (a compile error, a pass with everything) holds the markup.
    xh.pool.script = (job) => {
      if (job.name?.startsWith('xss-fail') === true) {
        const error = {
          kind: 'compile',
          code: `E${x}`,
          message: `m${x}`,
          log: `x.cu(1): error: ${x}`,
          diagnostics: [{ file: `f${x}`, line: 1, column: 2, severity: 'error', message: `d${x}` }],
          problems: [{ path: `p${x}`, message: `q${x}` }],
        };
        const report = {
          ...failedReport(x, error as unknown as NonNullable<EvalReport['error']>, 'compile'),
          warnings: [`w${x}`],
        };
        return { delayMs: 1, outcome: { kind: 'report', report, device: undefined } };
      }
      if (job.name?.startsWith('xss-pass') === true) {
        return { delayMs: 1, outcome: { kind: 'report', report: richReport(x), device: undefined } };
      }
      return scriptByName(job);
    };
    const job = (name: string) =>
      body('pass', {
        name: `${name}${x}`,
        source: { text: `// ${x}\n${String(body().source)}`, name: `s${x}.cu` },
        headers: { [`h${x}.h`]: `// ${x}` },
        compile: { defines: { D: x }, extraFlags: [`-DE=${x}`] },
      });
    const ids: string[] = [];
    for (const name of ['xss-fail', 'xss-pass']) {
      const res = await submit(xh, job(name));
      expectAnswer(res, 202, name);
      ids.push(res.json().id as string);
      await settled(xh.service, ids.at(-1)!);
    }
    const pages: Array<[string, number]> = [
      ['/', 200],
      ...ids.map((id): [string, number] => [`/evaluations/${id}`, 200]),
      [`/evaluations/${encodeURIComponent(x)}`, 404],
    ];
    for (const [url, status] of pages) {
      const res = await xh.app.inject({ method: 'GET', url, headers: { ...HTML, ...auth('alice') } });
      expectPlainText(res, status, url, escaped);
      // The result pages show it from every field of the job and the report: a dozen places and more.
      if (url.startsWith('/evaluations/ev_')) expect(res.body.split(escaped).length - 1, url).toBeGreaterThan(10);
    }
    // The list's filters are at most 32 characters: markup that fits, quoted back in the page's message.
    for (const filter of ['status', 'verdict', 'cursor']) {
      const url = `/?${filter}=${encodeURIComponent(SHORT)}`;
      const res = await xh.app.inject({ method: 'GET', url, headers: { ...HTML, ...auth('alice') } });
      // A cursor that is not one is not quoted back at all.
      expectPlainText(res, 400, url, filter === 'cursor' ? 'Bad request' : SHORT_ESCAPED);
    }
    // The admin's principal filter, and the sign-in form's next (a local path may hold quotes and brackets).
    const admin = await xh.app.inject({
      method: 'GET',
      url: `/?principal=${encodeURIComponent(x)}`,
      headers: { ...HTML, ...auth('root') },
    });
    expectPlainText(admin, 200, '?principal=', escaped);
    const next = await xh.app.inject({ method: 'GET', url: `/signin?next=${encodeURIComponent(`/${x}`)}` });
    expectPlainText(next, 200, 'next=', escaped);
    // A host without a GPU says why, in words that may come from a driver: text too.
    const down = await securityHarness({ unavailableReason: `CUDA_ERROR_NO_DEVICE ${x}` });
    const reason = await down.app.inject({ method: 'GET', url: '/', headers: { ...HTML, ...auth('alice') } });
    expectPlainText(reason, 200, 'no GPU', escaped);
    // The live updates write with textContent only: the script never parses text as markup.
    const script = /<script src="(\/assets\/[^"]+\.js)"/.exec(reason.body)![1]!;
    const asset = await down.app.inject({ method: 'GET', url: script });
    expectAnswer(asset, 200, 'the dashboard script');
    expect(asset.body).toContain('textContent');
    expect(asset.body).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
  });

  it('open redirects: next= never sends a browser off the site, whichever way it comes', async () => {
    const ORIGIN = 'https://cudakit.test';
    const hostile = [
      '//evil.example',
      '///evil.example',
      '/\\evil.example',
      '\\\\evil.example',
      '\\/evil.example',
      'https://evil.example/',
      'http:evil.example',
      'javascript:alert(1)',
      'data:text/html,x',
      ' //evil.example',
      '/\t/evil.example',
      '/\n/evil.example',
      '/%0d%0aLocation:%20//evil.example',
      'evil.example',
      '/.//evil.example',
      `/${'a'.repeat(2000)}`,
      '',
    ];
    const local = (location: unknown, what: string): void => {
      expect(typeof location, what).toBe('string');
      expect(new URL(location as string, ORIGIN).origin, `${what}: ${String(location)}`).toBe(ORIGIN);
    };
    const session = await signIn(h.app, 'alice-token');
    for (const next of hostile) {
      const what = JSON.stringify(next);
      // The form keeps only a local path to return to.
      const page = await h.app.inject({ method: 'GET', url: `/signin?next=${encodeURIComponent(next)}` });
      expectAnswer(page, [200, 400], `GET /signin ${what}`);
      if (page.statusCode === 200) local(/name="next" value="([^"]*)"/.exec(page.body)?.[1], `form ${what}`);
      // Signing in goes there.
      const { cookie, csrf } = await signInForm(h.app);
      const res = await h.app.inject({
        method: 'POST',
        url: '/signin',
        headers: { ...FORM, cookie },
        payload: form({ csrf, token: 'alice-token', next }),
        ...client(),
      });
      expectAnswer(res, 303, `POST /signin ${what}`);
      local(res.headers.location, `sign-in ${what}`);
      // A browser already signed in is sent on at once.
      const signedIn = await h.app.inject({
        method: 'GET',
        url: `/signin?next=${encodeURIComponent(next)}`,
        headers: { cookie: session },
      });
      expectAnswer(signedIn, [303, 400], `signed-in GET /signin ${what}`);
      if (signedIn.statusCode === 303) local(signedIn.headers.location, `signed in ${what}`);
    }
    // A page asked for without a session sends the browser to sign in, and keeps only a local way back.
    const away = await h.app.inject({ method: 'GET', url: '/?next=//evil.example', headers: HTML });
    expectAnswer(away, 303, 'a page without a session');
    expect(String(away.headers.location)).toMatch(/^\/signin(\?next=%2F[^/]*)?$/);
    local(decodeURIComponent(String(away.headers.location).split('next=')[1] ?? '/'), 'the way back');
  });
});

/** Markup short enough for the list's filters (32 characters). */
const SHORT = `<svg/onload=alert(2)>"'&`;
const SHORT_ESCAPED = '&lt;svg/onload=alert(2)&gt;&quot;&#39;&amp;';

/** A dashboard page that shows `escaped` (so the field is on it) and holds no markup but its own. */
function expectPlainText(res: Answer, status: number, what: string, escaped: string): void {
  expectAnswer(res, status, what);
  expect(res.headers['content-type'], what).toMatch(/^text\/html/);
  expect(res.body, `${what} shows the field`).toContain(escaped);
  expect(res.body, what).not.toContain('<script>alert');
  expect(res.body, what).not.toContain('<svg/onload');
  // The one script is the dashboard's own file; no inline handler anywhere; a strict CSP besides.
  expect(res.body.match(/<script/g), what).toHaveLength(1);
  expect(res.body, what).not.toMatch(/<[^>]*\son[a-z]+\s*=/i);
  expect(res.headers['content-security-policy'], what).toContain("script-src 'self'");
}

/** A passing report with every text a page shows from one holding `x`. */
function richReport(x: string): EvalReport {
  const facts = {
    kernel: `k${x}`,
    loweredName: `l${x}`,
    source: `s${x}.cu`,
    target: 'cubin',
    arch: `a${x}`,
    nvrtcVersion: `v${x}`,
    compileMs: 1,
    cached: false,
    flags: [`-f${x}`],
    log: `log ${x}`,
    diagnostics: [{ file: `s${x}.cu`, line: 1, column: 1, severity: 'warning', message: `w${x}` }],
  };
  const check = {
    passed: true,
    trials: [],
    mismatches: [],
    nondeterministicElements: 0,
    nondeterministicBeyondTolerance: 0,
    summary: `PASS ${x}`,
    maxAbsError: 0,
    maxRelError: 0,
    toleranceUsed: 0,
    relNormError: 0,
    matchedRatio: 1,
  };
  return passedReport(x, {
    compile: { candidate: facts, reference: { ...facts, kernel: `r${x}` } },
    check: { reference: `ref ${x}`, passed: true, requireDeterminism: false, before: check },
    warnings: [`warn ${x}`],
    deviceMetrics: {
      kernel: `k${x}`,
      metrics: { [`m${x}`]: { value: 1, unit: `u${x}` } },
      groups: { [`g${x}`]: { [`m${x}`]: { value: 1, unit: `u${x}` } } },
      ncuVersion: `n${x}`,
      command: [`ncu${x}`],
      unavailable: [`un${x}`],
      wallMs: 1,
    },
  } as unknown as Partial<EvalReport>);
}
