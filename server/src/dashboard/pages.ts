// SPDX-License-Identifier: MIT
// The dashboard's pages as functions of their data, returning escaped HTML: the list of evaluations with the live
// service summary, one evaluation's result, the sign-in form, and a short message page for errors (the problems'
// pages are problem-page.ts's, in the same layout). Each page is whole without its script (server-rendered tables,
// SVG charts, plain forms and links); the script only keeps the list and a running job live. Nothing here reads a
// request or the service: routes.ts gathers the data.
import type { QueueInfo } from '../service.js';
import type { JobRecord, JobStatus, StoredJob } from '../store/store.js';
import { VERDICTS } from '../judge/verdict.js';
import { SCRIPT, STYLES } from './assets.js';
import { casesSection } from './cases.js';
import { formatMs } from './charts.js';
import { type Html, type HtmlValue, markup } from './html.js';
import {
  type StoredReport,
  checkSection,
  comparisonSection,
  compileSection,
  errorSection,
  metricsSection,
  phasesSection,
  pythonCandidateSection,
  pythonReferenceSection,
  sourceSection,
  timingSection,
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

/** Who is looking, for the header. */
export interface Viewer {
  name: string;
  /** Set when the page came with a session cookie: the header then has a sign-out form with this CSRF token. */
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

function time(ms: number | undefined, cell?: string): Html {
  const data = cell === undefined ? '' : markup` data-cell="${cell}"`;
  if (ms === undefined) return markup`<time${data}></time>`;
  return markup`<time${data} datetime="${new Date(ms).toISOString()}">${displayTime(ms)}</time>`;
}

/** A badge coloured by its value (the style sheet matches data-value); empty ones are hidden. */
function badge(value: string | undefined, cell?: string): Html {
  const data = cell === undefined ? '' : markup` data-cell="${cell}"`;
  return markup`<span class="badge" data-value="${value ?? ''}"${data}>${value ?? ''}</span>`;
}

/** A job's label: its name, else its kernel. */
export function jobName(job: StoredJob): string {
  return typeof job.name === 'string' && job.name !== '' ? job.name : job.kernel;
}

interface LayoutOptions {
  title: string;
  viewer: Viewer | undefined;
  /** data-* attributes of <body>, for the script. */
  data?: Record<string, string>;
  main: HtmlValue;
}

function header(v: Viewer | undefined): Html | '' {
  if (v === undefined) return '';
  const who = v.signIn
    ? markup`Signed in as <strong>${v.name}</strong>`
    : markup`<strong>${v.name}</strong> <span class="small">(loopback, no sign-in)</span>`;
  const signOut =
    v.signOutCsrf === undefined
      ? ''
      : markup`<form method="post" action="/signout"><input type="hidden" name="csrf" value="${v.signOutCsrf}">
<button type="submit">Sign out</button></form>`;
  return markup`<div class="who"><span>${who}</span>${signOut}</div>`;
}

/** A whole page: the head, the header with the viewer, `main`, the footer. */
export function layout(o: LayoutOptions): string {
  const data = Object.entries(o.data ?? {}).map(([k, v]) => markup` data-${k}="${v}"`);
  const page = markup`<!doctype html>
<html lang="en">
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
<nav aria-label="Main"><a href="/">Evaluations</a><a href="/problems">Problems</a><a href="/docs">API</a></nav>
${header(o.viewer)}
</header>
<main id="main" tabindex="-1">
${o.main}
</main>
<footer>cudakit evaluation service</footer>
</body>
</html>
`;
  return page.toString();
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

type Gpu = ServiceSummary['gpus'][number];

/** A GPU of the summary; without one, the empty item the script clones. */
function gpuItem(g: Gpu | undefined): Html {
  const detail = g === undefined ? '' : `${g.arch} · ${g.uuid} · ${g.jobs} ${g.jobs === 1 ? 'job' : 'jobs'}`;
  return markup`<li>${badge(g?.state, 'state')}<strong data-cell="name">${g?.name ?? ''}</strong>
<span class="muted small" data-cell="detail">${detail}</span></li>`;
}

function summaryCard(s: ServiceSummary): Html {
  const stat = (label: string, cell: string, n: number): Html =>
    markup`<div><dt>${label}</dt><dd data-cell="${cell}">${n}</dd></div>`;
  return markup`<section class="card" data-summary-root aria-labelledby="service-h">
<div class="summary-head"><h2 id="service-h">Service</h2>
<p class="live" data-live-status role="status">${s.accepting ? '' : 'draining: no new evaluations'}</p></div>
<dl class="stats">${stat('Queued', 'queue', s.queue.depth)}${stat('Running', 'running', s.jobs.running)}
${stat('Succeeded', 'succeeded', s.jobs.succeeded)}${stat('Failed', 'failed', s.jobs.failed)}
${stat('Cancelled', 'cancelled', s.jobs.cancelled)}</dl>
${s.reason === null ? '' : markup`<p class="alert">No GPU: ${s.reason}</p>`}
<ul class="gpus" data-gpus aria-label="GPUs">${s.gpus.map(gpuItem)}</ul>
<template data-gpu-template>${gpuItem(undefined)}</template>
</section>`;
}

/** A row of the list; without a record, the empty row the script clones for a job that appears. */
function row(r: JobRecord | undefined, admin: boolean): Html {
  const href = r === undefined ? '' : `/evaluations/${r.id}`;
  const phase = r?.status === 'running' ? (r.phase ?? '') : '';
  return markup`<tr data-id="${r?.id ?? ''}" data-status="${r?.status ?? ''}">
<td data-label="Evaluation"><a data-cell="name" href="${href}">${r === undefined ? '' : jobName(r.job)}</a>
<span class="id mono" data-cell="id">${r?.id ?? ''}</span></td>
<td data-label="Status">${badge(r?.status, 'status')}<span class="phase" data-cell="phase">${phase}</span></td>
<td data-label="Verdict">${badge(r?.verdict, 'verdict')}</td>
<td data-label="Created">${time(r?.createdAt, 'created')}</td>
<td data-label="Finished">${time(r?.finishedAt, 'finished')}</td>
${admin ? markup`<td data-label="Principal" data-cell="principal">${r?.principal ?? ''}</td>` : ''}
</tr>`;
}

function select(id: string, label: string, values: readonly string[], chosen: string | undefined): Html {
  const any = markup`<option value="">any</option>`;
  const options = values.map((v) => markup`<option${v === chosen ? markup` selected` : ''}>${v}</option>`);
  return markup`<label for="${id}">${label}<select id="${id}" name="${id}">${any}${options}</select></label>`;
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
  const empty = p.items.length === 0;
  const principal = p.admin
    ? markup`<label for="principal">Principal
<input id="principal" name="principal" value="${f.principal ?? ''}" maxlength="64" autocomplete="off"></label>`
    : '';
  const principalColumn = p.admin ? markup`<th scope="col">Principal</th>` : '';
  const pager =
    f.cursor === undefined && p.next === undefined
      ? ''
      : markup`<nav class="pager" aria-label="Pages">${
          f.cursor === undefined ? '' : markup`<a href="${listUrl(f)}">First page</a>`
        }${p.next === undefined ? '' : markup`<a rel="next" href="${listUrl(f, p.next)}">Next page</a>`}</nav>`;
  const main = markup`<h1>Evaluations</h1>
${summaryCard(p.summary)}
<section class="card" aria-labelledby="list-h">
<h2 id="list-h">${p.admin ? 'Every principal’s evaluations' : 'Your evaluations'}</h2>
<form class="filters" method="get" action="/" role="search" aria-label="Filter evaluations">
${select('status', 'Status', STATUSES, f.status)}
${select('verdict', 'Verdict', VERDICTS, f.verdict)}
${principal}
<button type="submit" class="primary">Filter</button>${filtered ? markup`<a class="button" href="/">Clear</a>` : ''}
</form>
<p class="muted" data-empty${empty ? '' : markup` hidden`}>${
    filtered ? 'No evaluation matches these filters.' : 'No evaluations yet.'
  }</p>
<table class="jobs" data-jobs data-first-page="${f.cursor === undefined ? 'true' : 'false'}"
data-filter-status="${f.status ?? ''}" data-filter-verdict="${f.verdict ?? ''}"
data-filter-principal="${f.principal ?? ''}"${empty ? markup` hidden` : ''}>
<caption class="sr-only">Evaluations, newest first</caption>
<thead><tr><th scope="col">Evaluation</th><th scope="col">Status</th><th scope="col">Verdict</th>
<th scope="col">Created</th><th scope="col">Finished</th>${principalColumn}</tr></thead>
<tbody>${p.items.map((r) => row(r, p.admin))}</tbody>
</table>
<template data-row-template>${row(undefined, p.admin)}</template>
${pager}
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
  /** Its place in the queue, while queued: under the turns clients take (schedule/queue.ts). */
  queue: QueueInfo | undefined;
}

function ordinal(n: number): string {
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}

function jobSection(job: StoredJob): Html {
  const { source: _shownBelow, ...rest } = job;
  return markup`<details class="card"><summary>The job as submitted (JSON)</summary>
<pre class="message">${JSON.stringify(rest, null, 2)}</pre></details>`;
}

function resultHead(p: ResultPage): Html {
  const r = p.record;
  const meta = (label: string, value: HtmlValue): Html => markup`<div><dt>${label}</dt><dd>${value}</dd></div>`;
  const open = r.status === 'running' || r.status === 'queued';
  const gpu =
    p.gpu === undefined
      ? r.options.gpu === 'any'
        ? 'any'
        : `class ${r.options.gpu}`
      : `${p.gpu.name ?? p.gpu.uuid}${p.gpu.arch === undefined ? '' : ` (${p.gpu.arch})`}`;
  const limits =
    `${r.options.timeoutSeconds} s to run, ${r.options.maxQueueSeconds} s to queue, ` +
    `priority ${r.options.priority}`;
  const ahead = p.queue?.ahead === 1 ? '1 job starts' : `${p.queue?.ahead ?? 0} jobs start`;
  const queue =
    p.queue === undefined
      ? ''
      : markup`<p>${ordinal(p.queue.position)} in the queue · ${p.queue.running} of ${p.queue.gpus} GPU${
          p.queue.gpus === 1 ? '' : 's'
        } of its class busy</p>
<p class="muted small">Clients take turns: ${ahead} before this one, one per client in each round; a client's own
jobs go by priority, then age.</p>`;
  return markup`<nav class="crumbs" aria-label="Breadcrumb"><a href="/">← Evaluations</a></nav>
<section class="card" aria-labelledby="job-h">
<div class="job-head"><div><h1 id="job-h">${jobName(r.job)}</h1>
<p class="badges">${badge(r.status, 'job-status')}${open ? '' : badge(r.verdict)}
<span class="muted small" data-job-phase>${r.status === 'running' ? (r.phase ?? '') : ''}</span>
<span class="live small" data-live-status role="status"></span></p></div>
<p class="small"><a href="/v1/evaluations/${r.id}">JSON</a></p></div>
<dl class="meta">
${meta('Evaluation', markup`<span class="mono">${r.id}</span>`)}
${meta('Kernel', markup`<code>${r.job.kernel}</code>`)}
${meta('Principal', r.principal)}
${meta('GPU', gpu)}
${meta('Created', time(r.createdAt))}
${r.startedAt === undefined ? '' : meta('Queue wait', formatMs(r.startedAt - r.createdAt))}
${r.startedAt === undefined || r.finishedAt === undefined ? '' : meta('Run time', formatMs(r.finishedAt - r.startedAt))}
${r.finishedAt === undefined ? '' : meta('Finished', time(r.finishedAt))}
${meta('Limits', limits)}
</dl>
${queue}
${
  open
    ? markup`<p class="small muted">This page follows the evaluation and shows its result when it ends
(with JavaScript; else reload it).</p>`
    : ''
}
</section>`;
}

/** One evaluation: its state, and everything its report holds. */
export function resultPage(p: ResultPage): string {
  const r = p.record;
  const report = p.report ?? {};
  const sections: [string, string, Html | ''][] = [
    ['error', 'Error', errorSection(r.error, report.error)],
    ['cases', 'Cases', casesSection(p.report)],
    ['timing', 'Timing', timingSection(report.timing)],
    ['comparison', 'Comparison', comparisonSection(report.comparison)],
    ['python-candidate', 'Python kernel', pythonCandidateSection(report.pythonCandidate)],
    ['python-reference', 'Python reference', pythonReferenceSection(report.pythonReference)],
    ['check', 'Check', checkSection(report.check, r.job)],
    ['compile', 'Compile', compileSection(report)],
    ['metrics', 'Device metrics', metricsSection(report.deviceMetrics, r.options.deviceMetrics)],
    ['phases', 'Phases', phasesSection(report)],
    ['source', 'Source', sourceSection(r.job, report)],
  ];
  const shown = sections.filter(([, , body]) => body !== '');
  const toc =
    shown.length === 0
      ? ''
      : markup`<nav aria-label="Sections"><ul class="toc">${shown.map(
          ([id, label]) => markup`<li><a href="#${id}">${label}</a></li>`,
        )}</ul></nav>`;
  const main = markup`${resultHead(p)}
${toc}
<div class="sections">${shown.map(([, , body]) => body)}</div>
${jobSection(r.job)}`;
  const ended = r.finishedAt !== undefined;
  return layout({ title: jobName(r.job), viewer: p.viewer, data: { 'job-id': r.id, follow: String(!ended) }, main });
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
  const main = markup`<section class="card signin" aria-labelledby="signin-h">
<h1 id="signin-h">Sign in</h1>
<p class="muted">Paste one of your API tokens. It is checked once and not kept: the browser gets a session instead.</p>
${p.message === undefined ? '' : markup`<p class="alert" role="alert">${p.message}</p>`}
<form method="post" action="/signin">
<input type="hidden" name="csrf" value="${p.csrf}">
<input type="hidden" name="next" value="${p.next}">
<label for="token">Token
<input id="token" name="token" type="password" autocomplete="current-password"
required maxlength="512" autofocus></label>
<button type="submit" class="primary">Sign in</button>
</form>
</section>`;
  return layout({ title: 'Sign in', viewer: undefined, main });
}

/** A short page that says what went wrong, with a way back. */
export function messagePage(title: string, message: string, viewer: Viewer | undefined): string {
  const main = markup`<section class="card" aria-labelledby="message-h"><h1 id="message-h">${title}</h1>
<p>${message}</p><p><a href="/">Back to the evaluations</a></p></section>`;
  return layout({ title, viewer, main });
}
