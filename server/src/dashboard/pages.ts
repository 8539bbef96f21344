// SPDX-License-Identifier: MIT
// The dashboard's pages as functions of their data, returning escaped HTML: the list of evaluations with the live
// service summary, one evaluation's result, the sign-in form, and a short message page for errors. Each page is
// whole without its script (server-rendered tables, SVG charts, plain forms and links); the script only keeps the
// list and a running job live. Nothing here reads a request or the service: routes.ts gathers the data.
import type { EvalJob } from 'cudakit';
import type { QueueInfo } from '../service.js';
import type { JobRecord, JobStatus } from '../store/store.js';
import { VERDICTS } from '../verdict.js';
import { SCRIPT, STYLES } from './assets.js';
import { formatMs } from './charts.js';
import { type Html, type HtmlValue, html } from './html.js';
import {
  checkSection,
  comparisonSection,
  compileSection,
  errorSection,
  metricsSection,
  phasesSection,
  sourceSection,
  timingSection,
  type StoredReport,
} from './report.js';

export const STATUSES: readonly JobStatus[] = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];

/** What the service summary shows (GET / as JSON, and each `summary` event of /v1/stream). */
export interface ServiceSummary {
  gpus: {
    uuid: string;
    name: string;
    arch: string;
    state: string;
    jobs: number;
    restarts: number;
    shared: boolean;
    lastError: string | null;
  }[];
  /** Why there is no GPU, when there is none. */
  reason: string | null;
  queue: { depth: number };
  jobs: Record<JobStatus, number>;
  /** Whether submissions are taken (false while draining). */
  accepting: boolean;
}

/** Who is looking, for the header: the name, and the sign-out form's CSRF token when signed in with a cookie. */
export interface Viewer {
  name: string;
  /** Set when the page came with a session cookie: the header then has a sign-out button. */
  signOutCsrf: string | undefined;
  /** Whether this server has sign-in at all (it has tokens). */
  signIn: boolean;
}

/** 1700000000000 → '2023-11-14 22:13:20 UTC' (the script writes times the same way). */
export function displayTime(ms: number | undefined): string {
  if (ms === undefined) return '';
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

function time(ms: number | undefined): Html | '' {
  return ms === undefined ? '' : html`<time datetime="${new Date(ms).toISOString()}">${displayTime(ms)}</time>`;
}

const badge = (value: string | undefined, cell?: string): Html =>
  html`<span class="badge" data-value="${value ?? ''}" ${cell === undefined ? '' : html` data-cell="${cell}"`}
    >${value ?? ''}</span
  >`;

/** A job's label: its name, else its kernel. */
export function jobName(job: EvalJob): string {
  return typeof job.name === 'string' && job.name !== '' ? job.name : job.kernel;
}

interface LayoutOptions {
  title: string;
  viewer: Viewer | undefined;
  /** data-* attributes of <body>, for the script. */
  data?: Record<string, string>;
  main: HtmlValue;
}

function layout(o: LayoutOptions): string {
  const data = Object.entries(o.data ?? {}).map(([k, v]) => html` data-${k}="${v}"`);
  const v = o.viewer;
  const who =
    v === undefined
      ? ''
      : html`<div class="who">
          <span
            >${v.signIn ? html`Signed in as <strong>${v.name}</strong>` : html`<strong>${v.name}</strong> <span class="small">(loopback, no sign-in)</span>`}</span
          >${
            v.signOutCsrf === undefined
              ? ''
              : html`<form method="post" action="/signout">
                  <input type="hidden" name="csrf" value="${v.signOutCsrf}" /><button type="submit">Sign out</button>
                </form>`
          }
        </div>`;
  return `<!doctype html>\n${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · cudakit</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${STYLES.path}">
<script src="${SCRIPT.path}" defer></script>
</head>
<body${data}>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="/">cudakit <span>evaluations</span></a>
<nav aria-label="Main"><a href="/">Evaluations</a><a href="/docs">API</a></nav>
${who}
</header>
<main id="main" tabindex="-1">
${o.main}
</main>
<footer>cudakit evaluation service</footer>
</body>
</html>`}\n`;
}

// ---------------------------------------------------------------------------------------------------------------
// The list

export interface ListFilters {
  status: JobStatus | undefined;
  verdict: string | undefined;
  /** Admin only: one principal's jobs. */
  principal: string | undefined;
  cursor: string | undefined;
}

/** The list's URL with these filters (and a cursor). */
export function listUrl(filters: Omit<ListFilters, 'cursor'>, cursor?: string): string {
  const q = new URLSearchParams();
  if (filters.status !== undefined) q.set('status', filters.status);
  if (filters.verdict !== undefined) q.set('verdict', filters.verdict);
  if (filters.principal !== undefined) q.set('principal', filters.principal);
  if (cursor !== undefined) q.set('cursor', cursor);
  const query = q.toString();
  return query === '' ? '/' : `/?${query}`;
}

function gpuItem(g: ServiceSummary['gpus'][number] | undefined): Html {
  const detail = g === undefined ? '' : `${g.arch} · ${g.uuid} · ${g.jobs} ${g.jobs === 1 ? 'job' : 'jobs'}`;
  return html`<li>
    ${badge(g?.state, 'state')}<strong data-cell="name">${g?.name ?? ''}</strong
    ><span class="muted small" data-cell="detail">${detail}</span>
  </li>`;
}

function summaryCard(s: ServiceSummary): Html {
  const stat = (label: string, cell: string, n: number): Html =>
    html`<div>
      <dt>${label}</dt>
      <dd data-cell="${cell}">${n}</dd>
    </div>`;
  return html`<section class="card" data-summary-root aria-labelledby="service-h">
    <div class="summary-head">
      <h2 id="service-h">Service</h2>
      <p class="live" data-live-status role="status">${s.accepting ? '' : 'draining: no new evaluations'}</p>
    </div>
    <dl class="stats">
      ${stat('Queued', 'queue', s.queue.depth)}${stat('Running', 'running', s.jobs.running)}${stat(
        'Succeeded',
        'succeeded',
        s.jobs.succeeded,
      )}${stat('Failed', 'failed', s.jobs.failed)}${stat('Cancelled', 'cancelled', s.jobs.cancelled)}
    </dl>
    ${s.reason === null ? '' : html`<p class="alert">No GPU: ${s.reason}</p>`}
    <ul class="gpus" data-gpus aria-label="GPUs">
      ${s.gpus.map(gpuItem)}
    </ul>
    <template data-gpu-template>${gpuItem(undefined)}</template>
  </section>`;
}

function row(r: JobRecord | undefined, admin: boolean): Html {
  const href = r === undefined ? '' : `/evaluations/${r.id}`;
  return html`<tr data-id="${r?.id ?? ''}" data-status="${r?.status ?? ''}">
    <td data-label="Evaluation">
      <a data-cell="name" href="${href}">${r === undefined ? '' : jobName(r.job)}</a
      ><span class="id mono" data-cell="id">${r?.id ?? ''}</span>
    </td>
    <td data-label="Status">
      ${badge(r?.status, 'status')}<span class="phase" data-cell="phase"
        >${r?.status === 'running' ? (r.phase ?? '') : ''}</span
      >
    </td>
    <td data-label="Verdict">${badge(r?.verdict, 'verdict')}</td>
    <td data-label="Created">
      <time data-cell="created" ${r === undefined ? '' : html` datetime="${new Date(r.createdAt).toISOString()}"`}
        >${displayTime(r?.createdAt)}</time
      >
    </td>
    <td data-label="Finished">
      <time
        data-cell="finished"
        ${r?.finishedAt === undefined ? '' : html` datetime="${new Date(r.finishedAt).toISOString()}"`}
        >${displayTime(r?.finishedAt)}</time
      >
    </td>
    ${admin ? html`<td data-label="Principal" data-cell="principal">${r?.principal ?? ''}</td>` : ''}
  </tr>`;
}

function select(id: string, label: string, values: readonly string[], chosen: string | undefined): Html {
  return html`<label for="${id}"
    >${label}<select id="${id}" name="${id}">
      <option value="">any</option>
      ${values.map((v) => html`<option${v === chosen ? html` selected` : ''}>${v}</option>`)}
    </select></label
  >`;
}

export interface ListPage {
  viewer: Viewer;
  summary: ServiceSummary;
  items: readonly JobRecord[];
  next: string | undefined;
  filters: ListFilters;
  admin: boolean;
}

/** The list of evaluations, newest first, with filters and paging, under the service summary. */
export function listPage(p: ListPage): string {
  const f = p.filters;
  const filtered = f.status !== undefined || f.verdict !== undefined || f.principal !== undefined;
  const main = html`<h1>Evaluations</h1>
    ${summaryCard(p.summary)}
    <section class="card" aria-labelledby="list-h">
      <h2 id="list-h">${p.admin ? 'Every principal’s evaluations' : 'Your evaluations'}</h2>
      <form class="filters" method="get" action="/" role="search" aria-label="Filter evaluations">
        ${select('status', 'Status', STATUSES, f.status)} ${select('verdict', 'Verdict', VERDICTS, f.verdict)}
        ${p.admin ? html`<label for="principal">Principal<input id="principal" name="principal" value="${f.principal ?? ''}" maxlength="64" autocomplete="off" /></label>` : ''}
        <button type="submit" class="primary">Filter</button
        >${filtered ? html`<a class="button" href="/">Clear</a>` : ''}
      </form>
      <p class="muted" data-empty${p.items.length === 0 ? '' : html` hidden`}>
        ${filtered ? 'No evaluation matches these filters.' : 'No evaluations yet.'}
      </p>
      <table
        class="jobs"
        data-jobs
        data-first-page="${f.cursor === undefined ? 'true' : 'false'}"
        data-filter-status="${f.status ?? ''}"
        data-filter-verdict="${f.verdict ?? ''}"
        data-filter-principal="${f.principal ?? ''}"
        ${p.items.length === 0 ? html` hidden` : ''}
      >
        <caption class="sr-only">
          Evaluations, newest first
        </caption>
        <thead>
          <tr>
            <th scope="col">Evaluation</th>
            <th scope="col">Status</th>
            <th scope="col">Verdict</th>
            <th scope="col">Created</th>
            <th scope="col">Finished</th>
            ${p.admin ? html`<th scope="col">Principal</th>` : ''}
          </tr>
        </thead>
        <tbody>
          ${p.items.map((r) => row(r, p.admin))}
        </tbody>
      </table>
      <template data-row-template>${row(undefined, p.admin)}</template>
      ${
        f.cursor === undefined && p.next === undefined
          ? ''
          : html`<nav class="pager" aria-label="Pages">
              ${f.cursor === undefined ? '' : html`<a href="${listUrl(f)}">First page</a>`}${
                p.next === undefined ? '' : html`<a rel="next" href="${listUrl(f, p.next)}">Next page</a>`
              }
            </nav>`
      }
    </section>`;
  return layout({ title: 'Evaluations', viewer: p.viewer, main });
}

// ---------------------------------------------------------------------------------------------------------------
// One evaluation

export interface ResultPage {
  viewer: Viewer;
  record: JobRecord;
  report: StoredReport | undefined;
  /** The GPU it ran on, as the pool knows it now. */
  gpu: { uuid: string; name?: string; arch?: string } | undefined;
  /** Its place in the queue, while queued. */
  queue: QueueInfo | undefined;
}

function ordinal(n: number): string {
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}

function jobSection(job: EvalJob): Html {
  const shown: Record<string, unknown> = { ...job };
  delete shown.source; // shown below, line by line
  return html`<details class="card">
    <summary>The job as submitted (JSON)</summary>
    <pre class="message">${JSON.stringify(shown, null, 2)}</pre>
  </details>`;
}

/** One evaluation: its state, and everything its report holds. */
export function resultPage(p: ResultPage): string {
  const r = p.record;
  const report = p.report ?? {};
  const ended = r.finishedAt !== undefined;
  const meta = (label: string, value: HtmlValue): Html =>
    html`<div>
      <dt>${label}</dt>
      <dd>${value}</dd>
    </div>`;
  const head = html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/">← Evaluations</a></nav>
    <section class="card" aria-labelledby="job-h">
      <div class="job-head">
        <div>
          <h1 id="job-h">${jobName(r.job)}</h1>
          <p class="badges">
            ${badge(r.status)}${r.status === 'running' || r.status === 'queued' ? '' : badge(r.verdict)}<span
              class="muted small"
              data-job-phase
              >${r.status === 'running' && r.phase !== undefined ? r.phase : ''}</span
            ><span class="live small" data-live-status role="status"></span>
          </p>
        </div>
        <p class="small"><a href="/v1/evaluations/${r.id}">JSON</a></p>
      </div>
      <dl class="meta">
        ${meta('Evaluation', html`<span class="mono">${r.id}</span>`)}
        ${meta('Kernel', html`<code>${r.job.kernel}</code>`)} ${meta('Principal', r.principal)}
        ${meta('GPU', p.gpu === undefined ? `${r.options.gpu === 'any' ? 'any' : `class ${r.options.gpu}`}` : `${p.gpu.name ?? p.gpu.uuid}${p.gpu.arch === undefined ? '' : ` (${p.gpu.arch})`}`)}
        ${meta('Created', time(r.createdAt))}
        ${r.startedAt === undefined ? '' : meta('Queue wait', formatMs(r.startedAt - r.createdAt))}
        ${r.startedAt === undefined || r.finishedAt === undefined ? '' : meta('Run time', formatMs(r.finishedAt - r.startedAt))}
        ${ended ? meta('Finished', time(r.finishedAt)) : ''}
        ${meta('Limits', `${r.options.timeoutSeconds} s to run, ${r.options.maxQueueSeconds} s to queue, priority ${r.options.priority}`)}
      </dl>
      ${
        p.queue === undefined
          ? ''
          : html`<p>
              ${ordinal(p.queue.position)} in the queue · ${p.queue.running} of ${p.queue.gpus}
              GPU${p.queue.gpus === 1 ? '' : 's'} of its class busy
            </p>`
      }
      ${ended ? '' : html`<p class="small muted">This page follows the evaluation and shows its result when it ends (with JavaScript; else reload it).</p>`}
    </section>`;
  const sections: (Html | '')[] = [
    errorSection(r.error, report.error),
    checkSection(report.check, r.job),
    compileSection(report),
    timingSection(report.timing),
    comparisonSection(report.comparison),
    metricsSection(report.deviceMetrics, r.options.deviceMetrics),
    phasesSection(report),
    sourceSection(r.job, report),
  ];
  const toc = [
    ['error', 'Error'],
    ['check', 'Check'],
    ['compile', 'Compile'],
    ['timing', 'Timing'],
    ['comparison', 'Comparison'],
    ['metrics', 'Device metrics'],
    ['phases', 'Phases'],
    ['source', 'Source'],
  ].filter((_, i) => sections[i] !== '');
  const main = html`${head}${
      toc.length === 0
        ? ''
        : html`<nav aria-label="Sections">
            <ul class="toc">
              ${toc.map(([id, label]) => html`<li><a href="#${id}">${label}</a></li>`)}
            </ul>
          </nav>`
    }
    <div class="sections">${sections}</div>
    ${jobSection(r.job)}`;
  return layout({
    title: jobName(r.job),
    viewer: p.viewer,
    data: { 'job-id': r.id, follow: ended ? 'false' : 'true' },
    main,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Sign-in and messages

export interface SignInPage {
  csrf: string;
  /** Where to go after signing in. */
  next: string;
  /** Why the last attempt was refused. */
  message: string | undefined;
}

/** The sign-in form: a token for a session cookie. */
export function signInPage(p: SignInPage): string {
  const main = html`<section class="card signin" aria-labelledby="signin-h">
    <h1 id="signin-h">Sign in</h1>
    <p class="muted">
      Paste one of your API tokens. It is checked once and not kept: the browser gets a session instead.
    </p>
    ${p.message === undefined ? '' : html`<p class="alert" role="alert">${p.message}</p>`}
    <form method="post" action="/signin">
      <input type="hidden" name="csrf" value="${p.csrf}" />
      <input type="hidden" name="next" value="${p.next}" />
      <label for="token"
        >Token<input
          id="token"
          name="token"
          type="password"
          autocomplete="current-password"
          required
          maxlength="512"
          autofocus
      /></label>
      <button type="submit" class="primary">Sign in</button>
    </form>
  </section>`;
  return layout({ title: 'Sign in', viewer: undefined, main });
}

/** A short page that says what went wrong, with a way back. */
export function messagePage(title: string, message: string, viewer: Viewer | undefined): string {
  const main = html`<section class="card" aria-labelledby="message-h">
    <h1 id="message-h">${title}</h1>
    <p>${message}</p>
    <p><a href="/">Back to the evaluations</a></p>
  </section>`;
  return layout({ title, viewer, main });
}
