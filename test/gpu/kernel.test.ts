import { expect, it } from 'vitest';
import { Device, type Kernel, Program, native } from '../../lib/index.js';
import { VECTOR_ADD, describeGpu } from '../helpers.js';

const SCALARS = `
struct Pair { char tag; double value; short small; };
extern "C" __global__ void scalars(double* out, signed char a, unsigned char b, short c, unsigned short d, int e,
                                   unsigned int f, long long g, unsigned long long h, float i, double j, bool k,
                                   __half l, __nv_bfloat16 m, Pair p) {
  out[0] = a; out[1] = b; out[2] = c; out[3] = d; out[4] = e; out[5] = f; out[6] = (double)g; out[7] = (double)h;
  out[8] = i; out[9] = j; out[10] = k ? 1 : 0; out[11] = __half2float(l); out[12] = __bfloat162float(m);
  out[13] = p.tag; out[14] = p.value; out[15] = p.small;
}`;

const VECTORS = `
struct S { float a; float2 b; int c; };
struct __align__(16) A { float a; };
extern "C" __global__ void fields(float* out, S s) {
  out[0] = s.a; out[1] = s.b.x; out[2] = s.b.y; out[3] = (float)s.c;
}
extern "C" __global__ void vec4(float* out, float4 v) { out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w; }
extern "C" __global__ void mixed(double* out, signed char head, float4 v, double2 d, float3 f, A a, int2 i, S s,
                                 signed char tail) {
  out[0] = head; out[1] = v.x; out[2] = v.y; out[3] = v.z; out[4] = v.w; out[5] = d.x; out[6] = d.y;
  out[7] = f.x; out[8] = f.y; out[9] = f.z; out[10] = a.a; out[11] = i.x; out[12] = i.y;
  out[13] = s.a; out[14] = s.b.x; out[15] = s.b.y; out[16] = s.c; out[17] = tail;
}`;

describeGpu('Kernel', () => {
  const d = () => Device.get(0);

  it('launches vector_add and computes the right answer', () => {
    const m = d().loadModule(new Program(VECTOR_ADD).compile());
    const k = m.getKernel('vector_add', ['ptr', 'ptr', 'ptr', 'i32']);
    const n = 100_003;
    const a = Float32Array.from({ length: n }, (_, i) => Math.sin(i));
    const b = Float32Array.from({ length: n }, (_, i) => Math.cos(i));
    using da = d().allocArray(Float32Array, n).copyFromHost(a);
    using db = d().allocArray(Float32Array, n).copyFromHost(b);
    using out = d().allocArray(Float32Array, n);
    out.fill(Number.NaN);
    k.launch({ grid: Math.ceil(n / 256), block: 256 }, da, db, out, n);
    const r = out.copyToHost();
    for (let i = 0; i < n; i += 997) expect(r[i]).toBe(Math.fround(a[i]! + b[i]!));
    expect(Number.isNaN(r[n - 1]!)).toBe(false);
    m.dispose();
  });

  it('passes every scalar type and structs by value exactly', () => {
    const src = '#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n' + SCALARS;
    const m = d().loadModule(new Program(src).compile());
    const k = m.getKernel('scalars', [
      'ptr',
      'i8',
      'u8',
      'i16',
      'u16',
      'i32',
      'u32',
      'i64',
      'u64',
      'f32',
      'f64',
      'bool',
      'f16',
      'bf16',
      { struct: ['i8', 'f64', 'i16'] },
    ]);
    using out = d().allocArray(Float64Array, 16);
    k.launch(
      { grid: 1, block: 1 },
      out,
      -5,
      250,
      -30000,
      60000,
      -2e9,
      4e9,
      -(2n ** 40n),
      2n ** 52n,
      1.5,
      Math.PI,
      true,
      0.5,
      3,
      [7, 2.25, -9],
    );
    expect([...out.copyToHost()]).toEqual([
      -5,
      250,
      -30000,
      60000,
      -2e9,
      4e9,
      -(2 ** 40),
      2 ** 52,
      1.5,
      Math.PI,
      1,
      0.5,
      3,
      7,
      2.25,
      -9,
    ]);
    m.dispose();
  });

  it('checks the signature against the compiled kernel where the driver can (cuFuncGetParamInfo)', () => {
    const m = d().loadModule(new Program(VECTOR_ADD).compile());
    const k = m.getKernel('vector_add', ['ptr', 'ptr', 'ptr', 'i32']);
    expect(native().funcGetParamInfo(d().ctx, k.handle, 4)).toEqual([
      [0, 8],
      [8, 8],
      [16, 8],
      [24, 4],
    ]); // CUDA >= 12.4
    expect(() => m.getKernel('vector_add', ['ptr', 'ptr', 'ptr'])).toThrow(
      new TypeError("Kernel 'vector_add' takes 4 parameters but the signature lists 3: [ptr, ptr, ptr]"),
    );
    expect(() => m.getKernel('vector_add', ['ptr', 'ptr', 'ptr', 'f64'])).toThrow(
      new TypeError("Parameter 3 of kernel 'vector_add' is 4 bytes but the signature says f64 (8 bytes)"),
    );
    m.dispose();
  });

  it('rejects bad launches before the driver sees them; the process survives', () => {
    const m = d().loadModule(new Program(VECTOR_ADD).compile());
    const k = m.getKernel('vector_add', ['ptr', 'ptr', 'ptr', 'i32']) as Kernel;
    using x = d().alloc(1024);
    const launch = k.launch.bind(k) as (...a: unknown[]) => void;
    expect(() => launch({ grid: 1, block: 2048 }, x, x, x, 1)).toThrow(/block.x but received 2048/);
    expect(() => launch({ grid: 1, block: [32, 32, 2] }, x, x, x, 1)).toThrow(/at most 1024 threads/);
    expect(() => launch({ grid: 0, block: 1 }, x, x, x, 1)).toThrow(RangeError);
    expect(() => launch({ grid: 1, block: 1 }, x, x, x)).toThrow(
      /takes 4 arguments \[ptr, ptr, ptr, i32\] but received 3/,
    );
    expect(() => launch({ grid: 1, block: 1 }, x, x, x, 1.5)).toThrow(/argument 3 \(i32\) of kernel 'vector_add'/);
    expect(() => launch({ grid: 1, block: 1 }, x, x, 12, 1)).toThrow(/a DeviceBuffer or a bigint/);
    expect(() => launch({ grid: 1, block: 1, sharedMemBytes: 1 << 20 }, x, x, x, 1)).toThrow(/sharedMemBytes/);
    expect(() => launch({ grid: 1, block: 1, strem: 1 }, x, x, x)).toThrow(/Unknown launch option 'strem'/);
    const gone = d().alloc(16);
    gone.dispose();
    expect(() => launch({ grid: 1, block: 1 }, gone, x, x, 1)).toThrow(/disposed/);
    k.launch({ grid: 1, block: 1 }, x, x, x, 0); // still usable
    d().synchronize();
    m.dispose();
  });

  it('rejects unknown launch options before the driver is called; a correct config still launches', () => {
    const m = d().loadModule(new Program(VECTOR_ADD).compile());
    const k = m.getKernel('vector_add', ['ptr', 'ptr', 'ptr', 'i32']);
    const n = 1000;
    const a = Float32Array.from({ length: n }, (_, i) => i * 0.5);
    const b = Float32Array.from({ length: n }, (_, i) => 3 - i);
    using da = d().allocArray(Float32Array, n).copyFromHost(a);
    using db = d().allocArray(Float32Array, n).copyFromHost(b);
    using out = d().allocArray(Float32Array, n);
    using stream = d().createStream();
    out.fill(Number.NaN);
    d().synchronize();
    const launch = k.launch.bind(k) as (...x: unknown[]) => void;
    const known = 'known options: grid, block, sharedMemBytes, stream, cooperative, clusterDim';
    expect(() => launch({ grid: 4, block: 256, sharedMemByte: 1024 }, da, db, out, n)).toThrow(
      new TypeError(`Unknown launch option 'sharedMemByte' (did you mean 'sharedMemBytes'?); ${known}`),
    );
    expect(() => launch({ grid: 4, block: 256, streams: stream }, da, db, out, n)).toThrow(
      new TypeError(`Unknown launch option 'streams' (did you mean 'stream'?); ${known}`),
    );
    expect(() => k.bindLaunch({ grid: 4, block: 256, streams: stream } as never, [da, db, out, n])).toThrow(TypeError);
    d().synchronize();
    expect(out.copyToHost().every(Number.isNaN)).toBe(true); // nothing ran
    k.launch({ grid: 4, block: 256, sharedMemBytes: 1024, stream }, da, db, out, n);
    stream.synchronize();
    const r = out.copyToHost();
    for (let i = 0; i < n; i++) expect(r[i]).toBe(Math.fround(a[i]! + b[i]!));
    m.dispose();
  });

  it('passes structs holding vectors, aligned structs and vector types by value', () => {
    const m = d().loadModule(new Program(VECTORS).compile());
    using out = d().allocArray(Float32Array, 4);
    const fields = m.getKernel('fields', ['ptr', { struct: ['f32', 'f32x2', 'i32'] }]);
    fields.launch({ grid: 1, block: 1 }, out, [1.5, [-2.25, 3.5], -7]);
    expect([...out.copyToHost()]).toEqual([1.5, -2.25, 3.5, -7]);
    const vec4 = m.getKernel('vec4', ['ptr', 'f32x4']);
    vec4.launch({ grid: 1, block: 1 }, out, [0.5, -1, 1e30, 4]);
    expect([...out.copyToHost()]).toEqual([0.5, -1, Math.fround(1e30), 4]);

    using wide = d().allocArray(Float64Array, 18);
    const mixed = m.getKernel('mixed', [
      'ptr',
      'i8',
      'f32x4',
      'f64x2',
      'f32x3',
      { struct: ['f32'], align: 16 },
      'i32x2',
      { struct: ['f32', 'f32x2', 'i32'] },
      'i8',
    ]);
    mixed.launch(
      { grid: 1, block: 1 },
      wide,
      -3,
      [1, 2, 3, 4],
      [Math.PI, -Math.E],
      [5, 6, 7],
      [8.5],
      [-9, 10],
      [11, [12, 13], -14],
      15,
    );
    expect([...wide.copyToHost()]).toEqual([
      -3,
      1,
      2,
      3,
      4,
      Math.PI,
      -Math.E,
      5,
      6,
      7,
      8.5,
      -9,
      10,
      11,
      12,
      13,
      -14,
      15,
    ]);
    m.dispose();
  });

  it('says how to describe a float2 member when a struct signature has the wrong size', () => {
    const m = d().loadModule(new Program(VECTORS).compile());
    expect(() => m.getKernel('fields', ['ptr', { struct: ['f32', 'f32', 'f32', 'i32'] }])).toThrow(
      new RegExp(
        /^Parameter 1 of kernel 'fields' is 24 bytes but the signature says /.source +
          /\{ struct: \[f32, f32, f32, i32\] \} \(16 bytes\) /.source +
          /\(alignment: .*describe that member as 'f32x2'\/'f32x4'/.source,
      ),
    );
    expect(() =>
      m.getKernel('mixed', [
        'ptr',
        'i8',
        'f32x4',
        'f64x2',
        'f32x3',
        { struct: ['f32'] },
        'i32x2',
        { struct: ['f32', 'f32x2', 'i32'] },
        'i8',
      ]),
    ).toThrow(/Parameter 5 of kernel 'mixed' is 16 bytes .* give the struct align: 16\)$/);
    expect(() => m.getKernel('vec4', ['ptr', 'f32x3'])).toThrow(
      new TypeError("Parameter 1 of kernel 'vec4' is 16 bytes but the signature says f32x3 (12 bytes)"),
    );
    m.dispose();
  });

  it('reports attributes, occupancy and a suggested block size; raises the dynamic shared memory limit', () => {
    const src =
      'extern "C" __global__ void smem(float* o) { extern __shared__ float s[]; s[threadIdx.x] = threadIdx.x; ' +
      '__syncthreads(); o[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x]; }';
    const m = d().loadModule(new Program(src).compile());
    const k = m.getKernel('smem', ['ptr']);
    const a = k.attributes;
    expect(a.numRegs).toBeGreaterThan(0);
    expect(a.maxThreadsPerBlock).toBe(1024);
    expect(a.binaryVersion).toBe(Number(d().arch.slice(3)));
    expect(a.localSizeBytes).toBe(0);
    expect(k.maxActiveBlocksPerMultiprocessor(256, 1024)).toBeGreaterThan(0);
    const s = k.suggestedBlockSize();
    expect(s.blockSize).toBeGreaterThanOrEqual(32);
    expect(s.minGridSize).toBeGreaterThan(0);
    using o = d().allocArray(Float32Array, 256);
    const big = 100 * 1024;
    expect(() => k.launch({ grid: 1, block: 256, sharedMemBytes: big }, o)).toThrow(RangeError);
    k.setMaxDynamicSharedMemory(big);
    k.launch({ grid: 1, block: 256, sharedMemBytes: big }, o);
    expect(o.copyToHost()[0]).toBe(255);
    m.dispose();
  });

  it('supports cooperative launches and thread block clusters', () => {
    const src = `
      #include <cooperative_groups.h>
      namespace cg = cooperative_groups;
      extern "C" __global__ void coop(int* x) {
        cg::grid_group g = cg::this_grid();
        if (g.thread_rank() == 0) x[0] = 41;
        g.sync();
        if (g.thread_rank() == g.size() - 1) x[1] = x[0] + 1;
      }
      extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(int* x) {
        cg::cluster_group c = cg::this_cluster();
        x[blockIdx.x] = c.block_rank();
      }
      extern "C" __global__ void plain(int* x) { x[blockIdx.x] = (int)cg::this_cluster().num_blocks(); }`;
    const m = d().loadModule(new Program(src).compile());
    using x = d().allocArray(Int32Array, 8);
    m.getKernel('coop', ['ptr']).launch({ grid: 4, block: 64, cooperative: true }, x);
    expect([...x.copyToHost()].slice(0, 2)).toEqual([41, 42]);
    m.getKernel('plain', ['ptr']).launch({ grid: 8, block: 32, clusterDim: [4, 1, 1] }, x);
    expect([...x.copyToHost()]).toEqual([4, 4, 4, 4, 4, 4, 4, 4]);
    m.getKernel('clustered', ['ptr']).launch({ grid: 4, block: 32 }, x);
    expect([...x.copyToHost()].slice(0, 4)).toEqual([0, 1, 0, 1]);
    m.dispose();
  });

  it('launching does not allocate per call (native slots stay constant)', () => {
    const m = d().loadModule(new Program('extern "C" __global__ void empty() {}').compile());
    const k = m.getKernel('empty', []);
    const slots = native().stats().kernelSlots;
    for (let i = 0; i < 10_000; i++) k.launch({ grid: 1, block: 1 });
    d().synchronize();
    expect(native().stats().kernelSlots).toBe(slots);
    m.dispose();
    expect(native().stats().kernelSlots).toBe(slots - 1);
  });
});
