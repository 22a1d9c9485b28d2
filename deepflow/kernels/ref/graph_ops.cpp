// SPDX-License-Identifier: Apache-2.0
// Kernels of the graph building blocks (ops/graph_ops.cpp). Outputs that are
// existing tensors (a constant, a variable's value) are returned as views.
#include <cstring>

#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

void run_const(const OpCall& c, TensorList& out) {
  const Tensor& v = c.attr_tensor("value");
  out[0] = v.view(v.shape());
}

void run_placeholder(const OpCall& c, TensorList&) {
  Shape s(c.attr_ints("shape"));
  fail("[placeholder] a placeholder of type ", dtype_name(c.attr_dtype("dtype")), s,
       " must be fed a value (Session::run feeds, or a function argument)");
}

void run_read_variable(const OpCall& c, TensorList& out) { out[0] = c.attr_variable("variable").value(); }

void run_assign_variable(const OpCall& c, TensorList&) {
  Variable v = c.attr_variable("variable");
  v.assign(c.in(0));
}

void run_fill(const OpCall& c, TensorList& out, double value) {
  Tensor& o = out[0];
  if (value == 0) {
    if (o.dtype() == DType::String) return;  // a new string tensor already holds b''
    if (o.nbytes()) std::memset(o.raw_data(), 0, o.nbytes());
    return;
  }
  DF_DISPATCH_ALL(o.dtype(), c.name(), [&] {
    scalar_t* p = o.data<scalar_t>();
    const scalar_t v = convert<scalar_t>(value);
    for (int64_t i = 0; i < o.size(); ++i) p[i] = v;
  });
}

}  // namespace

DF_REGISTER_KERNEL(Const, {.run = run_const});
DF_REGISTER_KERNEL(Placeholder, {.run = run_placeholder});
DF_REGISTER_KERNEL(ReadVariable, {.run = run_read_variable});
DF_REGISTER_KERNEL(AssignVariable, {.run = run_assign_variable});
DF_REGISTER_KERNEL(ZerosLike, {.run = [](const OpCall& c, TensorList& out) { run_fill(c, out, 0); }});
DF_REGISTER_KERNEL(OnesLike, {.run = [](const OpCall& c, TensorList& out) { run_fill(c, out, 1); }});
DF_REGISTER_KERNEL(NoOp, {.run = [](const OpCall&, TensorList&) {}});

}  // namespace deepflow
