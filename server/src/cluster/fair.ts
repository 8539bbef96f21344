// SPDX-License-Identifier: MIT
// The distributed mode's queued jobs, fair between principals by schedule/queue.ts's rule, kept in Redis beside BullMQ.
// Open-source BullMQ orders a queue by priority and arrival only, so the waiting is done here: per class and
// principal a sorted set of job ids (that principal's order: priority, then age, then id: ids sort by creation), per
// class a sorted set of the principals with jobs there scored by their turn, and each principal's turn. Every
// change is one Lua script, so two agents taking at once are served one after the other: never the same job, never
// out of turn. A job taken here is released to its class's BullMQ queue and fetched from it at once by the agent
// that took it: BullMQ holds it from then on (the lock, the stalled-job checker's redelivery, completion), and a job
// it puts back (a dead host's, one an agent could not start) waits in BullMQ's own list, which every take serves
// first: that job has had its turn. Between the release and BullMQ's add a job is "leaving"; one that stays so past
// a lock (its agent died there) is queued here again by the reconciler.
import type { Redis } from 'ioredis';
import { PRIORITY, type QueuedJob } from '../schedule/queue.js';

/** Keys under `<prefix>:fair:`; the Lua scripts build them from this prefix (the ones per class or principal). */
export function fairKeys(prefix: string) {
  const fair = `${prefix}:fair:`;
  return {
    /** Prefix of every key below, passed to the scripts. */
    fair,
    /** Channel: a class's name, published when a job of it is queued (agents' wake-up). */
    available: `${fair}available`,
    /** Sorted set: id → when it was released (ms, Redis's clock: the hosts' may differ), until BullMQ has it. */
    leaving: `${fair}leaving`,
    /** Hash: class → jobs queued (the metrics' queue depth). */
    perClass: `${fair}class`,
  };
}

// Keys, relative to the prefix (F):
//   F job                  hash: id → the job's JSON (a ClusterJobData)
//   F jobs:<class>:<p>     zset: principal p's jobs of the class, scored by orderScore (classes hold no ':')
//   F turns:<class>        zset: the principals with jobs in the class, scored by their turn
//   F turn                 hash: principal → its turn; F turnSeq: the counter turns are drawn from
//   F principal            hash: principal → jobs queued (all classes); F class: class → jobs queued
//   F classes              set: every class a job was queued in (a served principal's turn moves in each)
//   F leaving, F available as in fairKeys
const COMMON = `
local F = ARGV[1]
local function jobsKey(gpu, principal) return F .. 'jobs:' .. gpu .. ':' .. principal end

-- Takes a queued job out; returns how many its principal has left. One with none leaves the turns: it joins at the
-- back when it comes again.
local function drop(id, principal, gpu)
  local jobs = jobsKey(gpu, principal)
  redis.call('ZREM', jobs, id)
  if redis.call('ZCARD', jobs) == 0 then redis.call('ZREM', F .. 'turns:' .. gpu, principal) end
  redis.call('HDEL', F .. 'job', id)
  if redis.call('HINCRBY', F .. 'class', gpu, -1) <= 0 then redis.call('HDEL', F .. 'class', gpu) end
  local left = redis.call('HINCRBY', F .. 'principal', principal, -1)
  if left <= 0 then
    redis.call('HDEL', F .. 'principal', principal)
    redis.call('HDEL', F .. 'turn', principal)
  end
  return left
end

-- 1 + the jobs of the class that start before one of the principal's with 'own' of its jobs ahead, its principal's
-- turn being 'turn' (queue.ts): each other principal's first min(n, own + 1) when its turn is older, min(n, own) when
-- newer.
local function position(gpu, principal, own, turn)
  local ahead = own
  local turns = redis.call('ZRANGE', F .. 'turns:' .. gpu, 0, -1, 'WITHSCORES')
  for i = 1, #turns, 2 do
    if turns[i] ~= principal then
      local rounds = own
      if tonumber(turns[i + 1]) < turn then rounds = own + 1 end
      ahead = ahead + math.min(redis.call('ZCARD', jobsKey(gpu, turns[i])), rounds)
    end
  end
  return ahead + 1
end
`;

/**
 * ARGV: F, BullMQ's key prefix of the class queues, id, principal, class, order score, the job's JSON. 1 when queued;
 * 0 when the job is here already, leaving, or in BullMQ (a reconciler's add of a job an agent holds is a no-op).
 */
const ENQUEUE = `${COMMON}
local id, principal, gpu = ARGV[3], ARGV[4], ARGV[5]
if redis.call('HEXISTS', F .. 'job', id) == 1 or redis.call('ZSCORE', F .. 'leaving', id)
  or redis.call('EXISTS', ARGV[2] .. gpu .. ':' .. id) == 1 then
  return 0
end
redis.call('HSET', F .. 'job', id, ARGV[7])
redis.call('ZADD', jobsKey(gpu, principal), ARGV[6], id)
local turn
if redis.call('HINCRBY', F .. 'principal', principal, 1) == 1 then
  turn = redis.call('INCR', F .. 'turnSeq')
  redis.call('HSET', F .. 'turn', principal, turn)
else
  turn = redis.call('HGET', F .. 'turn', principal)
end
redis.call('ZADD', F .. 'turns:' .. gpu, 'NX', turn, principal)
redis.call('HINCRBY', F .. 'class', gpu, 1)
redis.call('SADD', F .. 'classes', gpu)
redis.call('PUBLISH', F .. 'available', gpu)
return 1
`;

/** Redis's clock in ms (allowed before writes: Redis 7 replicates a script's effects; 6.2 once asked to). */
const NOW_MS = `
redis.replicate_commands()
local function nowMs()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
`;

/**
 * ARGV: F, BullMQ's key prefix of the class queues, the slot's classes. {'bullmq', class} when BullMQ holds a job of
 * one of them waiting (fetch it there); {'fair', JSON} for the job taken by the rule, now leaving; nil when none is
 * queued.
 */
const TAKE = `${NOW_MS}${COMMON}
for i = 3, #ARGV do
  local queue = ARGV[2] .. ARGV[i]
  if redis.call('LLEN', queue .. ':wait') > 0 or redis.call('ZCARD', queue .. ':prioritized') > 0 then
    return {'bullmq', ARGV[i]}
  end
end
local principal, turn
for i = 3, #ARGV do
  local head = redis.call('ZRANGE', F .. 'turns:' .. ARGV[i], 0, 0, 'WITHSCORES')
  if head[1] and (turn == nil or tonumber(head[2]) < turn) then principal, turn = head[1], tonumber(head[2]) end
end
if principal == nil then return nil end
local id, gpu, score
for i = 3, #ARGV do
  local head = redis.call('ZRANGE', jobsKey(ARGV[i], principal), 0, 0, 'WITHSCORES')
  if head[1] then
    local s = tonumber(head[2])
    if score == nil or s < score or (s == score and head[1] < id) then id, gpu, score = head[1], ARGV[i], s end
  end
end
local data = redis.call('HGET', F .. 'job', id)
if drop(id, principal, gpu) > 0 then
  -- Served: to the back of every class's turns it is in, not only this one's.
  local nextTurn = redis.call('INCR', F .. 'turnSeq')
  redis.call('HSET', F .. 'turn', principal, nextTurn)
  for _, class in ipairs(redis.call('SMEMBERS', F .. 'classes')) do
    redis.call('ZADD', F .. 'turns:' .. class, 'XX', nextTurn, principal)
  end
end
redis.call('ZADD', F .. 'leaving', nowMs(), id)
return {'fair', data}
`;

/** ARGV: F, ms. Forgets releases older than that (their agents died before BullMQ had the job). */
const FORGET = `${NOW_MS}${COMMON}
return redis.call('ZREMRANGEBYSCORE', F .. 'leaving', '-inf', '(' .. (nowMs() - tonumber(ARGV[2])))
`;

/** ARGV: F, id. 1 when it was queued here (and is no longer). */
const REMOVE = `${COMMON}
local data = redis.call('HGET', F .. 'job', ARGV[2])
if not data then return 0 end
local job = cjson.decode(data)
drop(ARGV[2], job.principal, job.gpu)
return 1
`;

/** ARGV: F, id. Its position, or nil when it is not queued here. */
const POSITION = `${COMMON}
local data = redis.call('HGET', F .. 'job', ARGV[2])
if not data then return nil end
local job = cjson.decode(data)
local own = redis.call('ZRANK', jobsKey(job.gpu, job.principal), ARGV[2])
return position(job.gpu, job.principal, own, tonumber(redis.call('HGET', F .. 'turn', job.principal)))
`;

/**
 * ARGV: F, principal, class, order score. The position a job of these would have if queued now: behind its
 * principal's jobs of an order score up to its own, and at the back of the turns if its principal has none queued.
 */
const ARRIVAL = `${COMMON}
local principal, gpu = ARGV[2], ARGV[3]
local own = redis.call('ZCOUNT', jobsKey(gpu, principal), '-inf', ARGV[4])
local turn = redis.call('HGET', F .. 'turn', principal)
if turn then turn = tonumber(turn) else turn = math.huge end
return position(gpu, principal, own, turn)
`;

/** The order of one principal's jobs: higher priority, then older, first (lower scores first; exact in a double). */
export function orderScore(job: Pick<QueuedJob, 'priority' | 'enqueuedAtMs'>): number {
  return (PRIORITY.max - job.priority) * 2 ** 44 + job.enqueuedAtMs;
}

type Next = { kind: 'bullmq'; gpu: string } | { kind: 'fair'; json: string } | undefined;

interface FairCommands {
  cudakitFairEnqueue(...args: Array<string | number>): Promise<number>;
  cudakitFairTake(...args: Array<string | number>): Promise<[string, string] | null>;
  cudakitFairRemove(...args: Array<string | number>): Promise<number>;
  cudakitFairForget(...args: Array<string | number>): Promise<number>;
  cudakitFairPosition(...args: Array<string | number>): Promise<number | null>;
  cudakitFairArrival(...args: Array<string | number>): Promise<number>;
}

/** The scripts above on one connection. */
export class RedisFairShare {
  readonly keys: ReturnType<typeof fairKeys>;
  readonly #redis: Redis & FairCommands;
  /** `<prefix>:eval.`: a class's BullMQ queue's keys are this, the class, ':', the key's name. */
  readonly #bullPrefix: string;

  constructor(redis: Redis, prefix: string, bullPrefix: string) {
    this.keys = fairKeys(prefix);
    this.#bullPrefix = bullPrefix;
    const scripts = {
      cudakitFairEnqueue: ENQUEUE,
      cudakitFairTake: TAKE,
      cudakitFairRemove: REMOVE,
      cudakitFairForget: FORGET,
      cudakitFairPosition: POSITION,
      cudakitFairArrival: ARRIVAL,
    };
    for (const [name, lua] of Object.entries(scripts)) redis.defineCommand(name, { numberOfKeys: 0, lua });
    this.#redis = redis as Redis & FairCommands;
  }

  /** Queues a job unless it is queued, leaving or in BullMQ already; true when it was queued. */
  async enqueue(job: QueuedJob): Promise<boolean> {
    return (await this.#redis.cudakitFairEnqueue(...this.#enqueueArgs(job))) === 1;
  }

  /** enqueue() for many jobs in one round trip (the reconciler's). */
  async enqueueAll(jobs: readonly QueuedJob[]): Promise<void> {
    if (jobs.length === 0) return;
    const pipeline = this.#redis.pipeline() as unknown as FairCommands & { exec(): Promise<unknown> };
    for (const job of jobs) void pipeline.cudakitFairEnqueue(...this.#enqueueArgs(job));
    await pipeline.exec();
  }

  #enqueueArgs(job: QueuedJob): Array<string | number> {
    const { fair } = this.keys;
    return [fair, this.#bullPrefix, job.id, job.principal, job.gpu, orderScore(job), JSON.stringify(job)];
  }

  /** The next job for a slot of these classes (see TAKE). */
  async take(classes: readonly string[]): Promise<Next> {
    if (classes.length === 0) return undefined;
    const answer = await this.#redis.cudakitFairTake(this.keys.fair, this.#bullPrefix, ...classes);
    if (answer === null) return undefined;
    return answer[0] === 'bullmq' ? { kind: 'bullmq', gpu: answer[1] } : { kind: 'fair', json: answer[1] };
  }

  /** BullMQ has the job now: it is no longer leaving. */
  async landed(id: string): Promise<void> {
    await this.#redis.zrem(this.keys.leaving, id);
  }

  /** Whether the job was released to an agent that has not yet handed it to BullMQ. */
  async leaving(id: string): Promise<boolean> {
    return (await this.#redis.zscore(this.keys.leaving, id)) !== null;
  }

  /**
   * Forgets releases older than `ageMs` by Redis's clock: their agents died before BullMQ had the job (the reconciler
   * then queues them again).
   */
  async forgetLeavingOlderThan(ageMs: number): Promise<void> {
    await this.#redis.cudakitFairForget(this.keys.fair, ageMs);
  }

  /** true when the job was queued here and is removed. */
  async remove(id: string): Promise<boolean> {
    return (await this.#redis.cudakitFairRemove(this.keys.fair, id)) === 1;
  }

  async position(id: string): Promise<number | undefined> {
    return (await this.#redis.cudakitFairPosition(this.keys.fair, id)) ?? undefined;
  }

  async arrivalPosition(job: QueuedJob): Promise<number> {
    return this.#redis.cudakitFairArrival(this.keys.fair, job.principal, job.gpu, orderScore(job));
  }

  /** Jobs queued here per class; classes with none are left out. */
  async sizeByClass(): Promise<Record<string, number>> {
    const counts = await this.#redis.hgetall(this.keys.perClass);
    const sizes: Record<string, number> = {};
    for (const [gpu, n] of Object.entries(counts)) if (Number(n) > 0) sizes[gpu] = Number(n);
    return sizes;
  }
}
