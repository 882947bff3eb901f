// The CPU's float32 FMA ceiling: every thread runs independent 16-lane AVX-512 fused
// multiply-adds (12 accumulators, enough to cover the FMA latency on two pipes) and the
// best of 5 timed passes is printed in GFLOP/s (one FMA = 2 FLOPs). A conv or GEMM
// kernel cannot run float32 direct-convolution FLOPs faster than this; bench/results/cpu.md
// compares kiln's and ONNX Runtime's model throughput against it.
//
//   gcc -O2 -mavx512f -fopenmp bench/fma_peak.c -o /tmp/fma_peak
//   OMP_NUM_THREADS=2 /tmp/fma_peak
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  const long iters = 50000000;
  double best = 0;
  float sink = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const double t0 = now();
#pragma omp parallel reduction(+ : sink)
    {
      __m512 acc[12];
      const __m512 b = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-7f);
      for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps((float)i);
      for (long i = 0; i < iters; ++i)
#pragma GCC unroll 12
        for (int j = 0; j < 12; ++j) acc[j] = _mm512_fmadd_ps(acc[j], b, c);
      __m512 s = acc[0];
      for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
      sink += _mm512_reduce_add_ps(s);
    }
    const double flops = (double)iters * 12 * 16 * 2 * omp_get_max_threads();
    const double rate = flops / (now() - t0) / 1e9;
    if (rate > best) best = rate;
  }
  printf("threads %d: %.1f GFLOP/s float32 FMA peak (best of 5; checksum %g)\n",
         omp_get_max_threads(), best, sink);
  return 0;
}
