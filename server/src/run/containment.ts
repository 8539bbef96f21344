// SPDX-License-Identifier: MIT
// What a worker child may reach of the host besides its GPU. It starts in an empty folder of its own (mode 0700,
// removed once it has exited), with an environment built from an allow-list (the service's secrets, such as a
// database URL or a token, are not in it), and, when the service runs as root, as an unprivileged user. NVRTC itself
// searches no folder but the toolkit's (lib/eval/source.ts); this is the layer under that one.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultCacheDir } from 'cudakit';
import { quotaMountsUnder, unmountDiskQuota } from './sandbox.js';

/** A user the workers run as. */
export interface WorkerUser {
  /** As configured: a name ('nobody') or a uid. */
  name: string;
  uid: number;
  gid: number;
}

export interface Containment {
  /** Holds each worker's private folder (mode 0711: a worker reaches its own folder, lists nothing). */
  rootDir: string;
  /** The compile cache the workers share (their CUDAKIT_CACHE_DIR): the service's, outside every worker's folder. */
  cacheDir: string;
  /** Whom the workers run as; undefined: as the service. */
  user: WorkerUser | undefined;
}

/**
 * Variables a worker gets from the service's environment: where CUDA is and how it is ordered, the loader's path, a
 * CUPTI injection the operator set, the library's own settings, and the locale. HOME is the worker's folder.
 */
export const WORKER_ENV_ALLOWED: readonly string[] = [
  'CUDA_VISIBLE_DEVICES',
  'CUDA_DEVICE_ORDER',
  'CUDA_PATH',
  'CUDA_HOME',
  'LD_LIBRARY_PATH',
  'CUDA_INJECTION64_PATH',
  'PATH',
  'LANG',
  'TZ',
];

/** The library's settings pass (CUDAKIT_CACHE, CUDAKIT_NVRTC_PATH ...); the service's own do not. */
function allowedName(name: string): boolean {
  if (WORKER_ENV_ALLOWED.includes(name)) return true;
  return name.startsWith('CUDAKIT_') && !name.startsWith('CUDAKIT_SERVER_');
}

/**
 * A worker's environment: the allowed part of `serverEnv`, then `extra` (what the service itself sets for its
 * workers, passed whole), then HOME and the compile cache's folder.
 */
export function workerEnv(
  serverEnv: Readonly<Record<string, string | undefined>>,
  extra: Readonly<Record<string, string | undefined>>,
  dir: string,
  cacheDir: string,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(serverEnv)) {
    if (value !== undefined && allowedName(name)) env[name] = value;
  }
  for (const [name, value] of Object.entries(extra)) if (value !== undefined) env[name] = value;
  env.HOME = dir;
  env.CUDAKIT_CACHE_DIR = cacheDir;
  return env;
}

/**
 * Makes a worker's private folder under `c.rootDir`: empty, mode 0700, its user's. A root folder that went away (a
 * cleaner of the temporary folder, on a server up for weeks) is made again first, with its compile cache.
 */
export function makeWorkerDir(c: Containment): string {
  if (!existsSync(c.rootDir)) makeRootDir(c);
  const dir = mkdtempSync(join(c.rootDir, 'worker-'));
  chmodSync(dir, 0o700);
  if (c.user !== undefined) chownSync(dir, c.user.uid, c.user.gid);
  return dir;
}

/** Removes a worker's folder with whatever it wrote. Never throws. */
export function removeWorkerDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    // a leftover folder in the service's temporary folder; nothing of it is read again
  }
}

/** Whether this process runs as root (only root can start workers as another user). */
export function runsAsRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * The user `spec` names: a name ('nobody'), a uid ('65534'), or uid:gid. A name is looked up with `id`, so NSS
 * users (LDAP, systemd's dynamic users) resolve as the system resolves them.
 *
 * @throws Error naming the user when it does not exist.
 */
export function resolveWorkerUser(spec: string): WorkerUser {
  const numeric = /^(\d+)(?::(\d+))?$/.exec(spec);
  if (numeric !== null) {
    const uid = Number(numeric[1]);
    return { name: spec, uid, gid: numeric[2] === undefined ? uid : Number(numeric[2]) };
  }
  if (!/^[A-Za-z_][A-Za-z0-9._-]*\$?$/.test(spec)) {
    throw new Error(`'${spec}' is not a user name, a uid or uid:gid`);
  }
  const id = (flag: string): number => {
    try {
      return Number(execFileSync('id', [flag, spec], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    } catch {
      throw new Error(`there is no user '${spec}' on this host (id ${flag} ${spec} failed)`);
    }
  };
  return { name: spec, uid: id('-u'), gid: id('-g') };
}

let shared: Containment | undefined;

/**
 * The containment of this process's workers when the service configures none: a fresh folder in the system's
 * temporary folder (removed at exit), workers as the service's own user, and the user's compile cache.
 */
export function defaultContainment(): Containment {
  shared ??= makeContainment({ user: undefined, cacheDir: undefined });
  return shared;
}

/**
 * A containment with its root folder made now, in the system's temporary folder, and removed when this process
 * exits. `cacheDir` undefined: the service user's compile cache, or with `user` one in the root folder (the
 * service's own cache is not the worker user's to write).
 */
export function makeContainment(o: { user: WorkerUser | undefined; cacheDir: string | undefined }): Containment {
  const rootDir = mkdtempSync(join(tmpdir(), 'cudakit-workers-'));
  process.once('exit', () => {
    // A Python job's folder still mounted (the process exits with a job running) cannot be removed until unmounted.
    for (const dir of quotaMountsUnder(rootDir)) unmountDiskQuota(dir);
    removeWorkerDir(rootDir);
  });
  // Another user's compile cache cannot be the service user's: it is the root folder's.
  const ownCache = o.cacheDir === undefined && o.user !== undefined ? join(rootDir, 'compile-cache') : undefined;
  const c = { rootDir, cacheDir: o.cacheDir ?? ownCache ?? defaultCacheDir(), user: o.user };
  makeRootDir(c);
  return c;
}

/** The root folder (0711 with another user: its workers reach their own folders, list nothing) and its cache. */
function makeRootDir(c: Containment): void {
  mkdirSync(c.rootDir, { recursive: true });
  chmodSync(c.rootDir, c.user === undefined ? 0o700 : 0o711);
  if (c.user !== undefined && c.cacheDir === join(c.rootDir, 'compile-cache')) {
    mkdirSync(c.cacheDir, { recursive: true, mode: 0o700 });
    chownSync(c.cacheDir, c.user.uid, c.user.gid);
  }
}

/**
 * The containment the server's command line asks for. As root: workers run as `userSpec` (default 'nobody'; root
 * itself means no change of user). Otherwise they run as the server: a `userSpec` naming another user is an error,
 * since only root can start a process as another user. The compile cache is $CUDAKIT_CACHE_DIR where the operator set
 * it.
 *
 * @throws Error for a user that does not exist, or another user asked of a server that is not root.
 */
export function serviceContainment(userSpec: string | undefined): Containment {
  const cacheDir = process.env.CUDAKIT_CACHE_DIR || undefined;
  const ownUid = process.getuid?.();
  const user = userSpec === undefined ? undefined : resolveWorkerUser(userSpec);
  if (!runsAsRoot()) {
    if (user !== undefined && user.uid !== ownUid) {
      throw new Error(
        `--worker-user ${userSpec}: only a server running as root can start its workers as another user ` +
          `(this one runs as uid ${ownUid ?? 'unknown'}, and so do its workers)`,
      );
    }
    return makeContainment({ user: undefined, cacheDir });
  }
  const chosen = user ?? resolveWorkerUser('nobody');
  return makeContainment({ user: chosen.uid === 0 ? undefined : chosen, cacheDir });
}
