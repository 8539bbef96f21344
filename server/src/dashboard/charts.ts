// SPDX-License-Identifier: MIT
// Charts as SVG drawn on the server, so they need no script: the timing histogram (with the median and its 95 %
// interval), the samples in the order they were taken (rejected ones apart), and a comparison's speedup with its
// interval against the band that counts as the same. Colours come from the style sheet's classes; every chart has a
// title and a description for screen readers, and each bar its count as a tooltip.
import { type Html, markup } from './html.js';

const WIDTH = 560;
const HEIGHT = 220;
const MARGIN = { left: 52, right: 14, top: 12, bottom: 38 } as const;
const PLOT_W = WIDTH - MARGIN.left - MARGIN.right;
const PLOT_H = HEIGHT - MARGIN.top - MARGIN.bottom;
const BOTTOM = MARGIN.top + PLOT_H;
/** More points than this are thinned to every k-th (the histogram still counts them all). */
const MAX_POINTS = 4000;

/** A unit for times in ms, chosen by their size: s, ms, µs or ns. */
export function timeUnit(maxMs: number): { unit: string; perMs: number } {
  if (maxMs >= 1000) return { unit: 's', perMs: 1e-3 };
  if (maxMs >= 1) return { unit: 'ms', perMs: 1 };
  if (maxMs >= 1e-3) return { unit: 'µs', perMs: 1e3 };
  return { unit: 'ns', perMs: 1e6 };
}

/** 4 significant digits, no trailing zeros: 0.41235 → '0.4124'. */
export function significant(value: number, digits = 4): string {
  if (!Number.isFinite(value)) return String(value);
  return String(Number(value.toPrecision(digits)));
}

/** A time in ms with a unit that suits it: 0.000412 → '412 ns', 0.4124 → '412.4 µs'. */
export function formatMs(ms: number): string {
  const { unit, perMs } = timeUnit(Math.abs(ms));
  return `${significant(ms * perMs)} ${unit}`;
}

/** About `count` round tick values covering [lo, hi] (1, 2 or 5 times a power of ten apart). */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const rough = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  const ticks: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

/** The smallest and largest value (a loop: samples may be too many to spread into Math.min's arguments). */
function extent(values: readonly number[]): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return [lo, hi];
}

/** A range to draw [lo, hi] in: itself, or around the value when there is only one. */
function domain([lo, hi]: [number, number]): [number, number] {
  if (hi > lo) return [lo, hi];
  const pad = Math.abs(lo) * 0.01 || 1e-6;
  return [lo - pad, hi + pad];
}

function scale(domainLo: number, domainHi: number, rangeLo: number, rangeHi: number): (v: number) => number {
  const span = domainHi - domainLo || 1;
  return (v) => rangeLo + ((v - domainLo) / span) * (rangeHi - rangeLo);
}

/** Coordinates with one decimal: shorter markup, no visible difference. */
const px = (v: number): string => v.toFixed(1);

function frame(id: string, kind: string, title: string, description: string, body: Html, height = HEIGHT): Html {
  const labelledBy = `${id}-title ${id}-desc`;
  return markup`<svg class="chart ${kind}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-labelledby="${labelledBy}">
<title id="${id}-title">${title}</title><desc id="${id}-desc">${description}</desc>${body}</svg>`;
}

/** A line across the plot's width at height `y`. */
function across(className: string, y: number | string): Html {
  return markup`<line class="${className}" x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y}" y2="${y}"/>`;
}

interface Axis {
  ticks: readonly number[];
  at: (v: number) => number;
  label: (v: number) => string;
  title: string;
}

/** The axes, grid lines and tick labels of a plot. */
function axes(x: Axis, y: Axis): Html {
  const yTicks = y.ticks.map(
    (t) => markup`${across('grid', px(y.at(t)))}
<text x="${MARGIN.left - 6}" y="${px(y.at(t) + 4)}" text-anchor="end">${y.label(t)}</text>`,
  );
  const xTicks = x.ticks.map(
    (t) => markup`<line class="axis" x1="${px(x.at(t))}" x2="${px(x.at(t))}" y1="${BOTTOM}" y2="${BOTTOM + 4}"/>
<text x="${px(x.at(t))}" y="${BOTTOM + 16}" text-anchor="middle">${x.label(t)}</text>`,
  );
  const middle = MARGIN.top + PLOT_H / 2;
  return markup`${yTicks}${across('axis', BOTTOM)}${xTicks}
<text x="${MARGIN.left + PLOT_W / 2}" y="${HEIGHT - 4}" text-anchor="middle">${x.title}</text>
<text x="12" y="${middle}" text-anchor="middle" transform="rotate(-90 12 ${middle})">${y.title}</text>`;
}

export interface HistogramOptions {
  /** Unique on the page: the chart's title and description ids start with it. */
  id: string;
  /** What was timed, for the title. */
  label: string;
  median: number | undefined;
  ciLow: number | undefined;
  ciHigh: number | undefined;
  /** 'b': the second kernel of a comparison (its colour). */
  series?: 'b';
}

const finite = (v: number | undefined): v is number => v !== undefined && Number.isFinite(v);

/** The histogram of accepted samples (GPU ms per launch), with the median and its 95 % interval. */
export function histogramSvg(samplesMs: readonly number[], o: HistogramOptions): Html {
  const values = samplesMs.filter(Number.isFinite);
  if (values.length === 0) return markup`<p class="muted">No accepted samples to draw.</p>`;
  const [min, max] = extent(values);
  const [lo, hi] = domain([min, max]);
  const binCount = Math.max(1, Math.min(40, Math.ceil(Math.sqrt(values.length))));
  const width = (hi - lo) / binCount;
  const counts = new Array<number>(binCount).fill(0);
  for (const v of values) counts[Math.min(binCount - 1, Math.floor((v - lo) / width))]!++;
  const { unit, perMs } = timeUnit(hi);
  const maxCount = Math.max(...counts);
  const x = scale(lo, hi, MARGIN.left, MARGIN.left + PLOT_W);
  const y = scale(0, maxCount, BOTTOM, MARGIN.top);
  const cls = o.series === 'b' ? 'bar b' : 'bar';
  const bars = counts.map((n, i) => {
    if (n === 0) return '';
    const from = lo + i * width;
    const left = x(from);
    const barWidth = Math.max(1, x(from + width) - left - 1);
    const range = `${significant(from * perMs)}–${significant((from + width) * perMs)} ${unit}`;
    const tip = `${range}: ${n} sample${n === 1 ? '' : 's'}`;
    const height = px(y(0) - y(n));
    return markup`<rect class="${cls}" x="${px(left)}" y="${px(y(n))}" width="${px(barWidth)}" height="${height}">
<title>${tip}</title></rect>`;
  });
  let band: Html | '' = '';
  if (finite(o.ciLow) && finite(o.ciHigh)) {
    const from = x(Math.max(lo, o.ciLow));
    const to = x(Math.min(hi, o.ciHigh));
    const bandWidth = px(Math.max(1, to - from));
    band = markup`<rect class="ci" x="${px(from)}" y="${MARGIN.top}" width="${bandWidth}" height="${PLOT_H}"/>`;
  }
  const median = finite(o.median)
    ? markup`<line class="median" x1="${px(x(o.median))}" x2="${px(x(o.median))}" y1="${MARGIN.top}" y2="${BOTTOM}"/>`
    : '';
  const description =
    `${values.length} accepted samples from ${formatMs(min)} to ${formatMs(max)}` +
    (finite(o.median) ? `; median ${formatMs(o.median)}` : '') +
    (finite(o.ciLow) && finite(o.ciHigh) ? `, 95 % interval ${formatMs(o.ciLow)} to ${formatMs(o.ciHigh)}` : '');
  const body = markup`${band}${bars}${median}${axes(
    {
      ticks: niceTicks(lo, hi, 6).filter((t) => t >= lo && t <= hi),
      at: x,
      label: (t) => significant(t * perMs),
      title: `GPU time per launch (${unit})`,
    },
    { ticks: niceTicks(0, maxCount, 4).filter(Number.isInteger), at: y, label: String, title: 'samples' },
  )}`;
  return frame(o.id, 'histogram', `Histogram of ${o.label}'s GPU times`, description, body);
}

export interface SampleSeries {
  label: string;
  samples: readonly { gpuMs: number; rejected: boolean }[];
  series?: 'b';
}

/** Every sample in the order taken (GPU ms against sample number); rejected ones (clock throttled) in their colour. */
export function samplesSvg(id: string, series: readonly SampleSeries[], medianMs: number | undefined): Html {
  const all = series.flatMap((s) => s.samples.map((p) => p.gpuMs)).filter(Number.isFinite);
  if (all.length === 0) return markup`<p class="muted">No samples to draw.</p>`;
  const [lo, hi] = domain(extent(all));
  const count = Math.max(...series.map((s) => s.samples.length));
  const { unit, perMs } = timeUnit(hi);
  const x = scale(0, Math.max(1, count - 1), MARGIN.left + 4, MARGIN.left + PLOT_W - 4);
  const y = scale(lo, hi, BOTTOM - 4, MARGIN.top + 4);
  const step = Math.max(1, Math.ceil(count / MAX_POINTS));
  // One path per series and kind: a zero-length segment per point, drawn as a dot by its round line cap.
  const path = (s: SampleSeries, rejected: boolean): string => {
    let d = '';
    s.samples.forEach((p, i) => {
      if (i % step === 0 && p.rejected === rejected && Number.isFinite(p.gpuMs)) {
        d += `M${px(x(i))} ${px(y(p.gpuMs))}h0`;
      }
    });
    return d;
  };
  const points = series.map((s) => {
    const accepted = path(s, false);
    const rejected = path(s, true);
    const cls = s.series === 'b' ? 'points b' : 'points';
    return markup`${accepted === '' ? '' : markup`<path class="${cls}" d="${accepted}"/>`}${
      rejected === '' ? '' : markup`<path class="rejected" d="${rejected}"/>`
    }`;
  });
  const median = finite(medianMs) && medianMs >= lo && medianMs <= hi ? across('median', px(y(medianMs))) : '';
  const rejectedCount = series.reduce((n, s) => n + s.samples.filter((p) => p.rejected).length, 0);
  const description =
    `${series.map((s) => `${s.samples.length} samples of ${s.label}`).join(' and ')}, from ${formatMs(lo)} to ` +
    `${formatMs(hi)}${rejectedCount > 0 ? `; ${rejectedCount} rejected (clock throttled)` : ''}`;
  const body = markup`${axes(
    {
      ticks: niceTicks(1, Math.max(2, count), 6).filter((t) => Number.isInteger(t) && t >= 1 && t <= count),
      at: (t) => x(t - 1),
      label: String,
      title: 'sample, in the order taken',
    },
    {
      ticks: niceTicks(lo, hi, 4).filter((t) => t >= lo && t <= hi),
      at: y,
      label: (t) => significant(t * perMs),
      title: unit,
    },
  )}${median}${points}`;
  return frame(id, 'samples', 'GPU time of each sample, in the order taken', description, body);
}

/** A comparison's speedup (A's median over B's) with its 95 % interval, against 1 and the band that counts as SAME. */
export function speedupSvg(id: string, speedup: number, low: number, high: number, sameWithin = 0.02): Html {
  const height = 96;
  const [vlo, vhi] = extent([speedup, low, high, 1 - sameWithin, 1 + sameWithin]);
  const pad = (vhi - vlo) * 0.15;
  const lo = vlo - pad;
  const hi = vhi + pad;
  const x = scale(lo, hi, MARGIN.left, WIDTH - MARGIN.right);
  const mid = 40;
  const ticks = niceTicks(lo, hi, 6)
    .filter((t) => t >= lo && t <= hi)
    .map(
      (t) => markup`<line class="axis" x1="${px(x(t))}" x2="${px(x(t))}" y1="70" y2="74"/>
<text x="${px(x(t))}" y="86" text-anchor="middle">${significant(t, 3)}×</text>`,
    );
  const cap = (v: number): Html =>
    markup`<line class="interval" x1="${px(x(v))}" x2="${px(x(v))}" y1="${mid - 7}" y2="${mid + 7}"/>`;
  const description =
    `speedup ${significant(speedup, 3)}×, 95 % interval ${significant(low, 3)}× to ${significant(high, 3)}×; ` +
    `within ${significant(sameWithin * 100, 2)} % of 1× counts as the same`;
  const [sameFrom, sameTo] = [x(1 - sameWithin), x(1 + sameWithin)];
  const one = px(x(1));
  const body = markup`
<rect class="same" x="${px(sameFrom)}" y="14" width="${px(sameTo - sameFrom)}" height="52"/>
<line class="one" x1="${one}" x2="${one}" y1="10" y2="70"/><text x="${one}" y="9" text-anchor="middle">same</text>
${across('axis', 70)}${ticks}
<line class="interval" x1="${px(x(low))}" x2="${px(x(high))}" y1="${mid}" y2="${mid}"/>${cap(low)}${cap(high)}
<circle class="estimate" cx="${px(x(speedup))}" cy="${mid}" r="6"/>`;
  return frame(id, 'speedup', 'Speedup of B over A with its 95 % interval', description, body, height);
}
