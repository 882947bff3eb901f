// cuBLASLt opened on first use (src/backends/cuda/cublaslt/lt_loader.cc): the kiln binary does
// not load it at start, and the forwarding definitions reach the library. Only the calls that
// need no GPU run here (descriptors); the GPU tests cover the rest.
#if defined(KILN_HAVE_CUDA)

#include <cublasLt.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "backends/cuda/cublaslt/lt_loader.h"

namespace kiln {
namespace {

TEST(CublasLtLoader, LoadsAndForwardsDescriptorCalls) {
  ASSERT_TRUE(load_cublaslt().is_ok()) << load_cublaslt().to_string();

  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16F, 7, 5, 7), CUBLAS_STATUS_SUCCESS);
  const int32_t batch = 3;  // the attribute is an int32_t
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                             sizeof(batch)),
            CUBLAS_STATUS_SUCCESS);
  // A wrong attribute size must come back as the library's own error, not a crash.
  const int64_t wide = 3;
  EXPECT_NE(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &wide,
                                             sizeof(wide)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);

  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);

  cublasLtMatmulPreference_t pref = nullptr;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
  const size_t ws = size_t{1} << 20;
  EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &ws, sizeof(ws)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(pref), CUBLAS_STATUS_SUCCESS);
}

#if defined(KILN_CLI_PATH)
// The dynamic loader's own listing of what the kiln binary loads at start (nothing runs).
TEST(CublasLtLoader, KilnDoesNotLoadItAtStart) {
  const std::string cmd = std::string("LD_TRACE_LOADED_OBJECTS=1 ") + KILN_CLI_PATH + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  ASSERT_TRUE(pipe);
  std::string listing;
  std::array<char, 512> buf;
  while (fgets(buf.data(), buf.size(), pipe.get())) listing += buf.data();
  EXPECT_NE(listing.find("libcudnn"), std::string::npos) << listing;  // the listing is real
  EXPECT_EQ(listing.find("libcublasLt"), std::string::npos) << listing;
}
#endif

}  // namespace
}  // namespace kiln

#endif  // KILN_HAVE_CUDA
