// SPDX-License-Identifier: Apache-2.0
// A user's op library, loaded from Python with tf.load_op_library: time_two(x) = 2x for
// float32 and int32, with its gradient, registered when the library is loaded (the
// static initializer below), with the same calls examples/custom_op.cpp uses.
#include "deepflow/deepflow.h"
#include "deepflow/ops/kernel.h"

using namespace deepflow;

namespace {

const OpId kTimeTwo = [] {
  OpId op = register_custom_op(OpDef{
      .name = "time_two",
      .num_inputs = 1,
      .attrs = {{"factor", 2.0}},
      .infer = [](const OpCall& c, TypeList& out) {
        DType t = c.in(0).dtype();
        DF_CHECK(t == DType::Float32 || t == DType::Int32, "[time_two] expects float32 or int32, got ", dtype_name(t));
        out.push_back({t, c.in(0).shape()});
      },
      .vjp = [](const OpCall& c, const TensorList& g) { return TensorList{g[0] * c.attr_float("factor")}; },
  });
  register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                    const double f = c.attr_float("factor");
                    if (c.in(0).dtype() == DType::Float32) {
                      const float* x = c.in(0).data<float>();
                      float* y = out[0].data<float>();
                      for (int64_t i = 0; i < c.in(0).size(); ++i) y[i] = float(f) * x[i];
                    } else {
                      const int32_t* x = c.in(0).data<int32_t>();
                      int32_t* y = out[0].data<int32_t>();
                      for (int64_t i = 0; i < c.in(0).size(); ++i) y[i] = int32_t(f * x[i]);
                    }
                  }});
  return op;
}();

}  // namespace
