// SPDX-License-Identifier: MIT
// The leaderboards of the problems with cases (store/leaderboard.ts; schedule/leaderboard.ts records them): anyone
// with the read scope reads a board, best first, an entry showing its display name, score, interval, submission time,
// GPU class and status and nothing else (no principal, no job id, no source, no hidden case); the admin scope removes
// a principal's entries, or has an entry's job run again (its result confirms the entry or sets it provisional). A
// plugin: the service comes from the instance; one named handler per route.
import type { FastifyReply } from 'fastify';
import type { Static } from 'typebox';
import {
  ErrorBody,
  Leaderboard,
  LeaderboardEntryParams,
  LeaderboardQuery,
  LeaderboardRemoveQuery,
  LeaderboardRemoved,
  LeaderboardReverify,
  LeaderboardReverifyQuery,
  ProblemParams,
} from '../schemas/v1.js';
import { ServiceError } from '../../errors.js';
import type { RankedEntry } from '../../store/leaderboard.js';
import type { App, RouteRequest } from '../shared.js';

const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, ErrorBody]));

const getSchema = {
  summary: "A problem's leaderboard on a GPU class",
  description:
    "Each principal's best PASSED submission to the problem on the class, best first (the higher score; on a " +
    "tie the earlier submission), paged by offset. An entry shows the principal's display name, never the " +
    'principal, its job or its source. Without gpuClass, the class most of the GPUs here are of. SUSPICIOUS ' +
    "results are never on a board; an entry stays 'provisional' until a re-run confirms it.",
  params: ProblemParams,
  querystring: LeaderboardQuery,
  response: { 200: Leaderboard, ...errors(400, 401, 403, 404) },
};

const removeSchema = {
  summary: "Remove a principal's leaderboard entries",
  description:
    "Removes the entries of a principal (or of the display name they show) on the problem's boards: on one GPU " +
    'class with ?gpuClass, else on every class. The problem need not be installed any more.',
  params: LeaderboardEntryParams,
  querystring: LeaderboardRemoveQuery,
  response: { 200: LeaderboardRemoved, ...errors(400, 401, 403, 404) },
};

const reverifySchema = {
  summary: "Run a leaderboard entry's job again",
  description:
    "Queues a re-run of the job of a principal's entry (or of the display name it shows) on the problem's board of " +
    "?gpuClass (default: the class most of the GPUs here are of). When it ends, the entry is 'confirmed' if the " +
    "re-run passed with a score whose interval overlaps the entry's, and 'provisional' otherwise. 409 when " +
    "retention deleted the entry's job.",
  params: LeaderboardEntryParams,
  querystring: LeaderboardReverifyQuery,
  response: { 202: LeaderboardReverify, ...errors(400, 401, 403, 404, 409, 503) },
};

export async function leaderboardRoutes(app: App): Promise<void> {
  app.get('/v1/problems/:name/leaderboard', { schema: getSchema, config: { access: 'read' } }, getLeaderboard);
  app.delete(
    '/v1/problems/:name/leaderboard/:who',
    { schema: removeSchema, config: { access: 'admin' } },
    removeLeaderboardEntries,
  );
  app.post(
    '/v1/problems/:name/leaderboard/:who/reverify',
    { schema: reverifySchema, config: { access: 'admin' } },
    reverifyLeaderboardEntry,
  );
}

async function reverifyLeaderboardEntry(
  request: RouteRequest<typeof reverifySchema>,
  reply: FastifyReply,
): Promise<Static<typeof LeaderboardReverify>> {
  const { service } = request.server;
  const { name, who } = request.params;
  const gpuClass = request.query.gpuClass ?? defaultGpuClass(service.slots());
  if (gpuClass === undefined) {
    throw new ServiceError('GPU_CLASS_REQUIRED', 'No GPU here gives a class: name one with ?gpuClass=');
  }
  const rerun = await service.reverify(name, gpuClass, who);
  switch (rerun.kind) {
    case 'no-entry':
      throw new ServiceError(
        'LEADERBOARD_ENTRY_NOT_FOUND',
        `No entry of '${who}' on the leaderboard of '${name}' on ${gpuClass}`,
      );
    case 'job-gone':
      throw new ServiceError(
        'ENTRY_JOB_GONE',
        `The job of the entry of '${who}' is no longer stored (retention deleted it): it cannot run again; remove ` +
          'the entry, or leave it provisional',
      );
    case 'queue-full':
      throw new ServiceError('QUEUE_FULL', 'The queue is full: try again later', rerun.retryAfterSeconds);
    case 'queued':
      void reply.code(202);
      return { problem: name, gpuClass, id: rerun.record.id };
  }
}

async function getLeaderboard(request: RouteRequest<typeof getSchema>): Promise<Leaderboard> {
  const { service } = request.server;
  const { name } = request.params;
  if (service.problems.withCases(name) === undefined) {
    throw new ServiceError('PROBLEM_NOT_FOUND', `No problem with cases '${name}' here (GET /v1/problems lists them)`);
  }
  const gpuClass = request.query.gpuClass ?? defaultGpuClass(service.slots());
  if (gpuClass === undefined) {
    throw new ServiceError('GPU_CLASS_REQUIRED', 'No GPU here gives a class: name one with ?gpuClass=');
  }
  const { limit = 20, offset = 0 } = request.query;
  const page = await service.store.leaderboard({ problem: name, gpuClass, limit, offset });
  return leaderboardView(name, gpuClass, page);
}

async function removeLeaderboardEntries(
  request: RouteRequest<typeof removeSchema>,
): Promise<Static<typeof LeaderboardRemoved>> {
  const { store } = request.server.service;
  const { name, who } = request.params;
  const { gpuClass } = request.query;
  // A principal first: a display name is only looked for where no principal has that name.
  let removed = await store.removeLeaderboardEntries(name, { principal: who }, gpuClass);
  if (removed === 0) removed = await store.removeLeaderboardEntries(name, { displayName: who }, gpuClass);
  if (removed === 0) {
    const where = gpuClass === undefined ? '' : ` on ${gpuClass}`;
    throw new ServiceError(
      'LEADERBOARD_ENTRY_NOT_FOUND',
      `No entry of '${who}' on the leaderboard of '${name}'${where}`,
    );
  }
  return { problem: name, removed };
}

/**
 * A page of a board as a client sees it: each entry's public fields, named one by one (the principal and the job id
 * are left behind here, and the response schema would drop them too).
 */
export function leaderboardView(
  problem: string,
  gpuClass: string,
  page: { entries: readonly RankedEntry[]; next: number | undefined },
): Leaderboard {
  return {
    problem,
    gpuClass,
    entries: page.entries.map((e) => ({
      rank: e.rank,
      displayName: e.displayName,
      score: e.score,
      scoreLow: e.scoreLow,
      scoreHigh: e.scoreHigh,
      submittedAt: new Date(e.submittedAt).toISOString(),
      gpuClass: e.gpuClass,
      status: e.status,
    })),
    next: page.next ?? null,
  };
}

/** The model class ('H200') most of the GPUs are of (on a tie the first by name); undefined without a GPU. */
export function defaultGpuClass(slots: readonly { classes: readonly string[] }[]): string | undefined {
  const counts = new Map<string, number>();
  for (const s of slots) {
    const model = s.classes[0];
    if (model !== undefined && model !== 'any') counts.set(model, (counts.get(model) ?? 0) + 1);
  }
  const ranked = [...counts].sort(([a, n], [b, m]) => m - n || (a < b ? -1 : a > b ? 1 : 0));
  return ranked[0]?.[0];
}
