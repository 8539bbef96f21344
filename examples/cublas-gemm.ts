// A native library on cudakit's buffers and stream: cuBLAS's cublasSgemm, called through koffi (the FFI library for
// Node; a development dependency of this repository, not of cudakit), with the raw handles cudakit gives
// (`buffer.ptr`, `stream.handle`). A tiled matrix product compiled with NVRTC is checked against cuBLAS, then compared
// with it for speed: cuBLAS as a function target, the tiled kernel as a kernel target.
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { Device, Program, type Stream, compare, formatComparison, formatResult, probe } from '../lib/index.js';

if (!probe().ok) {
  console.log(`needs a CUDA GPU: ${probe().reason?.split('\n')[0]}`);
  process.exit(0);
}

// koffi is loaded when the example runs, so that without it the example says what to install.
type CFunction = (...args: unknown[]) => number;
interface Koffi {
  load(path: string): { func(prototype: string): CFunction };
}
let koffi: Koffi;
try {
  koffi = createRequire(import.meta.url)('koffi') as Koffi;
} catch {
  console.log('needs koffi, the FFI library for Node: npm install -D koffi');
  process.exit(0);
}

/**
 * libcublas, found as cudakit finds NVRTC: CUDAKIT_CUBLAS_PATH alone when it is set; else by name on the library
 * path (.so.13, .12, .11); else in $CUDA_PATH, $CUDA_HOME and /usr/local/cuda, and in the Python environments in
 * reach, where NVIDIA's wheels put it (nvidia-cublas: nvidia/cu13/lib; nvidia-cublas-cu12: nvidia/cublas/lib).
 */
function loadCublas(): { lib: ReturnType<Koffi['load']>; path: string } | { tried: string[] } {
  const names = ['libcublas.so.13', 'libcublas.so.12', 'libcublas.so.11'];
  const override = process.env.CUDAKIT_CUBLAS_PATH;
  const dirs: string[] = [];
  for (const root of [process.env.CUDA_PATH, process.env.CUDA_HOME, '/usr/local/cuda']) {
    if (root) dirs.push(join(root, 'lib64'), join(root, 'lib'), join(root, 'targets/x86_64-linux/lib'));
  }
  for (const packages of sitePackages())
    dirs.push(join(packages, 'nvidia/cu13/lib'), join(packages, 'nvidia/cublas/lib'));
  const candidates = override ? [override] : [...names, ...dirs.flatMap((d) => names.map((n) => join(d, n)))];
  const tried: string[] = [];
  for (const path of candidates) {
    if (path.includes('/') && !existsSync(path)) continue;
    // libcublas needs libcublasLt of its version: loaded first from the same folder, it is found without
    // LD_LIBRARY_PATH.
    const lt = join(dirname(path), `libcublasLt${path.slice(path.lastIndexOf('.so'))}`);
    try {
      if (path.includes('/') && existsSync(lt)) koffi.load(lt);
      return { lib: koffi.load(path), path };
    } catch (e) {
      tried.push(`${path}: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  if (override) return { tried: tried.length > 0 ? tried : [`CUDAKIT_CUBLAS_PATH=${override}: no such file`] };
  return { tried: [...tried, `no ${names.join(', ')} in ${dirs.join(', ')}`] };
}

/** site-packages and dist-packages folders of $VIRTUAL_ENV, $CONDA_PREFIX, each python3 on PATH, ~/.local, /usr. */
function sitePackages(): string[] {
  const prefixes = [process.env.VIRTUAL_ENV, process.env.CONDA_PREFIX];
  for (const bin of (process.env.PATH ?? '').split(delimiter)) {
    if (bin && existsSync(join(bin, 'python3'))) prefixes.push(dirname(bin));
  }
  prefixes.push(join(homedir(), '.local'), '/usr/local', '/usr');
  const out: string[] = [];
  for (const prefix of new Set(prefixes)) {
    if (!prefix || !existsSync(join(prefix, 'lib'))) continue;
    for (const python of readdirSync(join(prefix, 'lib')).filter((d) => /^python3\.\d+$/.test(d))) {
      for (const kind of ['site-packages', 'dist-packages']) out.push(join(prefix, 'lib', python, kind));
    }
  }
  return out;
}

const found = loadCublas();
if ('tried' in found) {
  console.log(
    "needs cuBLAS (libcublas.so.13, .12 or .11): install a CUDA toolkit, or NVIDIA's wheel (pip install " +
      'nvidia-cublas for CUDA 13, nvidia-cublas-cu12 for CUDA 12), or point CUDAKIT_CUBLAS_PATH at libcublas.so. ' +
      `Tried: ${found.tried.join('; ')}`,
  );
  process.exit(0);
}
const cublas = found.lib;

// The cuBLAS v2 API as C declares it, with handles, streams and device pointers passed as 64-bit integers (the
// bigints cudakit gives); alpha and beta are host pointers (the default pointer mode).
const cublasCreate = cublas.func('int cublasCreate_v2(uint64_t *handle)');
const cublasDestroy = cublas.func('int cublasDestroy_v2(uint64_t handle)');
const cublasGetVersion = cublas.func('int cublasGetVersion_v2(uint64_t handle, int *version)');
const cublasSetStream = cublas.func('int cublasSetStream_v2(uint64_t handle, uint64_t stream)');
const cublasSgemm = cublas.func(
  'int cublasSgemm_v2(uint64_t handle, int transa, int transb, int m, int n, int k, const float *alpha, ' +
    'uint64_t A, int lda, uint64_t B, int ldb, const float *beta, uint64_t C, int ldc)',
);
const CUBLAS_OP_N = 0;
function ok(status: number, call: string): void {
  if (status !== 0) throw new Error(`${call} failed with cuBLAS status ${status}`);
}

const device = Device.get(0);
const n = 2048; // C (n×n) = A (n×n) · B (n×n), row-major floats
using a = device.allocArray(Float32Array, n * n).copyFromHost(Float32Array.from({ length: n * n }, Math.random));
using b = device.allocArray(Float32Array, n * n).copyFromHost(Float32Array.from({ length: n * n }, Math.random));
using cTiled = device.allocArray(Float32Array, n * n);
using cCublas = device.allocArray(Float32Array, n * n);

const handleOut = new BigUint64Array(1);
ok(cublasCreate(handleOut), 'cublasCreate_v2'); // on the device's primary context, which cudakit uses too
const handle = handleOut[0]!;
const versionOut = new Int32Array(1);
ok(cublasGetVersion(handle, versionOut), 'cublasGetVersion_v2');
const v = versionOut[0]!;
const one = new Float32Array([1]);
const zero = new Float32Array([0]);
let boundStream: bigint | undefined;
/** cuBLAS's C = A·B on `stream`. cuBLAS is column-major: it computes Cᵀ = Bᵀ·Aᵀ, which is C row-major. */
const sgemm = (stream: Stream): void => {
  if (stream.handle !== boundStream) {
    ok(cublasSetStream(handle, stream.handle), 'cublasSetStream_v2');
    boundStream = stream.handle;
  }
  const status = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, one, b.ptr, n, a.ptr, n, zero, cCublas.ptr, n);
  ok(status, 'cublasSgemm_v2');
};

// Shared-memory tiles: each block computes a 32×32 tile of C from 32×32 tiles of A and B.
using module = device.loadModule(
  new Program(`
  #define TILE 32
  extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
      As[threadIdx.y][threadIdx.x] = row < n && t + threadIdx.x < n ? A[row * n + t + threadIdx.x] : 0.0f;
      Bs[threadIdx.y][threadIdx.x] = t + threadIdx.y < n && col < n ? B[(t + threadIdx.y) * n + col] : 0.0f;
      __syncthreads();
      for (int k = 0; k < TILE; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
      __syncthreads();
    }
    if (row < n && col < n) C[row * n + col] = acc;
  }`).compile(),
);
const tiled = module.getKernel('matmul_tiled', ['ptr', 'ptr', 'ptr', 'i32']);
const config = { grid: [n / 32, n / 32], block: [32, 32] } as const;

// Check: both on one stream, then every element of ours within a relative tolerance of cuBLAS's. The inputs are in
// [0, 1), so no element of C is near zero and the relative error is meaningful for each.
using stream = device.createStream();
sgemm(stream);
tiled.launch({ ...config, stream }, a, b, cTiled, n);
stream.synchronize();
const ours = cTiled.copyToHost();
const theirs = cCublas.copyToHost();
let maxRelError = 0;
for (let i = 0; i < ours.length; i++) maxRelError = Math.max(maxRelError, Math.abs(ours[i]! - theirs[i]!) / theirs[i]!);
const tolerance = 1e-4;
const passed = maxRelError <= tolerance;
console.log(
  `${device.name}: C = A·B, ${n}×${n}×${n} floats; cuBLAS ${Math.floor(v / 10000)}.${Math.floor(v / 100) % 100}.` +
    `${v % 100} from ${found.path}`,
);
console.log(
  `check: tiled vs cuBLAS: max relative error ${maxRelError.toExponential(2)} ` +
    `(tolerance ${tolerance.toExponential(0)}): ${passed ? 'PASS' : 'FAIL'}`,
);
if (!passed) process.exit(1);

// Speed: cuBLAS (A, the reference) against the tiled kernel (B), in interleaved rounds, cold.
const result = await compare(
  { work: sgemm, name: 'cuBLAS' },
  { kernel: tiled, config, args: [a, b, cTiled, n], name: 'tiled' },
  { flops: 2 * n ** 3 },
);
ok(cublasDestroy(handle), 'cublasDestroy_v2');
console.log(formatResult(result.a));
console.log(formatResult(result.b));
console.log(formatComparison(result));
const ratio = (x: number): string => `${x.toFixed(2)}×`;
console.log(
  `tiled: ${ratio(result.speedup)} cuBLAS (95% CI ${ratio(result.speedupLow)} … ${ratio(result.speedupHigh)}, ` +
    `${result.verdict})`,
);
