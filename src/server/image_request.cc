#include "server/image_request.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "kiln/images.h"
#include "server/model_config.h"

namespace kiln::server {

namespace {

std::vector<float> floats_of(const std::string& text) {
  std::vector<float> v;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) v.push_back(std::stof(item));
  return v;
}

}  // namespace

Result<Outputs> image_input(const inference::ModelConfig& c,
                            const std::map<std::string, std::string>& metadata,
                            std::string_view bytes) {
  if (c.input_size() != 1 || c.input(0).data_type() != inference::TYPE_FP32 ||
      c.input(0).dims_size() != 3 || (c.input(0).dims(0) != 1 && c.input(0).dims(0) != 3) ||
      c.input(0).dims(1) <= 0 || c.input(0).dims(2) <= 0)
    return invalid_argument("model '" + c.name() +
                            "' does not take one float32 [C,H,W] image "
                            "(C 1 or 3, H and W fixed), which the image endpoint makes");
  const int ch = static_cast<int>(c.input(0).dims(0));
  const int h = static_cast<int>(c.input(0).dims(1)), w = static_cast<int>(c.input(0).dims(2));
  std::vector<float> mean =
      ch == 3 ? std::vector<float>{0.485f, 0.456f, 0.406f} : std::vector<float>{0.f};
  std::vector<float> sd =
      ch == 3 ? std::vector<float>{0.229f, 0.224f, 0.225f} : std::vector<float>{1.f};
  try {
    if (metadata.count("kiln.mean")) mean = floats_of(metadata.at("kiln.mean"));
    if (metadata.count("kiln.std")) sd = floats_of(metadata.at("kiln.std"));
  } catch (const std::exception&) {
    return invalid_argument("model '" + c.name() + "': kiln.mean or kiln.std is not numbers");
  }
  KILN_ASSIGN_OR_RETURN(Image image, decode_image(bytes, "the image", w, h));
  std::vector<uint8_t> hwc(static_cast<size_t>(h) * w * ch);
  resize_into(image, ResizeMode::kStretch, h, w, ch, 0, hwc.data(), int64_t{w} * ch);
  Tensor x(DataType::kFloat32, {1, ch, h, w});
  float* px = x.data<float>();
  for (int k = 0; k < ch; ++k) {
    const float m = mean[std::min<size_t>(k, mean.size() - 1)];
    const float s = sd[std::min<size_t>(k, sd.size() - 1)];
    for (int i = 0; i < h * w; ++i) px[k * h * w + i] = (hwc[i * ch + k] / 255.f - m) / s;
  }
  return Outputs{{c.input(0).name(), std::move(x)}};
}

std::vector<ClassScore> top_classes(const Tensor& output, int k,
                                    const std::vector<std::string>& labels) {
  const int64_t n = output.rank() > 0 ? output.numel() / std::max<int64_t>(1, output.dim(0)) : 0;
  std::vector<double> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[i] = output.at_double(i);
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  const bool probabilities =
      std::all_of(p.begin(), p.end(), [](double v) { return v >= 0 && v <= 1; }) &&
      std::fabs(total - 1) < 1e-3;
  if (!probabilities && n > 0) {
    const double top = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double& v : p) sum += (v = std::exp(v - top));
    for (double& v : p) v /= sum;
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const size_t kk = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kk), order.end(),
                    [&](int64_t a, int64_t b) { return p[a] > p[b]; });
  std::vector<ClassScore> best;
  for (size_t i = 0; i < kk; ++i)
    best.push_back({order[i],
                    order[i] < static_cast<int64_t>(labels.size()) ? labels[order[i]] : "",
                    p[order[i]]});
  return best;
}

}  // namespace kiln::server
