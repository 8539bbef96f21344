// SPDX-License-Identifier: MIT
// How a run ends, decided in one place: a slot's outcome (the worker's report, a deadline, a crash, a cancel) becomes
// the job's status, its verdict (verdict.ts; SUSPICIOUS where the roofline says the timing beats physics, roofline.ts),
// the stored report and the error; a job no GPU took in time fails as QUEUE_TIMEOUT. A problem with cases' report is
// stored as its submitter may see it (problem-report.ts: its hidden cases redacted), so that no reader of the store
// can show more of them.
import { type EvalReport, formatJson } from 'cudakit';
import type { SlotOutcome } from '../run/pool.js';
import { isProblemReport } from '../run/protocol.js';
import { INTERRUPTED_ERROR, type JobStore, type StoredJob, isProblemJob } from '../store/store.js';
import { problemVerdictOf, redactProblemReport } from './problem-report.js';
import { suspicionsOf } from './roofline.js';
import { verdictOf } from './verdict.js';

/** What the store's finish() takes: a job's end. */
export type FinishOutcome = Parameters<JobStore['finish']>[1];

/** A queued job's end when no GPU of its class took it in time (only while it is still queued in the store). */
export function queueTimeoutOutcome(q: {
  gpu: string;
  enqueuedAtMs: number;
  expiresAtMs: number;
}): Omit<FinishOutcome, 'atMs'> {
  const waitedS = Math.round((q.expiresAtMs - q.enqueuedAtMs) / 1000);
  return {
    status: 'failed',
    verdict: undefined,
    phase: undefined,
    report: undefined,
    error: { code: 'QUEUE_TIMEOUT', message: `No GPU of class '${q.gpu}' was free within ${waitedS} s` },
    onlyIfQueued: true,
  };
}

/** What the result of a run depends on besides its outcome. */
export interface OutcomeContext {
  job: StoredJob;
  /** The GPU it ran on (for the roofline floor). */
  device: { name: string | undefined; arch: string | undefined };
  /** A DELETE asked for it: 'cancelled' means what it says. */
  cancelRequested: boolean;
  /** The server is shutting down: a kill is the drain's, not the kernel's. */
  draining: boolean;
  /**
   * A problem with cases' run ended while one of its hidden cases ran: a deadline or a crash then names no phase (a
   * hidden case's phases are not shown), and a crash's message leaves out its worker's last words (its stderr).
   */
  inHiddenCase?: boolean;
}

/**
 * A SlotOutcome as a job's end: the status (did the service finish?), the verdict (what did the kernel do?), the
 * stored report and the error. A report's verdict is verdictOf's, and SUSPICIOUS instead of PASSED when it beats
 * physics; a deadline is TIMEOUT; a child that died mid-phase is CRASHED (failed: the service could not finish).
 */
export function resultOf(outcome: SlotOutcome, context: OutcomeContext): Omit<FinishOutcome, 'atMs'> {
  switch (outcome.kind) {
    case 'report': {
      if (isProblemReport(outcome.report)) {
        const { verdict, phase, error } = problemVerdictOf(outcome.report);
        const stored = formatJson(redactProblemReport(outcome.report) as unknown as Record<string, unknown>);
        return { status: 'succeeded', verdict, phase, report: stored, error };
      }
      const report: EvalReport = outcome.report;
      let verdict = verdictOf(report);
      let error: FinishOutcome['error'];
      if (verdict === 'PASSED' && !isProblemJob(context.job)) {
        const reasons = suspicionsOf(report, context.job, context.device);
        if (reasons.length > 0) {
          verdict = 'SUSPICIOUS';
          error = { code: 'SUSPICIOUS', message: reasons.join('; ') };
        }
      } else {
        const e = report.error;
        error = {
          code: e?.code ?? verdict,
          message: e?.message ?? verdict,
          ...(report.phase === undefined ? {} : { phase: report.phase }),
        };
      }
      const stored = formatJson(report as unknown as Record<string, unknown>);
      return { status: 'succeeded', verdict, phase: report.phase, report: stored, error };
    }
    case 'timeout': {
      const hidden = context.inHiddenCase === true;
      const where =
        outcome.scope === 'job'
          ? "the job's timeoutSeconds"
          : hidden
            ? "a phase's deadline"
            : `the ${outcome.phase ?? 'phase'} deadline`;
      // A phase's deadline in a hidden case goes unsaid: each phase has its own length, so the length tells the phase.
      const message =
        hidden && outcome.scope !== 'job'
          ? `killed at ${where} in a hidden case`
          : `killed after ${formatSeconds(outcome.limitMs)} (${where})${hidden ? ' in a hidden case' : ''}`;
      const phase = hidden ? undefined : outcome.phase;
      return {
        status: 'succeeded',
        verdict: 'TIMEOUT',
        phase,
        report: undefined,
        error: { code: 'TIMEOUT', message, ...(phase === undefined ? {} : { phase }) },
      };
    }
    case 'crashed': {
      if (context.draining && !context.cancelRequested) {
        return {
          status: 'failed',
          verdict: undefined,
          phase: outcome.phase,
          report: undefined,
          error: { ...INTERRUPTED_ERROR },
        };
      }
      const how =
        outcome.signal !== undefined
          ? `signal ${outcome.signal}`
          : outcome.exitCode !== undefined
            ? `exit code ${outcome.exitCode}`
            : 'no exit status';
      // In a hidden case, whatever the phase (or none): the worker's stderr could name the case.
      if (context.inHiddenCase === true) {
        const error = { code: 'CRASHED', message: `the worker died in a hidden case (${how})` };
        return { status: 'failed', verdict: 'CRASHED', phase: undefined, report: undefined, error };
      }
      const tail = outcome.stderrTail.trim() === '' ? '' : `\n${outcome.stderrTail.trimEnd()}`;
      const message = `${outcome.reason} (${how})${tail}`;
      if (outcome.phase === undefined) {
        const error = { code: 'WORKER_FAILED', message };
        return { status: 'failed', verdict: undefined, phase: undefined, report: undefined, error };
      }
      const error = { code: 'CRASHED', message, phase: outcome.phase };
      return { status: 'failed', verdict: 'CRASHED', phase: outcome.phase, report: undefined, error };
    }
    case 'cancelled': {
      if (context.cancelRequested) {
        return { status: 'cancelled', verdict: undefined, phase: undefined, report: undefined, error: undefined };
      }
      return {
        status: 'failed',
        verdict: undefined,
        phase: undefined,
        report: undefined,
        error: { ...INTERRUPTED_ERROR },
      };
    }
  }
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
