// Seed 000's logistic map x <- r*x*(1-x) in float32 on a GPU, as a CUDA
// kernel of one thread, in the three orders `numerics logmap` computes on
// the CPU. Built twice by scripts/gpu-check.sh: with nvcc's default FMA
// contraction (-fmad=true) and without (-fmad=false), so that what the
// seed's GPU value 0.29076236 (x(2000), x0 = 0.4, r = 3.7) owes to FMA
// shows beside the CPU's variants.
//   nvcc -O3 -fmad=true bench/logmap_cuda.cu -o logmap_fma && ./logmap_fma
// Prints "logmap_cuda: fmad=<0|1> order=<name> x(2000)=<value>" per order.
#include <cstdio>

namespace {

__global__ void iterate(float x0, float r, int steps, float* out) {
  float a = x0, b = x0, c = x0;
  for (int n = 0; n < steps; ++n) {
    a = (r * a) * (1.0f - a);  // (r*x)*(1-x)
    b = r * (b * (1.0f - b));  // r*(x*(1-x)): x*(1-x) may contract to fma(-x, x, x)
    const float t = r * c;     // r*x - r*x*x: t - t*x may contract to fma(-t, x, t)
    c = t - t * c;
  }
  out[0] = a;
  out[1] = b;
  out[2] = c;
}

}  // namespace

int main() {
  float* d = nullptr;
  if (cudaMalloc(&d, 3 * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "logmap_cuda: no usable GPU\n");
    return 1;
  }
  iterate<<<1, 1>>>(0.4f, 3.7f, 2000, d);
  float h[3] = {0, 0, 0};
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  const char* orders[] = {"(r*x)*(1-x)", "r*(x*(1-x))", "r*x-r*x*x"};
#ifdef TS_FMAD
  const int fmad = TS_FMAD;
#else
  const int fmad = -1;
#endif
  for (int i = 0; i < 3; ++i)
    std::printf("logmap_cuda: fmad=%d order=%s x(2000)=%.8f\n", fmad, orders[i], h[i]);
  return 0;
}
