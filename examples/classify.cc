// Classifies one image with any ONNX image classifier, through the installed kiln library.
//
//   classify MODEL.onnx IMAGE [--device cpu|cuda] [--precision fp32|tf32|fp16] [--top K]
//
// The image (PNG, JPEG, BMP... anything stb_image reads) is resized to the model's input
// height and width (where it differs), converted to its channel count (luminance for 1 channel), scaled to
// [0, 1] and normalized with the model's kiln.mean / kiln.std metadata when present, else
// ImageNet's mean and deviation for 3 channels and none for 1. It prints the K most likely
// classes (softmax of the first output, unless it already sums to 1).
#include <stb_image.h>
#include <stb_image_resize.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/engine.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "classify: %s\n", message.c_str());
  return 1;
}

// "0.5,0.25" → {0.5, 0.25}; empty when `text` is.
std::vector<float> floats(const std::string& text) {
  std::vector<float> v;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) v.push_back(std::stof(item));
  return v;
}

std::string metadata(const kiln::Engine& e, const std::string& key) {
  auto it = e.metadata().find(key);
  return it == e.metadata().end() ? "" : it->second;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3)
    return fail("usage: classify MODEL.onnx IMAGE [--device cpu|cuda] [--precision P] [--top K]");
  const std::string model = argv[1], image = argv[2];
  kiln::EngineOptions options;
  int top = 5;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--device") {
      options.device = value == "cuda" ? kiln::Device::kCuda : kiln::Device::kCpu;
    } else if (flag == "--precision") {
      auto p = kiln::parse_precision(value);
      if (!p.is_ok()) return fail(p.status().message());
      options.precision = *p;
    } else if (flag == "--top") {
      top = std::max(1, std::atoi(value.c_str()));
    } else {
      return fail("unknown flag " + flag);
    }
  }

  auto loaded = kiln::Engine::load(model, options);
  if (!loaded.is_ok()) return fail(loaded.status().to_string());
  const kiln::Engine& engine = **loaded;
  if (engine.inputs().size() != 1 || engine.inputs()[0].dims.size() != 4)
    return fail("the model needs one NCHW image input");
  const kiln::TensorInfo& input = engine.inputs()[0];
  const int channels = input.dims[1] > 0 ? static_cast<int>(input.dims[1]) : 3;
  const int height = input.dims[2] > 0 ? static_cast<int>(input.dims[2]) : 224;
  const int width = input.dims[3] > 0 ? static_cast<int>(input.dims[3]) : 224;
  if (channels != 1 && channels != 3) return fail("the model's input needs 1 or 3 channels");

  int w = 0, h = 0, n = 0;
  unsigned char* pixels = stbi_load(image.c_str(), &w, &h, &n, 3);
  if (!pixels) return fail(image + ": " + stbi_failure_reason());
  std::vector<unsigned char> resized(static_cast<size_t>(width) * height * 3);
  int ok = 1;
  if (w == width && h == height)
    std::memcpy(resized.data(), pixels, resized.size());
  else
    ok = stbir_resize_uint8(pixels, w, h, 0, resized.data(), width, height, 0, 3);
  stbi_image_free(pixels);
  if (!ok) return fail(image + ": could not resize");

  std::vector<float> mean = floats(metadata(engine, "kiln.mean"));
  std::vector<float> stdev = floats(metadata(engine, "kiln.std"));
  if (mean.empty())
    mean = channels == 3 ? std::vector<float>{0.485f, 0.456f, 0.406f} : std::vector<float>{0.f};
  if (stdev.empty())
    stdev = channels == 3 ? std::vector<float>{0.229f, 0.224f, 0.225f} : std::vector<float>{1.f};
  kiln::Tensor x(kiln::DataType::kFloat32, {1, channels, height, width});
  float* xd = x.data<float>();
  for (int c = 0; c < channels; ++c)
    for (int i = 0; i < width * height; ++i) {
      const unsigned char* px = &resized[static_cast<size_t>(i) * 3];
      const float v = channels == 3 ? px[c] / 255.f
                                    : (0.299f * px[0] + 0.587f * px[1] + 0.114f * px[2]) / 255.f;
      const size_t k = std::min(static_cast<size_t>(c), mean.size() - 1);
      const size_t s = std::min(static_cast<size_t>(c), stdev.size() - 1);
      xd[static_cast<size_t>(c) * width * height + i] = (v - mean[k]) / stdev[s];
    }

  auto outputs = engine.create_context()->run({{input.name, x}});
  if (!outputs.is_ok()) return fail(outputs.status().to_string());
  const kiln::Tensor& y = outputs->at(engine.outputs()[0].name);
  if (y.dtype() != kiln::DataType::kFloat32 || y.numel() < 1)
    return fail("the first output is not a float32 score vector");
  const int64_t classes = y.numel() / y.shape()[0];
  std::vector<double> p(y.data<float>(), y.data<float>() + classes);
  const double sum = std::accumulate(p.begin(), p.end(), 0.0);
  const bool probabilities =
      std::all_of(p.begin(), p.end(), [](double v) { return v >= 0 && v <= 1; }) &&
      std::abs(sum - 1) < 1e-3;
  if (!probabilities) {
    const double m = *std::max_element(p.begin(), p.end());
    double z = 0;
    for (double& v : p) z += v = std::exp(v - m);
    for (double& v : p) v /= z;
  }
  std::vector<int64_t> order(static_cast<size_t>(classes));
  std::iota(order.begin(), order.end(), 0);
  top = static_cast<int>(std::min<int64_t>(top, classes));
  std::partial_sort(order.begin(), order.begin() + top, order.end(),
                    [&](int64_t a, int64_t b) { return p[a] > p[b]; });
  std::printf("%s on %s (%s, %s)\n", model.c_str(), image.c_str(),
              kiln::device_name(options.device), kiln::precision_name(options.precision));
  for (int i = 0; i < top; ++i)
    std::printf("  class %4lld  %.4f\n", static_cast<long long>(order[i]), p[order[i]]);
  return 0;
}
