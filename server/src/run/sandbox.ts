// SPDX-License-Identifier: MIT
// The operating system's hold on a Python job (cudakit-server --python). A Python job is host code from a request,
// so it is contained by the kernel, not by convention, with util-linux's unshare, setpriv and prlimit:
//   new mount, network, PID, IPC and UTS namespaces: no network at all (loopback included: Redis, PostgreSQL and the
//     server's own port are unreachable, and abstract Unix sockets are the namespace's own), /proc showing the job's
//     processes only;
//   the folders where a host keeps what a job must not read (temporary files, sockets, home folders, service state,
//     the server's data and caches) hidden under empty read-only file systems, every other folder read-only, and the
//     job's private folder the one place it can write;
//   then an unprivileged user with no capabilities and no way to gain any, within limits on processes, file size,
//     open files and CPU time;
//   and the private folder a file system of its own with a size (mountDiskQuota): a job that writes without end fills
//     its own folder, never the host's disk.
// Root is needed to make the namespaces and to change user; the server refuses --python without it. A job's memory is
// not limited here: CUDA reserves far more address space than it uses, so RLIMIT_AS cannot bound it.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** What a sandboxed command may use. */
export interface SandboxLimits {
  /** Processes the user may have, host-wide (RLIMIT_NPROC counts every process of the user). */
  processes: number;
  /** The largest file it may write, bytes. */
  fileBytes: number;
  /** Files it may have open. */
  openFiles: number;
  /** CPU time, seconds. */
  cpuSeconds: number;
  /**
   * What the private folder holds at most, bytes: every file the job and its parent write there (inputs, outputs,
   * compiled extensions, Triton's cache). Applied by mountDiskQuota, not by the sandbox's script.
   */
  diskBytes: number;
}

/** A sandbox for one command. */
export interface Sandbox {
  /** The private folder: the only writable place, and the working directory. An absolute path. */
  dir: string;
  /** Folders hidden under an empty read-only file system (those that do not exist, or are links, are skipped). */
  hidden: readonly string[];
  /** Whom the command runs as. */
  user: { uid: number; gid: number };
  limits: SandboxLimits;
  /** The whole environment of the command. */
  env: Readonly<Record<string, string>>;
  /**
   * A second path of the private folder, the same in every sandbox (SANDBOX_DIR_ALIAS): builds that write absolute
   * paths into what they keep (torch's build.ninja) find their files again in the next job. Must be in a hidden folder.
   */
  alias?: string;
}

/** The private folder's second path in each sandbox: in /tmp, which each sandbox covers with its own file system. */
export const SANDBOX_DIR_ALIAS = '/tmp/cudakit-job';

/**
 * Folders a host keeps private things in: temporary files and shared memory, runtime sockets (a database's, a
 * container runtime's), home folders, service state, logs, spools and caches. The server adds its data and cache
 * folders.
 */
export const HIDDEN_BY_DEFAULT: readonly string[] = [
  '/tmp',
  '/var/tmp',
  '/dev/shm',
  '/run',
  '/var/run',
  '/home',
  '/root',
  '/srv',
  '/mnt',
  '/media',
  '/var/lib',
  '/var/log',
  '/var/spool',
  '/var/mail',
  '/var/cache',
  '/var/backups',
];

/** Limits of a Python job, unless the operator sets others. */
export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  processes: 256,
  fileBytes: 1 << 30,
  openFiles: 1024,
  cpuSeconds: 1800,
  diskBytes: 4 * 2 ** 30,
};

/** One shell word: the text in single quotes. */
const quote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`;

/** A path the sandbox script may name: absolute, one line, no '..'. */
function checkPath(path: string, what: string): void {
  if (!path.startsWith('/') || /[\n\r\0]/.test(path) || path.split('/').includes('..')) {
    throw new TypeError(`Expected an absolute path without '..' or line breaks for ${what} but received '${path}'`);
  }
}

/**
 * The script the sandbox runs as root inside its namespaces, then replaced by the command: mounts made private, the
 * hidden folders covered, the private folder bound back in (the script's working directory keeps a reference to it
 * through the covering; mount must not canonicalize '.' into the covered path), everything else remounted read-only.
 */
function script(s: Sandbox): string {
  const hidden = s.hidden.map(quote).join(' ');
  const env = Object.entries(s.env).map(([k, v]) => quote(`${k}=${v}`));
  const { processes, fileBytes, openFiles, cpuSeconds } = s.limits;
  return [
    'set -eu',
    'mount --make-rprivate /',
    `cd ${quote(s.dir)}`,
    `for h in ${hidden}; do`,
    '  if [ -d "$h" ] && [ ! -L "$h" ]; then mount -t tmpfs -o size=1m,mode=0755,nosuid,nodev tmpfs "$h"; fi',
    'done',
    `mkdir -p ${quote(s.dir)}`,
    `mount --no-canonicalize --bind . ${quote(s.dir)}`,
    ...(s.alias === undefined ? [] : aliasLines(s.alias)),
    'mount -o remount,bind,ro /',
    `for h in ${hidden}; do`,
    '  if [ -d "$h" ] && [ ! -L "$h" ] && mountpoint -q "$h"; then mount -o remount,ro,nosuid,nodev "$h"; fi',
    'done',
    `cd ${quote(s.dir)}`,
    `exec setpriv --reuid=${s.user.uid} --regid=${s.user.gid} --clear-groups --no-new-privs --inh-caps=-all ` +
      `--bounding-set=-all -- prlimit --nproc=${processes} --fsize=${fileBytes} --nofile=${openFiles} ` +
      `--cpu=${cpuSeconds} -- env -i ${env.join(' ')} "$@"`,
  ].join('\n');
}

/** Binds the private folder at `alias` too: only inside a hidden folder's own file system, never on the host's. */
function aliasLines(alias: string): string[] {
  const parent = alias.slice(0, alias.lastIndexOf('/')) || '/';
  return [
    `if ! mountpoint -q ${quote(parent)}; then echo "cudakit-sandbox: ${parent} is not covered" >&2; exit 1; fi`,
    `mkdir ${quote(alias)}`,
    `mount --no-canonicalize --bind . ${quote(alias)}`,
  ];
}

/**
 * The argument vector that runs `command` in `sandbox`: give argv[0] and the rest to spawn(). The command's own
 * arguments travel as arguments, never inside the script.
 *
 * @throws TypeError for a path the sandbox cannot name (relative, with '..' or a line break), or bad limits.
 */
export function sandboxArgv(command: readonly string[], sandbox: Sandbox): string[] {
  checkPath(sandbox.dir, 'sandbox.dir');
  for (const h of sandbox.hidden) checkPath(h, 'sandbox.hidden');
  if (sandbox.alias !== undefined) {
    checkPath(sandbox.alias, 'sandbox.alias');
    const parent = sandbox.alias.slice(0, sandbox.alias.lastIndexOf('/'));
    if (!sandbox.hidden.includes(parent)) {
      throw new TypeError(`Expected sandbox.alias in one of the hidden folders but received '${sandbox.alias}'`);
    }
  }
  for (const [k, v] of Object.entries(sandbox.limits)) {
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`Expected a positive integer for limits.${k}`);
  }
  for (const k of Object.keys(sandbox.env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
      throw new TypeError(`Expected a variable name for env but received '${k}'`);
  }
  if (command.length === 0) throw new TypeError('Expected a command to run in the sandbox');
  const namespaces = ['--mount', '--net', '--pid', '--ipc', '--uts', '--fork', '--kill-child', '--mount-proc'];
  return ['unshare', ...namespaces, 'sh', '-c', script(sandbox), 'cudakit-sandbox', ...command];
}

/**
 * Why a sandbox cannot be made here, or undefined when it can: the service must run as root, and unshare, setpriv,
 * prlimit and mountpoint (util-linux) must be installed. Tried once, with `true` as the command.
 */
export function sandboxUnavailable(dir: string): string | undefined {
  if (process.getuid?.() !== 0) return 'containing a Python job needs the server to run as root (to make namespaces)';
  const argv = sandboxArgv(['true'], {
    dir,
    hidden: HIDDEN_BY_DEFAULT,
    user: { uid: 65534, gid: 65534 },
    limits: DEFAULT_SANDBOX_LIMITS,
    env: { PATH: '/usr/bin:/bin' },
  });
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 30_000 });
  if (r.error !== undefined) return `util-linux's unshare could not run (${r.error.message})`;
  if (r.status !== 0)
    return `the sandbox could not be made: ${r.stderr.trim().split('\n').pop() ?? `exit ${r.status}`}`;
  return undefined;
}

/**
 * Makes `dir` (an empty folder) a memory file system (tmpfs) of `bytes`, owned by `owner` and readable by it alone,
 * in the host's mount namespace, so that both the job's runner inside its sandbox and its parent outside see the same
 * files, and a write past the size fails with ENOSPC in the job. Needs root.
 *
 * @throws Error with mount's complaint when the file system cannot be made.
 */
export function mountDiskQuota(dir: string, bytes: number, owner: { uid: number; gid: number }): void {
  checkPath(dir, "the quota's folder");
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError('Expected a positive integer for diskBytes');
  const options = `size=${bytes},mode=0700,uid=${owner.uid},gid=${owner.gid},nosuid,nodev`;
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', options, 'cudakit-job', dir], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (r.error !== undefined) throw new Error(`the job's folder could not get its size limit (${r.error.message})`);
  if (r.status !== 0) {
    const why = r.stderr.trim().split('\n').pop() ?? `mount exited with ${r.status}`;
    throw new Error(`the job's folder could not get its size limit (${why})`);
  }
}

/** Undoes mountDiskQuota (lazily: a process still inside lets go when it dies). Never throws. */
export function unmountDiskQuota(dir: string): void {
  spawnSync('umount', ['--lazy', dir], { timeout: 10_000 });
}

/**
 * The quota file systems left under `root` by a server that died with jobs running, deepest first: the folders to
 * unmount before the workers' root folder is cleared. Reads /proc/self/mountinfo; none where it cannot be read.
 */
export function quotaMountsUnder(root: string): string[] {
  let table: string;
  try {
    table = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const prefix = root.endsWith('/') ? root : `${root}/`;
  // Field 5 is the mount point, octal-escaped; after ' - ' come the type and the source.
  const points = table.split('\n').flatMap((line) => {
    const [left, right] = line.split(' - ');
    const point = left?.split(' ')[4]?.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    const [type, source] = (right ?? '').split(' ');
    return point !== undefined && point.startsWith(prefix) && type === 'tmpfs' && source === 'cudakit-job'
      ? [point]
      : [];
  });
  return points.sort((a, b) => b.length - a.length);
}
