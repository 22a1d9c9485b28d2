// SPDX-License-Identifier: Apache-2.0
// Reference kernels of the binary primitives and where: one element at a time.
#include "deepflow/kernels/binary_functors.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/kernels/ref/ref_util.h"

namespace deepflow {
namespace {

template <class Op, bool kCompare>
void ref_binary(const OpCall& c, TensorList& out) {
  const Tensor &a = c.in(0), &b = c.in(1);
  Tensor& o = out[0];
  if (a.dtype() == DType::String) {  // only equal / not_equal are marked `strings`
    if constexpr (std::is_same_v<Op, fn::Equal> || std::is_same_v<Op, fn::NotEqual>) {
      const std::string* pa = a.data<std::string>();
      const std::string* pb = b.data<std::string>();
      for (int64_t i = 0, n = o.size(); i < n; ++i)
        o.data<bool>()[i] = Op::template f<const std::string&>(pa[ref::broadcast_offset(o.shape(), a.shape(), i)],
                                                                pb[ref::broadcast_offset(o.shape(), b.shape(), i)]);
      return;
    }
    dtype_unsupported(c.name(), a.dtype());
  }
  DF_DISPATCH_ALL(a.dtype(), c.name(), [&] {
    using CT = compute_t<scalar_t>;
    const scalar_t* pa = a.data<scalar_t>();
    const scalar_t* pb = b.data<scalar_t>();
    for (int64_t i = 0, n = o.size(); i < n; ++i) {
      CT x = CT(pa[ref::broadcast_offset(o.shape(), a.shape(), i)]);
      CT y = CT(pb[ref::broadcast_offset(o.shape(), b.shape(), i)]);
      if constexpr (kCompare) o.data<bool>()[i] = Op::f(x, y);
      else if constexpr (std::is_same_v<scalar_t, bool>) fail("[", c.name(), "] does not take bool");
      else o.data<scalar_t>()[i] = scalar_t(Op::f(x, y));
    }
  });
}

void ref_where(const OpCall& c, TensorList& out) {
  const Tensor &cond = c.in(0), &x = c.in(1), &y = c.in(2);
  Tensor& o = out[0];
  DF_DISPATCH_ALL_AND_STRING(x.dtype(), "where", [&] {
    for (int64_t i = 0, n = o.size(); i < n; ++i) {
      bool k = cond.data<bool>()[ref::broadcast_offset(o.shape(), cond.shape(), i)];
      o.data<scalar_t>()[i] = k ? x.data<scalar_t>()[ref::broadcast_offset(o.shape(), x.shape(), i)]
                                : y.data<scalar_t>()[ref::broadcast_offset(o.shape(), y.shape(), i)];
    }
  });
}

}  // namespace

DF_REGISTER_KERNEL(Add, {.run = ref_binary<fn::Add, false>});
DF_REGISTER_KERNEL(Sub, {.run = ref_binary<fn::Sub, false>});
DF_REGISTER_KERNEL(Mul, {.run = ref_binary<fn::Mul, false>});
DF_REGISTER_KERNEL(Div, {.run = ref_binary<fn::Div, false>});
DF_REGISTER_KERNEL(Pow, {.run = ref_binary<fn::Pow, false>});
DF_REGISTER_KERNEL(Maximum, {.run = ref_binary<fn::Maximum, false>});
DF_REGISTER_KERNEL(Minimum, {.run = ref_binary<fn::Minimum, false>});
DF_REGISTER_KERNEL(Equal, {.run = ref_binary<fn::Equal, true>});
DF_REGISTER_KERNEL(NotEqual, {.run = ref_binary<fn::NotEqual, true>});
DF_REGISTER_KERNEL(Less, {.run = ref_binary<fn::Less, true>});
DF_REGISTER_KERNEL(LessEqual, {.run = ref_binary<fn::LessEqual, true>});
DF_REGISTER_KERNEL(Greater, {.run = ref_binary<fn::Greater, true>});
DF_REGISTER_KERNEL(GreaterEqual, {.run = ref_binary<fn::GreaterEqual, true>});
DF_REGISTER_KERNEL(LogicalAnd, {.run = ref_binary<fn::LogicalAnd, true>});
DF_REGISTER_KERNEL(LogicalOr, {.run = ref_binary<fn::LogicalOr, true>});
DF_REGISTER_KERNEL(Where, {.run = ref_where});

}  // namespace deepflow
