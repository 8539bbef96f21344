// SPDX-License-Identifier: MIT
// What a submission holds beside its EvalJob: the service's fields (timeoutSeconds, maxQueueSeconds, priority, gpu,
// deviceMetrics) with their bounds and defaults, and the size caps checked before anything is queued. The v1 schema
// (http/schemas/v1.ts), admission, the compatible routes and the docs test read them from here.
import { PRIORITY } from '../schedule/queue.js';

export const TIMEOUT_SECONDS = { min: 5, max: 600, default: 120 } as const;
export const MAX_QUEUE_SECONDS = { min: 1, max: 86_400, default: 300 } as const;
/** The size caps checked before anything is queued (the worker could not enforce them before compiling). */
export const SOURCE_CHARS_MAX = 256 * 1024;
export const ARGS_MAX = 64;

const SERVICE_KEYS = ['timeoutSeconds', 'maxQueueSeconds', 'priority', 'gpu', 'deviceMetrics'] as const;

/** The body's two parts: the EvalJob (for validateJob) and the service's options, with defaults. */
export function splitBody(body: Record<string, unknown>): {
  job: Record<string, unknown>;
  options: { timeoutSeconds: number; maxQueueSeconds: number; priority: number; gpu: string; deviceMetrics: boolean };
} {
  const job: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (!(SERVICE_KEYS as readonly string[]).includes(key)) job[key] = value;
  }
  const b = body as Partial<Record<(typeof SERVICE_KEYS)[number], unknown>>;
  return {
    job,
    options: {
      // A submission to a problem with cases runs every case, each a comparison: its default is the most a job has.
      timeoutSeconds:
        typeof b.timeoutSeconds === 'number'
          ? b.timeoutSeconds
          : 'problem' in body
            ? TIMEOUT_SECONDS.max
            : TIMEOUT_SECONDS.default,
      maxQueueSeconds: typeof b.maxQueueSeconds === 'number' ? b.maxQueueSeconds : MAX_QUEUE_SECONDS.default,
      priority: typeof b.priority === 'number' ? b.priority : PRIORITY.default,
      gpu: typeof b.gpu === 'string' ? b.gpu : 'any',
      deviceMetrics: b.deviceMetrics === true,
    },
  };
}
