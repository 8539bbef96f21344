// Compile-time checks of launch argument typing (checked by `npm run typecheck`; never executed).
import type { DeviceBuffer, Kernel } from '../../lib/index.js';

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
