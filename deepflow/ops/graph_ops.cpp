// SPDX-License-Identifier: Apache-2.0
// The ops graphs are built from besides the math: constants, placeholders,
// variable reads and writes, shape-following fills and a grouping no-op.
// They also run eagerly (a graph is executed by dispatching its nodes), except
// placeholder, which must be fed.
#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

// --- const --- () -> the "value" attribute.
void infer_const(const OpCall& c, TypeList& out) {
  const Tensor& v = c.attr_tensor("value");
  DF_CHECK(v.defined() && !v.is_symbolic(), "[const] 'value' must be a concrete tensor");
  out.push_back({v.dtype(), v.shape()});
}

// --- placeholder --- () -> dtype[shape], -1 dims unknown until fed.
void infer_placeholder(const OpCall& c, TypeList& out) {
  Shape s;
  for (int64_t d : c.attr_ints("shape")) {
    DF_CHECK(d >= -1, "[placeholder] shape dims must be >= -1, got ", d);
    s.push_back(d);
  }
  out.push_back({c.attr_dtype("dtype"), s});
}

// --- read_variable --- () -> the variable's current value.
void infer_read_variable(const OpCall& c, TypeList& out) {
  const Variable& v = c.attr_variable("variable");
  DF_CHECK(v.defined(), "[read_variable] undefined variable");
  out.push_back({v.dtype(), v.shape()});
}

// --- assign_variable --- value -> (); value must match the variable's dtype and shape.
void infer_assign_variable(const OpCall& c, TypeList&) {
  const Variable& v = c.attr_variable("variable");
  DF_CHECK(v.defined(), "[assign_variable] undefined variable");
  DF_CHECK(c.in(0).dtype() == v.dtype() && c.in(0).shape().compatible_with(v.shape()), "[assign_variable] '",
           v.name(), "' is ", dtype_name(v.dtype()), v.shape(), ", value is ", dtype_name(c.in(0).dtype()),
           c.in(0).shape());
}

}  // namespace

DF_DEFINE_OP(Const, {.num_inputs = 0, .attrs = {AttrSpec::required_of("value", AttrKind::Tensor)},
                     .infer = infer_const, .non_differentiable = true, .view_output = true, .strings = true});
DF_DEFINE_OP(Placeholder, {.num_inputs = 0,
                           .attrs = {AttrSpec::required_of("dtype", AttrKind::DType),
                                     AttrSpec("shape", std::vector<int64_t>{})},
                           .infer = infer_placeholder, .non_differentiable = true, .stateful = true, .strings = true});
DF_DEFINE_OP(ReadVariable, {.num_inputs = 0, .attrs = {AttrSpec::required_of("variable", AttrKind::Variable)},
                            .infer = infer_read_variable, .non_differentiable = true, .stateful = true,
                            .view_output = true, .strings = true});
DF_DEFINE_OP(AssignVariable, {.num_inputs = 1, .attrs = {AttrSpec::required_of("variable", AttrKind::Variable)},
                              .infer = infer_assign_variable, .non_differentiable = true, .stateful = true,
                              .strings = true});
// zeros_like / ones_like: x -> same dtype and shape (also when the shape is only known at run time).
// zeros_like of a string tensor is all b'' (TensorFlow's too); ones_like refuses strings.
DF_DEFINE_OP(ZerosLike, {.infer = detail::infer_same, .non_differentiable = true, .strings = true});
DF_DEFINE_OP(OnesLike, {.infer = detail::infer_same, .non_differentiable = true});
// no_op: any inputs -> (); a node to hang control dependencies on (tf.group).
DF_DEFINE_OP(NoOp, {.num_inputs = -1, .infer = [](const OpCall&, TypeList&) {}, .non_differentiable = true,
                    .stateful = true, .strings = true});

Tensor placeholder(DType dtype, const Shape& shape) {
  return dispatch1(OpId::Placeholder, {}, {{"dtype", dtype}, {"shape", shape.to_vector()}});
}

Tensor zeros_like(const Tensor& t) {
  if (!t.is_symbolic() && !current_build_scope()) return zeros(t.shape(), t.dtype());
  return dispatch1(OpId::ZerosLike, {t});
}
Tensor ones_like(const Tensor& t) {
  if (!t.is_symbolic() && !current_build_scope()) return ones(t.shape(), t.dtype());
  return dispatch1(OpId::OnesLike, {t});
}

}  // namespace deepflow
