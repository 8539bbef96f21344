// SPDX-License-Identifier: MIT
// The dashboard's routes: GET / (the list of evaluations under the service summary; the summary as JSON for
// `Accept: application/json`), GET /evaluations/:id (one result), GET /problems and /problems/:name (the problems
// served; a problem with cases' public cases and leaderboard), the sign-in and sign-out forms, the script and
// style sheet, and GET /v1/stream (server-sent events: the summary whenever it changes, and each of the newest jobs
// whose state changed). Pages need the read scope, from a bearer token or the session cookie (the auth hook in
// http/app.ts takes both); a principal sees its own evaluations, the admin scope every one, as in the API. A plugin
// of its own, so that its form parser serves these routes only: the service comes from the instance, the tokens, the
// sessions and the streams' settings from its options; the schemas first, then the list of routes, then one named
// handler per route (made by a small factory where it needs the sessions). /v1/stream's streams are opened by
// http/sse.ts.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { App, RouteRequest } from '../http/shared.js';
import { type EventStream, openEventStream } from '../http/sse.js';
import { TokenVerifier, type Principal, type TokenEntry } from '../http/auth.js';
import { defaultGpuClass, leaderboardView } from '../http/routes/leaderboard.js';
import { ErrorBody } from '../http/schemas/v1.js';
import { ServiceError } from '../errors.js';
import type { EvalService } from '../service.js';
import { isJobId } from '../store/ids.js';
import type { JobRecord, JobStatus } from '../store/store.js';
import { GPU_CLASS_PATTERN } from '../run/pool.js';
import { LEADERBOARD_OFFSET_MAX } from '../store/leaderboard.js';
import { VERDICTS, type Verdict } from '../judge/verdict.js';
import { assetAt } from './assets.js';
import {
  STATUSES,
  jobName,
  listPage,
  messagePage,
  resultPage,
  signInPage,
  type ListFilters,
  type ServiceSummary,
  type Viewer,
} from './pages.js';
import { hasCases, problemPage, problemsPage } from './problem-page.js';
import { parseReport } from './report.js';
import { type Sessions, localPath } from './session.js';

export interface DashboardOptions {
  /** The tokens file's entries, which a sign-in checks; undefined: no auth (nothing to sign in to). */
  tokens: readonly TokenEntry[] | undefined;
  /** The session cookies, which the auth hook (http/app.ts) reads too. */
  sessions: Sessions;
  /** Comment lines on an idle /v1/stream, ms. */
  sseHeartbeatMs: number;
  /** How often /v1/stream looks for a changed summary while anyone follows it, ms. Default 1000. */
  summaryIntervalMs?: number;
  /** Streams open at once, in all (503 beyond). Default 64. */
  maxStreams?: number;
  /** A stream ends after this long (the browser reconnects at once), so none is held forever. Default 10 min. */
  streamMaxMs?: number;
}

const PAGE_SIZE = 25;
/** Entries of a leaderboard on a problem's page. */
const BOARD_PAGE_SIZE = 50;
/** A problem's name, as the registry takes one (a folder name). */
const PROBLEM_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** The most sign-in attempts per client address per minute. */
const SIGN_INS_PER_MINUTE = 20;
const FORM_BODY_LIMIT_BYTES = 4096;

/** Pages may load the site's own script, style sheet and event streams, and nothing else (no inline script). */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const Summary = Type.Object({
  gpus: Type.Array(
    Type.Object({
      uuid: Type.String(),
      name: Type.String(),
      arch: Type.String(),
      state: Type.String(),
      jobs: Type.Integer(),
      restarts: Type.Integer(),
      shared: Type.Boolean(),
      lastError: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'Why there is no GPU, when there is none' }),
  queue: Type.Object({ depth: Type.Integer({ description: 'Evaluations queued, in all' }) }),
  jobs: Type.Object(Object.fromEntries(STATUSES.map((s) => [s, Type.Integer()])), {
    description: 'Evaluations in the store, by status',
  }),
  accepting: Type.Boolean({ description: 'Whether submissions are taken (false while draining)' }),
});

const ListQuery = Type.Object({
  status: Type.Optional(Type.String({ maxLength: 32 })),
  verdict: Type.Optional(Type.String({ maxLength: 32 })),
  principal: Type.Optional(Type.String({ maxLength: 64 })),
  cursor: Type.Optional(Type.String({ maxLength: 64 })),
});

/** The summary the list page, GET / as JSON and /v1/stream show. */
async function summaryOf(service: EvalService): Promise<ServiceSummary> {
  const [jobs, depth, slots] = await Promise.all([service.store.counts(), service.queued(), service.slots()]);
  return {
    gpus: slots.map((s) => ({
      uuid: s.uuid,
      name: s.name,
      arch: s.arch,
      state: s.state,
      jobs: s.jobs,
      restarts: s.restarts,
      shared: s.shared,
      lastError: s.lastError ?? null,
    })),
    reason: service.pool.unavailableReason ?? null,
    queue: { depth },
    jobs,
    accepting: service.accepting,
  };
}

function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}

function sendPage(reply: FastifyReply, statusCode: number, page: string): FastifyReply {
  return reply
    .code(statusCode)
    .headers({
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'cache-control': 'no-store',
      'referrer-policy': 'same-origin',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
    })
    .send(page);
}

const listSchema = {
  summary: 'The dashboard, or the service summary as JSON',
  description:
    'With Accept: application/json: the GPUs and their states, the queue depth and the evaluations by ' +
    'status. Otherwise the dashboard page (HTML): the evaluations, newest first, filtered by status and ' +
    'verdict, a page at a time (cursor).',
  querystring: ListQuery,
  response: {
    200: {
      content: { 'application/json': { schema: Summary }, 'text/html': { schema: Type.String() } },
    },
    ...Object.fromEntries([400, 401, 403].map((c) => [c, ErrorBody])),
  },
};

const resultSchema = { hide: true, params: Type.Object({ id: Type.String({ maxLength: 64 }) }) };

const problemSchema = {
  hide: true,
  params: Type.Object({ name: Type.String({ maxLength: 128 }) }),
  querystring: Type.Object({
    gpuClass: Type.Optional(Type.String({ maxLength: 128 })),
    offset: Type.Optional(Type.String({ maxLength: 16 })),
  }),
};

const signInSchema = {
  hide: true,
  querystring: Type.Object({ next: Type.Optional(Type.String({ maxLength: 1024 })) }),
};

const assetSchema = { hide: true, params: Type.Object({ file: Type.String({ maxLength: 128 }) }) };

const streamSchema = {
  summary: 'Follow the service (server-sent events)',
  description:
    "Events 'summary' (as GET / with Accept: application/json) whenever it changes, and 'job' for each " +
    'of your 25 newest evaluations (anyone’s, with the admin scope) when the stream opens and whenever ' +
    'its state changes: { id, name, status, verdict, phase, principal, createdAt, finishedAt }. Comment ' +
    'lines keep idle connections open; a stream ends after 10 minutes (EventSource reconnects).',
  response: {
    200: Type.String({ description: 'text/event-stream' }),
    ...Object.fromEntries([401, 403, 503].map((c) => [c, ErrorBody])),
  },
};

export async function dashboardRoutes(app: App, options: DashboardOptions): Promise<void> {
  const { sessions } = options;
  const verifier = options.tokens === undefined ? undefined : new TokenVerifier(options.tokens);
  const streams = new SummaryStreams(app.service, options);
  app.addHook('onClose', async () => streams.close());

  // Sign-in and sign-out post plain HTML forms.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT_BYTES },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );
  const signInLimit = app.rateLimit({
    max: SIGN_INS_PER_MINUTE,
    timeWindow: 60_000,
    keyGenerator: (request) => `signin:${request.ip}`,
    errorResponseBuilder: (_request, context) =>
      new ServiceError(
        'RATE_LIMITED',
        `More than ${context.max} sign-in attempts per minute: retry in ${context.after}`,
        Math.ceil(context.ttl / 1000),
      ),
  });

  app.get('/', { schema: listSchema, config: { access: 'read', page: true } }, showList(sessions));
  app.get('/evaluations/:id', { schema: resultSchema, config: { access: 'read', page: true } }, showResult(sessions));
  app.get('/problems', { schema: { hide: true }, config: { access: 'read', page: true } }, showProblems(sessions));
  app.get('/problems/:name', { schema: problemSchema, config: { access: 'read', page: true } }, showProblem(sessions));
  app.get('/signin', { schema: signInSchema, config: { access: 'open' } }, showSignIn(sessions));
  app.post(
    '/signin',
    { schema: { hide: true }, config: { access: 'open' }, onRequest: signInLimit },
    signIn(sessions, verifier),
  );
  app.post('/signout', { schema: { hide: true }, config: { access: 'open' } }, signOut(sessions));
  app.get('/assets/:file', { schema: assetSchema, config: { access: 'open' } }, serveAsset);
  app.get('/v1/stream', { schema: streamSchema, config: { access: 'read' } }, followService(streams));
}

/** Who the page is for; a session's pages get the sign-out form (and the browser its CSRF nonce). */
function viewerOf(sessions: Sessions, request: FastifyRequest, reply: FastifyReply): Viewer {
  const bySession = sessions.enabled && request.headers.authorization === undefined;
  return {
    name: request.principal.name,
    signOutCsrf: bySession ? sessions.csrfToken(request, reply) : undefined,
    signIn: sessions.enabled,
  };
}

/** GET /: the list page, or the summary as JSON. */
function showList(sessions: Sessions) {
  return async function showList(request: RouteRequest<typeof listSchema>, reply: FastifyReply) {
    const { service } = request.server;
    void reply.header('vary', 'Accept');
    if (wantsJson(request)) return reply.type('application/json; charset=utf-8').send(await summaryOf(service));
    const badRequest = (message: string): FastifyReply =>
      sendPage(reply, 400, messagePage('Bad request', message, viewerOf(sessions, request, reply)));
    const q = request.query;
    const admin = request.principal.scopes.has('admin');
    const status = q.status === '' ? undefined : q.status;
    const verdict = q.verdict === '' ? undefined : q.verdict;
    const principal = !admin || q.principal === '' ? undefined : q.principal?.trim();
    if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) {
      return badRequest(`Expected a status of ${STATUSES.join(', ')} but received '${status}'`);
    }
    if (verdict !== undefined && !(VERDICTS as readonly string[]).includes(verdict)) {
      return badRequest(`Expected a verdict of ${VERDICTS.join(', ')} but received '${verdict}'`);
    }
    if (q.cursor !== undefined && !isJobId(q.cursor)) {
      return badRequest('The page cursor is not one this list gave: start from the first page');
    }
    const filters: ListFilters = {
      status: status as JobStatus | undefined,
      verdict,
      principal: principal === '' ? undefined : principal,
      cursor: q.cursor,
    };
    const owner = admin ? filters.principal : request.principal.name;
    const [page, summary] = await Promise.all([
      service.store.list({
        ...(owner === undefined ? {} : { principal: owner }),
        ...(filters.status === undefined ? {} : { status: filters.status }),
        ...(filters.verdict === undefined ? {} : { verdict: filters.verdict as Verdict }),
        ...(filters.cursor === undefined ? {} : { after: filters.cursor }),
        limit: PAGE_SIZE,
      }),
      summaryOf(service),
    ]);
    const viewer = viewerOf(sessions, request, reply);
    return sendPage(reply, 200, listPage({ viewer, summary, items: page.items, next: page.next, filters, admin }));
  };
}

/** GET /evaluations/:id: one result, to its principal (or the admin scope). */
function showResult(sessions: Sessions) {
  return async function showResult(request: RouteRequest<typeof resultSchema>, reply: FastifyReply) {
    const { service } = request.server;
    const { id } = request.params;
    const { principal } = request;
    const record = isJobId(id) ? await service.get(id) : undefined;
    if (record === undefined || (record.principal !== principal.name && !principal.scopes.has('admin'))) {
      const message = `There is no evaluation '${id}' that you may see.`;
      return sendPage(reply, 404, messagePage('Not found', message, viewerOf(sessions, request, reply)));
    }
    const slot =
      record.gpuUuid === undefined ? undefined : (await service.slots()).find((s) => s.uuid === record.gpuUuid);
    const gpu =
      record.gpuUuid === undefined
        ? undefined
        : { uuid: record.gpuUuid, ...(slot === undefined ? {} : { name: slot.name, arch: slot.arch }) };
    const queue = record.status === 'queued' ? await service.queueInfo(record) : undefined;
    const page = resultPage({
      viewer: viewerOf(sessions, request, reply),
      record,
      report: parseReport(record.report),
      gpu,
      queue,
    });
    return sendPage(reply, 200, page);
  };
}

/** GET /problems: the problems served. */
function showProblems(sessions: Sessions) {
  return async function showProblems(request: FastifyRequest, reply: FastifyReply) {
    const problems = request.server.service.problems.list();
    return sendPage(reply, 200, problemsPage({ viewer: viewerOf(sessions, request, reply), problems }));
  };
}

/** GET /problems/:name: a problem with cases, and a page of its leaderboard on one GPU class. */
function showProblem(sessions: Sessions) {
  return async function showProblem(request: RouteRequest<typeof problemSchema>, reply: FastifyReply) {
    const { service } = request.server;
    const { name } = request.params;
    const viewer = viewerOf(sessions, request, reply);
    const problem = PROBLEM_NAME.test(name)
      ? service.problems.list().find((p) => p.name === name && hasCases(p))
      : undefined;
    if (problem === undefined || !hasCases(problem)) {
      return sendPage(reply, 404, messagePage('Not found', `There is no problem with cases '${name}' here.`, viewer));
    }
    const badRequest = (message: string): FastifyReply =>
      sendPage(reply, 400, messagePage('Bad request', message, viewer));
    const q = request.query;
    const slots = service.slots();
    const gpuClass = q.gpuClass === undefined || q.gpuClass === '' ? defaultGpuClass(slots) : q.gpuClass;
    if (gpuClass === undefined) return badRequest('No GPU here gives a class: name one with ?gpuClass=');
    if (!GPU_CLASS_PATTERN.test(gpuClass)) return badRequest('A GPU class is letters, digits, _, . and - (64 at most)');
    const offset = q.offset === undefined || q.offset === '' ? 0 : Number(q.offset);
    if (!/^[0-9]+$/.test(q.offset ?? '0') || offset > LEADERBOARD_OFFSET_MAX) {
      return badRequest(`The page offset is an integer from 0 to ${LEADERBOARD_OFFSET_MAX}`);
    }
    const page = await service.store.leaderboard({ problem: name, gpuClass, limit: BOARD_PAGE_SIZE, offset });
    const models = slots.map((s) => s.classes[0]).filter((c): c is string => c !== undefined && c !== 'any');
    const classes = [...new Set([...models, gpuClass])].sort();
    const board = leaderboardView(name, gpuClass, page);
    return sendPage(reply, 200, problemPage({ viewer, problem, board, classes, offset }));
  };
}

const NO_SIGN_IN = 'This server has no tokens (it answers on loopback only): there is nothing to sign in to.';

/** GET /signin: the form (a browser already signed in goes on to `next`). */
function showSignIn(sessions: Sessions) {
  return async function showSignIn(request: RouteRequest<typeof signInSchema>, reply: FastifyReply) {
    if (!sessions.enabled) return sendPage(reply, 404, messagePage('No sign-in', NO_SIGN_IN, undefined));
    const next = localPath(request.query.next);
    if (sessions.principalOf(request) !== undefined) return reply.redirect(next, 303);
    return sendPage(reply, 200, signInPage({ csrf: sessions.csrfToken(request, reply), next, message: undefined }));
  };
}

/** POST /signin: a token with the read scope becomes a session cookie. */
function signIn(sessions: Sessions, verifier: TokenVerifier | undefined) {
  return async function signIn(request: FastifyRequest, reply: FastifyReply) {
    const form = (request.body ?? {}) as Record<string, unknown>;
    const next = localPath(form.next);
    const refuse = (statusCode: number, message: string): FastifyReply =>
      sendPage(reply, statusCode, signInPage({ csrf: sessions.csrfToken(request, reply), next, message }));
    if (verifier === undefined) return sendPage(reply, 404, messagePage('No sign-in', NO_SIGN_IN, undefined));
    if (!sessions.checkCsrf(request, form.csrf)) {
      return refuse(403, 'The form was not sent from this page (its CSRF token is missing or wrong): try again.');
    }
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    const principal = token === '' ? undefined : verifier.verify(token);
    if (principal === undefined) return refuse(401, 'That token is not valid.');
    if (!principal.scopes.has('read')) {
      return refuse(403, `The token of '${principal.name}' lacks the 'read' scope the dashboard needs.`);
    }
    void reply.header('set-cookie', sessions.sessionCookie(request, sessions.issue(principal)));
    return reply.redirect(next, 303);
  };
}

/** POST /signout: the session cookie cleared. */
function signOut(sessions: Sessions) {
  return async function signOut(request: FastifyRequest, reply: FastifyReply) {
    const form = (request.body ?? {}) as Record<string, unknown>;
    if (!sessions.checkCsrf(request, form.csrf)) {
      const message =
        'The form was not sent from this page (its CSRF token is missing or wrong): go back and try again.';
      return sendPage(reply, 403, messagePage('Not signed out', message, undefined));
    }
    void reply.header('set-cookie', sessions.clearedSessionCookie(request));
    return reply.redirect(sessions.enabled ? '/signin' : '/', 303);
  };
}

/** GET /assets/:file: the script and the style sheet, cached for good (their names change with their content). */
async function serveAsset(request: RouteRequest<typeof assetSchema>, reply: FastifyReply) {
  const asset = assetAt(`/assets/${request.params.file}`);
  if (asset === undefined) {
    throw new ServiceError('NOT_FOUND', `No asset '${request.params.file.slice(0, 64)}'`);
  }
  return reply
    .headers({
      'content-type': asset.contentType,
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    })
    .send(asset.body);
}

/** GET /v1/stream: one more follower of the plugin's summary streams. */
function followService(streams: SummaryStreams) {
  return async function followService(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    streams.open(request.principal, reply);
  };
}

// ---------------------------------------------------------------------------------------------------------------
// /v1/stream

/** What a 'job' event says of an evaluation. */
function jobItem(r: JobRecord) {
  return {
    id: r.id,
    name: jobName(r.job),
    status: r.status,
    verdict: r.verdict ?? null,
    phase: r.phase ?? null,
    principal: r.principal,
    createdAt: new Date(r.createdAt).toISOString(),
    finishedAt: r.finishedAt === undefined ? null : new Date(r.finishedAt).toISOString(),
  };
}

interface Follower {
  principal: Principal;
  stream: EventStream;
  /** The summary last sent to it. */
  lastSummary: string;
  /** Its newest jobs as last sent (id → the event's data); undefined until the first look. */
  jobs: Map<string, string> | undefined;
}

/**
 * Everyone following /v1/stream. While anyone follows, the summary is read once per interval for all of them and
 * sent to each whose last one differs; when it changed (a job was submitted, started or ended: the counts moved),
 * each follower's newest jobs are read and those that changed are sent. Reading the store, not the events of this
 * process, is what makes it work on any API process of a distributed deployment, whichever process ran the job; a
 * job that starts or ends here only makes the next look come at once.
 */
class SummaryStreams {
  readonly #service: EvalService;
  readonly #heartbeatMs: number;
  readonly #intervalMs: number;
  readonly #max: number;
  readonly #maxMs: number;
  readonly #followers = new Set<Follower>();
  #timer: NodeJS.Timeout | undefined;
  #lastSummary = '';
  #looking = false;
  #lookAgain = false;
  #closed = false;

  constructor(service: EvalService, options: DashboardOptions) {
    this.#service = service;
    this.#heartbeatMs = options.sseHeartbeatMs;
    this.#intervalMs = options.summaryIntervalMs ?? 1000;
    this.#max = options.maxStreams ?? 64;
    this.#maxMs = options.streamMaxMs ?? 10 * 60_000;
    service.onStarted(() => this.#look());
    service.onFinished(() => this.#look());
  }

  open(principal: Principal, reply: FastifyReply): void {
    if (this.#closed || this.#followers.size >= this.#max) {
      const message = `${this.#followers.size} streams are open, the most this server keeps: retry in 10 s`;
      throw new ServiceError('TOO_MANY_STREAMS', message, 10);
    }
    // A look that began before the stream ended may still be under way: the stream writes nothing after its end.
    const stream = openEventStream(reply, { heartbeatMs: this.#heartbeatMs, maxMs: this.#maxMs });
    const follower: Follower = { principal, stream, lastSummary: '', jobs: undefined };
    this.#followers.add(follower);
    stream.onClose(() => {
      this.#followers.delete(follower);
      if (this.#followers.size === 0) this.#stopTimer();
    });
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#look(), this.#intervalMs);
      this.#timer.unref();
    }
    this.#look();
  }

  close(): void {
    this.#closed = true;
    for (const f of [...this.#followers]) f.stream.close();
    this.#stopTimer();
  }

  #stopTimer(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** One look at a time; a request for one meanwhile makes one more after it. */
  #look(): void {
    if (this.#followers.size === 0) return;
    if (this.#looking) {
      this.#lookAgain = true;
      return;
    }
    this.#looking = true;
    this.#send()
      .catch(() => {}) // the store failed this once: the next interval looks again
      .finally(() => {
        this.#looking = false;
        if (this.#lookAgain) {
          this.#lookAgain = false;
          this.#look();
        }
      });
  }

  async #send(): Promise<void> {
    const data = JSON.stringify(await summaryOf(this.#service));
    const changed = data !== this.#lastSummary;
    this.#lastSummary = data;
    for (const f of [...this.#followers]) {
      if (f.lastSummary !== data) {
        f.lastSummary = data;
        f.stream.send('summary', data);
      }
      if (changed || f.jobs === undefined) await this.#sendJobs(f);
    }
  }

  /** The follower's newest jobs (any principal's, with the admin scope) that changed since it last heard. */
  async #sendJobs(f: Follower): Promise<void> {
    const admin = f.principal.scopes.has('admin');
    const page = await this.#service.store.list({
      ...(admin ? {} : { principal: f.principal.name }),
      limit: PAGE_SIZE,
    });
    const seen = new Map<string, string>();
    // Oldest first, so that rows a page inserts end up newest first.
    for (const record of [...page.items].reverse()) {
      const data = JSON.stringify(jobItem(record));
      seen.set(record.id, data);
      if (f.jobs?.get(record.id) !== data) f.stream.send('job', data);
    }
    f.jobs = seen;
  }
}
