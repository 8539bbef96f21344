// SPDX-License-Identifier: MIT
// Golden shapes: what `cudakit bench --json` and the human output look like, without the measured values. The GPU
// tier compares real runs with the goldens beside this file; the unit tier checks these functions on captured
// output (captured/). Pure: no vitest, no CUDA, so scripts can use it too.

/**
 * A JSON value's shape: a type name for a leaf ('number', 'string', 'boolean', 'null'; alternatives joined by '|'),
 * [element shape] for an array ([] when empty), and an object of shapes for an object. In a golden, a key ending in
 * '?' may be absent. Arrays merge their elements' shapes: a key only some elements have becomes optional.
 */
export type Shape = string | Shape[] | { [key: string]: Shape };

const isObjectShape = (s: Shape): s is { [key: string]: Shape } => typeof s === 'object' && !Array.isArray(s);
const bare = (key: string): string => key.replace(/\?$/, '');

export function jsonShape(value: unknown): Shape {
  if (value === null) return 'null';
  if (Array.isArray(value)) return value.length === 0 ? [] : [value.map(jsonShape).reduce(mergeShapes)];
  if (typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return Object.fromEntries(Object.keys(o).sort().map((k) => [k, jsonShape(o[k])]));
  }
  return typeof value;
}

/** One shape covering both: object keys united (optional where one lacks them), leaf types joined. */
export function mergeShapes(a: Shape, b: Shape): Shape {
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length === 0) return b;
    if (b.length === 0) return a;
    return [mergeShapes(a[0]!, b[0]!)];
  }
  if (isObjectShape(a) && isObjectShape(b)) {
    const out: { [key: string]: Shape } = {};
    const keys = new Set([...Object.keys(a).map(bare), ...Object.keys(b).map(bare)]);
    for (const k of [...keys].sort()) {
      const inA = a[k] ?? a[`${k}?`];
      const inB = b[k] ?? b[`${k}?`];
      const optional = inA === undefined || inB === undefined || `${k}?` in a || `${k}?` in b;
      out[optional ? `${k}?` : k] = inA !== undefined && inB !== undefined ? mergeShapes(inA, inB) : (inA ?? inB)!;
    }
    return out;
  }
  const leaves = (s: Shape): string[] => (typeof s === 'string' ? s.split('|') : [JSON.stringify(s)]);
  return [...new Set([...leaves(a), ...leaves(b)])].sort().join('|');
}

/**
 * Where `actual` (a jsonShape) departs from `golden`: missing keys, keys the golden does not have, and types it does
 * not allow, one line each with its path ([] when it conforms). 'null' passes where a golden says 'number' (the JSON
 * writer turns NaN and Infinity into null); an empty array passes for any array.
 */
export function shapeDiff(actual: Shape, golden: Shape, path = '$'): string[] {
  if (typeof golden === 'string') {
    const allowed = golden.split('|');
    if (allowed.includes('number')) allowed.push('null');
    if (typeof actual !== 'string')
      return [`${path}: expected ${golden}, got ${Array.isArray(actual) ? 'an array' : 'an object'}`];
    const bad = actual.split('|').filter((t) => !allowed.includes(t));
    return bad.length === 0 ? [] : [`${path}: expected ${golden}, got ${actual}`];
  }
  if (Array.isArray(golden)) {
    if (!Array.isArray(actual))
      return [`${path}: expected an array, got ${typeof actual === 'string' ? actual : 'an object'}`];
    if (actual.length === 0 || golden.length === 0) return [];
    return shapeDiff(actual[0]!, golden[0]!, `${path}[]`);
  }
  if (!isObjectShape(actual))
    return [`${path}: expected an object, got ${Array.isArray(actual) ? 'an array' : actual}`];
  const out: string[] = [];
  const known = new Set(Object.keys(golden).map(bare));
  for (const [gk, g] of Object.entries(golden)) {
    const k = bare(gk);
    const optional = gk.endsWith('?');
    const a = actual[k] ?? actual[`${k}?`];
    if (a === undefined) {
      if (!optional) out.push(`${path}.${k}: missing`);
      continue;
    }
    if (`${k}?` in actual && !optional) out.push(`${path}.${k}: missing in some elements`);
    out.push(...shapeDiff(a, g, `${path}.${k}`));
  }
  for (const k of Object.keys(actual).map(bare)) {
    if (!known.has(k)) out.push(`${path}.${k}: not in the golden (${JSON.stringify(actual[k] ?? actual[`${k}?`])})`);
  }
  return out;
}

/**
 * The line structure of the CLI's human output: measured values become placeholders (a duration `<time>`, another
 * number `#`, the histogram, clock, device and peak-bandwidth phrases by name, the comparison sentence by its
 * parts), the timer in a result's heading is dropped (CUPTI or events, as the machine allows), warning lines
 * (`⚠ ...`, which depend on the run) are left out, and the trailing newline is dropped.
 */
export function outputLines(text: string): string[] {
  const lines = text.replace(/\n$/, '').split('\n');
  return (text === '' ? [] : lines).filter((l) => !/^\s*(\x1b\[\d+m)?⚠/.test(l)).map((line) => {
    let l = line
      .replace(/^(\S.* \((?:cold|hot|graph), [a-z]+), (?:CUPTI|events)\)$/, '$1)') // the timer depends on the machine
      .replace(/^( {2}histogram \(min … p99\) +).*$/, '$1<histogram>')
      .replace(/^( {2}clock +).*$/, '$1<clock>')
      .replace(/^( {2}device +).*$/, '$1<device>')
      .replace(
        new RegExp(
          /\d+(?:\.\d+)?% of peak bandwidth|(?:at|above) the measured peak bandwidth \(.*?\)/.source +
            /(?:: check the bytes per launch, or whether L2 served part of the data)?/.source,
        ),
        '<share of peak>',
      )
      .replace(/stopped: [a-z ,]+?( \(not converged\))? ·/, 'stopped: <reason> ·')
      .replace(
        new RegExp(
          /^( {2}.+?) is (?:\S+× faster than|\S+× slower than|about as fast as) (.+?)/.source +
            /(?:: \S+×)? \(95% CI \S+ … \S+\) → (?:FASTER|SLOWER|SAME|UNCERTAIN)$/.source,
        ),
        '$1 <faster|slower|same> $2 <CI> → <verdict>',
      );
    l = l.replace(/(?<![\w.])-?(?:\d+(?:\.\d+)?(?:e[+-]?\d+)?|∞|n\/a) (?:ns|µs|ms|s)\b/g, '<time>');
    return l.replace(/(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?/g, '#');
  });
}
