// SPDX-License-Identifier: MIT
// A problem with cases' result on its page: the score, and a row per case as the stored report has it. The judge
// stored the report redacted (judge/problem-report.ts), so a hidden case is its number, whether it ran and passed, and
// its part of the score; nothing more of it is there to show.
import { hiddenLabel } from '../judge/problem-report.js';
import { formatMs, significant } from './charts.js';
import { type Html, markup } from './html.js';
import { section } from './report.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
/** A time in µs as the page writes times; '' when there is none. */
const us = (v: unknown): string => (num(v) === undefined ? '' : formatMs(num(v)! / 1e3));

/** The Cases section of a problem with cases' report; '' for any other report. */
export function casesSection(report: unknown): Html | '' {
  if (!isObject(report) || !Array.isArray(report.cases)) return '';
  let hidden = 0;
  const rows = report.cases.filter(isObject).map((c) => {
    const name = c.visibility === 'hidden' ? hiddenLabel(++hidden) : String(c.name ?? '');
    const dims =
      c.visibility === 'hidden' || !isObject(c.dims) ? '' : Object.entries(c.dims).map(([k, v]) => `${k}=${v}`);
    const result = c.ran !== true ? 'not run' : c.passed === true ? 'PASSED' : 'FAILED';
    const speedup = num(isObject(c.scored) ? c.scored.speedup : c.speedup);
    return markup`<tr><td data-label="Case">${name}</td><td data-label="Dimensions" class="mono">${
      Array.isArray(dims) ? dims.join(' ') : dims
    }</td><td data-label="Result"><span class="badge" data-value="${result}">${result}</span></td>
<td data-label="Speedup" class="num">${speedup === undefined ? '' : `${significant(speedup)}×`}</td>
<td data-label="Baseline" class="num">${us(c.baselineUs)}</td>
<td data-label="Kernel" class="num">${us(c.candidateUs)}</td></tr>`;
  });
  const score = num(report.score);
  const [low, high] = [num(report.scoreLow), num(report.scoreHigh)];
  const headline =
    score === undefined
      ? ''
      : markup`<p><span class="headline">${significant(score)}</span> score: the geometric mean of the cases' speedups
over the baseline, each kernel time floored at its roofline${
          low === undefined || high === undefined
            ? ''
            : markup` <span class="muted">(95 % interval ${significant(low)} – ${significant(high)})</span>`
        }</p>`;
  const table = markup`<div class="scroll"><table><thead><tr><th scope="col">Case</th><th scope="col">Dimensions</th>
<th scope="col">Result</th><th scope="col" class="num">Speedup</th><th scope="col" class="num">Baseline</th>
<th scope="col" class="num">Kernel</th></tr></thead><tbody>${rows}</tbody></table></div>`;
  return section('cases', `Cases of ${String(report.problem ?? 'the problem')}`, markup`${headline}${table}`, true);
}
