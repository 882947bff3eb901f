#include "server/image_request.h"

#include "kiln/images.h"

namespace kiln::server {

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
  auto n = image_normalization(metadata, l.channels, {}, {}, input.name);
  if (!n.is_ok()) return n.status().with_context("model '" + model + "'");
  l.mean = std::move(n->mean);
  l.sd = std::move(n->std);
  return l;
}

Result<Tensor> decode_images(const ImageLayout& l, const std::vector<std::string_view>& images,
                             const std::string& where) {
  const int ch = l.channels, h = l.height, w = l.width;
  const auto n = static_cast<int64_t>(images.size());
  Tensor x = l.uint8_nhwc ? Tensor(DataType::kUInt8, {n, h, w, ch})
                          : Tensor(DataType::kFloat32, {n, ch, h, w});
  for (int64_t r = 0; r < n; ++r) {
    const std::string what =
        n == 1 ? where : where + " image " + std::to_string(r) + " of " + std::to_string(n);
    KILN_ASSIGN_OR_RETURN(Image image, decode_image(images[static_cast<size_t>(r)], what, w, h));
    if (l.uint8_nhwc) {
      resize_into(image, ResizeMode::kStretch, h, w, ch, 0, x.data<uint8_t>() + r * h * w * ch,
                  int64_t{w} * ch);
      continue;
    }
    image_to_chw(image, ch, h, w, {l.mean, l.sd}, x.data<float>() + r * ch * h * w);
  }
  return x;
}

Result<Outputs> image_input(const ImageLayout& layout, std::string_view bytes) {
  KILN_ASSIGN_OR_RETURN(Tensor x, decode_images(layout, {bytes}, "the image"));
  return Outputs{{layout.input, std::move(x)}};
}

std::vector<ClassScore> top_classes(const Tensor& output, int k,
                                    const std::vector<std::string>& labels) {
  std::vector<ClassScore> best;
  for (const ClassProbability& c : kiln::top_classes(output, k))
    best.push_back({c.index, c.index < static_cast<int64_t>(labels.size()) ? labels[c.index] : "",
                    c.probability});
  return best;
}

}  // namespace kiln::server
