// Random inputs of the right shapes for `kiln bench` and `kiln build`.
#include <cstring>
#include <random>

#include "cli_common.h"

namespace kiln::cli {

namespace {

// Uniform random values valid for the dtype; integers stay small and non-negative so that
// index-like inputs are in range for typical models.
Status fill_random(Tensor& t, std::mt19937& gen) {
  std::uniform_real_distribution<float> real(-1.f, 1.f);
  std::uniform_int_distribution<int> small(0, 7);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DataType::kFloat32: t.data<float>()[i] = real(gen); break;
      case DataType::kFloat64: t.data<double>()[i] = real(gen); break;
      case DataType::kFloat16:  // random halves in [1, 2): exponent 15, random mantissa
      case DataType::kBFloat16:
        t.data<uint16_t>()[i] = static_cast<uint16_t>(
            t.dtype() == DataType::kFloat16 ? 0x3C00 | (gen() & 0x3FF) : 0x3F80 | (gen() & 0x7F));
        break;
      case DataType::kBool: t.data<uint8_t>()[i] = gen() & 1; break;
      case DataType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(gen()); break;
      case DataType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(small(gen)); break;
      case DataType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(small(gen)); break;
      case DataType::kUInt16: t.data<uint16_t>()[i] = static_cast<uint16_t>(small(gen)); break;
      case DataType::kInt32: t.data<int32_t>()[i] = small(gen); break;
      case DataType::kUInt32: t.data<uint32_t>()[i] = small(gen); break;
      case DataType::kInt64: t.data<int64_t>()[i] = small(gen); break;
      case DataType::kUInt64: t.data<uint64_t>()[i] = small(gen); break;
      default: return unsupported(std::string("cannot make random ") + dtype_name(t.dtype()));
    }
  }
  return Status::ok();
}

// The concrete shape of each input: --shape overrides, else the declared shape with a
// symbolic dim 0 set to the batch. Errors are usage errors.
Result<std::map<std::string, Shape>> input_shapes(const Engine& e, int64_t batch,
                                                  const std::vector<std::string>& specs) {
  std::map<std::string, Shape> given;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    if (name.empty()) {
      if (e.inputs().size() != 1)
        return invalid_argument("--shape " + spec + ": name the input (--shape NAME=DIMS)");
      name = e.inputs()[0].name;
    }
    KILN_ASSIGN_OR_RETURN(given[name],
                          parse_dims(spec.substr(eq == std::string::npos ? 0 : eq + 1)));
  }
  std::map<std::string, Shape> shapes;
  for (const TensorInfo& info : e.inputs()) {
    if (auto it = given.find(info.name); it != given.end()) {
      shapes[info.name] = it->second;
      given.erase(it);
      continue;
    }
    if (!info.has_shape)
      return invalid_argument("input '" + info.name +
                              "' has no declared shape; give one with "
                              "--shape " +
                              info.name + "=1x3x224x224");
    Shape s;
    for (size_t d = 0; d < info.dims.size(); ++d) {
      if (d == 0 && info.dims[0] >= 0 && batch > 0 && batch != info.dims[0])
        return invalid_argument("input '" + info.name + "' has a fixed batch of " +
                                std::to_string(info.dims[0]) + "; --batch " +
                                std::to_string(batch) + " cannot be used");
      if (info.dims[d] >= 0) {
        s.push_back(info.dims[d]);
      } else if (d == 0) {
        s.push_back(batch > 0 ? batch : 1);
      } else {
        return invalid_argument(
            "input '" + info.name + "' " + declared_shape(info) + " has symbolic dimension " +
            std::to_string(d) +
            (info.dim_params[d].empty() ? "" : " ('" + info.dim_params[d] + "')") +
            "; give the shape with --shape " + info.name + "=1x3x224x224");
      }
    }
    shapes[info.name] = s;
  }
  if (!given.empty())
    return invalid_argument("--shape names unknown input '" + given.begin()->first + "'");
  return shapes;
}

}  // namespace

Result<std::map<std::string, Tensor>> random_inputs(const Engine& e, int64_t batch,
                                                    const std::vector<std::string>& shapes,
                                                    uint32_t seed) {
  KILN_ASSIGN_OR_RETURN(auto dims, input_shapes(e, batch, shapes));
  std::map<std::string, Tensor> feeds;
  std::mt19937 gen(seed);
  for (const TensorInfo& info : e.inputs()) {
    Tensor t(info.dtype, dims.at(info.name));
    KILN_RETURN_IF_ERROR(fill_random(t, gen).with_context("input '" + info.name + "'"));
    feeds[info.name] = t;
  }
  return feeds;
}

Status pin_inputs(std::map<std::string, Tensor>& inputs) {
  for (auto& [name, t] : inputs) {
    KILN_ASSIGN_OR_RETURN(Tensor pinned, pinned_tensor(t.dtype(), t.shape()));
    if (t.nbytes()) std::memcpy(pinned.raw(), t.raw(), t.nbytes());
    t = std::move(pinned);
  }
  return Status::ok();
}

Status inputs_to_gpu(std::map<std::string, Tensor>& inputs, int gpu) {
  for (auto& [name, t] : inputs) {
    KILN_ASSIGN_OR_RETURN(t, copy_to_gpu(t, gpu));
  }
  return Status::ok();
}

int64_t images_per_run(const Engine& e, const std::map<std::string, Tensor>& inputs) {
  if (e.inputs().empty()) return 1;
  auto it = inputs.find(e.inputs()[0].name);
  return it == inputs.end() || it->second.shape().empty() ? 1 : it->second.shape()[0];
}

}  // namespace kiln::cli
