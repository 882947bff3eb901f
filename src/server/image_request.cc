#include "server/image_request.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "kiln/images.h"

namespace kiln::server {

namespace {

std::vector<float> floats_of(const std::string& text) {
  std::vector<float> v;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) v.push_back(std::stof(item));
  return v;
}

}  // namespace

Result<ImageLayout> image_layout(const std::string& model, const TensorInfo& input,
                                 const std::map<std::string, std::string>& metadata) {
  const std::vector<int64_t>& d = input.dims;
  ImageLayout l;
  l.input = input.name;
  const auto fixed = [](int64_t v) { return v > 0 && v <= 16384; };
  if (input.dtype == DataType::kUInt8 && d.size() == 4 && (d[3] == 1 || d[3] == 3) && fixed(d[1]) &&
      fixed(d[2])) {
    l.uint8_nhwc = true;
    l.height = static_cast<int>(d[1]), l.width = static_cast<int>(d[2]);
    l.channels = static_cast<int>(d[3]);
    return l;
  }
  if (input.dtype != DataType::kFloat32 || d.size() != 4 || (d[1] != 1 && d[1] != 3) ||
      !fixed(d[2]) || !fixed(d[3]))
    return invalid_argument("model '" + model + "' input '" + input.name + "' is " +
                            dtype_name(input.dtype) + " " + shape_str(d) +
                            ": images go to float32 [N,C,H,W] or uint8 [N,H,W,C] inputs (C 1 or "
                            "3, H and W fixed)");
  l.channels = static_cast<int>(d[1]);
  l.height = static_cast<int>(d[2]), l.width = static_cast<int>(d[3]);
  l.mean = l.channels == 3 ? std::vector<float>{0.485f, 0.456f, 0.406f} : std::vector<float>{0.f};
  l.sd = l.channels == 3 ? std::vector<float>{0.229f, 0.224f, 0.225f} : std::vector<float>{1.f};
  try {
    if (metadata.count("kiln.mean")) l.mean = floats_of(metadata.at("kiln.mean"));
    if (metadata.count("kiln.std")) l.sd = floats_of(metadata.at("kiln.std"));
  } catch (const std::exception&) {
    return invalid_argument("model '" + model + "': kiln.mean or kiln.std is not numbers");
  }
  if (l.mean.empty() || l.sd.empty())
    return invalid_argument("model '" + model + "': kiln.mean or kiln.std is empty");
  return l;
}

Result<Tensor> decode_images(const ImageLayout& l, const std::vector<std::string_view>& images,
                             const std::string& where) {
  const int ch = l.channels, h = l.height, w = l.width;
  const auto n = static_cast<int64_t>(images.size());
  Tensor x = l.uint8_nhwc ? Tensor(DataType::kUInt8, {n, h, w, ch})
                          : Tensor(DataType::kFloat32, {n, ch, h, w});
  std::vector<uint8_t> hwc(static_cast<size_t>(h) * w * ch);
  for (int64_t r = 0; r < n; ++r) {
    const std::string what =
        n == 1 ? where : where + " image " + std::to_string(r) + " of " + std::to_string(n);
    KILN_ASSIGN_OR_RETURN(Image image, decode_image(images[static_cast<size_t>(r)], what, w, h));
    if (l.uint8_nhwc) {
      resize_into(image, ResizeMode::kStretch, h, w, ch, 0, x.data<uint8_t>() + r * h * w * ch,
                  int64_t{w} * ch);
      continue;
    }
    resize_into(image, ResizeMode::kStretch, h, w, ch, 0, hwc.data(), int64_t{w} * ch);
    float* px = x.data<float>() + r * ch * h * w;
    for (int k = 0; k < ch; ++k) {
      const float m = l.mean[std::min<size_t>(k, l.mean.size() - 1)];
      const float s = l.sd[std::min<size_t>(k, l.sd.size() - 1)];
      for (int i = 0; i < h * w; ++i) px[k * h * w + i] = (hwc[i * ch + k] / 255.f - m) / s;
    }
  }
  return x;
}

Result<Outputs> image_input(const ImageLayout& layout, std::string_view bytes) {
  KILN_ASSIGN_OR_RETURN(Tensor x, decode_images(layout, {bytes}, "the image"));
  return Outputs{{layout.input, std::move(x)}};
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
