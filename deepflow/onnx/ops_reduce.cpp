// SPDX-License-Identifier: Apache-2.0
// ONNX reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare.
// Axes are an attribute up to opset 12 for ReduceSum (and up to 17 for the others, so
// always within the importer's range), and an optional input from ReduceSum-13, where
// noop_with_empty_axes makes empty axes an identity instead of "all axes".
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/onnx/op_importer.h"

namespace deepflow::onnx {
namespace {

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

Tensor reduce(Kind k, const Tensor& x, const Axes& axes, bool keepdims) {
  switch (k) {
    case Kind::Sum: return reduce_sum(x, axes, keepdims);
    case Kind::Mean: return reduce_mean(x, axes, keepdims);
    case Kind::Max: return reduce_max(x, axes, keepdims);
    case Kind::Min: return reduce_min(x, axes, keepdims);
    case Kind::Prod: return reduce_prod(x, axes, keepdims);
    case Kind::L1: return reduce_sum(abs(x), axes, keepdims);
    case Kind::L2: {
      // Integer L2 norms round down through float64, as numpy's astype does.
      if (is_integer(x.dtype())) {
        Tensor f = cast(x, DType::Float64);
        return cast(sqrt(reduce_sum(square(f), axes, keepdims)), x.dtype());
      }
      return sqrt(reduce_sum(square(x), axes, keepdims));
    }
    case Kind::LogSum: return log(reduce_sum(x, axes, keepdims));
    case Kind::LogSumExp: return reduce_logsumexp(x, axes, keepdims);
    case Kind::SumSquare: return reduce_sum(square(x), axes, keepdims);
  }
  return Tensor();
}

Axes checked_axes(NodeContext& c, Axes axes, int rank) {
  for (auto& a : axes) {
    DF_CHECK(a >= -rank && a < std::max(rank, 1), "[onnx::import] ", c.describe(), ": axis ", a,
             " out of range for rank ", rank);
    if (a < 0) a += rank;
  }
  return axes;
}

Tensor finish(NodeContext& c, Kind k, const Tensor& x, const Axes& axes_in, bool noop_if_empty) {
  const bool keepdims = c.attr_int("keepdims", 1) != 0;
  if (axes_in.empty() && noop_if_empty) return identity(x);
  Axes axes = checked_axes(c, axes_in, x.rank());
  if (axes.empty()) {
    for (int i = 0; i < x.rank(); ++i) axes.push_back(i);
  }
  if (x.rank() == 0) return identity(x);
  return reduce(k, x, axes, keepdims);
}

template <Kind K>
TensorList reduce_attr(NodeContext& c) {
  return {finish(c, K, c.input(0), c.attr_ints("axes"), false)};
}
template <Kind K>
TensorList reduce_input(NodeContext& c) {
  Axes axes;
  if (c.has_input(1)) axes = c.constant_input(1).to_vector<int64_t>();
  return {finish(c, K, c.input(0), axes, c.attr_int("noop_with_empty_axes", 0) != 0)};
}

}  // namespace

DF_ONNX_OP("ReduceSum", 1, reduce_attr<Kind::Sum>)
DF_ONNX_OP("ReduceSum", 13, reduce_input<Kind::Sum>)
DF_ONNX_OP("ReduceMean", 1, reduce_attr<Kind::Mean>)
DF_ONNX_OP("ReduceMax", 1, reduce_attr<Kind::Max>)
DF_ONNX_OP("ReduceMin", 1, reduce_attr<Kind::Min>)
DF_ONNX_OP("ReduceProd", 1, reduce_attr<Kind::Prod>)
DF_ONNX_OP("ReduceL1", 1, reduce_attr<Kind::L1>)
DF_ONNX_OP("ReduceL2", 1, reduce_attr<Kind::L2>)
DF_ONNX_OP("ReduceLogSum", 1, reduce_attr<Kind::LogSum>)
DF_ONNX_OP("ReduceLogSumExp", 1, reduce_attr<Kind::LogSumExp>)
DF_ONNX_OP("ReduceSumSquare", 1, reduce_attr<Kind::SumSquare>)

}  // namespace deepflow::onnx
