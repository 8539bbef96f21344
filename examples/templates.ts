// Templates: compile several instantiations and get each by its C++ name.
import { Device, Program, probe } from '../lib/index.js';

if (!probe().ok) {
  console.log(`needs a CUDA GPU: ${probe().reason}`);
  process.exit(0);
}
const device = Device.get(0);
const source = `
template <typename T>
__global__ void scale(T* x, T factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}`;
const code = new Program(source).compile({ nameExpressions: ['scale<float>', 'scale<double>', 'scale<int>'] });
console.log('lowered names:', code.loweredNames);
using module = device.loadModule(code);

const n = 1000;
const f32 = module.getKernel('scale<float>', ['ptr', 'f32', 'i32']);
const f64 = module.getKernel('scale<double>', ['ptr', 'f64', 'i32']);
const i32 = module.getKernel('scale<int>', ['ptr', 'i32', 'i32']);
using xf = device.allocArray(Float32Array, n).copyFromHost(new Float32Array(n).fill(1.5));
using xd = device.allocArray(Float64Array, n).copyFromHost(new Float64Array(n).fill(1.5));
using xi = device.allocArray(Int32Array, n).copyFromHost(new Int32Array(n).fill(3));
const cfg = { grid: Math.ceil(n / 128), block: 128 };
f32.launch(cfg, xf, 2, n);
f64.launch(cfg, xd, 1 / 3, n);
i32.launch(cfg, xi, -7, n);
console.log('float :', xf.copyToHost()[n - 1]);
console.log('double:', xd.copyToHost()[n - 1]);
console.log('int   :', xi.copyToHost()[n - 1]);
