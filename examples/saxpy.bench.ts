// A benchmark spec: `cudakit bench examples/saxpy.bench.ts` compiles the kernel, checks it against the JavaScript
// reference below on seeded random inputs, then times it. Options on the command line override the job's fields
// (`--mode hot`, `--preset quick`, `--json saxpy.json`). Run directly, `tsx examples/saxpy.bench.ts` does the same
// through evaluate(), the function behind the command.
import { pathToFileURL } from 'node:url';
import { type EvalJob, type JsReference, evaluate, formatResult, probe } from '../lib/index.js';

const n = 1 << 24;

// The default export is the job: plain JSON, as an evaluation service would receive it.
const job = {
  name: 'saxpy',
  source: `
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}`,
  kernel: 'saxpy',
  grid: Math.ceil(n / 256),
  block: 256,
  // y is read and written: an init plus :out makes it both an input and an output.
  args: ['f32=2.5', `ptr:f32[${n}]=uniform(-1,1)`, `ptr:f32[${n}]=uniform(-1,1):out`, `i32=${n}`],
  timing: { bytes: 12 * n }, // x read, y read and written: 3 floats per element
} satisfies EvalJob;

export default job;

// The reference, which JSON cannot carry: host copies of the arguments, in order; it writes the expected y in
// place. The sum is taken in double and rounded once on the store, as the GPU's fused multiply-add does.
export const reference: JsReference = (args) => {
  const [a, x, y, len] = args as [number, Float32Array, Float32Array, number];
  for (let i = 0; i < len; i++) y[i] = a * x[i]! + y[i]!;
};

// Run as a script, it evaluates itself: exit status 0 when it passed, 1 when it failed, 2 without a usable GPU (as
// `cudakit bench` says it). No top-level await: the CLI imports this module while it runs.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const p = probe();
  // Checking and timing need a GPU. Without one, the part that needs none: compiling the kernel (to PTX, since no
  // device names an architecture); evaluate() then stops where it needs the GPU.
  void evaluate(p.ok ? job : { ...job, compile: { target: 'ptx' } }, { reference }).then((report) => {
    if (!p.ok) {
      const compiled = report.compile.candidate;
      if (compiled !== undefined) console.log(`saxpy compiles: NVRTC ${compiled.nvrtcVersion} made PTX`);
      else console.error(`saxpy cannot be compiled here either: ${report.error?.message.split('\n')[0]}`);
      const driver = (p.reason ?? '').split('\n')[0]!.replace(/ \(tried: .*\)$/, '');
      console.error(`Checking and timing saxpy need a machine with an NVIDIA GPU; this one has none usable: ${driver}`);
      for (const line of (p.remedy ?? '').split('\n').filter((l) => l !== '')) console.error(`Remedy: ${line}`);
      process.exitCode = 2;
      return;
    }
    if (!report.passed) {
      console.error(`${report.phase} failed: ${report.error?.message}`);
      process.exitCode = 1;
      return;
    }
    const check = report.check!;
    if ('before' in check) console.log(`✓ check against ${check.reference}: ${check.before.summary}`);
    console.log(formatResult(report.timing!));
  });
}
