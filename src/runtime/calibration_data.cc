// open_calibration_data (kiln/calibration.h): the samples of a .npy file or of a directory of
// images, in the form the engine's input takes.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/calibration.h"
#include "kiln/images.h"
#include "kiln/tensor_io.h"
#include "passes/pass.h"

namespace kiln {

namespace {

namespace fs = std::filesystem;

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]";
}

// The rows [at, at + n) of `t` (rows along its first dimension), as a view of it.
Tensor rows_of(const Tensor& t, int64_t at, int64_t n) {
  Shape s = t.shape();
  const size_t row = t.nbytes() / static_cast<size_t>(s[0]);
  s[0] = n;
  return Tensor::view_of(t, row * static_cast<size_t>(at), t.dtype(), s);
}

// A .npy of one input's samples.
class NpySource final : public CalibrationSource {
 public:
  NpySource(std::string path, std::string input, Tensor samples)
      : path_(std::move(path)), input_(std::move(input)), samples_(std::move(samples)) {}
  Result<std::map<std::string, Tensor>> next(int max_samples) override {
    const int64_t n = std::min<int64_t>(max_samples, samples_.shape()[0] - at_);
    if (n <= 0) return std::map<std::string, Tensor>{};
    std::map<std::string, Tensor> batch{{input_, rows_of(samples_, at_, n)}};
    at_ += n;
    return batch;
  }
  Status rewind() override {
    at_ = 0;
    return Status::ok();
  }
  std::string describe() const override { return path_; }

 private:
  std::string path_, input_;
  Tensor samples_;
  int64_t at_ = 0;
};

Result<std::unique_ptr<CalibrationSource>> open_npy(const std::string& path, const Engine& e) {
  if (e.inputs().size() != 1)
    return invalid_argument(
        "calibration samples '" + path + "': a .npy holds one input, the model has " +
        std::to_string(e.inputs().size()) + " (feed them through a CalibrationSource)");
  const TensorInfo& in = e.inputs()[0];
  KILN_ASSIGN_OR_RETURN(Tensor t, read_npy(path));
  const Shape& s = t.shape();
  const std::string what = "calibration samples '" + path + "' (" + dtype_name(t.dtype()) +
                           dims_text(std::vector<int64_t>(s.begin(), s.end())) + ")";
  if (t.dtype() != in.dtype)
    return invalid_argument(what + ": input '" + in.name + "' takes " + dtype_name(in.dtype));
  if (in.has_shape && s.size() != in.dims.size())
    return invalid_argument(what + ": input '" + in.name + "' is " + dims_text(in.dims) +
                            "; the file's first dimension counts the samples, the others are "
                            "the input's");
  if (s.empty() || s[0] < 1) return invalid_argument(what + ": no samples");
  for (size_t d = 1; d < s.size() && in.has_shape; ++d)
    if (in.dims[d] >= 0 && in.dims[d] != s[d])
      return invalid_argument(what + ": dimension " + std::to_string(d) + " is " +
                              std::to_string(s[d]) + ", input '" + in.name + "' " +
                              dims_text(in.dims) + " has " + std::to_string(in.dims[d]));
  return std::unique_ptr<CalibrationSource>(new NpySource(path, in.name, std::move(t)));
}

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// Where an image input's dimensions are, by the engine's input format.
struct ImageInput {
  std::string name;
  InputFormat format = InputFormat::kFloat32Nchw;
  int64_t channels = 3, height = 0, width = 0;
  ImageNormalization norm;  // float32 input only
};

// The images of a directory, decoded a batch at a time.
class ImageDirSource final : public CalibrationSource {
 public:
  ImageDirSource(std::string dir, std::vector<fs::path> files, ImageInput input,
                 std::unique_ptr<ImageDecoder> decoder)
      : dir_(std::move(dir)),
        files_(std::move(files)),
        in_(std::move(input)),
        decoder_(std::move(decoder)) {}

  Result<std::map<std::string, Tensor>> next(int max_samples) override {
    while (at_ < files_.size()) {
      std::vector<std::string> bytes;
      while (at_ < files_.size() && static_cast<int>(bytes.size()) < max_samples) {
        std::ifstream f(files_[at_++], std::ios::binary);
        std::ostringstream s;
        s << f.rdbuf();
        if (f.fail() && s.str().empty()) {
          skip();
          continue;
        }
        bytes.push_back(s.str());
      }
      if (bytes.empty()) continue;
      std::vector<std::string_view> views(bytes.begin(), bytes.end());
      KILN_ASSIGN_OR_RETURN(ImageBatch batch, decoder_->decode(views));
      std::vector<int64_t> ok;
      for (size_t i = 0; i < batch.status.size(); ++i) {
        if (batch.status[i].is_ok())
          ok.push_back(static_cast<int64_t>(i));
        else
          skip();
      }
      if (!ok.empty()) return std::map<std::string, Tensor>{{in_.name, to_input(batch.pixels, ok)}};
    }
    counted_ = true;  // the skips are counted once, in the first pass
    return std::map<std::string, Tensor>{};
  }
  Status rewind() override {
    at_ = 0;
    return Status::ok();
  }
  int64_t skipped() const override { return skipped_; }
  std::string describe() const override {
    return "the " + std::to_string(files_.size()) + " images of " + dir_;
  }

 private:
  void skip() {
    if (!counted_) ++skipped_;
  }
  // The decoded rows `ok` of `pixels` (uint8 [n, H, W, C]) as the input takes them.
  Tensor to_input(const Tensor& pixels, const std::vector<int64_t>& ok) const {
    const int64_t n = static_cast<int64_t>(ok.size());
    const int64_t c = in_.channels, h = in_.height, w = in_.width, hw = h * w;
    const uint8_t* src = pixels.data<uint8_t>();
    if (in_.format == InputFormat::kUint8Nhwc) {
      Tensor t(DataType::kUInt8, {n, h, w, c});
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(t.data<uint8_t>() + i * hw * c, src + ok[i] * hw * c, hw * c);
      return t;
    }
    const bool u8 = in_.format == InputFormat::kUint8Nchw;
    Tensor t(u8 ? DataType::kUInt8 : DataType::kFloat32, {n, c, h, w});
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < c; ++k) {
        const uint8_t* from = src + ok[i] * hw * c + k;
        const int64_t to = (i * c + k) * hw;
        if (u8) {
          for (int64_t p = 0; p < hw; ++p) t.data<uint8_t>()[to + p] = from[p * c];
          continue;
        }
        const float scale = 1.f / (255.f * in_.norm.std[k]);
        const float bias = -in_.norm.mean[k] / in_.norm.std[k];
        for (int64_t p = 0; p < hw; ++p)
          t.data<float>()[to + p] = static_cast<float>(from[p * c]) * scale + bias;
      }
    return t;
  }

  std::string dir_;
  std::vector<fs::path> files_;
  ImageInput in_;
  std::unique_ptr<ImageDecoder> decoder_;
  size_t at_ = 0;
  int64_t skipped_ = 0;
  bool counted_ = false;
};

// The engine's one image input: its name, format and sizes.
Result<ImageInput> image_input(const Engine& e, const std::string& dir) {
  const std::string what = "calibration images '" + dir + "'";
  if (e.inputs().size() != 1 || !e.inputs()[0].has_shape || e.inputs()[0].dims.size() != 4)
    return invalid_argument(what +
                            ": images calibrate a model of one image input "
                            "(rank 4); give the samples as a .npy, or through a "
                            "CalibrationSource");
  const TensorInfo& in = e.inputs()[0];
  ImageInput r;
  r.name = in.name;
  r.format = e.options().input_format;
  const bool nhwc = r.format == InputFormat::kUint8Nhwc;
  r.channels = in.dims[nhwc ? 3 : 1];
  r.height = in.dims[nhwc ? 1 : 2];
  r.width = in.dims[nhwc ? 2 : 3];
  if (r.channels != 1 && r.channels != 3)
    return invalid_argument(what + ": input '" + in.name + "' " + dims_text(in.dims) +
                            " needs 1 or 3 channels");
  if (r.height <= 0 || r.width <= 0)
    return invalid_argument(what + ": input '" + in.name + "' " + dims_text(in.dims) +
                            " has no fixed height and width to resize the images to");
  if (r.format == InputFormat::kFloat32Nchw) {
    if (in.dtype != DataType::kFloat32)
      return invalid_argument(what + ": input '" + in.name + "' takes " + dtype_name(in.dtype) +
                              ", not images");
    KILN_ASSIGN_OR_RETURN(r.norm,
                          image_normalization(e.metadata(), r.channels, e.options().input_mean,
                                              e.options().input_std, in.name));
  }
  return r;
}

Result<std::unique_ptr<CalibrationSource>> open_images(const std::string& dir, const Engine& e) {
  KILN_ASSIGN_OR_RETURN(ImageInput input, image_input(e, dir));
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && is_image_name(it->path())) files.push_back(it->path());
  if (ec) return not_found("calibration images '" + dir + "': " + ec.message());
  if (files.empty())
    return invalid_argument("calibration images '" + dir + "': no .jpg, .jpeg or .png file in it");
  std::sort(files.begin(), files.end());
  ImageBatchOptions o;
  o.height = static_cast<int>(input.height);
  o.width = static_cast<int>(input.width);
  o.channels = static_cast<int>(input.channels);
  o.resize =
      e.options().calibration_resize == "letterbox" ? ResizeMode::kLetterbox : ResizeMode::kStretch;
  KILN_ASSIGN_OR_RETURN(auto decoder, ImageDecoder::create(o));
  return std::unique_ptr<CalibrationSource>(
      new ImageDirSource(dir, std::move(files), std::move(input), std::move(decoder)));
}

}  // namespace

Result<std::unique_ptr<CalibrationSource>> open_calibration_data(const std::string& path,
                                                                 const Engine& engine) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return open_images(path, engine);
  if (!fs::exists(path, ec)) return not_found("calibration samples '" + path + "': no such file");
  if (fs::path(path).extension() != ".npy")
    return invalid_argument("calibration samples '" + path +
                            "': give a directory of images or a .npy file");
  return open_npy(path, engine);
}

}  // namespace kiln
