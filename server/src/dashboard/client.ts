// SPDX-License-Identifier: MIT
// The dashboard's one script, as text (tsc copies no other files into dist, so assets live in TypeScript modules).
// Plain ES2020 for the browser, no framework: the pages are whole without it, and it only keeps them live. On the
// list page it follows /v1/stream (the service summary, and the newest jobs as their state changes) and updates the
// summary, the GPUs and the rows in place; on a running evaluation's page it follows that job's events and reloads
// once it is done. Every value is written with textContent, and new rows and GPUs are clones of <template>s the
// server rendered, so no markup is ever built from data here.
export const CLIENT_JS = `'use strict';
(function () {
  var TERMINAL = ['succeeded', 'failed', 'cancelled'];
  var live = document.querySelector('[data-live-status]');

  function setLive(text, state) {
    if (!live) return;
    live.textContent = text;
    live.setAttribute('data-state', state);
  }

  function time(iso) {
    return iso ? iso.slice(0, 10) + ' ' + iso.slice(11, 19) + ' UTC' : '';
  }

  function fill(root, name, text, value) {
    var el = root.querySelector('[data-cell="' + name + '"]');
    if (!el) return null;
    el.textContent = text == null ? '' : String(text);
    if (value !== undefined) el.setAttribute('data-value', value == null ? '' : String(value));
    return el;
  }

  // The service summary: counts, queue depth and the GPUs.
  var summary = document.querySelector('[data-summary-root]');
  function renderSummary(s) {
    if (!summary) return;
    fill(summary, 'queue', s.queue.depth);
    ['running', 'succeeded', 'failed', 'cancelled'].forEach(function (k) {
      fill(summary, k, s.jobs[k]);
    });
    var list = summary.querySelector('[data-gpus]');
    var template = summary.querySelector('template[data-gpu-template]');
    if (!list || !template) return;
    var items = s.gpus.map(function (g) {
      var li = template.content.firstElementChild.cloneNode(true);
      fill(li, 'state', g.state, g.state);
      fill(li, 'name', g.name);
      fill(li, 'detail', g.arch + ' \\u00b7 ' + g.uuid + ' \\u00b7 ' + g.jobs + (g.jobs === 1 ? ' job' : ' jobs'));
      return li;
    });
    list.replaceChildren.apply(list, items);
  }

  // The list of evaluations: rows change in place; a new job appears on the first page when it fits the filters.
  var table = document.querySelector('table[data-jobs]');
  function renderJob(job) {
    if (!table) return;
    var body = table.tBodies[0];
    var row = null;
    for (var i = 0; i < body.rows.length; i++) {
      if (body.rows[i].getAttribute('data-id') === job.id) row = body.rows[i];
    }
    if (row === null) {
      var d = table.dataset;
      var fits =
        d.firstPage === 'true' &&
        (!d.filterStatus || d.filterStatus === job.status) &&
        (!d.filterVerdict || d.filterVerdict === job.verdict) &&
        (!d.filterPrincipal || d.filterPrincipal === job.principal);
      var template = document.querySelector('template[data-row-template]');
      if (!fits || !template) return;
      row = template.content.firstElementChild.cloneNode(true);
      row.setAttribute('data-id', job.id);
      var link = fill(row, 'name', job.name);
      if (link) link.setAttribute('href', '/evaluations/' + encodeURIComponent(job.id));
      fill(row, 'id', job.id);
      fill(row, 'principal', job.principal);
      var created = fill(row, 'created', time(job.createdAt));
      if (created) created.setAttribute('datetime', job.createdAt);
      body.insertBefore(row, body.firstChild);
      var empty = document.querySelector('[data-empty]');
      if (empty) empty.hidden = true;
      table.hidden = false;
    } else if (TERMINAL.indexOf(row.getAttribute('data-status')) >= 0 && TERMINAL.indexOf(job.status) < 0) {
      return; // an older event than the one shown
    }
    row.setAttribute('data-status', job.status);
    fill(row, 'status', job.status, job.status);
    fill(row, 'phase', job.status === 'running' && job.phase ? job.phase : '');
    fill(row, 'verdict', job.verdict || '', job.verdict || '');
    var finished = fill(row, 'finished', time(job.finishedAt));
    if (finished && job.finishedAt) finished.setAttribute('datetime', job.finishedAt);
  }

  if (summary || table) {
    var stream = new EventSource('/v1/stream');
    stream.addEventListener('open', function () {
      setLive('live', 'open');
    });
    stream.addEventListener('error', function () {
      setLive('reconnecting\\u2026', 'closed');
    });
    stream.addEventListener('summary', function (e) {
      renderSummary(JSON.parse(e.data));
    });
    stream.addEventListener('job', function (e) {
      renderJob(JSON.parse(e.data));
    });
  }

  // One evaluation that has not ended: follow its events, then reload to show its result.
  var page = document.body.dataset;
  if (page.jobId && page.follow === 'true') {
    var status = document.querySelector('[data-cell="job-status"]');
    var phase = document.querySelector('[data-job-phase]');
    var events = new EventSource('/v1/evaluations/' + encodeURIComponent(page.jobId) + '/events');
    events.addEventListener('open', function () {
      setLive('live', 'open');
    });
    events.addEventListener('error', function () {
      setLive('reconnecting\\u2026', 'closed');
    });
    events.addEventListener('started', function () {
      if (status) {
        status.textContent = 'running';
        status.setAttribute('data-value', 'running');
      }
    });
    events.addEventListener('phase', function (e) {
      if (phase) phase.textContent = JSON.parse(e.data).phase;
    });
    events.addEventListener('progress', function (e) {
      var p = JSON.parse(e.data);
      if (phase && p.kind === 'samples') phase.textContent = 'time \\u00b7 ' + p.samples + ' samples';
      if (phase && p.kind === 'rounds') phase.textContent = 'time \\u00b7 round ' + p.round + ' of ' + p.rounds;
    });
    events.addEventListener('done', function () {
      events.close();
      location.reload();
    });
  }
})();
`;
