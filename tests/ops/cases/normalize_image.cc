// NormalizeImage (kiln's own op, ops/normalize_image.h): uint8 pixels, NHWC and NCHW, 3 and 1
// channels, element counts that a 4-wide load divides and one it does not, ImageNet's scale and
// bias and arbitrary ones.
#include <random>
#include <string>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

Tensor pixels(const Shape& s, uint32_t seed) {
  Tensor t(DataType::kUInt8, s);
  std::mt19937 gen(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(gen());
  return t;
}

OpCase normalize(std::string name, bool channels_last, const Shape& x, std::vector<float> scale,
                 std::vector<float> bias, uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::NormalizeImage;
  c.attrs.set("channels_last", int64_t{channels_last});
  c.attrs.set("scale", std::move(scale));
  c.attrs.set("bias", std::move(bias));
  c.inputs.push_back({pixels(x, seed)});
  return c;
}

// ImageNet's (x / 255 − mean) / std.
std::vector<float> imagenet_scale() {
  return {1.f / (255.f * 0.229f), 1.f / (255.f * 0.224f), 1.f / (255.f * 0.225f)};
}
std::vector<float> imagenet_bias() {
  return {-0.485f / 0.229f, -0.456f / 0.224f, -0.406f / 0.225f};
}

}  // namespace

KILN_OP_CASES(normalize_image) {
  uint32_t seed = 1700;
  return {
      normalize("nhwc_imagenet", true, {2, 16, 12, 3}, imagenet_scale(), imagenet_bias(), seed++),
      normalize("nchw_imagenet", false, {2, 3, 16, 12}, imagenet_scale(), imagenet_bias(), seed++),
      normalize("nhwc_odd_count", true, {1, 5, 7, 3}, {0.01f, -0.02f, 0.03f}, {0.5f, -1.f, 2.f},
                seed++),
      normalize("nchw_odd_count", false, {3, 3, 5, 7}, {0.01f, -0.02f, 0.03f}, {0.5f, -1.f, 2.f},
                seed++),
      normalize("nhwc_gray", true, {2, 8, 8, 1}, {1.f / 255.f}, {-0.5f}, seed++),
      normalize("nchw_four_channels", false, {1, 4, 6, 6}, {0.1f, 0.2f, 0.3f, 0.4f},
                {0.f, 1.f, -1.f, 0.5f}, seed++),
  };
}

}  // namespace kiln::test
