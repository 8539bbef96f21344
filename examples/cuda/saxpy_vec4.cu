// y = a·x + y, four elements per thread through float4 (n must be a multiple of 4).
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (i < n) {
    float4 xv = *reinterpret_cast<const float4*>(x + i);
    float4 yv = *reinterpret_cast<float4*>(y + i);
    yv.x = a * xv.x + yv.x; yv.y = a * xv.y + yv.y; yv.z = a * xv.z + yv.z; yv.w = a * xv.w + yv.w;
    *reinterpret_cast<float4*>(y + i) = yv;
  }
}
