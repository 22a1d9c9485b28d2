// SPDX-License-Identifier: Apache-2.0
#include "deepflow/ops/value_shaped.h"

#include <cmath>

#include "deepflow/core/error.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/ops/op.h"

namespace deepflow {
namespace {

double scalar_value(const Tensor& t, const char* what) {
  DF_CHECK(t.rank() == 0, "[range] ", what, " must be a scalar, got shape ", t.shape());
  return t.flat(0);
}

int64_t range_size(double start, double limit, double delta) {
  DF_CHECK(delta != 0, "[range] delta must not be 0");
  const double n = std::ceil((limit - start) / delta);
  return n > 0 ? int64_t(n) : 0;
}

OpId range_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "range",
        .num_inputs = 3,
        .infer = [](const OpCall& c, TypeList& out) {
          const DType t = c.in(0).dtype();
          DF_CHECK(c.in(1).dtype() == t && c.in(2).dtype() == t, "[range] start, limit and delta differ in dtype: ",
                   dtype_name(t), ", ", dtype_name(c.in(1).dtype()), ", ", dtype_name(c.in(2).dtype()));
          DF_CHECK(t != DType::Bool, "[range] needs a numeric dtype, got bool");
          int64_t n = kUnknownDim;
          if (!c.in(0).is_symbolic() && !c.in(1).is_symbolic() && !c.in(2).is_symbolic())
            n = range_size(scalar_value(c.in(0), "start"), scalar_value(c.in(1), "limit"),
                           scalar_value(c.in(2), "delta"));
          out.push_back({t, Shape{n}});
        },
        .non_differentiable = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                      const double start = c.in(0).flat(0), delta = c.in(2).flat(0);
                      Tensor& y = out[0];
                      DF_DISPATCH_NUMERIC(y.dtype(), "range", [&] {
                        scalar_t* p = y.data<scalar_t>();
                        for (int64_t i = 0; i < y.size(); ++i) p[i] = scalar_t(start + double(i) * delta);
                      });
                    }});
    return op;
  }();
  return id;
}

OpId shape_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "shape",
        .num_inputs = 1,
        .attrs = {{"out_type", DType::Int32}},
        .infer = [](const OpCall& c, TypeList& out) {
          const DType t = c.attr_dtype("out_type");
          DF_CHECK(t == DType::Int32 || t == DType::Int64, "[shape] out_type must be int32 or int64, got ",
                   dtype_name(t));
          out.push_back({t, Shape{int64_t(c.in(0).rank())}});
        },
        .non_differentiable = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                      const Shape& s = c.in(0).shape();
                      for (int i = 0; i < s.rank(); ++i) {
                        if (out[0].dtype() == DType::Int32) out[0].data<int32_t>()[i] = int32_t(s[i]);
                        else out[0].data<int64_t>()[i] = s[i];
                      }
                    }});
    return op;
  }();
  return id;
}

// Registered at load time, so graphs naming them (text form, SavedModels) resolve.
const bool kRegistered = (range_op(), shape_op(), true);

}  // namespace

Tensor range(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  return dispatch1(range_op(), {start, limit, delta});
}

Tensor shape_of(const Tensor& x, DType out_type) { return dispatch1(shape_op(), {x}, {{"out_type", out_type}}); }

}  // namespace deepflow
