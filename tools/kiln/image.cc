#include "image.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

// stb_image_resize's implementation lives in this one translation unit (stb_image's, for PNG
// decoding, in the library: src/image/decode.cc); its code is not ours to lint.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb_image_resize.h>
#pragma GCC diagnostic pop

namespace kiln::cli {

bool looks_like_image(const std::string& bytes) {
  return sniff_image(bytes) != ImageFormat::kUnknown;
}

Status check_image_name(const std::string& path, const std::string& bytes) {
  std::string ext = path.substr(std::min(path.size(), path.find_last_of('.')));
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool says_png = ext == ".png", says_jpeg = ext == ".jpg" || ext == ".jpeg";
  const ImageFormat f = sniff_image(bytes);
  if ((says_png && f != ImageFormat::kPng) || (says_jpeg && f != ImageFormat::kJpeg)) {
    std::string head;
    for (size_t i = 0; i < std::min<size_t>(bytes.size(), 8); ++i) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(bytes[i]));
      head += (i ? " " : "") + std::string(hex);
    }
    return invalid_argument(
        path + ": not a " + (says_png ? "PNG" : "JPEG") + " image: it does not start with the " +
        (says_png ? "PNG signature (89 50 4e 47 0d 0a 1a 0a)" : "JPEG start marker (ff d8 ff)") +
        (bytes.empty() ? std::string(" (the file is empty)") : "; its first bytes are " + head));
  }
  return Status::ok();
}

Status default_normalization(int channels, const std::map<std::string, std::string>& metadata,
                             Preprocess* p) {
  p->channels = channels;
  if (channels == 3) {
    p->mean = {0.485f, 0.456f, 0.406f};
    p->std = {0.229f, 0.224f, 0.225f};
  } else {
    p->mean = {0.f};
    p->std = {1.f};
  }
  // A model that records how it was trained wins over the generic defaults.
  for (auto [key, dst] : {std::pair{"kiln.mean", &p->mean}, std::pair{"kiln.std", &p->std}}) {
    auto it = metadata.find(key);
    if (it == metadata.end()) continue;
    std::vector<float> v;
    size_t start = 0;
    const std::string& s = it->second;
    while (start <= s.size()) {
      size_t end = std::min(s.find(',', start), s.size());
      char* stop = nullptr;
      std::string item = s.substr(start, end - start);
      float f = std::strtof(item.c_str(), &stop);
      if (item.empty() || *stop != '\0')
        return invalid_argument(std::string("model metadata ") + key + "='" + s +
                                "' is not a number list");
      v.push_back(f);
      start = end + 1;
    }
    *dst = v;
  }
  return Status::ok();
}

Result<Tensor> image_to_tensor(const Image& rgb, const Preprocess& p) {
  if (p.channels != 1 && p.channels != 3)
    return unsupported("image inputs need a model input of 1 or 3 channels, not " +
                       std::to_string(p.channels));
  if (p.height <= 0 || p.width <= 0 || int64_t{p.height} * p.width > (int64_t{1} << 28))
    return invalid_argument("bad image size " + std::to_string(p.height) + "x" +
                            std::to_string(p.width));
  for (const auto* v : {&p.mean, &p.std})
    if (v->size() != 1 && v->size() != static_cast<size_t>(p.channels))
      return invalid_argument("mean/std need 1 or " + std::to_string(p.channels) + " values, got " +
                              std::to_string(v->size()));
  for (float s : p.std)
    if (s == 0.f) return invalid_argument("std must not be 0");

  const uint8_t* src = rgb.pixels.data();
  std::vector<uint8_t> resized;
  if (rgb.width != p.width || rgb.height != p.height) {
    resized.resize(static_cast<size_t>(p.width) * p.height * 3);
    if (!stbir_resize_uint8_generic(rgb.pixels.data(), rgb.width, rgb.height, 0, resized.data(),
                                    p.width, p.height, 0, 3, STBIR_ALPHA_CHANNEL_NONE, 0,
                                    STBIR_EDGE_CLAMP, STBIR_FILTER_TRIANGLE,
                                    STBIR_COLORSPACE_LINEAR, nullptr))
      return internal_error("image resize failed");
    src = resized.data();
  }

  Tensor t(DataType::kFloat32, {1, p.channels, p.height, p.width});
  float* dst = t.data<float>();
  const int64_t plane = int64_t{p.height} * p.width;
  for (int c = 0; c < p.channels; ++c) {
    float mean = p.mean.size() == 1 ? p.mean[0] : p.mean[c];
    float inv_std = 1.f / (p.std.size() == 1 ? p.std[0] : p.std[c]);
    for (int64_t i = 0; i < plane; ++i) {
      const uint8_t* px = src + 3 * i;
      // ITU-R 601 luma, as PIL's "L" conversion.
      float v = p.channels == 3 ? px[c] : 0.299f * px[0] + 0.587f * px[1] + 0.114f * px[2];
      dst[c * plane + i] = (v / 255.f - mean) * inv_std;
    }
  }
  return t;
}

TopK top_k(const Tensor& output, int k) {
  TopK r;
  if (!output.defined() || dtype_size(output.dtype()) == 0 || output.numel() == 0) return r;
  int64_t n =
      output.rank() >= 2 ? output.numel() / std::max<int64_t>(output.dim(0), 1) : output.numel();
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = output.at_double(i);
  double sum = 0;
  bool in_unit = true;
  for (double x : v) {
    sum += x;
    in_unit &= x >= 0 && x <= 1;
  }
  if (!(in_unit && std::fabs(sum - 1) < 1e-3)) {
    double mx = *std::max_element(v.begin(), v.end());
    double z = 0;
    for (double& x : v) z += (x = std::exp(x - mx));
    for (double& x : v) x /= z;
    r.softmax_applied = true;
  }
  std::vector<int64_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  int64_t kk = std::min<int64_t>(std::max(k, 0), n);
  std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(),
                    [&](int64_t a, int64_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
  for (int64_t i = 0; i < kk; ++i) r.entries.push_back({idx[i], v[idx[i]]});
  return r;
}

}  // namespace kiln::cli
