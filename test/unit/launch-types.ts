// Compile-time checks of launch argument typing (checked by `npm run typecheck`; never executed).
import type { ArgFor, DeviceBuffer, Kernel, Module } from '../../lib/index.js';

declare const saxpy: Kernel<readonly ['f32', 'ptr', 'ptr', 'i32']>;
declare const withStruct: Kernel<readonly ['ptr', { readonly struct: readonly ['i8', 'f64'] }, 'u64', 'bool']>;
declare const buf: DeviceBuffer;
const cfg = { grid: 1, block: 1 };

saxpy.launch(cfg, 2, buf, buf, 10);
saxpy.launch(cfg, 2, 0x7f00n, buf, 10); // a raw bigint address is a pointer too
// @ts-expect-error a string is not an f32
saxpy.launch(cfg, '2', buf, buf, 10);
// @ts-expect-error a number is not a pointer
saxpy.launch(cfg, 2, 5, buf, 10);
// @ts-expect-error one argument missing
saxpy.launch(cfg, 2, buf, buf);
// @ts-expect-error one argument too many
saxpy.launch(cfg, 2, buf, buf, 10, 11);

withStruct.launch(cfg, buf, [1, 2.5], 3n, true);
withStruct.launch(cfg, buf, [1, 2.5], 3, false); // u64 also takes a safe integer
// @ts-expect-error struct fields are typed
withStruct.launch(cfg, buf, [1, 'x'], 3n, true);
// @ts-expect-error bool takes a boolean
withStruct.launch(cfg, buf, [1, 2.5], 3n, 1);
// @ts-expect-error a misspelt launch option is an excess property (and a TypeError at run time)
saxpy.launch({ grid: 1, block: 1, sharedMemByte: 1024 }, 2, buf, buf, 10);

// Vector types: an array of `length` components, bigint | number for 64-bit elements.
declare const vec: Kernel<
  readonly ['f32x4', { readonly struct: readonly ['f32', 'f32x2', 'i32'] }, 'i64x2', 'f16x2', 'f32x3', 'u8x4']
>;
vec.launch(cfg, [1, 2, 3, 4], [1, [2, 3], 4], [1n, 2], [0.5, 1], [1, 2, 3], [1, 2, 3, 4]);
const v4 = [1, 2, 3, 4] as const;
vec.launch(cfg, v4, [1, [2, 3], 4], [1n, 2], [0.5, 1], [1, 2, 3], v4); // readonly tuples are fine
// @ts-expect-error a float4 takes 4 components
vec.launch(cfg, [1, 2, 3], [1, [2, 3], 4], [1n, 2], [0.5, 1], [1, 2, 3], [1, 2, 3, 4]);
// @ts-expect-error vector components are numbers
vec.launch(cfg, [1, 2, 3, '4'], [1, [2, 3], 4], [1n, 2], [0.5, 1], [1, 2, 3], [1, 2, 3, 4]);
// @ts-expect-error a float2 member is an array of 2, not two fields
vec.launch(cfg, [1, 2, 3, 4], [1, 2, 3, 4], [1n, 2], [0.5, 1], [1, 2, 3], [1, 2, 3, 4]);
// @ts-expect-error only 64-bit components take bigints
vec.launch(cfg, [1n, 2, 3, 4], [1, [2, 3], 4], [1n, 2], [0.5, 1], [1, 2, 3], [1, 2, 3, 4]);
// @ts-expect-error a float3 takes 3 components
vec.launch(cfg, [1, 2, 3, 4], [1, [2, 3], 4], [1n, 2], [0.5, 1], [1, 2, 3, 4], [1, 2, 3, 4]);

declare const m: Module;
const aligned = m.getKernel('k', ['ptr', { struct: ['f32', 'f64x2'], align: 32 }, 'bf16x2']);
aligned.launch(cfg, buf, [1, [2, 3]], [1, 2]);
// @ts-expect-error the struct's second field is a double2
aligned.launch(cfg, buf, [1, 2], [1, 2]);
// @ts-expect-error not a CUDA vector type
m.getKernel('k', ['f32x5']);
// @ts-expect-error half vectors come only as f16x2
m.getKernel('k', ['f16x4']);
// @ts-expect-error align is a number
m.getKernel('k', [{ struct: ['f32'], align: '16' }]);

// Exact types, checked both ways.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const exact: [
  Equal<ArgFor<'f32x3'>, readonly [number, number, number]>,
  Equal<ArgFor<'u64x2'>, readonly [bigint | number, bigint | number]>,
  Equal<ArgFor<{ readonly struct: readonly ['u8', 'f32x2'] }>, [number, readonly [number, number]]>,
] = [true, true, true];
void exact;
