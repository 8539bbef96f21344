import { expect, it } from 'vitest';
import { AbortError, Device, Program, TimeoutError } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';
import { runScript } from '../child.js';

// Spins until `ns` nanoseconds of GPU time (globaltimer) have passed: a kernel of a known, bounded length.
const SPIN = `
extern "C" __global__ void spin_ns(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}`;

function runChild(
  script: string,
  timeoutMs: number,
): { status: number | null; stdout: string; stderr: string; wallMs: number } {
  const t0 = Date.now();
  const r = runScript(script, { timeoutMs });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, wallMs: Date.now() - t0 };
}

// compute-sanitizer serializes kernels and waits for them at process exit: what these scenarios check (the process
// ends while a kernel still runs) is what the tool itself prevents.
const unsanitized = process.env.CUDAKIT_UNDER_SANITIZER === '1' ? it.skip : it;

describeGpu('waits with a limit', () => {
  const d = () => Device.get(0);
  const spin = () => d().loadModule(new Program(SPIN).compile()).getKernel('spin_ns', ['u64']);

  it(
    'stream, event and device waits reject with a TimeoutError ' + 'while the kernel keeps running, then complete',
    async () => {
      const k = spin();
      using s = d().createStream({ nonBlocking: true });
      k.launch({ grid: 1, block: 1, stream: s }, 600_000_000n); // 0.6 s
      using e = s.record({ timing: false });
      for (const [what, wait] of [
        ['stream', () => s.synchronizeAsync({ timeoutMs: 20 })],
        ['event', () => e.synchronizeAsync({ timeoutMs: 20 })],
        ['device', () => d().synchronizeAsync({ timeoutMs: 20 })],
      ] as const) {
        const err = await wait().then(
          () => undefined,
          (x: unknown) => x,
        );
        expect(err, what).toBeInstanceOf(TimeoutError);
        expect((err as TimeoutError).timeoutMs).toBe(20);
        expect((err as Error).message).toMatch(
          /did not finish within 20 ms[\s\S]*keeps running[\s\S]*ending the process/,
        );
      }
      expect(s.query()).toBe(false); // the kernel is still running
      await s.synchronizeAsync({ timeoutMs: 30_000 }); // a limit that is not reached resolves as usual
      await e.synchronizeAsync({ timeoutMs: 30_000 });
      await d().synchronizeAsync({ timeoutMs: 30_000 });
      expect(s.query()).toBe(true);
      k.module.dispose();
    },
  );

  it('an AbortSignal rejects the wait with an AbortError whose cause is the reason', async () => {
    const k = spin();
    using s = d().createStream({ nonBlocking: true });
    k.launch({ grid: 1, block: 1, stream: s }, 400_000_000n);
    const ac = new AbortController();
    const waits = [
      s.synchronizeAsync({ signal: ac.signal }),
      d().synchronizeAsync({ signal: ac.signal, timeoutMs: 60_000 }),
    ];
    setTimeout(() => ac.abort(new Error('user cancelled')), 20);
    for (const w of waits) {
      const err = await w.then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(err).toBeInstanceOf(AbortError);
      expect((err as Error & { cause: Error }).cause.message).toBe('user cancelled');
    }
    // Already aborted: rejects at once, without waiting for the GPU.
    await expect(s.synchronizeAsync({ signal: AbortSignal.abort() })).rejects.toBeInstanceOf(AbortError);
    expect(s.query()).toBe(false);
    await s.synchronizeAsync();
    k.module.dispose();
  });

  it('validates wait options before waiting', () => {
    using s = d().createStream();
    expect(() => s.synchronizeAsync({ timeoutMs: -1 })).toThrow(RangeError);
    expect(() => s.synchronizeAsync({ timeoutMs: '5' as never })).toThrow(TypeError);
    expect(() => d().synchronizeAsync({ signal: {} as never })).toThrow(TypeError);
    expect(() => d().synchronizeAsync({ timeout: 5 } as never)).toThrow(/Unknown option options.timeout/);
  });

  unsanitized('timed-out waits on a hung kernel hold no libuv pool thread, and the process can still exit', () => {
    // A kernel of 20 s stands for one that never ends. After five timed-out waits (more than the libuv pool's four
    // threads), compileAsync and fs.promises.readFile (both pool work) must still complete while it runs; then
    // the process ends by itself: the abandoned waits keep nothing alive.
    const r = runChild(
      `
      import { readFile } from 'node:fs/promises';
      import { Device, Program, TimeoutError } from './lib/index.ts';
      const d = Device.get(0);
      const k = d.loadModule(new Program(${JSON.stringify(SPIN)}).compile()).getKernel('spin_ns', ['u64']);
      const s = d.createStream({ nonBlocking: true });
      k.launch({ grid: 1, block: 1, stream: s }, 20_000_000_000n);
      const e = s.record({ timing: false });
      const waits = [
        d.synchronizeAsync({ timeoutMs: 30 }),
        d.synchronizeAsync({ timeoutMs: 30 }),
        d.synchronizeAsync({ timeoutMs: 40 }),
        s.synchronizeAsync({ timeoutMs: 30 }),
        e.synchronizeAsync({ timeoutMs: 30 }),
      ];
      const outcomes = await Promise.allSettled(waits);
      const timedOut = outcomes.filter((o) => o.status === 'rejected' && o.reason instanceof TimeoutError).length;
      const t0 = performance.now();
      const compiled = await new Program('extern "C" __global__ void f(int* p) { *p = 1; }').compileAsync();
      const text = await readFile('package.json', 'utf8');
      const poolMs = performance.now() - t0;
      console.log(
        JSON.stringify({
          timedOut,
          compiled: compiled.bytes.length > 0,
          read: text.includes('cudakit'),
          poolMs,
          running: !s.query(),
        }),
      );
    `,
      60_000,
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
      timedOut: number;
      compiled: boolean;
      read: boolean;
      poolMs: number;
      running: boolean;
    };
    expect(out).toMatchObject({ timedOut: 5, compiled: true, read: true, running: true });
    // The process ended on its own with the kernel still running: it did not wait for the 20 s kernel.
    expect(r.wallMs).toBeLessThan(15_000);
  });

  unsanitized('process.exit() while a kernel runs does not wait for the kernel', () => {
    const r = runChild(
      `
      import { Device, Program } from './lib/index.ts';
      const d = Device.get(0);
      const k = d.loadModule(new Program(${JSON.stringify(SPIN)}).compile()).getKernel('spin_ns', ['u64']);
      const s = d.createStream();
      const buf = d.alloc(1 << 20);
      k.launch({ grid: 1, block: 1, stream: s }, 20_000_000_000n);
      setTimeout(() => { console.log(s.query() ? 'finished' : 'running'); process.exit(0); }, 200);
    `,
      60_000,
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('running');
    expect(r.wallMs).toBeLessThan(15_000);
  });
});
