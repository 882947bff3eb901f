#include "image.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

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
  if (channels != 1 && channels != 3)
    return unsupported("image inputs need a model input of 1 or 3 channels, not " +
                       std::to_string(channels));
  KILN_ASSIGN_OR_RETURN(ImageNormalization n,
                        image_normalization(metadata, channels, {}, {}, "the model's input"));
  p->channels = channels;
  p->mean = std::move(n.mean);
  p->std = std::move(n.std);
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
  Tensor t(DataType::kFloat32, {1, p.channels, p.height, p.width});
  image_to_chw(rgb, p.channels, p.height, p.width, {p.mean, p.std}, t.data<float>());
  return t;
}

TopK top_k(const Tensor& output, int k) {
  TopK r;
  for (const ClassProbability& c : top_classes(output, k, &r.softmax_applied))
    r.entries.push_back({c.index, c.probability});
  return r;
}

}  // namespace kiln::cli
