// y = conv2d(x, w): NCHW f32, a 3×3 filter, stride 1, padding 1 (zeros), so y has x's height and width.
// x [n, c_in, h, w], wt [c_out, c_in, 3, 3], y [n, c_out, h, w]. The direct kernel: one thread per output element,
// the block's threads along a row of one output channel of one image, so neighbouring threads read neighbouring
// inputs and all read the same weight.
extern "C" __global__ void conv2d_reference(const float* __restrict__ x, const float* __restrict__ wt,
                                            float* __restrict__ y, int n, int c_in, int c_out, int h, int w) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;  // the pixel within the image
  const int co = blockIdx.y;
  const int b = blockIdx.z;
  if (p >= h * w) return;
  const int oh = p / w, ow = p % w;
  float acc = 0.0f;
  for (int ci = 0; ci < c_in; ++ci) {
    const float* xc = x + ((size_t)b * c_in + ci) * h * w;
    const float* wc = wt + ((size_t)co * c_in + ci) * 9;
    for (int kh = 0; kh < 3; ++kh) {
      const int ih = oh + kh - 1;
      if (ih < 0 || ih >= h) continue;
      for (int kw = 0; kw < 3; ++kw) {
        const int iw = ow + kw - 1;
        if (iw < 0 || iw >= w) continue;
        acc = fmaf(xc[(size_t)ih * w + iw], wc[kh * 3 + kw], acc);
      }
    }
  }
  y[((size_t)b * c_out + co) * h * w + p] = acc;
}
