// SPDX-License-Identifier: MIT
// What a worker child reaches of the host: started as the service starts its workers (WorkerChild, through the
// forker), a worker that reports what it sees (fixtures/nosy-worker.mjs) finds an empty folder of its own (mode 0700,
// gone once it has exited), an environment without the service's secrets, and, with the service as root, another
// user that cannot list its siblings' folders.
import { randomBytes } from 'node:crypto';
import { copyFileSync, chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerChild } from '../../src/run/child.js';
import {
  type Containment,
  WORKER_ENV_ALLOWED,
  makeContainment,
  makeWorkerDir,
  resolveWorkerUser,
  runsAsRoot,
  serviceContainment,
} from '../../src/run/containment.js';

const SECRET = `S${randomBytes(12).toString('hex')}`;
/** Where a service keeps its secrets: its own variables, a database URL, a cloud key. */
const SECRET_ENV = {
  CUDAKIT_SERVER_TOKENS_FILE: `/srv/${SECRET}`,
  CUDAKIT_SERVER_DATABASE_URL: `postgres://cudakit:${SECRET}@db/cudakit`,
  DATABASE_URL: `postgres://cudakit:${SECRET}@db/cudakit`,
  AWS_SECRET_ACCESS_KEY: SECRET,
  REDIS_URL: `redis://:${SECRET}@cache:6379`,
};
const FIXTURE = new URL('./fixtures/nosy-worker.mjs', import.meta.url).pathname;

interface Facts {
  cwd: string;
  mode: number;
  owner: number;
  entries: string[] | string;
  parentEntries: string[] | string;
  env: Record<string, string>;
  uid: number;
  gid: number;
  groups: number[];
}

const made: Containment[] = [];
let saved: Record<string, string | undefined> = {};
beforeAll(() => {
  saved = Object.fromEntries(Object.keys(SECRET_ENV).map((k) => [k, process.env[k]]));
  Object.assign(process.env, SECRET_ENV);
});
afterAll(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  for (const c of made) rmSync(c.rootDir, { recursive: true, force: true });
});

/** Starts the nosy worker under `containment` and returns what it saw and the child, once it has exited. */
async function look(containment: Containment): Promise<{ facts: Facts; child: WorkerChild }> {
  // A copy in the containment's folder: another user may not read the checkout.
  const script = join(containment.rootDir, 'nosy-worker.mjs');
  copyFileSync(FIXTURE, script);
  chmodSync(script, 0o644);
  let facts: Facts | undefined;
  const child = new WorkerChild({
    script: { path: script, args: [], execArgv: [] },
    uuid: 'GPU-nosy',
    isolation: 'process',
    guard: { kind: 'watchdog' },
    env: { CUDAKIT_SERVER_NCU: 'off' },
    containment,
    startTimeoutMs: 20_000,
    stderrTailChars: 4096,
  });
  child.onMessage = (m) => {
    facts = (m as { report: Facts }).report;
  };
  const ready = await child.ready;
  expect(ready, child.stderrTail()).toEqual({ ok: true });
  expect(await child.waitExit(20_000)).toBe(true);
  await child.stdioClosed(5_000);
  expect(facts, child.stderrTail()).toBeDefined();
  return { facts: facts!, child };
}

describe('security: a worker reaches no more of the host than its job needs', () => {
  it('starts in an empty folder of its own (0700, HOME), removed once it has exited', async () => {
    const containment = makeContainment({ user: undefined, cacheDir: join(tmpdir(), 'cudakit-test-cache') });
    made.push(containment);
    const { facts, child } = await look(containment);
    expect(facts.cwd).toBe(child.dir);
    expect(facts.cwd.startsWith(`${containment.rootDir}/`)).toBe(true);
    expect(facts.mode).toBe(0o700);
    expect(facts.entries).toEqual([]);
    expect(facts.env.HOME).toBe(facts.cwd);
    expect(existsSync(child.dir)).toBe(false);
  });

  it("gets an allow-listed environment: none of the service's secrets, the shared compile cache", async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'cudakit-test-cache-'));
    const containment = makeContainment({ user: undefined, cacheDir });
    made.push(containment, { ...containment, rootDir: cacheDir });
    process.env.CUDAKIT_CACHE = '1'; // the library's own settings pass
    try {
      const { facts } = await look(containment);
      expect(JSON.stringify(facts.env)).not.toContain(SECRET);
      for (const name of Object.keys(SECRET_ENV)) expect(facts.env, name).not.toHaveProperty(name);
      const serviceSet = ['HOME', 'CUDAKIT_SERVER_NCU'];
      for (const name of Object.keys(facts.env)) {
        // The library's own settings (CUDAKIT_CACHE, CUDAKIT_WORKER_*, a test run's CUDAKIT_REQUIRE_*) pass.
        const librarySetting = name.startsWith('CUDAKIT_') && !name.startsWith('CUDAKIT_SERVER_');
        if (!librarySetting) expect([...WORKER_ENV_ALLOWED, ...serviceSet], name).toContain(name);
      }
      expect(facts.env).toMatchObject({
        CUDA_VISIBLE_DEVICES: 'GPU-nosy',
        CUDAKIT_CACHE_DIR: cacheDir,
        CUDAKIT_CACHE: '1',
        CUDAKIT_SERVER_NCU: 'off',
      });
      expect(facts.env.PATH).toBe(process.env.PATH);
    } finally {
      delete process.env.CUDAKIT_CACHE;
    }
  });

  it.skipIf(!runsAsRoot())('runs as an unprivileged user when the service is root [needs root]', async () => {
    const nobody = resolveWorkerUser('nobody');
    const containment = serviceContainment(undefined); // the command line's default as root
    made.push(containment);
    expect(containment.user).toMatchObject({ uid: nobody.uid, gid: nobody.gid });
    const { facts } = await look(containment);
    expect(facts).toMatchObject({ uid: nobody.uid, gid: nobody.gid, owner: nobody.uid, mode: 0o700 });
    expect(facts.groups.filter((g) => g !== nobody.gid)).toEqual([]); // root's groups are dropped too
    expect(facts.parentEntries).toBe('EACCES'); // other workers' folders cannot be listed
    expect(facts.env.CUDAKIT_CACHE_DIR).toBe(join(containment.rootDir, 'compile-cache'));
  });

  it('makes its root folder again when a cleaner of the temporary folder removed it', () => {
    const containment = makeContainment({ user: undefined, cacheDir: join(tmpdir(), 'cudakit-test-cache') });
    made.push(containment);
    rmSync(containment.rootDir, { recursive: true, force: true });
    const dir = makeWorkerDir(containment);
    expect(dir.startsWith(`${containment.rootDir}/`)).toBe(true);
    expect(statSync(containment.rootDir).mode & 0o777).toBe(0o700);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('refuses a worker user it cannot give: unknown, or another user without root', () => {
    expect(() => resolveWorkerUser('no-such-user-cudakit')).toThrow("there is no user 'no-such-user-cudakit'");
    expect(() => resolveWorkerUser('a b')).toThrow("'a b' is not a user name, a uid or uid:gid");
    expect(resolveWorkerUser('1234:5678')).toMatchObject({ uid: 1234, gid: 5678 });
    if (!runsAsRoot()) expect(() => serviceContainment('0')).toThrow('only a server running as root');
  });
});
