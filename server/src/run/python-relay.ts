// SPDX-License-Identifier: MIT
// A job's Python runner, owned by its GPU slot. The worker cannot start it: the sandbox needs root (sandbox.ts) and a
// worker runs as the unprivileged worker user. So the slot starts the runner when the worker asks, in a folder of its
// own that the worker can also reach (both run as the worker user), and relays lines both ways over the worker's IPC
// channel. The folder is a file system of its own, of the sandbox's diskBytes (mountDiskQuota): what the job writes
// there, and what the worker writes for it, cannot fill the host's disk. The runner dies with the job: its whole
// process group is killed when the job ends in any way, and its folder unmounted and removed.
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Containment, makeWorkerDir, removeWorkerDir, runsAsRoot, workerEnv } from './containment.js';
import { BUILD_FOLDERS, type PythonBuilds, buildKey, buildsOf } from './python-builds.js';
import { ANSWER_CHARS_MAX } from './python-runner.js';
import {
  DEFAULT_SANDBOX_LIMITS,
  SANDBOX_DIR_ALIAS,
  type SandboxLimits,
  mountDiskQuota,
  sandboxArgv,
  unmountDiskQuota,
} from './sandbox.js';
import { RUNNER_PATH } from './python.js';

/** The service's Python, as the slot needs it to start runners. */
export interface PythonService {
  /** The interpreter, checked at start (python.ts). */
  path: string;
  /** Folders the sandbox hides (pythonHidden). */
  hidden: readonly string[];
  limits?: SandboxLimits;
  /** Set in the runner's environment on top of the allowed part (tests: CUDAKIT_RUNNER_DEVICE=cpu). */
  env?: Readonly<Record<string, string>>;
  /**
   * Runs the runner without the sandbox: only for tests on a host where no sandbox can be made. The service never
   * sets it (main.ts refuses --python without a sandbox).
   */
  unsandboxed?: boolean;
}

/**
 * What the relay tells the worker. `builds` (with a build key): 'kept', the builds of an earlier job of the same
 * principal with the same source were copied into the folder; 'new', there were none.
 */
export type RelayEvent =
  | { op: 'started'; dir: string; builds?: 'kept' | 'new' }
  | { op: 'line'; line: string }
  | { op: 'exit'; why: string; stderrTail: string };

export interface RelayOptions {
  python: PythonService | undefined;
  containment: Containment;
  emit: (e: RelayEvent) => void;
  /**
   * The job's kernel, whose builds (python-builds.ts) are kept for the later jobs of `scope` (a principal's hash) on
   * a GPU of `gpu`'s architecture; none: nothing is kept or reused.
   */
  build?: { scope: string; gpu: string; kernel: { type: string; source: string } };
}

/** How the runner's answer to a load begins (its JSON, compact, with the protocol's version first). */
const LOADED_PREFIX = '{"v":1,"t":"loaded"';

/** Characters of the runner's stderr kept for the job's error. */
const STDERR_TAIL_CHARS = 4000;

/** One job's runner: started on the worker's 'start', fed its 'line's, stopped with the job. */
export class PythonRelay {
  #o: RelayOptions;
  #child: ChildProcess | undefined;
  #dir: string | undefined;
  /** Whether #dir is a quota file system to unmount. */
  #mounted = false;
  #stopped = false;
  #stderr = '';
  /** Whether the runner answered its kernel's load, and whether the job's builds came from an earlier job. */
  #loaded = false;
  #restored = false;
  #saved: Promise<void> | undefined;
  /** Where this job's builds are kept and under which key, from #start (none: nothing is kept). */
  #target: { builds: PythonBuilds; key: string } | undefined;

  constructor(o: RelayOptions) {
    this.#o = o;
  }

  /** The worker's request. A second 'start', or a line before one, is answered with an exit. */
  handle(op: 'start' | 'line' | 'stop', line?: string): void {
    if (this.#stopped) return;
    if (op === 'stop') return this.stop();
    if (op === 'start') {
      if (this.#child !== undefined) return this.#exit('the worker asked for a second runner');
      return void this.#start();
    }
    if (this.#child === undefined || typeof line !== 'string') return this.#exit('a line for no runner');
    this.#child.stdin?.write(`${line}\n`);
  }

  /**
   * Kills the runner's process group, keeps what its job built (when it loaded its kernel and nothing was kept under
   * its key yet), then removes its folder. Never throws; later calls do nothing.
   */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    const pid = this.#child?.pid;
    if (pid !== undefined) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    const dir = this.#dir;
    if (dir === undefined) return;
    const build = this.#target;
    const keep = build !== undefined && this.#loaded && !this.#restored;
    const remove = (): void => {
      if (this.#mounted) unmountDiskQuota(dir);
      removeWorkerDir(dir);
    };
    if (!keep) return remove();
    this.#saved = build.builds.save(build.key, dir).then(remove, remove);
  }

  /** Resolves once stop() has kept the job's builds and removed its folder (tests). */
  get settled(): Promise<void> {
    return this.#saved ?? Promise.resolve();
  }

  async #start(): Promise<void> {
    const { python, containment } = this.#o;
    if (python === undefined) return this.#exit('this server was started without --python');
    const build = this.#build(python);
    this.#target = build;
    try {
      const dir = makeWorkerDir(containment);
      this.#dir = dir;
      const user = containment.user ?? { uid: 65534, gid: 65534 };
      const limits = python.limits ?? DEFAULT_SANDBOX_LIMITS;
      if (!python.unsandboxed) {
        mountDiskQuota(dir, limits.diskBytes, user);
        this.#mounted = true;
      }
      const restored = build !== undefined && (await build.builds.restore(build.key, dir, this.#owner()));
      if (this.#stopped) return; // stopped while the builds were copied: stop() found no runner, and its folder
      this.#restored = restored;
      const runner = join(dir, '.cudakit_runner.py');
      copyFileSync(RUNNER_PATH, runner);
      // Compiled extensions and Triton's kernels go to the job's folder, at the path every sandbox gives it (torch's
      // build.ninja names its files by absolute paths: the same paths let a build kept from an earlier job be reused
      // without a rebuild). So do the compilers' temporary files (gcc's and nvcc's, for torch_cuda's build and
      // Triton's launcher): the sandbox's /tmp is an empty read-only file system.
      const alias = python.unsandboxed ? undefined : SANDBOX_DIR_ALIAS;
      const extra = {
        TORCH_EXTENSIONS_DIR: join(alias ?? dir, BUILD_FOLDERS.torch),
        TRITON_CACHE_DIR: join(alias ?? dir, BUILD_FOLDERS.triton),
        TMPDIR: dir,
      };
      const env = workerEnv(process.env, { ...extra, ...python.env }, dir, containment.cacheDir);
      // The tools installed beside the interpreter (a virtual environment's ninja, which torch_cuda's build runs)
      // come first on PATH, as in that environment's own shell.
      env.PATH = [dirname(python.path), env.PATH].filter((p) => p !== undefined && p !== '').join(':');
      const command = [python.path, '-I', runner, '--serve'];
      const argv = python.unsandboxed
        ? command
        : sandboxArgv(command, {
            dir,
            hidden: python.hidden,
            user,
            limits,
            env,
            ...(alias === undefined ? {} : { alias }),
          });
      const child = spawn(argv[0]!, argv.slice(1), {
        cwd: dir,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
        ...(python.unsandboxed ? { env } : {}),
      });
      this.#child = child;
      this.#relayLines(child);
      child.stderr!.on('data', (d: Buffer) => (this.#stderr = (this.#stderr + d.toString()).slice(-STDERR_TAIL_CHARS)));
      child.stdin!.on('error', () => {}); // a write after its exit: the exit says why
      child.on('error', (e) => this.#exit(`the runner could not start (${e.message})`));
      child.on('exit', (code, signal) => this.#exit(signal === null ? `it exited with ${code}` : `it got ${signal}`));
      const buildState = build === undefined ? {} : { builds: restored ? ('kept' as const) : ('new' as const) };
      this.#o.emit({ op: 'started', dir, ...buildState });
    } catch (e) {
      this.#exit(`the runner could not start (${(e as Error).message})`);
    }
  }

  /** Where this job's builds are kept, under which key (every part of the key is the job's or the server's). */
  #build(python: PythonService): { builds: PythonBuilds; key: string } | undefined {
    const b = this.#o.build;
    if (b === undefined) return undefined;
    const { type, source } = b.kernel;
    const key = buildKey({ scope: b.scope, python: python.path, gpu: b.gpu, type, source });
    return { builds: buildsOf(this.#o.containment), key };
  }

  /** Whom the restored builds belong to: the runner's user in the sandbox, else (unsandboxed) the server. */
  #owner(): { uid: number; gid: number } | undefined {
    if (this.#o.python?.unsandboxed === true || !runsAsRoot()) return undefined;
    return this.#o.containment.user ?? { uid: 65534, gid: 65534 };
  }

  /** Lines of the runner's stdout to the worker; a line over the bound ends the runner (a hostile one's flood). */
  #relayLines(child: ChildProcess): void {
    let buffered = '';
    child.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString();
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (this.#stopped) continue;
        // Its kernel loaded: what the job builds from now on is worth keeping. (A kernel that forges this line can
        // only have its own builds kept, for its own principal.)
        if (line.startsWith(LOADED_PREFIX)) this.#loaded = true;
        this.#o.emit({ op: 'line', line });
      }
      if (buffered.length > ANSWER_CHARS_MAX) this.#exit(`it wrote a line over ${ANSWER_CHARS_MAX} characters`);
    });
  }

  #exit(why: string): void {
    if (this.#stopped) return;
    this.#o.emit({ op: 'exit', why, stderrTail: this.#stderr });
    this.stop();
  }
}
