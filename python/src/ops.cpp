// SPDX-License-Identifier: Apache-2.0
// The ops, bound once: raw_op() reaches every registered primitive and custom op by
// name through dispatch(), with attributes typed by the op's schema; the composites of
// deepflow/ops/ops.h (which are not primitives) are bound one by one. TensorFlow's
// signatures (argument names, defaults, `name=`) are python/deepflow/_ops.py's.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "deepflow/core/random.h"
#include "deepflow/ops/op.h"
#include "deepflow/ops/ops.h"

namespace deepflow::py {
namespace {

using Ints = std::vector<int64_t>;

AttrValue attr_of(const OpDef& def, const std::string& name, nb::handle v) {
  const AttrSpec* spec = nullptr;
  for (const AttrSpec& s : def.attrs)
    if (s.name == name) spec = &s;
  if (!spec) fail("[", def.name, "] unknown attribute '", name, "'");
  switch (spec->kind) {
    case AttrKind::Bool: return nb::cast<bool>(v);
    case AttrKind::Int: return nb::cast<int64_t>(v);
    case AttrKind::Float: return nb::cast<double>(v);
    case AttrKind::String: return nb::cast<std::string>(v);
    case AttrKind::DType: return dtype_of_int(nb::cast<int>(v));
    case AttrKind::Ints: return nb::cast<Ints>(v);
    case AttrKind::Floats: return nb::cast<std::vector<double>>(v);
    case AttrKind::Tensor: return to_tensor(v);
    case AttrKind::Variable: return nb::cast<Variable>(v);
    case AttrKind::Func: break;
  }
  fail("[", def.name, "] attribute '", name, "' takes a function: use the op's Python wrapper");
}

std::vector<Tensor> raw_op(nb::handle op, nb::handle inputs, nb::handle attrs) {
  OpId id = nb::isinstance<nb::int_>(op) ? OpId(nb::cast<int>(op)) : op_id_from_name(nb::cast<std::string>(op));
  const OpDef& def = op_def(id);
  std::vector<Tensor> in;
  for (nb::handle x : inputs) in.push_back(to_tensor(x));
  Attrs a;
  if (!attrs.is_none())
    for (auto [k, v] : nb::cast<nb::dict>(attrs)) a.set(nb::cast<std::string>(k), attr_of(def, nb::cast<std::string>(k), v));
  return dispatch(id, in, a);
}

}  // namespace

void init_ops(nb::module_& m) {
  m.def("raw_op", &raw_op, nb::arg("op"), nb::arg("inputs"), nb::arg("attrs").none() = nb::none(),
        "Runs a registered op (a primitive or a custom op) by name or id; returns its outputs.");
  m.def("op_id", [](const std::string& name) { return int(op_id_from_name(name)); });
  m.def("op_names", [] {
    std::vector<std::string> names;
    for (int i = 0; i < num_ops(); ++i)
      if (const OpDef* d = find_op_def(OpId(i))) names.push_back(d->name);
    return names;
  });
  m.def("op_attrs", [](const std::string& name) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const AttrSpec& s : op_def(op_id_from_name(name)).attrs) out.emplace_back(s.name, attr_kind_name(s.kind));
    return out;
  });

  // Creation.
  m.def("zeros", [](const Ints& s, int d) { return zeros(Shape(s), dtype_of_int(d)); });
  m.def("ones", [](const Ints& s, int d) { return ones(Shape(s), dtype_of_int(d)); });
  m.def("fill", [](const Ints& s, double v, int d) { return fill(Shape(s), v, dtype_of_int(d)); });
  m.def("arange", [](double start, double limit, double delta, int d) {
    return arange(start, limit, delta, dtype_of_int(d));
  });
  m.def("zeros_like", [](const TensorArg& x) { return zeros_like(x); });
  m.def("ones_like", [](const TensorArg& x) { return ones_like(x); });
  m.def("placeholder", [](int d, const Ints& s) { return placeholder(dtype_of_int(d), Shape(s)); });

  // Activations and other composites.
  m.def("relu6", [](const TensorArg& x) { return relu6(x); });
  m.def("elu", [](const TensorArg& x, double alpha) { return elu(x, alpha); });
  m.def("selu", [](const TensorArg& x) { return selu(x); });
  m.def("gelu", [](const TensorArg& x, bool approximate) { return gelu(x, approximate); });
  m.def("softplus", [](const TensorArg& x) { return softplus(x); });
  m.def("leaky_relu", [](const TensorArg& x, double alpha) { return leaky_relu(x, alpha); });
  m.def("clip_by_value", [](const TensorArg& x, const TensorArg& lo, const TensorArg& hi) {
    return clip_by_value(x, lo, hi);
  });
  m.def("reduce_mean", [](const TensorArg& x, const Ints& axes, bool keepdims) { return reduce_mean(x, axes, keepdims); });
  m.def("reduce_logsumexp", [](const TensorArg& x, const Ints& axes, bool keepdims) {
    return reduce_logsumexp(x, axes, keepdims);
  });
  m.def("moments", [](const TensorArg& x, const Ints& axes, bool keepdims) { return moments(x, axes, keepdims); });
  m.def("top_k", [](const TensorArg& x, int64_t k, bool sorted) { return top_k(x, k, sorted); });
  m.def("expand_dims", [](const TensorArg& x, int64_t axis) { return expand_dims(x, axis); });
  m.def("squeeze", [](const TensorArg& x, const Ints& axes) { return squeeze(x, axes); });
  m.def("stack", [](const std::vector<TensorArg>& xs, int64_t axis) {
    std::vector<Tensor> ts(xs.begin(), xs.end());
    return stack(ts, axis);
  });
  m.def("concat", [](const std::vector<TensorArg>& xs, int64_t axis) {
    std::vector<Tensor> ts(xs.begin(), xs.end());
    return concat(ts, axis);
  });
  m.def("split", [](const TensorArg& x, int64_t num, int64_t axis) { return split(x, num, axis); });
  m.def("split_sizes", [](const TensorArg& x, const Ints& sizes, int64_t axis) { return split(x, sizes, axis); });
  m.def("one_hot", [](const TensorArg& i, int64_t depth, double on, double off, int64_t axis, int d) {
    return one_hot(i, depth, on, off, axis, dtype_of_int(d));
  });
  m.def("softmax", [](const TensorArg& x, int64_t axis) { return softmax(x, axis); });
  m.def("log_softmax", [](const TensorArg& x, int64_t axis) { return log_softmax(x, axis); });
  m.def("softmax_cross_entropy_with_logits", [](const TensorArg& l, const TensorArg& z) {
    return softmax_cross_entropy_with_logits(l, z);
  });
  m.def("sparse_softmax_cross_entropy_with_logits", [](const TensorArg& l, const TensorArg& z) {
    return sparse_softmax_cross_entropy_with_logits(l, z);
  });
  m.def("sigmoid_cross_entropy_with_logits", [](const TensorArg& l, const TensorArg& z) {
    return sigmoid_cross_entropy_with_logits(l, z);
  });
  m.def("depthwise_conv2d", [](const TensorArg& x, const TensorArg& f, const Ints& s, const std::string& p, const Ints& d) {
    return depthwise_conv2d(x, f, s, p, d);
  });
  m.def("conv2d_transpose", [](const TensorArg& x, const TensorArg& f, const Ints& out, const Ints& s,
                               const std::string& p, const Ints& d) {
    return conv2d_transpose(x, f, Shape(out), s, p, d);
  });
  m.def("batch_normalization", [](const TensorArg& x, const TensorArg& mean, const TensorArg& var,
                                  const TensorArg& offset, const TensorArg& scale, double eps) {
    return batch_normalization(x, mean, var, offset, scale, eps);
  });
  m.def("fused_batch_norm", [](const TensorArg& x, const TensorArg& scale, const TensorArg& offset,
                               const TensorArg& mean, const TensorArg& var, double eps, bool training) {
    FusedBatchNormResult r = fused_batch_norm(x, scale, offset, mean, var, eps, training);
    return std::vector<Tensor>{r.y, r.batch_mean, r.batch_variance};
  });
  m.def("layer_normalization", [](const TensorArg& x, const TensorArg& g, const TensorArg& b, const Ints& axes,
                                  double eps) { return layer_normalization(x, g, b, axes, eps); });
  m.def("dropout", [](const TensorArg& x, double rate, std::optional<int64_t> seed) { return dropout(x, rate, seed); });
  m.def("pad", [](const TensorArg& x, const std::vector<std::pair<int64_t, int64_t>>& p, const std::string& mode,
                  double value) { return pad(x, p, mode, value); });
  m.def("size", [](const TensorArg& x, int d) { return size(x, dtype_of_int(d)); });

  // Random ops and seeds (tf.random.set_seed).
  m.def("set_random_seed", [](std::optional<int64_t> seed) { set_random_seed(seed); });
  m.def("random_uniform", [](const Ints& s, double lo, double hi, int d, std::optional<int64_t> seed) {
    return random_uniform(Shape(s), lo, hi, dtype_of_int(d), seed);
  });
  m.def("random_normal", [](const Ints& s, double mean, double std, int d, std::optional<int64_t> seed) {
    return random_normal(Shape(s), mean, std, dtype_of_int(d), seed);
  });
  m.def("truncated_normal", [](const Ints& s, double mean, double std, int d, std::optional<int64_t> seed) {
    return truncated_normal(Shape(s), mean, std, dtype_of_int(d), seed);
  });
}

}  // namespace deepflow::py
