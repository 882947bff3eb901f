// normalize_image_inputs: the model's image inputs (rank-4 float32 graph inputs, [N, C, H, W])
// are given as 8-bit pixels instead, NCHW or NHWC (EngineOptions::input_format), and normalized
// inside the graph, on the engine's device:
//
//   x_u8 [N,H,W,C] or [N,C,H,W] → NormalizeImage(scale 1 / (255·std), bias −mean / std)
//
// which is (x / 255 − mean) / std per channel, in one pass (ops/normalize_image.h). The input
// keeps its name; its dtype becomes uint8 and, for NHWC, its dims [N, H, W, C].
#include <sstream>

#include "passes/pass.h"

namespace kiln {

namespace {

// A per-channel vector from "a,b,c" (the model's metadata); an error naming `key` where an
// item is not a number.
Result<std::vector<float>> parse_floats(const std::string& s, const char* key,
                                        const std::string& input) {
  std::vector<float> r;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    try {
      r.push_back(std::stof(item, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 ||
        (used != item.size() && item.find_first_not_of(" ", used) != std::string::npos))
      return invalid_argument("input '" + input + "': the model's metadata " + key + "='" + s +
                              "' is not a list of numbers");
  }
  return r;
}

// The mean or std of `channels` channels: the option's, else the metadata's, else `fallback`.
Result<std::vector<float>> channel_values(const std::map<std::string, std::string>& metadata,
                                          const std::vector<float>& option, const char* key,
                                          int64_t channels, const std::vector<float>& imagenet,
                                          float plain, const std::string& input) {
  std::vector<float> v = option;
  if (v.empty()) {
    auto it = metadata.find(key);
    if (it != metadata.end()) {
      KILN_ASSIGN_OR_RETURN(v, parse_floats(it->second, key, input));
    }
  }
  if (v.empty()) v = channels == 3 ? imagenet : std::vector<float>(channels, plain);
  if (v.size() == 1 && channels > 1) v.assign(channels, v[0]);
  if (static_cast<int64_t>(v.size()) != channels)
    return invalid_argument("input '" + input + "' has " + std::to_string(channels) +
                            " channels, but " + std::to_string(v.size()) + " values of " +
                            (std::string(key) == "kiln.mean" ? "mean" : "std") + " were given");
  return v;
}

}  // namespace

Result<ImageNormalization> image_normalization(const std::map<std::string, std::string>& metadata,
                                               int64_t channels, const std::vector<float>& mean,
                                               const std::vector<float>& stdev,
                                               const std::string& input) {
  ImageNormalization n;
  KILN_ASSIGN_OR_RETURN(n.mean, channel_values(metadata, mean, "kiln.mean", channels,
                                               {0.485f, 0.456f, 0.406f}, 0.f, input));
  KILN_ASSIGN_OR_RETURN(n.std, channel_values(metadata, stdev, "kiln.std", channels,
                                              {0.229f, 0.224f, 0.225f}, 1.f, input));
  for (int64_t k = 0; k < channels; ++k)
    if (!(n.std[k] > 0.f))
      return invalid_argument("input '" + input + "': std of channel " + std::to_string(k) +
                              " is " + std::to_string(n.std[k]) + "; it must be positive");
  return n;
}

Result<bool> normalize_image_inputs(Graph& g, InputFormat format, const std::vector<float>& mean,
                                    const std::vector<float>& stdev) {
  if (format == InputFormat::kFloat32Nchw) return false;
  bool changed = false;
  const std::vector<Value*> inputs = g.inputs();
  for (Value* x : inputs) {
    if (x->dtype != DataType::kFloat32 || !x->has_shape || x->dims.size() != 4) continue;
    if (!x->dims[1].known())
      return invalid_argument("input '" + x->name + "': --input-format " +
                              input_format_name(format) + " needs a known channel count");
    const int64_t c = x->dims[1].value;
    KILN_ASSIGN_OR_RETURN(ImageNormalization norm,
                          image_normalization(g.metadata, c, mean, stdev, x->name));
    std::vector<float> scale(c), bias(c);
    for (int64_t k = 0; k < c; ++k) {
      scale[k] = 1.f / (255.f * norm.std[k]);
      bias[k] = -norm.mean[k] / norm.std[k];
    }
    // The normalized float32 NCHW tensor the graph read before, under a new name.
    Value* normalized = g.add_value(x->name + "_normalized");
    normalized->dtype = DataType::kFloat32;
    normalized->has_shape = true;
    normalized->dims = x->dims;
    g.replace_all_uses(x, normalized);
    const std::vector<Dim> nchw = x->dims;
    x->dtype = DataType::kUInt8;
    const bool nhwc = format == InputFormat::kUint8Nhwc;
    if (nhwc) x->dims = {nchw[0], nchw[2], nchw[3], nchw[1]};
    Attributes attrs;
    attrs.set("channels_last", int64_t{nhwc});
    attrs.set("scale", scale);
    attrs.set("bias", bias);
    g.add_node(OpKind::NormalizeImage, x->name + "/normalize", {x}, {normalized}, attrs);
    changed = true;
  }
  if (changed) KILN_RETURN_IF_ERROR(g.topo_sort());
  return changed;
}

}  // namespace kiln
