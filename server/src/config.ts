// SPDX-License-Identifier: MIT
// The server's configuration: command-line flags, each with a CUDAKIT_SERVER_* environment variable beside it (a
// flag wins over its variable), checked all at once with messages that say what was expected. A non-loopback
// --host without --tokens-file is refused here: without tokens every request may run code on the GPUs.
import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GPU_CLASS_PATTERN } from './run/pool.js';

export type Mode = 'embedded' | 'api' | 'agent';

export interface ServerConfig {
  /** 'embedded' (one process, SQLite); 'api' and 'agent' are the distributed mode's (Redis + PostgreSQL). */
  /** The deployment mode, which --role picks. */
  mode: Mode;
  /** BullMQ's Redis (api, agent). */
  redisUrl: string | undefined;
  /** The PostgreSQL job store (api, agent). */
  databaseUrl: string | undefined;
  /** Every Redis key of this deployment starts with it. */
  redisPrefix: string;
  /** An agent's classes besides its GPUs' own (model, arch, 'any'). */
  gpuClasses: string[];
  /** How long a job's queue lock lasts unrenewed: a dead host's job is redelivered about this long after. */
  lockSeconds: number;
  /** The dashboard's session-cookie key (32 bytes or more), shared by API nodes; undefined: random per process. */
  sessionSecretFile: string | undefined;
  host: string;
  port: number;
  /** Where the job store (jobs.sqlite) lives. */
  dataDir: string;
  /** `name:sha256hex[:scopes]` lines; undefined: no auth, loopback only. */
  tokensFile: string | undefined;
  /** 'all', or the GPUs to use by index or UUID. */
  gpus: 'all' | string[];
  /** 'process': a fresh worker per job (default); 'warm': workers stay between jobs (trusted clients). */
  isolation: 'process' | 'warm';
  /**
   * Jobs a GPU may have at once, each in a worker of its own: one uses the GPU while the others start, validate and
   * compile, or wait for their turn (1 to 4; 1 with warm isolation).
   */
  lanes: number;
  /** 'process': the next worker waits started, without a CUDA context; 'context': with its context made. */
  standby: 'process' | 'context';
  /** Nsight Compute for device metrics: 'auto' (ncu on PATH, if any), 'off', or its path. */
  ncu: string;
  /** Whom the workers run as when the server runs as root (a name, uid or uid:gid); undefined: 'nobody'. */
  workerUser: string | undefined;
  /**
   * A Python with PyTorch for the original server's Python kernel types (embedded, agent): an absolute path, checked
   * at start; undefined: those types are refused.
   */
  python: string | undefined;
  retentionDays: number;
  /** How long a SIGTERM lets running jobs finish before their workers are killed. */
  drainSeconds: number;
  submitsPerMinute: number;
  /** Device bytes a job's buffers may declare in all; undefined: a quarter of the smallest GPU's memory. */
  maxDeviceBytes: number | undefined;
  /** The problem registry's directory: the problems served, DEFAULT_PROBLEMS_DIR unless --problems-dir names one. */
  problemsDir: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Request bodies over 1 MiB read at once, one per 32 MiB they may reach (http/body.ts). */
  maxLargeBodies: number;
  /**
   * Fastify's trustProxy: believe X-Forwarded-For and X-Forwarded-Proto from true (any sender), this many proxies in
   * front, or these addresses and CIDRs. Default false.
   */
  trustProxy: boolean | number | string[];
  /** /metrics answers anyone, not only loopback and the admin scope. */
  metricsPublic: boolean;
}

/**
 * The problem set the server ships (server/problems/, in the package beside src/ and dist/): the same folder whether
 * the server runs from its sources or from its build.
 */
export const DEFAULT_PROBLEMS_DIR = fileURLToPath(new URL('../problems', import.meta.url));

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export const USAGE = `Usage: cudakit-server [options]

Options (each also as an environment variable, e.g. --data-dir as CUDAKIT_SERVER_DATA_DIR):
  --role <role>              embedded (default: API, queue and GPUs in one process, SQLite), or the
                             distributed mode's api (HTTP, no GPU) or agent (one per GPU host)
  --redis-url <url>          api, agent: the queue's Redis (redis://host:6379/0)
  --database-url <url>       api, agent: the PostgreSQL job store (postgres://user@host/db)
  --redis-prefix <prefix>    api, agent: prefix of every Redis key (default cudakit)
  --gpu-class <list>         agent: classes its GPUs serve besides their own (model, arch, any),
                             separated by commas
  --lock-seconds <n>         api, agent: a job's queue lock; a dead host's job is redelivered about
                             this long after it died (default 30)
  --session-secret-file <f>  the dashboard's session key (32 bytes or more; every API node the same);
                             default: a random key per process
  --trust-proxy <proxies>    behind a reverse proxy: believe its X-Forwarded-For and -Proto from true
                             (anyone), a number of proxies in front, or their addresses and CIDRs
                             separated by commas (127.0.0.1, 10.0.0.0/8, loopback); default off
  --metrics-public           /metrics for anyone (default: loopback clients and the admin scope)
  --host <address>           address to listen on (default 127.0.0.1; another needs --tokens-file)
  --port <n>                 port, 0 for any free one (default 8000)
  --data-dir <dir>           job store directory (default $XDG_DATA_HOME/cudakit-server,
                             else ~/.local/share/cudakit-server)
  --tokens-file <file>       bearer tokens: one name:sha256hex[:scopes] line each (scopes: submit,read,admin)
  --gpus <list>              'all' (default), or GPU indices / UUIDs separated by commas
  --isolation <mode>         process (default: a fresh worker per job) | warm (workers stay; trusted clients)
  --lanes <n>                jobs a GPU may have at once, 1 to 4 (default 1): one uses the GPU while the
                             next ones start, validate and compile, their GPU work waiting its turn
  --standby <what>           process (default: the next worker started, no CUDA context) | context (its
                             CUDA context made too, holding GPU memory while it waits)
  --ncu <path|off|auto>      Nsight Compute for deviceMetrics (default auto: ncu on PATH)
  --worker-user <user>       with the server running as root, the user its GPU workers run as (a name,
                             uid or uid:gid; default nobody); not for a server that is not root
  --python <path>            embedded, agent: a Python with PyTorch (Triton optional) for the original
                             server's Python kernel types (torch, torch_cuda, triton, multi_kernel), run
                             in a sandbox that needs the server to run as root; checked at start
                             (default: none, and those types are refused)
  --retention-days <n>       delete finished evaluations after n days (default 30)
  --drain-seconds <n>        on SIGTERM, let running jobs finish this long (default 30)
  --submits-per-minute <n>   submissions per token per minute (default 60)
  --max-device-bytes <n>     device bytes a job's buffers may declare in all (default: a quarter of the
                             smallest GPU's memory)
  --problems-dir <dir>       the problems served, one folder each: problems with cases (a submission
                             names one as problem) and reference problems (a job names one as
                             reference: { problem }); default: the set the server ships, its problems/
  --log-level <level>        fatal, error, warn, info (default), debug, trace, silent
  --max-large-bodies <n>     request bodies over 1 MiB read at once, one per 32 MiB they may reach
                             (default 2); others wait up to 10 s, then get 503
  -h, --help                 this text
`;

const OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  'tokens-file': { type: 'string' },
  gpus: { type: 'string' },
  isolation: { type: 'string' },
  lanes: { type: 'string' },
  standby: { type: 'string' },
  ncu: { type: 'string' },
  'worker-user': { type: 'string' },
  python: { type: 'string' },
  'retention-days': { type: 'string' },
  'drain-seconds': { type: 'string' },
  'submits-per-minute': { type: 'string' },
  'max-device-bytes': { type: 'string' },
  'problems-dir': { type: 'string' },
  'log-level': { type: 'string' },
  'max-large-bodies': { type: 'string' },
  role: { type: 'string' },
  'redis-url': { type: 'string' },
  'database-url': { type: 'string' },
  'redis-prefix': { type: 'string' },
  'gpu-class': { type: 'string' },
  'lock-seconds': { type: 'string' },
  'session-secret-file': { type: 'string' },
  'trust-proxy': { type: 'string' },
  'metrics-public': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flag = Exclude<keyof typeof OPTIONS, 'help'>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** proxy-addr's names for address ranges, which Fastify's trustProxy takes beside addresses and CIDRs. */
const PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];
/** More proxies in front of a server than this is no deployment's. */
const MAX_PROXY_HOPS = 32;

/** One of --trust-proxy's addresses: an IPv4 or IPv6 address, a CIDR, or a range's name. */
function isProxyAddress(text: string): boolean {
  if (PROXY_RANGES.includes(text)) return true;
  const [address = '', prefix, ...rest] = text.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
}

/**
 * --trust-proxy's value as Fastify's trustProxy: 'true' or 'false', a number of proxies, or addresses and CIDRs
 * separated by commas; undefined for anything else.
 */
export function parseTrustProxy(text: string): boolean | number | string[] | undefined {
  const t = text.trim();
  if (t === 'true' || t === 'false') return t === 'true';
  if (/^\d+$/.test(t)) {
    const hops = Number(t);
    return hops >= 1 && hops <= MAX_PROXY_HOPS ? hops : undefined;
  }
  const list = t.split(',').map((a) => a.trim());
  return list.every(isProxyAddress) ? list : undefined;
}

/** Whether `host` only reaches this machine. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

export function envName(flag: Flag): string {
  return `CUDAKIT_SERVER_${flag.toUpperCase().replaceAll('-', '_')}`;
}

export function defaultDataDir(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_DATA_HOME;
  return xdg !== undefined && isAbsolute(xdg)
    ? join(xdg, 'cudakit-server')
    : join(homedir(), '.local', 'share', 'cudakit-server');
}

/**
 * The configuration from `argv` (without node and the script) and `env`, or 'help'.
 *
 * @throws ConfigError listing every problem, one per line.
 */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ServerConfig | 'help' {
  let values: Partial<Record<Flag | 'help', string | boolean>>;
  try {
    ({ values } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new ConfigError(`${(e as Error).message}\n\n${USAGE}`);
  }
  if (values.help === true) return 'help';
  const problems: string[] = [];
  /** The flag's value, else its variable's, else undefined; `where` names the one used in messages. */
  const get = (flag: Flag): { value: string; where: string } | undefined => {
    const v = values[flag];
    if (typeof v === 'string') return { value: v, where: `--${flag}` };
    const e = env[envName(flag)];
    return e !== undefined && e !== '' ? { value: e, where: envName(flag) } : undefined;
  };
  const number = (flag: Flag, fallback: number, min: number, max: number, integer: boolean): number => {
    const got = get(flag);
    if (got === undefined) return fallback;
    const n = Number(got.value);
    const ok =
      got.value.trim() !== '' && Number.isFinite(n) && n >= min && n <= max && (!integer || Number.isInteger(n));
    if (!ok) {
      const what = integer ? `an integer from ${min} to ${max}` : `a number from ${min} to ${max}`;
      problems.push(`Expected ${what} for ${got.where} but received '${got.value}'`);
      return fallback;
    }
    return n;
  };
  const choice = <T extends string>(flag: Flag, fallback: T, allowed: readonly T[]): T => {
    const got = get(flag);
    if (got === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(got.value)) {
      problems.push(`Expected one of ${allowed.join(', ')} for ${got.where} but received '${got.value}'`);
      return fallback;
    }
    return got.value as T;
  };

  const host = get('host')?.value ?? '127.0.0.1';
  if (!/^[A-Za-z0-9.:[\]_-]{1,253}$/.test(host))
    problems.push(`Expected a host name or address for --host but received '${host}'`);
  const port = number('port', 8000, 0, 65535, true);
  const dataDirRaw = get('data-dir');
  const dataDir = dataDirRaw === undefined ? defaultDataDir(env) : resolve(dataDirRaw.value);
  const tokensRaw = get('tokens-file');
  const tokensFile = tokensRaw === undefined ? undefined : resolve(tokensRaw.value);
  const gpusRaw = get('gpus');
  let gpus: ServerConfig['gpus'] = 'all';
  if (gpusRaw !== undefined && gpusRaw.value !== 'all') {
    const list = gpusRaw.value.split(',').map((s) => s.trim());
    if (list.some((s) => !/^(\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-fA-F-]+)$/.test(s))) {
      problems.push(
        `Expected 'all' or GPU indices / UUIDs separated by commas for ${gpusRaw.where} ` +
          `but received '${gpusRaw.value}'`,
      );
    } else gpus = list;
  }
  const isolation = choice('isolation', 'process', ['process', 'warm'] as const);
  const lanes = number('lanes', 1, 1, 4, true);
  if (lanes > 1 && isolation === 'warm')
    problems.push(`--lanes ${lanes} needs --isolation process (a warm worker stays)`);
  const standby = choice('standby', 'process', ['process', 'context'] as const);
  const ncu = get('ncu')?.value ?? 'auto';
  const workerUser = get('worker-user')?.value;
  const pythonRaw = get('python');
  const python = pythonRaw === undefined ? undefined : resolve(pythonRaw.value);
  const retentionDays = number('retention-days', 30, 1, 36_500, false);
  const drainSeconds = number('drain-seconds', 30, 0, 3600, false);
  const submitsPerMinute = number('submits-per-minute', 60, 1, 100_000, true);
  const maxDeviceBytes =
    get('max-device-bytes') === undefined ? undefined : number('max-device-bytes', 0, 1, Number.MAX_SAFE_INTEGER, true);
  const problemsRaw = get('problems-dir');
  const problemsDir = problemsRaw === undefined ? DEFAULT_PROBLEMS_DIR : resolve(problemsRaw.value);
  const logLevel = choice('log-level', 'info', LOG_LEVELS);
  const maxLargeBodies = number('max-large-bodies', 2, 1, 64, true);
  const mode = choice('role', 'embedded', ['embedded', 'api', 'agent'] as const);
  const url = (flag: 'redis-url' | 'database-url', schemes: readonly string[]): string | undefined => {
    const got = get(flag);
    if (got === undefined) {
      if (mode !== 'embedded') problems.push(`Expected --${flag} (or ${envName(flag)}) with --role ${mode}`);
      return undefined;
    }
    if (mode === 'embedded') {
      problems.push(`${got.where} is for --role api or agent; the embedded mode keeps its jobs in --data-dir`);
    }
    let parsed: URL | undefined;
    try {
      parsed = new URL(got.value);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || !schemes.includes(parsed.protocol)) {
      const want = schemes.map((p) => `${p}//…`).join(' or ');
      problems.push(`Expected a ${want} URL for ${got.where} but received '${got.value}'`);
    }
    return got.value;
  };
  const redisUrl = url('redis-url', ['redis:', 'rediss:']);
  const databaseUrl = url('database-url', ['postgres:', 'postgresql:']);
  const redisPrefix = get('redis-prefix')?.value ?? 'cudakit';
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(redisPrefix)) {
    problems.push(`Expected letters, digits, '_', '.' or '-' for --redis-prefix but received '${redisPrefix}'`);
  }
  const classesRaw = get('gpu-class');
  if (pythonRaw !== undefined && mode === 'api') {
    problems.push(`${pythonRaw.where} is for the hosts with GPUs: the embedded mode or --role agent`);
  }
  const gpuClasses = classesRaw === undefined ? [] : classesRaw.value.split(',').map((c) => c.trim());
  if (classesRaw !== undefined && gpuClasses.some((c) => !GPU_CLASS_PATTERN.test(c))) {
    problems.push(
      `Expected GPU class names (letters, digits, '_', '.', '-') separated by commas for ${classesRaw.where} ` +
        `but received '${classesRaw.value}'`,
    );
  }
  if (classesRaw !== undefined && mode !== 'agent') problems.push(`${classesRaw.where} is for --role agent`);
  const lockSeconds = number('lock-seconds', 30, 2, 3600, false);
  const secretRaw = get('session-secret-file');
  const sessionSecretFile = secretRaw === undefined ? undefined : resolve(secretRaw.value);
  const trustRaw = get('trust-proxy');
  const trustProxy = trustRaw === undefined ? false : parseTrustProxy(trustRaw.value);
  if (trustProxy === undefined) {
    problems.push(
      `Expected true, a number of proxies from 1 to ${MAX_PROXY_HOPS}, or the proxies' addresses and CIDRs ` +
        `separated by commas (127.0.0.1, 10.0.0.0/8, ::1, loopback) for ${trustRaw!.where} ` +
        `but received '${trustRaw!.value}'`,
    );
  }
  let metricsPublic = values['metrics-public'] === true;
  const metricsEnv = env[envName('metrics-public')];
  if (values['metrics-public'] === undefined && metricsEnv !== undefined && metricsEnv !== '') {
    if (!['1', 'true', '0', 'false'].includes(metricsEnv)) {
      const name = envName('metrics-public');
      problems.push(`Expected 1, true, 0 or false for ${name} but received '${metricsEnv}'`);
    }
    metricsPublic = metricsEnv === '1' || metricsEnv === 'true';
  }

  // An agent's HTTP port serves health and metrics only: nothing there runs code.
  if (tokensFile === undefined && !isLoopbackHost(host) && mode !== 'agent') {
    problems.push(
      `Refusing to listen on ${host} without --tokens-file: anyone who reaches it could run code on this host's ` +
        'GPUs. Give --tokens-file (name:sha256hex lines), or listen on 127.0.0.1',
    );
  }
  if (problems.length > 0) throw new ConfigError(problems.join('\n'));
  return {
    mode,
    redisUrl,
    databaseUrl,
    redisPrefix,
    gpuClasses,
    lockSeconds,
    sessionSecretFile,
    host,
    port,
    dataDir,
    tokensFile,
    gpus,
    isolation,
    lanes,
    standby,
    ncu,
    workerUser,
    python,
    retentionDays,
    drainSeconds,
    submitsPerMinute,
    maxDeviceBytes,
    problemsDir,
    logLevel,
    maxLargeBodies,
    trustProxy: trustProxy ?? false,
    metricsPublic,
  };
}
