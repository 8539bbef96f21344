// Compile-time checks of architecture names (checked by `npm run typecheck`; never executed): what supportedArchNames()
// and device.arch give feeds compile() as it is, and a misspelt name does not type-check.
import {
  type Arch,
  type CompileOptions,
  type ComputeArch,
  type Device,
  type EvalJob,
  type ObjectCode,
  type Program,
  type SmArch,
  isArch,
  supportedArchNames,
  supportedArchs,
} from '../../lib/index.js';

declare const program: Program;
declare const device: Device;

program.compile({ arch: 'sm_90' });
program.compile({ arch: 'sm_90a' });
program.compile({ arch: 'sm_100f' });
program.compile({ target: 'ptx', arch: 'compute_90' });
program.compile({ target: 'ptx', arch: 'compute_90a' });
program.compile({ arch: device.arch });
program.compile({ arch: supportedArchNames()[0]! });
for (const arch of supportedArchNames()) void program.compileAsync({ arch });
const n = Math.max(...supportedArchs());
program.compile({ arch: `sm_${n}` }); // a name made from one of supportedArchs()'s numbers
program.compile({ target: 'ptx', arch: `compute_${n}` });
const fromConfig: string = 'sm_90';
if (isArch(fromConfig)) program.compile({ arch: fromConfig }); // a string from elsewhere, narrowed

// @ts-expect-error the underscore is missing
program.compile({ arch: 'sm90' });
// @ts-expect-error a number is not an architecture: supportedArchNames() has the names
program.compile({ arch: supportedArchs()[0]! });
// @ts-expect-error supportedArchs() gives numbers
program.compile({ arch: supportedArchs().at(-1) });
// @ts-expect-error an unknown prefix
program.compile({ arch: 'gfx_90' });
// @ts-expect-error no such suffix
program.compile({ arch: 'sm_90x' });
// @ts-expect-error an unchecked string: isArch() narrows one
program.compile({ arch: fromConfig });
// @ts-expect-error a job's compile options take an Arch too
const job: EvalJob = { source: '', kernel: 'k', grid: 1, block: 1, args: [], compile: { arch: 'sm90' } };
void job;

// Exact types, checked both ways.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const assertType = <T extends true>(): T | undefined => undefined;
assertType<Equal<ReturnType<typeof supportedArchNames>, SmArch[]>>();
assertType<Equal<ReturnType<typeof supportedArchs>, number[]>>(); // unchanged, for code that compares numbers
assertType<Equal<Device['arch'], SmArch>>();
assertType<Equal<CompileOptions['arch'], Arch | undefined>>();
assertType<Equal<ObjectCode['arch'], Arch | undefined>>();
assertType<Equal<Arch, SmArch | ComputeArch>>();
