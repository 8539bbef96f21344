// SPDX-License-Identifier: MIT
// The problems' pages: the list of the problems served, and the page of a problem with cases: its description, its
// dimensions with their bounds, its public cases (the hidden ones only counted: nothing else of them is known here)
// and its leaderboard on one GPU class, with links to the classes served and to the next page. A board comes as the
// API shows it (http/routes/leaderboard.ts's leaderboardView): display names, never a principal or a job. Pure:
// routes.ts gathers the data.
import type { Leaderboard } from '../http/schemas/v1.js';
import type { CasesProblemInfo, ProblemInfo } from '../submit/problems.js';
import { significant } from './charts.js';
import { type Html, markup } from './html.js';
import { type Viewer, displayTime, layout } from './pages.js';
import { section } from './report.js';

/** A problem's page, on the board of `gpuClass` from `offset`. */
export function problemUrl(name: string, gpuClass?: string, offset?: number): string {
  const q = new URLSearchParams();
  if (gpuClass !== undefined) q.set('gpuClass', gpuClass);
  if (offset !== undefined && offset > 0) q.set('offset', String(offset));
  const query = q.toString();
  return `/problems/${encodeURIComponent(name)}${query === '' ? '' : `?${query}`}`;
}

/** Whether a problem of the registry's list is a problem with cases. */
export function hasCases(p: ProblemInfo | CasesProblemInfo): p is CasesProblemInfo {
  return 'kind' in p && p.kind === 'cases';
}

const dimsText = (dims: Record<string, number>): string =>
  Object.entries(dims)
    .map(([d, v]) => `${d}=${v}`)
    .join(' ');

/** Every problem served: a problem with cases links to its page. */
export function problemsPage(p: { viewer: Viewer; problems: readonly (ProblemInfo | CasesProblemInfo)[] }): string {
  const rows = p.problems.map((problem) => {
    const cases = hasCases(problem);
    const name = cases ? markup`<a href="${problemUrl(problem.name)}">${problem.name}</a>` : problem.name;
    const kind = cases
      ? `${problem.cases.length} public, ${problem.hiddenCases} hidden cases`
      : 'one shape (a job names it as its reference)';
    return markup`<tr><td data-label="Problem">${name}</td><td data-label="Description">${problem.description}</td>
<td data-label="Cases">${kind}</td></tr>`;
  });
  const table =
    rows.length === 0
      ? markup`<p class="muted">No problem is served here.</p>`
      : markup`<div class="scroll"><table><thead><tr><th scope="col">Problem</th><th scope="col">Description</th>
<th scope="col">Cases</th></tr></thead><tbody>${rows}</tbody></table></div>`;
  const main = markup`<h1>Problems</h1>${section('problems', 'Problems served', table, true)}`;
  return layout({ title: 'Problems', viewer: p.viewer, main });
}

export interface ProblemPage {
  viewer: Viewer;
  problem: CasesProblemInfo;
  board: Leaderboard;
  /** The GPU classes whose boards the page links to (the models served here, and the board shown). */
  classes: readonly string[];
  /** Where this page of the board starts. */
  offset: number;
}

function leaderboardSection(p: ProblemPage): Html {
  const { board, problem } = p;
  const links = p.classes.map((c) =>
    c === board.gpuClass
      ? markup`<strong aria-current="page">${c}</strong>`
      : markup`<a href="${problemUrl(problem.name, c)}">${c}</a>`,
  );
  const rows = board.entries.map(
    (e) => markup`<tr><td data-label="Rank" class="num">${e.rank}</td>
<td data-label="Name" class="mono">${e.displayName}</td>
<td data-label="Score" class="num">${significant(e.score)}</td>
<td data-label="95 % interval" class="num">${significant(e.scoreLow)} – ${significant(e.scoreHigh)}</td>
<td data-label="Submitted"><time datetime="${e.submittedAt}">${displayTime(Date.parse(e.submittedAt))}</time></td>
<td data-label="Status"><span class="badge" data-value="${e.status}">${e.status}</span></td></tr>`,
  );
  const table =
    rows.length === 0
      ? markup`<p class="muted">No entry on ${board.gpuClass} yet.</p>`
      : markup`<div class="scroll"><table><caption class="sr-only">Leaderboard, best first</caption>
<thead><tr><th scope="col" class="num">Rank</th><th scope="col">Name</th><th scope="col" class="num">Score</th>
<th scope="col" class="num">95 % interval</th><th scope="col">Submitted</th><th scope="col">Status</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
  const pager =
    p.offset === 0 && board.next === null
      ? ''
      : markup`<nav class="pager" aria-label="Pages">${
          p.offset === 0 ? '' : markup`<a href="${problemUrl(problem.name, board.gpuClass)}">First page</a>`
        }${
          board.next === null
            ? ''
            : markup`<a rel="next" href="${problemUrl(problem.name, board.gpuClass, board.next)}">Next page</a>`
        }</nav>`;
  const body = markup`<p class="muted">Each principal's best PASSED submission on ${board.gpuClass}: the geometric mean
of the cases' speedups over the reference, best first (on a tie the earlier submission). Entries stay provisional until
a re-run confirms them.</p>
${links.length > 1 ? markup`<p>GPU class: ${links.map((l, i) => (i === 0 ? l : markup` · ${l}`))}</p>` : ''}
${table}${pager}`;
  return section('leaderboard', `Leaderboard on ${board.gpuClass}`, body, true);
}

/** A problem with cases: what a submitter may know of it, and its leaderboard. */
export function problemPage(p: ProblemPage): string {
  const { problem } = p;
  const dims = Object.entries(problem.dims).map(
    ([d, b]) => markup`<tr><td data-label="Dimension" class="mono">${d}</td>
<td data-label="Bounds" class="num">${b.min} – ${b.max}</td><td data-label="Meaning">${b.description ?? ''}</td></tr>`,
  );
  const cases = problem.cases.map(
    (c) => markup`<tr><td data-label="Case">${c.name}</td>
<td data-label="Dimensions" class="mono">${dimsText(c.dims)}</td></tr>`,
  );
  const about = markup`<p>${problem.description}</p>
<div class="scroll"><table><thead><tr><th scope="col">Dimension</th><th scope="col" class="num">Bounds</th>
<th scope="col">Meaning</th></tr></thead><tbody>${dims}</tbody></table></div>
<p class="muted">Submit with <code>problem: '${problem.name}'</code> (POST /v1/evaluations): a kernel and its launch
over the dimensions.</p>`;
  const casesBody = markup`<div class="scroll"><table><thead><tr><th scope="col">Case</th>
<th scope="col">Dimensions</th></tr></thead><tbody>${cases}</tbody></table></div>
<p class="muted">and ${problem.hiddenCases} hidden ${problem.hiddenCases === 1 ? 'case' : 'cases'}, run once every
public case passed: their dimensions are not shown.</p>`;
  const main = markup`<h1>${problem.name}</h1>
<div class="sections">${section('problem', 'Problem', about)}${section('cases', 'Public cases', casesBody)}
${leaderboardSection(p)}</div>`;
  return layout({ title: problem.name, viewer: p.viewer, main });
}
