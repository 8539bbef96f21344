// SPDX-License-Identifier: MIT
// The sandbox of Python jobs (src/run/sandbox.ts), with the real unshare, setpriv and prlimit and the system's
// Python: a script in the sandbox tries what a hostile Python job would (read a host file, the service's environment,
// other processes; reach the service's port or a socket on loopback; write outside its folder or past its folder's
// size limit; fork without end) and reports what it got. Needs root, as the sandbox does; without it the suite skips
// and says why.
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_SANDBOX_LIMITS,
  HIDDEN_BY_DEFAULT,
  type Sandbox,
  mountDiskQuota,
  quotaMountsUnder,
  sandboxArgv,
  sandboxUnavailable,
  unmountDiskQuota,
} from '../../src/run/sandbox.js';

const PYTHON = '/usr/bin/python3';
const root = process.getuid?.() === 0;
const why = !root ? 'not root' : !existsSync(PYTHON) ? `no ${PYTHON}` : undefined;
if (why !== undefined) console.log(`python sandbox tests skipped: ${why} (the sandbox needs root and a Python)`);
const describeRoot = why === undefined ? describe : describe.skip;

const SECRET = `S${Math.random().toString(36).slice(2)}`;
let base: string;
let dir: string;
/** A folder only the explicit hidden list covers: where a server keeps its data. */
let serverData: string;
/** A folder anyone may write, outside the hidden ones: only the read-only root keeps a job out of it. */
let open: string;
let listener: Server;
let port: number;

/** Runs a Python program in the sandbox; resolves to its exit code and what it printed. */
function runPython(program: string, over: Partial<Sandbox> = {}): Promise<{ code: number | null; out: string }> {
  const sandbox: Sandbox = {
    dir,
    hidden: [...HIDDEN_BY_DEFAULT, serverData],
    user: { uid: 65534, gid: 65534 },
    limits: DEFAULT_SANDBOX_LIMITS,
    env: { PATH: '/usr/bin:/bin', HOME: dir },
    ...over,
  };
  const argv = sandboxArgv([PYTHON, '-I', '-c', program], sandbox);
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      env: { ...process.env, SERVICE_SECRET: SECRET },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

beforeAll(async () => {
  if (why !== undefined) return;
  base = mkdtempSync(join(tmpdir(), 'cudakit-sandbox-'));
  dir = join(base, 'job');
  mkdirSync(dir, { mode: 0o700 });
  chownSync(dir, 65534, 65534);
  writeFileSync(join(base, 'sentinel.txt'), SECRET, { mode: 0o644 });
  serverData = mkdtempSync('/opt/cudakit-sandbox-data-');
  writeFileSync(join(serverData, 'jobs.db'), SECRET, { mode: 0o644 });
  open = mkdtempSync('/opt/cudakit-sandbox-open-');
  chmodSync(open, 0o777);
  listener = createServer((socket) => socket.end(SECRET));
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as { port: number }).port;
});

afterAll(() => {
  if (why !== undefined) return;
  listener.close();
  rmSync(base, { recursive: true, force: true });
  rmSync(serverData, { recursive: true, force: true });
  rmSync(open, { recursive: true, force: true });
});

describeRoot('the sandbox of a Python job', () => {
  it('can be made here', () => {
    expect(sandboxUnavailable(dir)).toBeUndefined();
  });

  it('runs as nobody, in its own folder, which it can write', async () => {
    const r = await runPython(
      'import os; open("out.txt", "w").write("x"); print(os.getuid(), os.getgid(), os.getcwd())',
    );
    expect(r.out.trim()).toBe(`65534 65534 ${dir}`);
    expect(existsSync(join(dir, 'out.txt'))).toBe(true);
  });

  it("reads no host file where the host keeps its own: temporary files, the server's data", async () => {
    const program = `
for p in [${JSON.stringify(join(base, 'sentinel.txt'))}, ${JSON.stringify(join(serverData, 'jobs.db'))}]:
    try:
        print(open(p).read())
    except OSError as e:
        print(type(e).__name__)`;
    const r = await runPython(program);
    expect(r.out).not.toContain(SECRET);
    expect(r.out.trim().split('\n')).toEqual(['FileNotFoundError', 'FileNotFoundError']);
  });

  it("sees none of the service's environment, only what it is given", async () => {
    const r = await runPython('import os, json; print(json.dumps(dict(os.environ)))');
    expect(r.out).not.toContain(SECRET);
    const env = JSON.parse(r.out) as Record<string, string>;
    expect(Object.keys(env).filter((k) => k !== 'LC_CTYPE')).toEqual(['PATH', 'HOME']);
  });

  it("reaches nothing on the network: not the service's port on loopback", async () => {
    const program = `
import socket
try:
    s = socket.create_connection(("127.0.0.1", ${port}), timeout=2)
    print(s.recv(100).decode())
except OSError as e:
    print(type(e).__name__, e.errno)`;
    const r = await runPython(program);
    expect(r.out).not.toContain(SECRET);
    expect(r.out.trim()).toMatch(/^OSError 101$|^ConnectionRefusedError/); // ENETUNREACH: no interface is up
  });

  it('writes nowhere but its folder, and sees only its own processes', async () => {
    const program = `
import os
for p in ["/usr/x", "/etc/x", "/x", ${JSON.stringify(join(base, 'x'))}, ${JSON.stringify(join(open, 'x'))}]:
    try:
        open(p, "w")
        print("wrote", p)
    except OSError as e:
        print(type(e).__name__)
print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))`;
    const r = await runPython(program);
    const lines = r.out.trim().split('\n');
    expect(
      lines.slice(0, 5).every((l) => /^(OSError|FileNotFoundError|PermissionError)$/.test(l)),
      r.out,
    ).toBe(true);
    expect(lines[5]).toBe('[1]'); // itself, as the namespace's first process
  });

  it('cannot fork past its limit, and the service goes on', async () => {
    const program = `
import os, time
n = 0
try:
    for i in range(500):
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        n += 1
except OSError as e:
    print("stopped", n, e.errno)`;
    const r = await runPython(program, { limits: { ...DEFAULT_SANDBOX_LIMITS, processes: 24 } });
    const m = /^stopped (\d+) 11$/.exec(r.out.trim()); // EAGAIN
    expect(m, r.out).not.toBeNull();
    expect(Number(m![1])).toBeLessThan(24);
  });

  it("cannot fill the host's disk: its folder holds its size limit and no more", async () => {
    const quotaDir = join(base, 'quota');
    mkdirSync(quotaDir, { mode: 0o700 });
    mountDiskQuota(quotaDir, 2 << 20, { uid: 65534, gid: 65534 });
    try {
      expect(quotaMountsUnder(base)).toEqual([quotaDir]);
      const program = `
import errno
written = 0
try:
    with open("fill.bin", "wb") as f:
        for i in range(64):
            f.write(bytes(1 << 16))
            f.flush()
            written += 1 << 16
except OSError as e:
    print("stopped", written, errno.errorcode[e.errno])`;
      const r = await runPython(program, { dir: quotaDir });
      const m = /^stopped (\d+) ENOSPC$/.exec(r.out.trim());
      expect(m, r.out).not.toBeNull();
      expect(Number(m![1])).toBeLessThanOrEqual(2 << 20);
    } finally {
      unmountDiskQuota(quotaDir);
    }
    expect(quotaMountsUnder(base)).toEqual([]);
  });

  it('refuses paths it cannot name safely', () => {
    const sandbox: Sandbox = {
      dir: 'relative/dir',
      hidden: [],
      user: { uid: 65534, gid: 65534 },
      limits: DEFAULT_SANDBOX_LIMITS,
      env: {},
    };
    expect(() => sandboxArgv(['x'], sandbox)).toThrow(/absolute path/);
    expect(() => sandboxArgv(['x'], { ...sandbox, dir: '/a/../b' })).toThrow(/absolute path/);
    expect(() => sandboxArgv(['x'], { ...sandbox, dir: '/a', hidden: ['/x\nrm -rf /'] })).toThrow(/line breaks/);
    expect(() => sandboxArgv(['x'], { ...sandbox, dir: '/a', env: { 'A B': '1' } })).toThrow(/variable name/);
  });
});
