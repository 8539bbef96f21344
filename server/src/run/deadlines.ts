// SPDX-License-Identifier: MIT
// The default deadlines of a job, which the slot arms per phase from the worker's `phase` messages. Ordered inside
// out: every phase ends before the job's own limit, and the job's limit is the request's timeoutSeconds, which the
// queue's and the HTTP wait's limits must exceed (a deadline that fires outside first loses the job's result).
import type { EvalJob, PresetName } from 'cudakit';
import type { Deadlines } from './protocol.js';

/**
 * The stopping rule's timeoutMs per preset: cudakit's PRESETS, copied because only a worker may load cudakit
 * (server/test/run/deadlines.test.ts keeps the two equal).
 */
export const PRESET_TIMEOUT_MS: Readonly<Record<PresetName, number>> = {
  quick: 2_000,
  default: 10_000,
  rigorous: 60_000,
};

/** The phases' defaults, before the job's own limit caps them. */
export const PHASE_DEFAULTS_MS = {
  /** validateJob: pure JavaScript, but it decodes (and inflates) literal data. */
  validate: 30_000,
  compile: 60_000,
  /** The CUDA context (about 0.2 s, more on a busy GPU) and the modules. */
  load: 60_000,
  check: 60_000,
  recheck: 60_000,
  profile: 120_000,
} as const;

/**
 * A job with a Python kernel: its runner starts and imports torch, and a torch_cuda kernel's first build runs nvcc
 * (a minute or more, cold): its load (a candidate's) and check (where a reference loads) phases get this long, at
 * most the job's limit.
 */
export const PYTHON_BUILD_MS = 300_000;

/** Timing's allowance beyond the stopping rule: warm-up and the peak-bandwidth measurement. */
export const TIMING_ALLOWANCE_MS = 30_000;

/** bench() may sample up to the rule's timeoutMs; compare() times two kernels over rounds. */
export const TIMING_FACTOR = { bench: 2, compare: 4 } as const;

/**
 * The deadlines of `job` run within `timeoutSeconds` (the request's limit): compile 60 s, check 60 s, time
 * 2 × the stopping rule's timeoutMs + 30 s (4 × for a comparison), recheck 60 s, profile 120 s, each at most the
 * whole job's limit, which is timeoutSeconds. With `python` (a Python reference or candidate), load and check get
 * PYTHON_BUILD_MS.
 *
 * @throws RangeError when timeoutSeconds is not a positive finite number.
 */
export function jobDeadlines(job: EvalJob, timeoutSeconds: number, o: { python?: boolean } = {}): Deadlines {
  if (typeof timeoutSeconds !== 'number' || !Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
    throw new RangeError(`Expected a positive number of seconds for timeoutSeconds but received ${timeoutSeconds}`);
  }
  const jobMs = Math.round(timeoutSeconds * 1000);
  const cap = (ms: number): number => Math.min(ms, jobMs);
  const factor = job.compare === undefined ? TIMING_FACTOR.bench : TIMING_FACTOR.compare;
  const ruleMs = stoppingRuleTimeoutMs(job);
  const timeMs = ruleMs === undefined ? jobMs : cap(factor * ruleMs + TIMING_ALLOWANCE_MS);
  return {
    jobMs,
    phaseMs: {
      validate: cap(PHASE_DEFAULTS_MS.validate),
      compile: cap(PHASE_DEFAULTS_MS.compile),
      load: cap(o.python === true ? PYTHON_BUILD_MS : PHASE_DEFAULTS_MS.load),
      check: cap(o.python === true ? PYTHON_BUILD_MS : PHASE_DEFAULTS_MS.check),
      time: timeMs,
      recheck: cap(PHASE_DEFAULTS_MS.recheck),
      profile: cap(PHASE_DEFAULTS_MS.profile),
    },
  };
}

/** The job's stopping-rule timeoutMs: its rule's override, else its preset's; undefined when not a finite number. */
function stoppingRuleTimeoutMs(job: EvalJob): number | undefined {
  const timing = job.timing ?? {};
  const own = timing.rule?.timeoutMs;
  if (own !== undefined) return typeof own === 'number' && Number.isFinite(own) && own >= 0 ? own : undefined;
  const preset = timing.preset ?? job.preset ?? 'default';
  return PRESET_TIMEOUT_MS[preset] ?? PRESET_TIMEOUT_MS.default;
}

/** setTimeout's largest delay (a larger one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` as setTimeout can take it. */
export function timerMs(ms: number): number {
  return Math.min(Math.max(0, ms), MAX_TIMER_MS);
}

/**
 * A running job's two deadlines, as its slot arms them: the job's own, whose clock stops while the job waits for its
 * turn on the GPU (another job's GPU work is not its time, and that job has deadlines of its own), and its current
 * phase's, armed at each phase message and over once the phase is.
 */
export class JobClock {
  #jobTimer: NodeJS.Timeout | undefined;
  #phaseTimer: NodeJS.Timeout | undefined;
  #leftMs: number;
  #endsAtMs = 0;
  readonly #jobExpired: () => void;

  /** Starts the job's clock: `jobExpired` is called when `jobMs` of its time have passed. */
  constructor(jobMs: number, jobExpired: () => void) {
    this.#leftMs = jobMs;
    this.#jobExpired = jobExpired;
    this.resume();
  }

  /** A phase began: its deadline replaces the last phase's (none when `limitMs` is undefined). */
  phase(limitMs: number | undefined, expired: () => void): void {
    clearTimeout(this.#phaseTimer);
    this.#phaseTimer = limitMs === undefined ? undefined : setTimeout(expired, timerMs(limitMs));
  }

  /** The job waits for the GPU: its clock stops, and its last phase is over. */
  pause(): void {
    this.stop();
    this.#leftMs = Math.max(0, this.#endsAtMs - Date.now());
  }

  /** The job's clock runs again, with the time it had left. */
  resume(): void {
    clearTimeout(this.#jobTimer);
    this.#endsAtMs = Date.now() + this.#leftMs;
    this.#jobTimer = setTimeout(this.#jobExpired, timerMs(this.#leftMs));
  }

  /** The job is decided: no deadline fires any more. */
  stop(): void {
    clearTimeout(this.#jobTimer);
    clearTimeout(this.#phaseTimer);
  }
}
