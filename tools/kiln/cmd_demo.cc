// `kiln demo`: classifies the 10,000 Fashion-MNIST test images with kiln's small demo
// model and reports accuracy, throughput and per-class accuracy.
//
// Input convention (shared with scripts/models/train_fashion_mnist.py): model input
// "input" [batch,1,28,28] float32, pixels scaled to [0,1] then (x - mean) / std with mean
// and std from the model's metadata_props kiln.mean / kiln.std (0.2860 / 0.3530 for the
// shipped model), 0 / 1 when absent; output [batch,10] logits. Class names come from
// kiln.labels when it lists 10, else the dataset's documented names.
#include <spdlog/spdlog.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

#include "cli_common.h"

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;

const char* const kClassNames[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                     "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
constexpr int kSide = 28;

struct DemoOptions {
  std::string model;
  std::string data = "/usr/share/datasets/fashion-mnist";
  int64_t batch = 100;
  bool batch_given = false;
  int64_t limit = 0;               // 0: all images
  std::optional<float> mean, std;  // override the model's metadata
};

// A gzip-compressed IDX file of unsigned bytes: dims and the data that follows them.
struct Idx {
  std::vector<int64_t> dims;
  std::string data;
};

Result<Idx> read_idx_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    return not_found("cannot open '" + path + "' (install dataset-fashion-mnist or pass --data)");
  std::string bytes;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) bytes.append(buf, n);
  int err = 0;
  std::string zerr = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0) return invalid_argument(path + ": gzip error: " + zerr);
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08)
    return invalid_argument(path + ": not an unsigned-byte IDX file");
  Idx idx;
  size_t ndim = static_cast<unsigned char>(bytes[3]);
  if (bytes.size() < 4 + 4 * ndim) return invalid_argument(path + ": truncated IDX header");
  uint64_t count = 1;
  for (size_t i = 0; i < ndim; ++i) {
    uint32_t d = 0;
    for (int b = 0; b < 4; ++b) d = (d << 8) | static_cast<unsigned char>(bytes[4 + 4 * i + b]);
    idx.dims.push_back(d);
    count *= d;
  }
  if (bytes.size() - (4 + 4 * ndim) != count)
    return invalid_argument(path + ": IDX data has " + std::to_string(bytes.size() - 4 - 4 * ndim) +
                            " bytes, its header promises " + std::to_string(count));
  idx.data = bytes.substr(4 + 4 * ndim);
  return idx;
}

Result<std::string> find_model(const std::string& given) {
  if (!given.empty()) return given;
  std::vector<fs::path> candidates;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / "models" / "fashion_mnist.onnx");
    candidates.push_back(exe.parent_path().parent_path() / "models" / "fashion_mnist.onnx");
  }
  candidates.push_back(fs::path(KILN_SOURCE_DIR) / "models" / "fashion_mnist.onnx");
  std::string tried;
  for (const fs::path& p : candidates) {
    if (fs::exists(p, ec)) return p.lexically_normal().string();
    tried += (tried.empty() ? "" : ", ") + p.lexically_normal().string();
  }
  return not_found("no demo model found (looked at " + tried +
                   "); train it with "
                   "scripts/models/train_fashion_mnist.py or pass --model");
}

float metadata_float(const Engine& e, const std::string& key, float def) {
  auto it = e.metadata().find(key);
  if (it == e.metadata().end()) return def;
  char* end = nullptr;
  float v = std::strtof(it->second.c_str(), &end);
  if (end == it->second.c_str()) {
    spdlog::warn("model metadata {}='{}' is not a number; using {}", key, it->second, def);
    return def;
  }
  return v;
}

std::vector<std::string> class_names(const Engine& e) {
  std::vector<std::string> names(kClassNames, kClassNames + 10);
  if (auto it = e.metadata().find("kiln.labels"); it != e.metadata().end()) {
    std::vector<std::string> from_model;
    std::istringstream ss(it->second);
    for (std::string item; std::getline(ss, item, ',');) from_model.push_back(item);
    if (from_model.size() == 10) names = from_model;
  }
  return names;
}

int run(const DemoOptions& o, const GlobalOptions& g) {
  auto model = find_model(o.model);
  if (!model.is_ok()) return fail(model.status());
  auto engine_or = load_engine(*model, g);
  if (!engine_or.is_ok()) return fail(engine_or.status());
  const Engine& e = **engine_or;

  if (e.inputs().size() != 1 || e.outputs().empty())
    return fail(invalid_argument(*model + ": the demo needs a model with one input, it has " +
                                 std::to_string(e.inputs().size())));
  const TensorInfo& in = e.inputs()[0];
  bool shape_ok = in.dtype == DataType::kFloat32 && (!in.has_shape || in.dims.size() == 4);
  for (size_t d = 1; shape_ok && in.has_shape && d < 4; ++d)
    shape_ok = in.dims[d] < 0 || in.dims[d] == (d == 1 ? 1 : kSide);
  if (!shape_ok)
    return fail(invalid_argument(*model + ": the demo needs a float32 input [batch,1,28,28], '" +
                                 in.name + "' is " + dtype_name(in.dtype) + " " +
                                 declared_shape(in)));
  int64_t batch = o.batch;
  bool fixed_batch = in.has_shape && in.dims[0] >= 0;
  if (fixed_batch) {
    if (o.batch_given && o.batch != in.dims[0])
      return usage_error("the model has a fixed batch of " + std::to_string(in.dims[0]) +
                         "; --batch " + std::to_string(o.batch) + " cannot be used");
    batch = in.dims[0];
  }

  auto images = read_idx_gz((fs::path(o.data) / "t10k-images-idx3-ubyte.gz").string());
  if (!images.is_ok()) return fail(images.status());
  auto labels = read_idx_gz((fs::path(o.data) / "t10k-labels-idx1-ubyte.gz").string());
  if (!labels.is_ok()) return fail(labels.status());
  if (images->dims.size() != 3 || images->dims[1] != kSide || images->dims[2] != kSide ||
      labels->dims.size() != 1 || labels->dims[0] != images->dims[0])
    return fail(invalid_argument(o.data + ": expected N×28×28 images and N labels"));
  int64_t total = images->dims[0];
  if (o.limit > 0) total = std::min(total, o.limit);

  const float mean = o.mean ? *o.mean : metadata_float(e, "kiln.mean", 0.f);
  const float std = o.std ? *o.std : metadata_float(e, "kiln.std", 1.f);
  if (std == 0.f) return fail(invalid_argument("model metadata kiln.std is 0"));
  spdlog::info("normalization: (x/255 - {}) / {}", mean, std);
  const std::vector<std::string> names = class_names(e);

  auto ctx = e.create_context();
  const int64_t pixels = kSide * kSide;
  int64_t correct = 0;
  int64_t class_total[10] = {}, class_correct[10] = {};
  double run_seconds = 0;
  double wall0 = now_seconds();
  for (int64_t first = 0; first < total; first += batch) {
    int64_t n = std::min(batch, total - first);
    // A fixed-batch model gets its last batch padded with zeros; padded rows are ignored.
    Tensor x = Tensor::zeros(DataType::kFloat32, {fixed_batch ? batch : n, 1, kSide, kSide});
    const auto* src = reinterpret_cast<const unsigned char*>(images->data.data()) + first * pixels;
    float* dst = x.data<float>();
    for (int64_t i = 0; i < n * pixels; ++i) dst[i] = (src[i] / 255.f - mean) / std;
    double t0 = now_seconds();
    auto out = ctx->run({{in.name, x}});
    run_seconds += now_seconds() - t0;
    if (!out.is_ok()) return fail(out.status());
    const Tensor& logits = out->at(e.outputs()[0].name);
    if (logits.numel() != x.dim(0) * 10 || !dtype_is_float(logits.dtype()))
      return fail(invalid_argument("the demo needs a float [batch,10] output, '" +
                                   e.outputs()[0].name + "' is " + dtype_name(logits.dtype()) +
                                   " " + shape_str(logits.shape())));
    for (int64_t i = 0; i < n; ++i) {
      int best = 0;
      for (int c = 1; c < 10; ++c)
        if (logits.at_double(i * 10 + c) > logits.at_double(i * 10 + best)) best = c;
      int label = static_cast<unsigned char>(labels->data[first + i]);
      if (label > 9) return fail(invalid_argument("label " + std::to_string(label) + " > 9"));
      ++class_total[label];
      if (best == label) {
        ++correct;
        ++class_correct[label];
      }
    }
  }
  double wall = now_seconds() - wall0;

  std::printf("Fashion-MNIST test set: %lld images, model %s\n", static_cast<long long>(total),
              model->c_str());
  std::printf("device %s, %d threads, batch %lld\n", g.device_name(), resolved_threads(g),
              static_cast<long long>(batch));
  std::printf("accuracy    %.2f%% (%lld/%lld)\n", total ? 100.0 * correct / total : 0.0,
              static_cast<long long>(correct), static_cast<long long>(total));
  std::printf("throughput  %.1f images/s (%.2f s in the engine, %.2f s in all)\n",
              run_seconds > 0 ? total / run_seconds : 0.0, run_seconds, wall);
  std::printf("per class\n");
  for (int c = 0; c < 10; ++c)
    std::printf("  %-12s %6.2f%%  (%lld/%lld)\n", names[c].c_str(),
                class_total[c] ? 100.0 * class_correct[c] / class_total[c] : 0.0,
                static_cast<long long>(class_correct[c]), static_cast<long long>(class_total[c]));
  return kExitOk;
}

}  // namespace

Command add_demo_command(CLI::App& root, const GlobalOptions& global) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* app = root.add_subcommand("demo",
                                      "classify the Fashion-MNIST test set with the "
                                      "demo model");
  app->add_option("--model", o->model, "model to use instead of models/fashion_mnist.onnx");
  app->add_option("--data", o->data, "folder with t10k-{images-idx3,labels-idx1}-ubyte.gz")
      ->capture_default_str();
  CLI::Option* b = app->add_option("-b,--batch", o->batch, "images per run")
                       ->check(CLI::PositiveNumber)
                       ->capture_default_str();
  app->add_option("--limit", o->limit, "classify only the first N images")
      ->check(CLI::PositiveNumber);
  app->add_option("--mean", o->mean,
                  "pixel mean on the [0,1] scale (default: model metadata "
                  "kiln.mean, else 0)");
  app->add_option("--std", o->std, "pixel std (default: model metadata kiln.std, else 1)");
  return {app, [o, b, &global] {
            o->batch_given = b->count() > 0;
            return run(*o, global);
          }};
}

}  // namespace kiln::cli
