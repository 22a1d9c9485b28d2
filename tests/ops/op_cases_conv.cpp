// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the convolution and pooling family (ops/conv.cpp).
#include "deepflow/ops/conv.h"
#include "op_cases.h"

namespace deepflow::testing {
namespace {

using Ints = std::vector<int64_t>;

// oneDNN sums hundreds of float32 products in float32; the reference sums in double.
constexpr double kSumTol = 1e-4;

Attrs conv(Ints strides, const char* padding, Ints dilations = {1, 1}) {
  return {{"strides", strides}, {"padding", std::string(padding)}, {"dilations", dilations}};
}
Attrs conv_sizes(const char* attr, Ints sizes, Ints strides, const char* padding, Ints dilations = {1, 1}) {
  Attrs a = conv(strides, padding, dilations);
  a.set(attr, sizes);
  return a;
}
Attrs pool(Ints ksize, Ints strides, const char* padding) {
  return {{"ksize", ksize}, {"strides", strides}, {"padding", std::string(padding)}};
}
// max_pool's EXPLICIT padding, pads {top, bottom, left, right}.
Attrs pool_explicit(Ints ksize, Ints strides, Ints pads) {
  Attrs a = pool(ksize, strides, "EXPLICIT");
  a.set("explicit_paddings", pads);
  return a;
}

// Values from {-1, 0, 1}: many windows hold tied maxima, which pins the tie rule.
Tensor ties(Shape s) {
  std::vector<double> v(size_t(s.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(int64_t(i * 7 % 3)) - 1;
  return f64(v, s);
}

}  // namespace

DF_OP_CASES(conv) {
  using F = std::function<TensorList(const TensorList&)>;
  auto one = [](auto f) { return F([f](const TensorList& x) { return TensorList{f(x)}; }); };
  const std::vector<DType> f32 = {DType::Float32};
  const std::vector<DType> half = {DType::BFloat16, DType::Float16};
  return {
      // conv2d
      // graph_unknown_dims = false below: the filters would get an unknown kh, and the filter gradient needs
      // static filter_sizes (an unknown batch alone works: OpGraphUnknownBatch in op_graph_test.cpp).
      {.name = "conv2d/valid", .op = "conv2d", .inputs = {in({2, 6, 7, 3}), in({3, 2, 3, 4})}, .attrs = conv({1, 1}, "VALID"), .graph_unknown_dims = false},
      {.name = "conv2d/same", .op = "conv2d", .inputs = {in({1, 5, 5, 2}), in({3, 3, 2, 3})}, .attrs = conv({1, 1}, "SAME"), .graph_unknown_dims = false},
      {.name = "conv2d/same-even-kernel", .op = "conv2d", .inputs = {in({2, 6, 5, 3}), in({2, 4, 3, 2})},
       .attrs = conv({1, 1}, "SAME"), .graph_unknown_dims = false},
      {.name = "conv2d/strides2-same", .op = "conv2d", .inputs = {in({1, 7, 8, 2}), in({3, 3, 2, 3})},
       .attrs = conv({2, 2}, "SAME"), .graph_unknown_dims = false},
      {.name = "conv2d/strides23-valid", .op = "conv2d", .inputs = {in({1, 7, 8, 2}), in({3, 2, 2, 2})},
       .attrs = conv({2, 3}, "VALID"), .graph_unknown_dims = false},
      {.name = "conv2d/dilation2-same", .op = "conv2d", .inputs = {in({1, 7, 7, 2}), in({3, 3, 2, 3})},
       .attrs = conv({1, 1}, "SAME", {2, 2}), .graph_unknown_dims = false},
      {.name = "conv2d/dilation2-valid", .op = "conv2d", .inputs = {in({1, 8, 7, 2}), in({2, 3, 2, 2})},
       .attrs = conv({1, 1}, "VALID", {2, 2}), .graph_unknown_dims = false},
      {.name = "conv2d/dilation-and-strides", .op = "conv2d", .inputs = {in({1, 9, 9, 2}), in({3, 3, 2, 2})},
       .attrs = conv({2, 2}, "SAME", {2, 1}), .graph_unknown_dims = false},
      {.name = "conv2d/groups2", .op = "conv2d", .inputs = {in({1, 5, 5, 4}), in({3, 3, 2, 6})},
       .attrs = conv({1, 1}, "SAME"), .graph_unknown_dims = false},
      {.name = "conv2d/large", .op = "conv2d", .inputs = {in({2, 16, 16, 32}), in({3, 3, 32, 32})},
       .attrs = conv({1, 1}, "SAME"), .gradcheck = false, .rtol = kSumTol, .atol = kSumTol},
      {.name = "conv2d/large-groups4-strides2", .op = "conv2d", .inputs = {in({2, 15, 15, 32}), in({3, 3, 8, 16})},
       .attrs = conv({2, 2}, "SAME"), .gradcheck = false, .rtol = kSumTol, .atol = kSumTol},
      {.name = "conv2d/1x1", .op = "conv2d", .inputs = {in({2, 9, 9, 16}), in({1, 1, 16, 24})},
       .attrs = conv({1, 1}, "VALID"), .gradcheck = false},
      {.name = "conv2d/16bit", .op = "conv2d", .inputs = {in({2, 10, 10, 16}), in({3, 3, 16, 16})},
       .attrs = conv({1, 1}, "SAME"), .dtypes = half, .gradcheck = false},
      {.name = "conv2d/16bit-strides2", .op = "conv2d", .inputs = {in({1, 9, 9, 8}), in({3, 3, 8, 8})},
       .attrs = conv({2, 2}, "VALID"), .dtypes = half, .gradcheck = false},
      {.name = "conv2d/channel-mismatch", .op = "conv2d", .inputs = {in({1, 5, 5, 3}), in({3, 3, 4, 8})},
       .attrs = conv({1, 1}, "SAME"), .error = "[conv2d] input channels 3 do not match filter in-channels 4 (filters [3,3,4,8])"},
      {.name = "conv2d/groups-mismatch", .op = "conv2d", .inputs = {in({1, 5, 5, 4}), in({3, 3, 2, 5})},
       .attrs = conv({1, 1}, "SAME"), .error = "[conv2d] output channels 5 are not divisible by groups 2"},
      {.name = "conv2d/bad-padding", .op = "conv2d", .inputs = {in({1, 5, 5, 2}), in({3, 3, 2, 2})},
       .attrs = conv({1, 1}, "FULL"), .error = "[conv2d] padding must be \"SAME\" or \"VALID\", got \"FULL\""},
      {.name = "conv2d/window-too-big", .op = "conv2d", .inputs = {in({1, 2, 5, 2}), in({5, 3, 2, 2})},
       .attrs = conv({1, 1}, "VALID"), .error = "does not fit input size 2 with VALID padding"},
      {.name = "conv2d/rank", .op = "conv2d", .inputs = {in({5, 5, 2}), in({3, 3, 2, 2})}, .attrs = conv({1, 1}, "SAME"),
       .error = "[conv2d] expects a rank-4 input [n, h, w, c_in], got [5,5,2]"},
      // composites over conv2d
      {.name = "depthwise_conv2d/same", .inputs = {in({1, 5, 5, 3}), in({3, 3, 3, 2})},
       .fn = one([](auto& x) { return depthwise_conv2d(x[0], x[1], {1, 1}, "SAME"); }), .graph_unknown_dims = false},
      {.name = "depthwise_conv2d/strides2", .inputs = {in({2, 6, 6, 2}), in({2, 2, 2, 1})},
       .fn = one([](auto& x) { return depthwise_conv2d(x[0], x[1], {2, 2}, "VALID"); }), .graph_unknown_dims = false},
      {.name = "depthwise_conv2d/channel-mismatch", .inputs = {in({1, 5, 5, 2}), in({3, 3, 4, 1})},
       .fn = one([](auto& x) { return depthwise_conv2d(x[0], x[1]); }),
       .error = "[depthwise_conv2d] input channels 2 do not match filter in-channels 4"},
      {.name = "conv2d_transpose/strides2-same", .inputs = {in({1, 3, 4, 3}), in({3, 3, 2, 3})},
       .fn = one([](auto& x) { return conv2d_transpose(x[0], x[1], {1, 6, 7, 2}, {2, 2}, "SAME"); }), .graph_unknown_dims = false},
      {.name = "conv2d_transpose/valid", .inputs = {in({2, 3, 3, 2}), in({2, 3, 3, 2})},
       .fn = one([](auto& x) { return conv2d_transpose(x[0], x[1], {2, 4, 5, 3}, {1, 1}, "VALID"); }), .graph_unknown_dims = false},
      {.name = "conv2d/second-order", .inputs = {in({1, 5, 5, 2}), in({3, 3, 2, 2})},
       .fn = [](const TensorList& x) {
         GradientTape tape;
         tape.watch(x[0]);
         tape.watch(x[1]);
         Tensor y = conv2d(x[0], x[1], {2, 2}, "SAME");
         return tape.gradient({reduce_sum(y * y)}, {x[0], x[1]});
       }, .graph_unknown_dims = false},
      // the backprops (also their vjps, which second-order gradients need)
      {.name = "conv2d_backprop_input/strides2-same", .op = "conv2d_backprop_input",
       .inputs = {in({3, 3, 2, 3}), in({1, 3, 3, 3})}, .attrs = conv_sizes("input_sizes", {1, 5, 5, 2}, {2, 2}, "SAME"), .graph_unknown_dims = false},
      {.name = "conv2d_backprop_input/groups-dilation", .op = "conv2d_backprop_input",
       .inputs = {in({2, 2, 2, 4}), in({2, 4, 5, 4})}, .attrs = conv_sizes("input_sizes", {2, 6, 7, 4}, {1, 1}, "VALID", {2, 2}), .graph_unknown_dims = false},
      {.name = "conv2d_backprop_input/large", .op = "conv2d_backprop_input",
       .inputs = {in({3, 3, 16, 32}), in({2, 8, 8, 32})},
       .attrs = conv_sizes("input_sizes", {2, 16, 16, 16}, {2, 2}, "SAME"), .gradcheck = false, .rtol = kSumTol,
       .atol = kSumTol},
      {.name = "conv2d_backprop_input/mismatch", .op = "conv2d_backprop_input",
       .inputs = {in({3, 3, 2, 3}), in({1, 4, 4, 3})}, .attrs = conv_sizes("input_sizes", {1, 5, 5, 2}, {2, 2}, "SAME"),
       .error = "[conv2d_backprop_input] out_backprop [1,4,4,3] does not match the conv2d output shape [1,3,3,3]"},
      {.name = "conv2d_backprop_filter/same", .op = "conv2d_backprop_filter",
       .inputs = {in({1, 5, 5, 2}), in({1, 5, 5, 3})}, .attrs = conv_sizes("filter_sizes", {3, 3, 2, 3}, {1, 1}, "SAME"), .graph_unknown_dims = false},
      {.name = "conv2d_backprop_filter/groups-strides2", .op = "conv2d_backprop_filter",
       .inputs = {in({2, 7, 7, 4}), in({2, 3, 3, 4})}, .attrs = conv_sizes("filter_sizes", {3, 3, 2, 4}, {2, 2}, "VALID"), .graph_unknown_dims = false},
      {.name = "conv2d_backprop_filter/large", .op = "conv2d_backprop_filter",
       .inputs = {in({2, 16, 16, 16}), in({2, 16, 16, 32})},
       .attrs = conv_sizes("filter_sizes", {3, 3, 16, 32}, {1, 1}, "SAME"), .gradcheck = false, .rtol = kSumTol,
       .atol = kSumTol},
      // pools
      {.name = "max_pool/valid", .op = "max_pool", .inputs = {in({2, 6, 6, 3})}, .attrs = pool({2, 2}, {2, 2}, "VALID")},
      {.name = "max_pool/same-overlap", .op = "max_pool", .inputs = {in({1, 5, 5, 2})}, .attrs = pool({3, 3}, {2, 2}, "SAME")},
      {.name = "max_pool/same-even", .op = "max_pool", .inputs = {in({1, 6, 5, 2})}, .attrs = pool({2, 3}, {1, 2}, "SAME")},
      {.name = "max_pool/large", .op = "max_pool", .inputs = {in({2, 16, 16, 32})}, .attrs = pool({3, 3}, {2, 2}, "SAME"),
       .gradcheck = false},
      {.name = "max_pool/16bit", .op = "max_pool", .inputs = {in({2, 8, 8, 16})}, .attrs = pool({3, 3}, {2, 2}, "SAME"),
       .dtypes = half, .gradcheck = false},
      {.name = "max_pool/int32", .op = "max_pool", .inputs = {in_int({1, 4, 4, 2}, -5, 5, DType::Int32)},
       .attrs = pool({2, 2}, {1, 1}, "VALID"), .dtypes = f32, .gradcheck = false},
      // EXPLICIT: resnet's stem (3x3, stride 2, 1 on each side), then uneven pads per side.
      {.name = "max_pool/explicit", .op = "max_pool", .inputs = {in({2, 9, 9, 3})},
       .attrs = pool_explicit({3, 3}, {2, 2}, {1, 1, 1, 1})},
      {.name = "max_pool/explicit-uneven", .op = "max_pool", .inputs = {in({1, 6, 7, 2})},
       .attrs = pool_explicit({2, 3}, {2, 2}, {0, 1, 2, 1})},
      {.name = "max_pool/explicit-large", .op = "max_pool", .inputs = {in({1, 16, 16, 32})},
       .attrs = pool_explicit({3, 3}, {2, 2}, {1, 1, 1, 1}), .gradcheck = false},
      {.name = "max_pool/explicit-int32", .op = "max_pool", .inputs = {in_int({1, 5, 5, 2}, -5, 5, DType::Int32)},
       .attrs = pool_explicit({3, 3}, {2, 2}, {1, 1, 1, 1}), .dtypes = f32, .gradcheck = false},
      {.name = "max_pool/explicit-pad-as-large-as-window", .op = "max_pool", .inputs = {in({1, 4, 4, 1})},
       .attrs = pool_explicit({3, 3}, {1, 1}, {0, 3, 0, 0}),
       .error = "[max_pool] EXPLICIT padding needs explicit_paddings = 4 non-negative ints {top, bottom, left, "
                "right}, each smaller than the window [3,3], got [0,3,0,0]"},
      {.name = "max_pool/explicit-paddings-with-same", .op = "max_pool", .inputs = {in({1, 4, 4, 1})},
       .attrs = [] {
         Attrs a = pool({3, 3}, {1, 1}, "SAME");
         a.set("explicit_paddings", Ints{1, 1, 1, 1});
         return a;
       }(),
       .error = "[max_pool] explicit_paddings [1,1,1,1] given with padding \"SAME\" (only EXPLICIT takes them)"},
      {.name = "max_pool/bad-ksize", .op = "max_pool", .inputs = {in({1, 4, 4, 1})}, .attrs = pool({2}, {1, 1}, "VALID"),
       .error = "[max_pool] ksize must be two positive ints {h, w}, got [2]"},
      {.name = "max_pool_grad/same", .op = "max_pool_grad",
       .inputs = {in({1, 5, 5, 2}), in({1, 3, 3, 2}), in({1, 3, 3, 2})}, .attrs = pool({3, 3}, {2, 2}, "SAME"),
       .gradcheck = false},
      {.name = "max_pool_grad/large", .op = "max_pool_grad",
       .inputs = {in({2, 16, 16, 32}), in({2, 8, 8, 32}), in({2, 8, 8, 32})}, .attrs = pool({3, 3}, {2, 2}, "SAME"),
       .gradcheck = false},
      // The cpu kernel's disjoint-window path (stride >= window): leftover rows and cols, a
      // stride past the window, SAME padding; then ties in both paths.
      {.name = "max_pool_grad/valid-leftover", .op = "max_pool_grad",
       .inputs = {in({2, 7, 9, 5}), in({2, 3, 4, 5}), in({2, 3, 4, 5})}, .attrs = pool({2, 2}, {2, 2}, "VALID"),
       .gradcheck = false},
      {.name = "max_pool_grad/stride-past-window", .op = "max_pool_grad",
       .inputs = {in({1, 8, 7, 3}), in({1, 3, 4, 3}), in({1, 3, 4, 3})}, .attrs = pool({2, 1}, {3, 2}, "VALID"),
       .gradcheck = false},
      {.name = "max_pool_grad/same-disjoint", .op = "max_pool_grad",
       .inputs = {in({2, 5, 7, 130}), in({2, 2, 3, 130}), in({2, 2, 3, 130})}, .attrs = pool({3, 3}, {3, 3}, "SAME"),
       .gradcheck = false},
      {.name = "max_pool_grad/ties-disjoint", .op = "max_pool_grad",
       .inputs = {in_fixed(ties({2, 6, 6, 4})), in({2, 3, 3, 4}), in({2, 3, 3, 4})}, .attrs = pool({2, 2}, {2, 2}, "VALID"),
       .gradcheck = false},
      {.name = "max_pool_grad/ties-overlap", .op = "max_pool_grad",
       .inputs = {in_fixed(ties({2, 6, 6, 4})), in({2, 3, 3, 4}), in({2, 3, 3, 4})}, .attrs = pool({3, 3}, {2, 2}, "SAME"),
       .gradcheck = false},
      // EXPLICIT in both paths of the cpu kernel: overlapping windows, then disjoint ones.
      {.name = "max_pool_grad/explicit-overlap", .op = "max_pool_grad",
       .inputs = {in_fixed(ties({2, 9, 9, 4})), in({2, 5, 5, 4}), in({2, 5, 5, 4})},
       .attrs = pool_explicit({3, 3}, {2, 2}, {1, 1, 1, 1}), .gradcheck = false},
      {.name = "max_pool_grad/explicit-disjoint", .op = "max_pool_grad",
       .inputs = {in({2, 7, 6, 4}), in({2, 4, 4, 4}), in({2, 4, 4, 4})},
       .attrs = pool_explicit({2, 2}, {2, 2}, {1, 0, 1, 1}), .gradcheck = false},
      {.name = "max_pool_grad/mismatch", .op = "max_pool_grad",
       .inputs = {in({1, 5, 5, 2}), in({1, 3, 3, 2}), in({1, 2, 3, 2})}, .attrs = pool({3, 3}, {2, 2}, "SAME"),
       .error = "[max_pool_grad] grad [1,2,3,2] does not match the max_pool output shape [1,3,3,2]"},
      {.name = "avg_pool/valid", .op = "avg_pool", .inputs = {in({2, 6, 6, 3})}, .attrs = pool({2, 2}, {2, 2}, "VALID")},
      {.name = "avg_pool/same-edges", .op = "avg_pool", .inputs = {in({1, 5, 5, 2})}, .attrs = pool({3, 3}, {2, 2}, "SAME")},
      {.name = "avg_pool/same-even", .op = "avg_pool", .inputs = {in({1, 6, 5, 2})}, .attrs = pool({2, 3}, {1, 2}, "SAME")},
      {.name = "avg_pool/large", .op = "avg_pool", .inputs = {in({2, 16, 16, 32})}, .attrs = pool({3, 3}, {1, 1}, "SAME"),
       .gradcheck = false},
      {.name = "avg_pool/16bit", .op = "avg_pool", .inputs = {in({2, 8, 8, 16})}, .attrs = pool({3, 3}, {2, 2}, "SAME"),
       .dtypes = half, .gradcheck = false},
      {.name = "avg_pool_grad/same", .op = "avg_pool_grad", .inputs = {in({1, 3, 3, 2})},
       .attrs = [] {
         Attrs a = pool({3, 3}, {2, 2}, "SAME");
         a.set("input_sizes", Ints{1, 5, 5, 2});
         return a;
       }()},
      {.name = "avg_pool_grad/large", .op = "avg_pool_grad", .inputs = {in({2, 16, 16, 32})},
       .attrs = [] {
         Attrs a = pool({3, 3}, {1, 1}, "SAME");
         a.set("input_sizes", Ints{2, 16, 16, 32});
         return a;
       }(),
       .gradcheck = false},
      {.name = "max_pool2d/explicit-tf-8-ints", .inputs = {in({1, 5, 4, 2})},
       .fn = one([](auto& x) { return max_pool2d(x[0], {3, 3}, {2, 2}, "EXPLICIT", {0, 0, 1, 1, 2, 0, 0, 0}); })},
      {.name = "max_pool2d/tf-4-ints", .inputs = {in({1, 4, 4, 2})},
       .fn = one([](auto& x) { return max_pool2d(x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"); })},
      {.name = "avg_pool2d/composite-call", .inputs = {in({1, 5, 4, 2})},
       .fn = one([](auto& x) { return avg_pool2d(x[0], {2, 2}, {2, 1}, "SAME"); })},
  };
}

// Max pooling sends each window's gradient to its first maximum in row-major order.
DF_KINK_CASES(conv) {
  auto pool_fn = [](Axes k, Axes s, const char* p) {
    return [=](const TensorList& x) { return TensorList{max_pool2d(x[0], k, s, p)}; };
  };
  return {
      {.name = "max_pool/tie-first", .fn = pool_fn({2, 2}, {2, 2}, "VALID"),
       .inputs = {f64({1, 1, 1, 1}, {1, 2, 2, 1})}, .grads = {f64({1, 0, 0, 0}, {1, 2, 2, 1})}},
      {.name = "max_pool/tie-overlapping", .fn = pool_fn({1, 2}, {1, 1}, "VALID"),
       .inputs = {f64({3, 3, 3}, {1, 1, 3, 1})}, .grads = {f64({1, 1, 0}, {1, 1, 3, 1})}},
      // EXPLICIT: padded cells never win; each window's first valid maximum does.
      {.name = "max_pool/tie-explicit",
       .fn = [](const TensorList& x) { return TensorList{max_pool2d(x[0], {2, 2}, {2, 2}, "EXPLICIT", {1, 0, 1, 0})}; },
       .inputs = {f64({1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 3, 3, 1})},
       .grads = {f64({1, 1, 0, 1, 1, 0, 0, 0, 0}, {1, 3, 3, 1})}},
      {.name = "max_pool/tie-row-major", .fn = pool_fn({2, 2}, {1, 1}, "VALID"),
       .inputs = {f64({0, 2, 2, 2}, {1, 2, 2, 1})}, .grads = {f64({0, 1, 0, 0}, {1, 2, 2, 1})}},
  };
}

}  // namespace deepflow::testing
