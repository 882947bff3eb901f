// Classifies one image with any ONNX image classifier, through the installed kiln library.
//
//   classify MODEL.onnx IMAGE [--device cpu|cuda] [--precision fp32|tf32|fp16] [--top K]
//
// The image (JPEG or PNG) is decoded and resized (bilinear) to the model's input height and
// width, converted to its channel count (luminance for 1 channel), scaled to [0, 1] and
// normalized with the model's kiln.mean / kiln.std metadata when present, else ImageNet's mean
// and deviation for 3 channels and none for 1 (kiln/images.h). It prints the K most likely
// classes (softmax of the first output, unless it already sums to 1).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "kiln/engine.h"
#include "kiln/images.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "classify: %s\n", message.c_str());
  return 1;
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

  std::ifstream file(image, std::ios::binary);
  if (!file) return fail(image + ": cannot be read");
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto decoded = kiln::decode_image(bytes, image, width, height);
  if (!decoded.is_ok()) return fail(decoded.status().message());
  auto norm = kiln::image_normalization(engine.metadata(), channels, {}, {}, input.name);
  if (!norm.is_ok()) return fail(norm.status().message());
  kiln::Tensor x(kiln::DataType::kFloat32, {1, channels, height, width});
  kiln::image_to_chw(*decoded, channels, height, width, *norm, x.data<float>());

  auto outputs = engine.create_context()->run({{input.name, x}});
  if (!outputs.is_ok()) return fail(outputs.status().to_string());
  const kiln::Tensor& y = outputs->at(engine.outputs()[0].name);
  if (y.dtype() != kiln::DataType::kFloat32 || y.numel() < 1)
    return fail("the first output is not a float32 score vector");
  std::printf("%s on %s (%s, %s)\n", model.c_str(), image.c_str(),
              kiln::device_name(options.device), kiln::precision_name(options.precision));
  for (const kiln::ClassProbability& c : kiln::top_classes(y, top))
    std::printf("  class %4lld  %.4f\n", static_cast<long long>(c.index), c.probability);
  return 0;
}
