// ChannelShuffle (ops/channel_shuffle.h): the reference copies runs of `inner` elements, from
// x as [outer, b, c, inner] to y as [outer, c, b, inner].

#include "ops/channel_shuffle.h"

#include <cstring>

#include "ops/op_util.h"
#include "ops/reshape.h"

namespace kiln {

Result<ChannelShuffleGeometry> channel_shuffle_geometry(const Shape& x,
                                                        const std::vector<int64_t>& shape5,
                                                        const std::vector<int64_t>& shape4) {
  if (shape5.size() != 5)
    return invalid_argument("input 1 (shape5) must have 5 entries, got " + shape_str(shape5));
  KILN_ASSIGN_OR_RETURN(Shape r, reshape_target(x, shape5, false));
  ChannelShuffleGeometry g;
  g.outer = r[0];
  g.b = r[1];
  g.c = r[2];
  g.inner = r[3] * r[4];
  const Shape t{r[0], r[2], r[1], r[3], r[4]};
  KILN_ASSIGN_OR_RETURN(g.out, reshape_target(t, shape4, false));
  g.per_pixel =
      x.size() == 4 && g.out == x && g.outer == x[0] && g.b * g.c == x[1] && g.inner == x[2] * x[3];
  return g;
}

namespace {

Result<ChannelShuffleGeometry> geometry(const std::vector<TensorDesc>& in) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 3, 3));
  if (dtype_size(in[0].dtype) == 0)
    return unsupported(std::string("ChannelShuffle on ") + dtype_name(in[0].dtype));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> s5, known_int64s(in[1], "input 1 (shape5)"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> s4, known_int64s(in[2], "input 2 (shape4)"));
  return channel_shuffle_geometry(in[0].shape, s5, s4);
}

Status infer_channel_shuffle(const Node&, const std::vector<TensorDesc>& in,
                             std::vector<TensorDesc>& out) {
  KILN_ASSIGN_OR_RETURN(ChannelShuffleGeometry g, geometry(in));
  out[0] = {in[0].dtype, std::move(g.out)};
  return Status::ok();
}

Status run_channel_shuffle(const Node&, const std::vector<const Tensor*>& in,
                           const std::vector<Tensor*>& out) {
  std::vector<TensorDesc> d;
  for (const Tensor* t : in) d.push_back({t->dtype(), t->shape(), t});
  KILN_ASSIGN_OR_RETURN(ChannelShuffleGeometry g, geometry(d));
  const size_t run = static_cast<size_t>(g.inner) * dtype_size(in[0]->dtype());
  const auto* x = static_cast<const std::byte*>(in[0]->raw());
  auto* y = static_cast<std::byte*>(out[0]->raw());
  if (run == 0) return Status::ok();
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t k = 0; k < g.c; ++k)
      for (int64_t j = 0; j < g.b; ++j)
        std::memcpy(y + ((o * g.c + k) * g.b + j) * run, x + ((o * g.b + j) * g.c + k) * run, run);
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(ChannelShuffle, infer_channel_shuffle, run_channel_shuffle);

}  // namespace kiln
