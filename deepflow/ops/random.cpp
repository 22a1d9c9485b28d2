// SPDX-License-Identifier: Apache-2.0
// Random number generation: stateless-looking, stateful primitives without inputs.
//
// Each call carries its (seed, seed2) as attributes, resolved once by the public
// function from the global and op seeds (core/random.h). The kernel reserves a
// fresh counter range for that pair on every run, so repeated calls (or repeated
// runs of one graph node) give new numbers, reproducibly, as in TensorFlow.
#include <string>

#include "deepflow/core/random.h"
#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

// () -> [shape] of the floating dtype attr; (like) -> like's shape, which may hold
// dims unknown until the graph runs (dropout in a graph with an unknown batch dim).
void infer_random(const OpCall& c, TypeList& out) {
  DType dt = c.attr_dtype("dtype");
  DF_CHECK(is_floating(dt), "[", c.name(), "] expects a floating dtype, got ", dtype_name(dt));
  DF_CHECK(c.num_inputs() <= 1, "[", c.name(), "] takes no input or one whose shape it copies, got ",
           c.num_inputs(), " inputs");
  if (c.num_inputs() == 1) {
    out.push_back({dt, c.in(0).shape()});
    return;
  }
  const std::vector<int64_t>& dims = c.attr_ints("shape");
  for (int64_t d : dims) {
    if (d >= 0) continue;
    std::string text;
    for (int64_t e : dims) {
      if (!text.empty()) text += ',';
      text += std::to_string(e);
    }
    fail("[", c.name(), "] shape must not have negative dims, got [", text, "]");
  }
  out.push_back({dt, Shape(dims)});
}

Attrs random_attrs(const Shape& shape, DType dtype, std::optional<int64_t> seed) {
  auto [s1, s2] = detail::resolve_seeds(seed);
  return Attrs{{"shape", shape.to_vector()}, {"dtype", dtype}, {"seed", s1}, {"seed2", s2}};
}

std::vector<AttrSpec> random_schema(const char* p0, double d0, const char* p1, double d1) {
  return {AttrSpec::required_of("shape", AttrKind::Ints), AttrSpec("dtype", DType::Float32),
          AttrSpec("seed", int64_t(0)), AttrSpec("seed2", int64_t(0)), AttrSpec(p0, d0), AttrSpec(p1, d1)};
}

}  // namespace

// --- random_uniform --- () -> [shape] or (like) -> like's shape, uniform in [minval, maxval);
// like TF, the range is not checked.
DF_DEFINE_OP(RandomUniform, {.num_inputs = -1, .attrs = random_schema("minval", 0.0, "maxval", 1.0),
                             .infer = infer_random, .non_differentiable = true, .stateful = true});

Tensor random_uniform(const Shape& shape, double minval, double maxval, DType dtype, std::optional<int64_t> seed) {
  Attrs a = random_attrs(shape, dtype, seed);
  a.set("minval", minval);
  a.set("maxval", maxval);
  return dispatch1(OpId::RandomUniform, std::span<const Tensor>(), a);
}

Tensor random_uniform_like(const Tensor& like, double minval, double maxval, std::optional<DType> dtype,
                           std::optional<int64_t> seed) {
  Attrs a = random_attrs(like.shape(), dtype.value_or(like.dtype()), seed);
  a.set("minval", minval);
  a.set("maxval", maxval);
  return dispatch1(OpId::RandomUniform, {like}, a);
}

// --- random_normal / truncated_normal --- () -> [shape] or (like) -> like's shape, mean + stddev * N(0, 1).
DF_DEFINE_OP(RandomNormal, {.num_inputs = -1, .attrs = random_schema("mean", 0.0, "stddev", 1.0),
                            .infer = infer_random, .non_differentiable = true, .stateful = true});
DF_DEFINE_OP(TruncatedNormal, {.num_inputs = -1, .attrs = random_schema("mean", 0.0, "stddev", 1.0),
                               .infer = infer_random, .non_differentiable = true, .stateful = true});

Tensor random_normal(const Shape& shape, double mean, double stddev, DType dtype, std::optional<int64_t> seed) {
  Attrs a = random_attrs(shape, dtype, seed);
  a.set("mean", mean);
  a.set("stddev", stddev);
  return dispatch1(OpId::RandomNormal, std::span<const Tensor>(), a);
}

Tensor truncated_normal(const Shape& shape, double mean, double stddev, DType dtype, std::optional<int64_t> seed) {
  Attrs a = random_attrs(shape, dtype, seed);
  a.set("mean", mean);
  a.set("stddev", stddev);
  return dispatch1(OpId::TruncatedNormal, std::span<const Tensor>(), a);
}

}  // namespace deepflow
