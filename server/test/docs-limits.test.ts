// SPDX-License-Identifier: MIT
// The limits the documentation states are the code's: server/README.md (the limits, the service fields, the flags'
// defaults) and server/docs/compat.md (its routes' body limits, its checks and its limits table) are read and each
// number compared with the constant it stands for, so that a limit changed in the code fails here until the docs say
// the same.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MAX_SOURCE_CHARS } from '../src/submit/admission.js';
import {
  DEFAULT_LARGE_BODIES,
  LARGE_BODY_BYTES,
  LARGE_BODY_MAX_WAITING,
  LARGE_BODY_SLOT_BYTES,
  LARGE_BODY_WAIT_MS,
} from '../src/http/body-slots.js';
import { parseConfig, type ServerConfig } from '../src/config.js';
import { BODY_LIMIT_BYTES, SUBMIT_BODY_LIMIT_BYTES } from '../src/http/schemas/v1.js';
import { PRIORITY } from '../src/schedule/queue.js';
import { ARGS_MAX, MAX_QUEUE_SECONDS, SOURCE_CHARS_MAX, TIMEOUT_SECONDS } from '../src/submit/fields.js';
import { COMPAT_NUM_TRIALS, COMPAT_TIMEOUT_SECONDS } from '../src/compat/schemas.js';
import { DEFAULT_LIMITS } from '../src/service.js';

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8');
/** The text with its line breaks (and the indents after them) as single spaces: sentences wrap anywhere. */
const flat = (text: string) => text.replace(/\s*\n\s*/g, ' ');

const MiB = 2 ** 20;
/** 86400 as the docs write it: groups of three digits separated by a space. */
const n = (value: number) => String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
/** 262144 as the docs write it in prose: with commas. */
const commas = (value: number) => value.toLocaleString('en-US');
const defaults = parseConfig([], {}) as ServerConfig;

/** `text` holds `part` (a failure shows the part, not the whole document). */
function expectIn(text: string, part: string): void {
  expect(text.includes(part), `the docs say: ${part}`).toBe(true);
}

describe('server/README.md', () => {
  const readme = flat(read('server/README.md'));

  it('states the limits the service enforces', () => {
    const limits = /\*\*Limits\*\* before anything is queued: (.*?) Every bad body is a 4xx/.exec(readme)?.[1];
    expect(limits).toBeDefined();
    expectIn(
      limits!,
      `${BODY_LIMIT_BYTES / MiB} MiB request bodies (${SUBMIT_BODY_LIMIT_BYTES / MiB} MiB on the routes that carry`,
    );
    expectIn(limits!, `bodies over ${LARGE_BODY_BYTES / MiB} MiB read a few at a time`);
    expectIn(
      limits!,
      `${SOURCE_CHARS_MAX / 1024} Ki characters per source (and per header), ` +
        `${MAX_SOURCE_CHARS / MiB} Mi of source and headers in all`,
    );
    expectIn(limits!, `; ${ARGS_MAX} arguments;`);
    expectIn(
      limits!,
      `${DEFAULT_LIMITS.maxQueuedPerPrincipal} queued jobs per principal, ${n(DEFAULT_LIMITS.maxQueued)} in all`,
    );
  });

  it('states the service fields’ ranges and defaults, and the MCP route’s body limit', () => {
    expectIn(
      readme,
      `\`timeoutSeconds\` (${TIMEOUT_SECONDS.min} … ${TIMEOUT_SECONDS.max}, default ${TIMEOUT_SECONDS.default}, ` +
        `and ${TIMEOUT_SECONDS.max} for a submission to a problem with cases:`,
    );
    expectIn(
      readme,
      `\`maxQueueSeconds\` (${MAX_QUEUE_SECONDS.min} … ${n(MAX_QUEUE_SECONDS.max)}, ` +
        `default ${MAX_QUEUE_SECONDS.default}, then`,
    );
    expectIn(readme, `\`priority\` (${PRIORITY.min} … ${PRIORITY.max}:`);
    expectIn(readme, `the body limit is the submitting routes' (${SUBMIT_BODY_LIMIT_BYTES / MiB} MiB)`);
  });

  it('gives the flags’ defaults as the configuration has them', () => {
    const row = (flag: string) => {
      const found = new RegExp(`^\\| \`${flag}\` \\| [^|]* \\| ([^|]*) \\| (.*) \\|$`, 'm').exec(
        read('server/README.md'),
      );
      expect(found, flag).not.toBeNull();
      return { default: found![1]!.trim(), meaning: found![2]! };
    };
    expect(row('--submits-per-minute').default).toBe(`\`${defaults.submitsPerMinute}\``);
    expect(row('--retention-days').default).toBe(`\`${defaults.retentionDays}\``);
    expect(row('--drain-seconds').default).toBe(`\`${defaults.drainSeconds}\``);
    expect(row('--lock-seconds').default).toBe(`\`${defaults.lockSeconds}\``);
    const large = row('--max-large-bodies');
    expect(large.default).toBe(`\`${defaults.maxLargeBodies}\``);
    expect(defaults.maxLargeBodies).toBe(DEFAULT_LARGE_BODIES);
    expect(large.meaning).toContain(
      `request bodies over ${LARGE_BODY_BYTES / MiB} MiB read at once, one per ${LARGE_BODY_SLOT_BYTES / MiB} MiB`,
    );
    expect(large.meaning).toContain(`up to ${LARGE_BODY_WAIT_MS / 1000} s (${LARGE_BODY_MAX_WAITING} at most)`);
    expect(row('--trust-proxy').default).toBe('off');
    expect(row('--metrics-public').default).toBe('off');
  });
});

describe('server/docs/compat.md', () => {
  const compat = read('server/docs/compat.md');

  it('gives each route the body limit it has', () => {
    // A POST's body limit; a GET has none ('—').
    const routes = [...compat.matchAll(/^\| `POST ([^`]+)` \| \w+ \| ([^|]+) \|/gm)];
    expect(routes.length).toBeGreaterThanOrEqual(4);
    for (const [, path, limit] of routes) {
      const expected = ['/evaluate', '/compare', '/'].includes(path!) ? SUBMIT_BODY_LIMIT_BYTES : BODY_LIMIT_BYTES;
      expect(limit!.trim(), `POST ${path}`).toBe(`${expected / MiB} MiB`);
    }
  });

  it('states the source limit the routes enforce, in the checks and the limits table', () => {
    const text = flat(compat);
    expect(text.match(/[^.]*\d+ M characters[^.]*/g)).toBeNull();
    expect(text.includes(`\`String should have at most ${SOURCE_CHARS_MAX} characters\``)).toBe(true);
    for (const m of text.matchAll(/(\d+) Ki \(([\d,]+)\) characters/g)) {
      expect([Number(m[1]) * 1024, m[2]]).toEqual([SOURCE_CHARS_MAX, commas(SOURCE_CHARS_MAX)]);
    }
  });

  it('has a limits table whose every row is the code’s', () => {
    const table = compat.split('\n## Limits\n')[1]!.split('\n## ')[0]!;
    const rows = new Map([...table.matchAll(/^\| (.+?) \| (.+?) \|$/gm)].slice(2).map((m) => [m[1]!, m[2]!] as const));
    const expected = new Map([
      [
        'request body, `/evaluate`, `/compare`, `/`',
        `${SUBMIT_BODY_LIMIT_BYTES / MiB} MiB (inflated, when gzip or deflate)`,
      ],
      ['request body, other routes', `${BODY_LIMIT_BYTES / MiB} MiB`],
      [
        '`source_code`',
        `${SOURCE_CHARS_MAX / 1024} Ki (${commas(SOURCE_CHARS_MAX)}) characters each: ` +
          'a longer one is a 400 at step 1, answered as soon as it arrives',
      ],
      ['`io.args`', String(ARGS_MAX)],
      ['declared buffers of a job', "a quarter of the smallest GPU's memory, or `--max-device-bytes`"],
      [
        '`num_trials`, `timeout`',
        `${COMPAT_NUM_TRIALS.min} … ${n(COMPAT_NUM_TRIALS.max)}, ` +
          `${COMPAT_TIMEOUT_SECONDS.min} … ${COMPAT_TIMEOUT_SECONDS.max} s (the original's)`,
      ],
      [
        '`cudakit.max_queue_seconds`',
        `${MAX_QUEUE_SECONDS.min} … ${n(MAX_QUEUE_SECONDS.max)} (default ${MAX_QUEUE_SECONDS.default})`,
      ],
      [
        'submissions',
        `\`--submits-per-minute\` per principal (default ${defaults.submitsPerMinute}), ` +
          'shared with `/v1/evaluations`',
      ],
      [
        'queued jobs',
        `${DEFAULT_LIMITS.maxQueuedPerPrincipal} per principal (429), ${n(DEFAULT_LIMITS.maxQueued)} in all (503)`,
      ],
    ]);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(expected));
  });
});
