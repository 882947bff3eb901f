// main() of the GPU tests: runs them when a CUDA device is present; otherwise says so and
// exits 77, which ctest reports as skipped (never as passed).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n",
                e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
    return 77;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
