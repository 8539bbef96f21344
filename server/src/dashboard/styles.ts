// SPDX-License-Identifier: MIT
// The dashboard's style sheet, as text (see client.ts for why assets are TypeScript modules). System fonts, light
// and dark schemes, visible focus, and one column below 700 px: tables become one card per row, wide content
// (source, metric names) scrolls inside its box, so a 390 px screen never scrolls sideways. Charts are coloured here
// through classes: the Content-Security-Policy allows no inline style.
export const STYLES_CSS = `:root {
  --bg: #f5f6f8; --card: #fff; --fg: #1c2128; --muted: #59636e; --border: #d8dde3; --accent: #2457c5;
  --ok: #1a7f37; --ok-bg: #dcf5e3; --bad: #b42318; --bad-bg: #fde4e1; --warn: #8a5a00; --warn-bg: #fdf0cc;
  --info: #0b5cad; --info-bg: #ddeafd; --quiet-bg: #eceff3; --focus: #f0b400; --code-bg: #f7f8fa;
  --mark: #fff4cc; --chart: #4571d9; --chart-2: #e07b39;
  color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0f1318; --card: #171c22; --fg: #e5e9ee; --muted: #9aa5b1; --border: #2c333c; --accent: #8cb0ff;
    --ok: #5fd47f; --ok-bg: #15341f; --bad: #ff8a7a; --bad-bg: #3d1714; --warn: #f2c14e; --warn-bg: #3a2d08;
    --info: #8cc2ff; --info-bg: #132c47; --quiet-bg: #232a32; --code-bg: #12161b; --mark: #3a3210;
    --chart: #7aa0ff; --chart-2: #f0a060;
  }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  overflow-wrap: anywhere;
}
a { color: var(--accent); }
a:hover { text-decoration-thickness: 2px; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; border-radius: 2px; }
code, pre, .mono {
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 13px;
}
h1 { font-size: 1.6rem; margin: 0 0 .25rem; line-height: 1.2; }
h2 { font-size: 1.1rem; margin: 0 0 .75rem; }
h3 { font-size: .9rem; margin: 1rem 0 .5rem; color: var(--muted); letter-spacing: .02em; }
.skip { position: absolute; left: -999px; top: 0; background: var(--card); padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.top {
  display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .6rem 1.25rem;
  background: var(--card); border-bottom: 1px solid var(--border);
}
.brand { font-weight: 700; font-size: 1.05rem; color: var(--fg); text-decoration: none; }
.brand span { color: var(--muted); font-weight: 500; }
.top nav { display: flex; gap: 1rem; flex: 1; }
.who { display: flex; align-items: center; gap: .6rem; color: var(--muted); }
.who form { margin: 0; }
main { max-width: 1200px; margin: 0 auto; padding: 1.25rem; }
main:focus { outline: none; }
.card {
  background: var(--card); border: 1px solid var(--border); border-radius: 10px; padding: 1rem 1.25rem;
  margin-bottom: 1.25rem; min-width: 0;
}
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 420px), 1fr)); gap: 0 1.25rem; }
.sections {
  display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 460px), 1fr)); gap: 0 1.25rem;
  align-items: start;
}
.sections > .wide { grid-column: 1 / -1; }
.muted { color: var(--muted); }
.small { font-size: .85rem; }
button, .button {
  font: inherit; padding: .4rem .9rem; border-radius: 6px; border: 1px solid var(--border); cursor: pointer;
  background: var(--quiet-bg); color: var(--fg); text-decoration: none; display: inline-block;
}
button.primary { background: var(--accent); border-color: var(--accent); color: var(--card); font-weight: 600; }
input, select {
  font: inherit; padding: .35rem .5rem; border: 1px solid var(--border); border-radius: 6px;
  background: var(--card); color: var(--fg); max-width: 100%;
}
.badge {
  display: inline-block; padding: .05rem .5rem; border-radius: 999px; font-size: .8rem; font-weight: 600;
  background: var(--quiet-bg); color: var(--fg); white-space: nowrap;
}
.badge:empty { display: none; }
.badge[data-value=PASSED], .badge[data-value=succeeded], .badge[data-value=idle], .badge[data-value=FASTER] {
  background: var(--ok-bg); color: var(--ok);
}
.badge[data-value=running], .badge[data-value=queued], .badge[data-value=busy], .badge[data-value=starting],
.badge[data-value=restarting], .badge[data-value=SAME] { background: var(--info-bg); color: var(--info); }
.badge[data-value=SUSPICIOUS], .badge[data-value=UNCERTAIN], .badge[data-value=cancelled] {
  background: var(--warn-bg); color: var(--warn);
}
.badge[data-value=failed], .badge[data-value=quarantined], .badge[data-value=SLOWER], .badge.bad {
  background: var(--bad-bg); color: var(--bad);
}
.badge[data-value$=_ERROR], .badge[data-value=INCORRECT], .badge[data-value=TIMEOUT], .badge[data-value=CRASHED],
.badge[data-value=UNWRITTEN], .badge[data-value=OUT_OF_BOUNDS], .badge[data-value=INPUT_MODIFIED],
.badge[data-value=NON_FINITE], .badge[data-value=ALL_ZERO], .badge[data-value=NONDETERMINISTIC],
.badge[data-value=IMPRECISE], .badge[data-value=SIGNATURE_MISMATCH], .badge[data-value=INVALID_REFERENCE] {
  background: var(--bad-bg); color: var(--bad);
}
.live { font-size: .8rem; color: var(--muted); margin: 0; }
.live[data-state=open]::before { content: "\\25cf  "; color: var(--ok); }
.summary-head { display: flex; justify-content: space-between; align-items: baseline; gap: 1rem; }
.stats { display: flex; flex-wrap: wrap; gap: .5rem 2rem; margin: 0 0 .75rem; }
.stats div { min-width: 5rem; }
.stats dt { color: var(--muted); font-size: .8rem; }
.stats dd { margin: 0; font-size: 1.5rem; font-weight: 650; font-variant-numeric: tabular-nums; }
.gpus { list-style: none; padding: 0; margin: 0; display: grid; gap: .4rem; }
.gpus li { display: flex; flex-wrap: wrap; gap: .25rem .6rem; align-items: baseline; }
.filters { display: flex; flex-wrap: wrap; gap: .75rem 1rem; align-items: end; margin-bottom: 1rem; }
.filters label { display: grid; gap: .2rem; font-size: .85rem; color: var(--muted); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid var(--border); vertical-align: top; }
th { font-size: .8rem; color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.jobs .id { display: block; color: var(--muted); font-size: .8rem; }
.jobs .phase { margin-left: .4rem; color: var(--muted); font-size: .8rem; }
.jobs a { font-weight: 600; }
.pager { display: flex; gap: 1rem; margin-top: 1rem; }
.crumbs { margin-bottom: .75rem; }
.job-head { display: flex; flex-wrap: wrap; justify-content: space-between; gap: .5rem 1.5rem; }
.job-head .badges { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin: .35rem 0 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; font-variant-numeric: tabular-nums; min-width: 0; }
.meta {
  margin-top: 1rem; grid-template-columns: repeat(auto-fill, minmax(min(100%, 240px), 1fr)); display: grid;
  gap: .6rem 1.25rem;
}
.meta div { min-width: 0; }
.meta dt { color: var(--muted); font-size: .8rem; }
.meta dd { margin: 0; }
.headline { font-size: 1.5rem; font-weight: 650; font-variant-numeric: tabular-nums; }
.toc {
  display: flex; flex-wrap: wrap; gap: .35rem 1rem; font-size: .9rem; margin: 0 0 1.25rem; padding: 0;
  list-style: none;
}
pre.message {
  white-space: pre-wrap; background: var(--code-bg); border: 1px solid var(--border); border-radius: 6px;
  padding: .75rem; margin: .5rem 0 0;
}
.scroll { overflow-x: auto; max-width: 100%; }
meter { width: 10rem; max-width: 100%; height: 1rem; vertical-align: middle; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 440px), 1fr)); gap: 1rem; }
figure { margin: 0; min-width: 0; }
figcaption { font-size: .85rem; color: var(--muted); margin-bottom: .25rem; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart.speedup { max-width: 720px; }
.chart text { fill: var(--muted); font-size: 11px; font-family: inherit; }
.chart .axis { stroke: var(--border); stroke-width: 1; }
.chart .grid { stroke: var(--border); stroke-width: 1; stroke-dasharray: 2 3; }
.chart .bar { fill: var(--chart); }
.chart .bar.b { fill: var(--chart-2); }
.chart .ci { fill: var(--chart); opacity: .15; }
.chart .median { stroke: var(--fg); stroke-width: 1.5; stroke-dasharray: 4 3; }
.chart .points { stroke: var(--chart); stroke-width: 3.5; stroke-linecap: round; fill: none; }
.chart .points.b { stroke: var(--chart-2); }
.chart .rejected { stroke: var(--bad); stroke-width: 3.5; stroke-linecap: round; fill: none; }
.chart .same { fill: var(--ok); opacity: .15; }
.chart .interval { stroke: var(--fg); stroke-width: 2; }
.chart .estimate { fill: var(--chart); stroke: var(--card); stroke-width: 2; }
.chart .one { stroke: var(--muted); stroke-width: 1; }
.legend { display: flex; gap: 1rem; font-size: .8rem; color: var(--muted); }
.legend span::before {
  content: ""; display: inline-block; width: .7rem; height: .7rem; border-radius: 2px; margin-right: .3rem;
  background: var(--chart); vertical-align: -1px;
}
.legend span.b::before { background: var(--chart-2); }
.legend span.rej::before { background: var(--bad); border-radius: 50%; }
.metrics td:first-child { word-break: break-all; }
.source {
  font: 13px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; list-style: none;
  margin: 0; padding: .5rem 0; background: var(--code-bg); border: 1px solid var(--border); border-radius: 6px;
  counter-reset: line; overflow-x: auto;
}
.source li { counter-increment: line; display: block; min-width: max-content; padding-right: 1rem; }
.source li::before {
  content: counter(line); display: inline-block; width: 3.5rem; padding-right: 1rem; text-align: right;
  color: var(--muted); user-select: none;
}
.source code { white-space: pre; }
.source li.flagged { background: var(--mark); }
.diag {
  display: block; margin: .1rem 0 .3rem 3.5rem; padding: .15rem .6rem; border-left: 3px solid var(--warn);
  white-space: pre-wrap; font-size: .85rem;
}
.diag[data-severity=error], .diag[data-severity="catastrophic error"] { border-color: var(--bad); }
.diag strong { text-transform: uppercase; font-size: .75rem; }
details > summary { cursor: pointer; color: var(--accent); margin: .5rem 0; }
ul.plain { margin: 0; padding-left: 1.2rem; }
.signin { max-width: 28rem; margin: 3rem auto; }
.signin label { display: grid; gap: .3rem; margin: 1rem 0; }
.signin input { width: 100%; }
.alert { padding: .6rem .8rem; border-radius: 6px; background: var(--bad-bg); color: var(--bad); margin: .75rem 0; }
footer { max-width: 1200px; margin: 0 auto; padding: 0 1.25rem 2rem; color: var(--muted); font-size: .8rem; }
@media (max-width: 700px) {
  main { padding: .75rem; }
  .card { padding: .8rem; }
  .jobs thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  .jobs, .jobs tbody, .jobs tr, .jobs td { display: block; width: 100%; }
  .jobs tr { border-bottom: 1px solid var(--border); padding: .5rem 0; }
  .jobs td { border: 0; padding: .15rem 0; display: flex; gap: .75rem; }
  .jobs td::before { content: attr(data-label); color: var(--muted); font-size: .8rem; min-width: 5.5rem; }
  .meta { grid-template-columns: 1fr 1fr; }
  .meta div:first-child { grid-column: 1 / -1; }
  .jobs td:first-child { display: block; padding-bottom: .3rem; }
  .jobs td:first-child::before { content: none; }
  .filters > * { flex: 1 1 9rem; }
  .source li::before { width: 2.5rem; padding-right: .6rem; }
  .diag { margin-left: 2.5rem; }
}
`;
