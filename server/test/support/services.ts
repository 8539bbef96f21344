// SPDX-License-Identifier: MIT
// Throwaway Redis and PostgreSQL servers for the distributed mode's tests: each one is a real server from the Debian
// packages, on 127.0.0.1 and a free port, in a temporary directory of its own. A test can SIGKILL one and restart it
// on the same port and data (Redis reloads its append-only file, PostgreSQL replays its WAL), which is what the
// durability and outage tests need. stop() kills the server's processes and removes the directory; an 'exit' hook
// does the same for whatever a failed test left running.
//
// Where a binary is missing, describeWithServices() skips the suite with the reason (printed once), and fails it
// instead when CUDAKIT_REQUIRE_SERVICES=1 (CI).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, it } from 'vitest';

export type ServiceName = 'redis' | 'postgres';

/** A server started by startRedis() or startPostgres(). */
export interface ServiceServer {
  /** redis://127.0.0.1:<port> or postgresql://postgres@127.0.0.1:<port>/postgres. */
  url: string;
  port: number;
  /** The server's own directory (its data and its log, server.log). */
  dataDir: string;
  /**
   * Signals the server's process group and resolves once the server has exited (after 10 s it is SIGKILLed). The
   * default is a clean shutdown: SIGTERM for Redis, SIGINT (fast shutdown: clients are disconnected) for PostgreSQL.
   * 'SIGKILL' kills every process of the server at once, PostgreSQL's backends included: a crash. 'SIGSTOP' and
   * 'SIGCONT' go to every process too, and resolve at once: a server that hangs without closing its connections,
   * and one that resumes.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same port and directory (killing it first, cleanly, if it still runs). */
  restart(): Promise<void>;
  /** SIGKILLs the server's processes and removes the directory. */
  stop(): Promise<void>;
}

export interface RedisOptions {
  /** More redis-server arguments, after the defaults (a later directive wins), e.g. ['--appendfsync', 'always']. */
  args?: readonly string[];
}

export interface PostgresOptions {
  /** More server settings (`-c name=value`), after the defaults, e.g. { max_connections: '20' }. */
  settings?: Readonly<Record<string, string>>;
}

/** How long a server may take to answer after its start (a PostgreSQL crash recovery included). */
const READY_TIMEOUT_MS = 30_000;
/** How long kill() waits for the exit before it SIGKILLs the group. */
const EXIT_TIMEOUT_MS = 10_000;
const POLL_MS = 50;
const LOG_TAIL_CHARS = 2000;
/** The unprivileged account the PostgreSQL server runs as when the tests run as root (used only where no postgres). */
const TEST_USER = 'cudakit-test';

/** A port free on 127.0.0.1 now (the OS's pick). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('The OS gave no TCP port for 127.0.0.1');
  return address.port;
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** PostgreSQL's bin directory (the one with initdb and postgres), or undefined. */
function postgresBinDir(): string | undefined {
  const has = (dir: string) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'));
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    if (has(dir.trim())) return dir.trim();
  } catch {
    // No pg_config (it comes with libpq-dev): look where Debian's packages put the server.
  }
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (has(join(root, v, 'bin'))) return join(root, v, 'bin');
  }
  const postgres = onPath('postgres');
  return postgres !== undefined && has(dirname(postgres)) ? dirname(postgres) : undefined;
}

/** A local account's ids, from /etc/passwd (where useradd puts them); undefined where there is none. */
function account(name: string): { uid: number; gid: number } | undefined {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined) return { uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

/** useradd, which a PATH without the sbin directories misses. */
function useradd(): string | undefined {
  return onPath('useradd') ?? ['/usr/sbin/useradd', '/sbin/useradd'].find((f) => existsSync(f));
}

/** Why each service cannot start on this machine; an absent key: it can. */
export function servicesAvailable(): Partial<Record<ServiceName, string>> {
  const reasons: Partial<Record<ServiceName, string>> = {};
  if (onPath('redis-server') === undefined) {
    reasons.redis = 'redis-server not found on PATH: apt-get install redis-server';
  }
  if (postgresBinDir() === undefined) {
    reasons.postgres =
      'PostgreSQL initdb and postgres not found (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH): ' +
      'apt-get install postgresql';
  } else if (process.getuid?.() === 0 && account('postgres') === undefined && account(TEST_USER) === undefined) {
    if (useradd() === undefined) {
      const accounts = `no postgres or ${TEST_USER} account`;
      reasons.postgres = `PostgreSQL refuses to run as root, and there is ${accounts} nor useradd`;
    }
  }
  return reasons;
}

/** CUDAKIT_REQUIRE_SERVICES=1: a missing Redis or PostgreSQL fails the suites that need it instead of skipping them. */
export const servicesRequired = process.env.CUDAKIT_REQUIRE_SERVICES === '1';

const warned = new Set<string>();

/**
 * A describe() that runs where every service of `services` can start, and otherwise skips with the reason (printed
 * once per reason), or fails when CUDAKIT_REQUIRE_SERVICES=1.
 */
export function describeWithServices(name: string, services: readonly ServiceName[], body: () => void): void {
  const available = servicesAvailable();
  const missing = services.map((s) => available[s]).filter((r): r is string => r !== undefined);
  if (missing.length === 0) {
    describe(name, body);
    return;
  }
  const reason = missing.join('; ');
  if (servicesRequired) {
    describe(name, () => {
      it(`needs ${services.join(' and ')}`, () => {
        throw new Error(`CUDAKIT_REQUIRE_SERVICES=1 but a service cannot start here: ${reason}`);
      });
    });
    return;
  }
  if (!warned.has(reason)) {
    warned.add(reason);
    console.warn(`server tests skipped: ${reason}`);
  }
  describe.skip(`${name} [skipped: ${reason}]`, body);
}

/** Servers still running, for the 'exit' hook. */
const live = new Set<ServerProcess>();
let exitHook = false;

function registerExitHook(): void {
  if (exitHook) return;
  exitHook = true;
  // 'exit' runs synchronous code only: SIGKILL and rmSync are.
  process.on('exit', () => {
    for (const server of live) server.killNow();
  });
}

interface Launch {
  command: string;
  args: string[];
  /** The account to run as (PostgreSQL when the tests run as root). */
  user: { uid: number; gid: number } | undefined;
}

/** One server process: its own process group, its output appended to <dir>/server.log. */
class ServerProcess {
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  readonly logFile: string;

  constructor(
    readonly what: string,
    readonly dir: string,
    readonly launch: Launch,
    readonly defaultSignal: NodeJS.Signals,
  ) {
    this.logFile = join(dir, 'server.log');
  }

  start(): void {
    const log = openSync(this.logFile, 'a');
    try {
      const { command, args, user } = this.launch;
      const child = spawn(command, args, {
        detached: true, // a process group of its own, for kill()
        stdio: ['ignore', log, log],
        ...(user === undefined ? {} : { uid: user.uid, gid: user.gid }),
      });
      this.#child = child;
      this.#exited = new Promise((resolve) => {
        child.once('exit', () => {
          if (this.#child === child) this.#child = undefined;
          resolve();
        });
        child.once('error', () => {
          if (this.#child === child) this.#child = undefined;
          resolve();
        });
      });
      live.add(this);
      registerExitHook();
    } finally {
      closeSync(log);
    }
  }

  /** Polls `ready` until it answers true, the server exits, or READY_TIMEOUT_MS pass. */
  async waitReady(ready: () => Promise<boolean>): Promise<void> {
    const deadlineMs = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadlineMs) {
      if (this.#child === undefined) throw new Error(`${this.what} exited during its start:\n${this.logTail()}`);
      if (await ready()) return;
      await sleep(POLL_MS);
    }
    if (this.#child?.pid !== undefined) killTree(this.#child.pid, 'SIGKILL');
    throw new Error(`${this.what} did not answer within ${READY_TIMEOUT_MS} ms of its start:\n${this.logTail()}`);
  }

  async kill(signal: NodeJS.Signals = this.defaultSignal): Promise<void> {
    const child = this.#child;
    if (child?.pid === undefined) return;
    killTree(child.pid, signal);
    if (signal === 'SIGSTOP' || signal === 'SIGCONT') return;
    const timer = new AbortController();
    const timedOut = await Promise.race([
      this.#exited.then(() => false),
      sleep(EXIT_TIMEOUT_MS, true, { signal: timer.signal }).catch(() => false),
    ]);
    timer.abort();
    if (timedOut) {
      killTree(child.pid, 'SIGKILL');
      await this.#exited;
    }
  }

  /** Synchronous SIGKILL of the server's processes and removal of its directory (stop() and the 'exit' hook). */
  killNow(): void {
    const pid = this.#child?.pid;
    if (pid !== undefined) killTree(pid, 'SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
    live.delete(this);
  }

  async stop(): Promise<void> {
    await this.kill('SIGKILL');
    this.killNow();
  }

  logTail(): string {
    try {
      return readFileSync(this.logFile, 'utf8').slice(-LOG_TAIL_CHARS);
    } catch {
      return '(no log)';
    }
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e; // already gone
  }
}

/** The processes below `pid` (from /proc; none where there is no /proc). */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  for (const entry of entries) {
    try {
      // 'pid (comm) state ppid …': comm may hold spaces and parentheses, so read after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Exited while we read.
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/**
 * Signals the server's process group. SIGKILL, SIGSTOP and SIGCONT also go to every process below the server, at
 * once: PostgreSQL's backends each run in a session of their own (setsid), so the group alone would leave them serving
 * their connections after the postmaster died, which is not what a crash of the server looks like. A shutdown signal
 * goes to the server alone, which ends its backends itself (SIGINT to a backend would cancel its query instead).
 */
function killTree(pid: number, name: NodeJS.Signals): void {
  const below = name === 'SIGKILL' || name === 'SIGSTOP' || name === 'SIGCONT' ? descendants(pid) : [];
  signal(-pid, name);
  for (const child of below) signal(child, name);
}

/** Sends PING, resolves with Redis's first reply line ('+PONG', or '-LOADING …' while it reads its AOF). */
function redisPing(port: number, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (line: string) => {
      socket.destroy();
      resolve(line);
    };
    socket.setTimeout(timeoutMs, () => done('(timeout)'));
    socket.on('error', (e) => done(`(${e.message})`));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      const end = reply.indexOf('\r\n');
      if (end >= 0) done(reply.slice(0, end));
    });
  });
}

/**
 * Starts redis-server on 127.0.0.1 and a free port, in a temporary directory, with an append-only file fsynced every
 * second, no RDB snapshots and no eviction (a queue must not lose keys under memory pressure). Resolves once it
 * answers PING.
 */
export async function startRedis(options: RedisOptions = {}): Promise<ServiceServer> {
  const command = onPath('redis-server');
  if (command === undefined) throw new Error(servicesAvailable().redis);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-redis-'));
  const args = [
    ...['--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--daemonize', 'no'],
    ...['--protected-mode', 'no', '--appendonly', 'yes', '--appendfsync', 'everysec'],
    ...['--maxmemory-policy', 'noeviction', '--save', '', '--logfile', ''],
    ...(options.args ?? []),
  ];
  const server = new ServerProcess(`redis-server on port ${port}`, dir, { command, args, user: undefined }, 'SIGTERM');
  return started(server, `redis://127.0.0.1:${port}`, port, dir, async () => (await redisPing(port)) === '+PONG');
}

/** Starts `server`, waits until `ready` says it answers, and hands it out as a ServiceServer. */
async function started(
  server: ServerProcess,
  url: string,
  port: number,
  dir: string,
  ready: () => Promise<boolean>,
): Promise<ServiceServer> {
  const start = async () => {
    server.start();
    await server.waitReady(ready);
  };
  await start();
  return {
    url,
    port,
    dataDir: dir,
    kill: (signal) => server.kill(signal),
    restart: async () => {
      await server.kill();
      await start();
    },
    stop: () => server.stop(),
  };
}

/** The account PostgreSQL runs as: this process's own, or (as root) postgres, or cudakit-test, made if need be. */
function postgresAccount(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const existing = account('postgres') ?? account(TEST_USER);
  if (existing !== undefined) return existing;
  const command = useradd();
  if (command === undefined) throw new Error(servicesAvailable().postgres);
  execFileSync(command, ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', TEST_USER]);
  const made = account(TEST_USER);
  if (made === undefined) throw new Error(`useradd made no ${TEST_USER} account in /etc/passwd`);
  return made;
}

function runAs(command: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(user === undefined ? {} : { uid: user.uid, gid: user.gid }),
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve(output);
      else reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit code ${code}`}):\n${output}`));
    });
  });
}

async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => {}); // a server that goes away while we ask: a plain 'not ready'
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false; // refused, or 57P03 (starting up, or in crash recovery)
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Starts a PostgreSQL server: initdb into a temporary directory (superuser postgres, trust authentication, which
 * only 127.0.0.1 can reach), then postgres on 127.0.0.1 and a free port with fsync on and small shared buffers.
 * PostgreSQL refuses to run as root, so a root process runs both as an unprivileged account (postgresAccount()).
 * Resolves once it accepts a connection and a query.
 */
export async function startPostgres(options: PostgresOptions = {}): Promise<ServiceServer> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error(servicesAvailable().postgres);
  const user = postgresAccount();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-pg-'));
  if (user !== undefined) chownSync(dir, user.uid, user.gid);
  const dataDir = join(dir, 'data');
  try {
    // --no-sync: initdb's own final fsync only matters for a power loss during the test; the server runs with fsync.
    await runAs(
      join(bin, 'initdb'),
      ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
      user,
    );
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: dir,
    fsync: 'on',
    synchronous_commit: 'on',
    shared_buffers: '16MB',
    ...options.settings,
  };
  const args = ['-D', dataDir, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const server = new ServerProcess(
    `postgres on port ${port}`,
    dir,
    { command: join(bin, 'postgres'), args, user },
    'SIGINT',
  );
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  return started(server, url, port, dir, () => postgresAnswers(url));
}
