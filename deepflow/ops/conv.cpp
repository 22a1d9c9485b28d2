// SPDX-License-Identifier: Apache-2.0
// Convolution and pooling primitives (NHWC activations, HWIO filters), their
// gradients, and the composites depthwise_conv2d and conv2d_transpose.
//
// In graphs with unknown (-1) dims: the backprops take static input_sizes / filter_sizes
// attributes, so a differentiated graph needs the filters' shape and the input's spatial
// and channel dims known; the batch may be unknown (input_sizes then holds -1 for n,
// which is the batch of the gradient input when the graph runs).
#include "deepflow/ops/conv.h"

#include "deepflow/ops/infer_util.h"

namespace deepflow {
namespace {

using detail::check_float;
using detail::check_same_dtype;

void check_rank4(const OpCall& c, const Shape& s, const char* what, const char* dims) {
  DF_CHECK(s.rank() == 4, "[", c.name(), "] expects a rank-4 ", what, " ", dims, ", got ", s);
}
void check_pair(const OpCall& c, const char* attr) {
  const auto& v = c.attr_ints(attr);
  DF_CHECK(v.size() == 2 && v[0] > 0 && v[1] > 0, "[", c.name(), "] ", attr,
           " must be two positive ints {h, w}, got ", attr_to_string(c.attr(attr)));
}
bool check_padding(const OpCall& c) {
  const std::string& p = c.attr_string("padding");
  DF_CHECK(p == "SAME" || p == "VALID", "[", c.name(), "] padding must be \"SAME\" or \"VALID\", got \"", p, "\"");
  return p == "SAME";
}
// A shape given as an attribute (input_sizes, filter_sizes): 4 non-negative ints.
Shape sizes_attr(const OpCall& c, const char* attr, const char* dims) {
  const auto& v = c.attr_ints(attr);
  bool ok = v.size() == 4;
  for (int64_t d : v) ok = ok && d >= 0;
  DF_CHECK(ok, "[", c.name(), "] ", attr, " must be 4 non-negative ints ", dims, ", got ",
           attr_to_string(c.attr(attr)));
  return Shape(v);
}
// input_sizes, whose batch may be -1 (a graph with an unknown batch): it is then the batch
// of the gradient input `dy`, known when the graph runs. h, w and c must be known.
Shape input_sizes_attr(const OpCall& c, const char* dims, const Tensor& dy) {
  const auto& v = c.attr_ints("input_sizes");
  bool ok = v.size() == 4 && v[0] >= -1;
  for (size_t i = 1; ok && i < 4; ++i) ok = v[i] >= 0;
  DF_CHECK(ok, "[", c.name(), "] input_sizes must be 4 non-negative ints ", dims, ", got ",
           attr_to_string(c.attr("input_sizes")), " (n may also be -1: the batch of the gradient)");
  Shape s(v);
  if (s[0] < 0 && dy.rank() >= 1) s[0] = dy.dim(0);
  return s;
}

// One spatial output dim; unknown (-1) stays unknown. A VALID window that does not fit
// (TensorFlow's "negative output size") is an error.
int64_t out_dim(const OpCall& c, int64_t in, int64_t k, int64_t s, int64_t d, bool same, const Shape& x,
                const Shape& w) {
  if (in < 0 || (!same && k < 0)) return kUnknownDim;
  DF_CHECK(same || in - ((k - 1) * d + 1) + s >= 0, "[", c.name(), "] the window (", k, " dilated by ", d,
           ") does not fit input size ", in, " with VALID padding (input ", x, ", window ", w, ")");
  return detail::window_dim(in, k, s, d, same).out;
}

// The shared conv2d shape rule: input x [n,h,w,c_in], filters w [kh,kw,c_in/g,c_out].
Shape conv_out_shape(const OpCall& c, const Shape& x, const Shape& w) {
  check_rank4(c, x, "input", "[n, h, w, c_in]");
  check_rank4(c, w, "filters", "[kh, kw, c_in / groups, c_out]");
  check_pair(c, "strides");
  check_pair(c, "dilations");
  const bool same = check_padding(c);
  const int64_t ci = x[3], fi = w[2], co = w[3];
  if (ci >= 0 && fi >= 0) {
    DF_CHECK(fi > 0 && ci % fi == 0, "[", c.name(), "] input channels ", ci, " do not match filter in-channels ", fi,
             " (filters ", w, ")");
    if (co >= 0)
      DF_CHECK(co % (ci / fi) == 0, "[", c.name(), "] output channels ", co, " are not divisible by groups ",
               ci / fi, " (input ", x, ", filters ", w, ")");
  }
  const auto& s = c.attr_ints("strides");
  const auto& d = c.attr_ints("dilations");
  return Shape{x[0], out_dim(c, x[1], w[0], s[0], d[0], same, x, w), out_dim(c, x[2], w[1], s[1], d[1], same, x, w),
               co};
}

// max_pool and max_pool_grad also take padding "EXPLICIT" (the other pools do not).
bool takes_explicit(const OpCall& c) { return c.def->id == OpId::MaxPool || c.def->id == OpId::MaxPoolGrad; }

// EXPLICIT pooling: x [n,h,w,c] padded by explicit_paddings {top, bottom, left, right}, then
// VALID. A pad as large as the window would make windows of padding only (no maximum), so
// each pad must be smaller than its window dim (ONNX's rule for MaxPool's pads as well).
Shape explicit_pool_out_shape(const OpCall& c, const Shape& x, const std::vector<int64_t>& k,
                              const std::vector<int64_t>& s) {
  const auto& p = c.attr_ints("explicit_paddings");
  bool ok = p.size() == 4;
  for (size_t i = 0; ok && i < 4; ++i) ok = p[i] >= 0 && p[i] < k[i / 2];
  DF_CHECK(ok, "[", c.name(), "] EXPLICIT padding needs explicit_paddings = 4 non-negative ints {top, bottom, ",
           "left, right}, each smaller than the window ", Shape{k[0], k[1]}, ", got ",
           attr_to_string(c.attr("explicit_paddings")));
  auto dim = [&](int64_t in, int64_t kk, int64_t ss, int64_t before, int64_t after) {
    if (in < 0) return kUnknownDim;
    DF_CHECK(in + before + after >= kk, "[", c.name(), "] the window ", Shape{k[0], k[1]}, " does not fit input ", x,
             " padded by ", attr_to_string(c.attr("explicit_paddings")), " {top, bottom, left, right}");
    return detail::window_dim(in + before + after, kk, ss, 1, false).out;
  };
  return Shape{x[0], dim(x[1], k[0], s[0], p[0], p[1]), dim(x[2], k[1], s[1], p[2], p[3]), x[3]};
}

// The shared pooling shape rule: input x [n,h,w,c] -> [n,oh,ow,c].
Shape pool_out_shape(const OpCall& c, const Shape& x) {
  check_rank4(c, x, "input", "[n, h, w, c]");
  check_pair(c, "ksize");
  check_pair(c, "strides");
  const auto& k = c.attr_ints("ksize");
  const auto& s = c.attr_ints("strides");
  if (takes_explicit(c)) {
    const std::string& p = c.attr_string("padding");
    DF_CHECK(p == "SAME" || p == "VALID" || p == "EXPLICIT", "[", c.name(),
             "] padding must be \"SAME\", \"VALID\" or \"EXPLICIT\", got \"", p, "\"");
    if (p == "EXPLICIT") return explicit_pool_out_shape(c, x, k, s);
    DF_CHECK(c.attr_ints("explicit_paddings").empty(), "[", c.name(), "] explicit_paddings ",
             attr_to_string(c.attr("explicit_paddings")), " given with padding \"", p, "\" (only EXPLICIT takes them)");
  }
  const bool same = check_padding(c);
  const Shape w{k[0], k[1]};
  return Shape{x[0], out_dim(c, x[1], k[0], s[0], 1, same, x, w), out_dim(c, x[2], k[1], s[1], 1, same, x, w), x[3]};
}

void check_matches(const OpCall& c, const Tensor& t, const char* what, const Shape& expected, const char* from) {
  DF_CHECK(t.shape().compatible_with(expected), "[", c.name(), "] ", what, " ", t.shape(), " does not match ", from,
           " output shape ", expected);
}

Attrs conv_attrs(const OpCall& c) {
  return {{"strides", c.attr_ints("strides")}, {"padding", c.attr_string("padding")},
          {"dilations", c.attr_ints("dilations")}};
}
Attrs pool_attrs(const OpCall& c) {
  return {{"ksize", c.attr_ints("ksize")}, {"strides", c.attr_ints("strides")}, {"padding", c.attr_string("padding")}};
}
Attrs max_pool_attrs(const OpCall& c) {
  Attrs a = pool_attrs(c);
  a.set("explicit_paddings", c.attr_ints("explicit_paddings"));
  return a;
}
Attrs with(Attrs a, const char* name, const Shape& s) {
  a.set(name, s.to_vector());
  return a;
}

// TensorFlow accepts 1, 2 or 4 ints (4 as {1, h, w, 1} for NHWC); the primitives take {h, w}.
std::vector<int64_t> hw_pair(const char* fn, const char* attr, const Axes& v) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return v;
  DF_CHECK(v.size() == 4 && v[0] == 1 && v[3] == 1, "[", fn, "] ", attr,
           " must be 1, 2 or 4 ints ({1, h, w, 1} in NHWC), got ", attr_to_string(AttrValue(v)));
  return {v[1], v[2]};
}
Attrs make_conv_attrs(const char* fn, const Axes& strides, const std::string& padding, const Axes& dilations) {
  return {{"strides", hw_pair(fn, "strides", strides)}, {"padding", padding},
          {"dilations", hw_pair(fn, "dilations", dilations)}};
}
Attrs make_pool_attrs(const char* fn, const Axes& ksize, const Axes& strides, const std::string& padding) {
  return {{"ksize", hw_pair(fn, "ksize", ksize)}, {"strides", hw_pair(fn, "strides", strides)}, {"padding", padding}};
}
// explicit_paddings as {top, bottom, left, right}, or TensorFlow's 8 NHWC ints
// {0, 0, top, bottom, left, right, 0, 0}.
Attrs make_max_pool_attrs(const char* fn, const Axes& ksize, const Axes& strides, const std::string& padding,
                          const Axes& explicit_paddings) {
  Attrs a = make_pool_attrs(fn, ksize, strides, padding);
  const Axes& p = explicit_paddings;
  if (p.size() == 8 && p[0] == 0 && p[1] == 0 && p[6] == 0 && p[7] == 0) {
    a.set("explicit_paddings", std::vector<int64_t>(p.begin() + 2, p.begin() + 6));
  } else {
    DF_CHECK(p.size() == 4 || p.empty(), "[", fn, "] explicit_paddings must be {top, bottom, left, right} or ",
             "8 NHWC ints with no batch or channel padding, got ", attr_to_string(AttrValue(p)));
    a.set("explicit_paddings", p);
  }
  return a;
}

const std::vector<AttrSpec> kConvAttrs = {
    {"strides", std::vector<int64_t>{1, 1}}, {"padding", "VALID"}, {"dilations", std::vector<int64_t>{1, 1}}};
std::vector<AttrSpec> conv_attrs_plus(const char* sizes) {
  auto a = kConvAttrs;
  a.push_back(AttrSpec::required_of(sizes, AttrKind::Ints));
  return a;
}
std::vector<AttrSpec> pool_attrs_spec() {
  return {AttrSpec::required_of("ksize", AttrKind::Ints), AttrSpec::required_of("strides", AttrKind::Ints),
          {"padding", "VALID"}};
}
std::vector<AttrSpec> max_pool_attrs_spec() {
  auto a = pool_attrs_spec();
  a.push_back({"explicit_paddings", std::vector<int64_t>{}});
  return a;
}

}  // namespace

// --- conv2d --- input [n,h,w,c_in], filters [kh,kw,c_in/groups,c_out] -> [n,oh,ow,c_out].
// Dilations together with strides > 1 are allowed (TensorFlow's CPU kernel refuses them).
DF_DEFINE_OP(Conv2D, {.num_inputs = 2, .attrs = kConvAttrs,
  .infer = [](const OpCall& c, TypeList& out) {
    check_float(c, c.in(0), "input");
    check_same_dtype(c, c.in(0), c.in(1));
    out.push_back({c.in(0).dtype(), conv_out_shape(c, c.in(0).shape(), c.in(1).shape())});
  },
  .vjp = [](const OpCall& c, const TensorList& g) {
    Attrs a = conv_attrs(c);
    return TensorList{dispatch1(OpId::Conv2DBackpropInput, {c.in(1), g[0]}, with(a, "input_sizes", c.in(0).shape())),
                      dispatch1(OpId::Conv2DBackpropFilter, {c.in(0), g[0]}, with(a, "filter_sizes", c.in(1).shape()))};
  }});
Tensor conv2d(const Tensor& input, const Tensor& filters, const Axes& strides, const std::string& padding,
              const Axes& dilations) {
  return dispatch1(OpId::Conv2D, {input, filters}, make_conv_attrs("conv2d", strides, padding, dilations));
}

// --- conv2d_backprop_input --- filters [kh,kw,c_in/g,c_out], out_backprop [n,oh,ow,c_out]
// -> input_sizes [n,h,w,c_in]. Bilinear: its vjp is (backprop_filter(G, dy), conv2d(G, w)).
DF_DEFINE_OP(Conv2DBackpropInput, {.num_inputs = 2, .attrs = conv_attrs_plus("input_sizes"),
  .infer = [](const OpCall& c, TypeList& out) {
    check_float(c, c.in(0), "filters");
    check_same_dtype(c, c.in(0), c.in(1));
    Shape x = input_sizes_attr(c, "[n, h, w, c_in]", c.in(1));
    check_rank4(c, c.in(1).shape(), "out_backprop", "[n, oh, ow, c_out]");
    check_matches(c, c.in(1), "out_backprop", conv_out_shape(c, x, c.in(0).shape()), "the conv2d");
    out.push_back({c.in(0).dtype(), x});
  },
  .vjp = [](const OpCall& c, const TensorList& g) {
    Attrs a = conv_attrs(c);
    return TensorList{dispatch1(OpId::Conv2DBackpropFilter, {g[0], c.in(1)}, with(a, "filter_sizes", c.in(0).shape())),
                      dispatch1(OpId::Conv2D, {g[0], c.in(0)}, a)};
  }});
Tensor conv2d_backprop_input(const Tensor& filters, const Tensor& out_backprop, const Shape& input_sizes,
                             const Axes& strides, const std::string& padding, const Axes& dilations) {
  Attrs a = make_conv_attrs("conv2d_backprop_input", strides, padding, dilations);
  return dispatch1(OpId::Conv2DBackpropInput, {filters, out_backprop}, with(a, "input_sizes", input_sizes));
}

// --- conv2d_backprop_filter --- input [n,h,w,c_in], out_backprop [n,oh,ow,c_out]
// -> filter_sizes [kh,kw,c_in/g,c_out]. Bilinear: its vjp is (backprop_input(G, dy), conv2d(x, G)).
DF_DEFINE_OP(Conv2DBackpropFilter, {.num_inputs = 2, .attrs = conv_attrs_plus("filter_sizes"),
  .infer = [](const OpCall& c, TypeList& out) {
    check_float(c, c.in(0), "input");
    check_same_dtype(c, c.in(0), c.in(1));
    Shape w = sizes_attr(c, "filter_sizes", "[kh, kw, c_in / groups, c_out]");
    check_rank4(c, c.in(1).shape(), "out_backprop", "[n, oh, ow, c_out]");
    check_matches(c, c.in(1), "out_backprop", conv_out_shape(c, c.in(0).shape(), w), "the conv2d");
    out.push_back({c.in(0).dtype(), w});
  },
  .vjp = [](const OpCall& c, const TensorList& g) {
    Attrs a = conv_attrs(c);
    return TensorList{dispatch1(OpId::Conv2DBackpropInput, {g[0], c.in(1)}, with(a, "input_sizes", c.in(0).shape())),
                      dispatch1(OpId::Conv2D, {c.in(0), g[0]}, a)};
  }});
Tensor conv2d_backprop_filter(const Tensor& input, const Tensor& out_backprop, const Shape& filter_sizes,
                              const Axes& strides, const std::string& padding, const Axes& dilations) {
  Attrs a = make_conv_attrs("conv2d_backprop_filter", strides, padding, dilations);
  return dispatch1(OpId::Conv2DBackpropFilter, {input, out_backprop}, with(a, "filter_sizes", filter_sizes));
}

// --- depthwise_conv2d --- input [n,h,w,c], filter [kh,kw,c,m] -> [n,oh,ow,c*m]: a grouped
// conv with groups = c over the filter seen as [kh,kw,1,c*m]; output channel c_i*m + j, as TF.
Tensor depthwise_conv2d(const Tensor& input, const Tensor& filter, const Axes& strides, const std::string& padding,
                        const Axes& dilations) {
  DF_CHECK(input.rank() == 4 && filter.rank() == 4, "[depthwise_conv2d] expects input [n, h, w, c] and filter ",
           "[kh, kw, c, m], got ", input.shape(), " and ", filter.shape());
  DF_CHECK(input.dim(3) < 0 || filter.dim(2) < 0 || input.dim(3) == filter.dim(2), "[depthwise_conv2d] input channels ",
           input.dim(3), " do not match filter in-channels ", filter.dim(2), " (filter ", filter.shape(), ")");
  const int64_t cm = filter.dim(2) < 0 || filter.dim(3) < 0 ? kUnknownDim : filter.dim(2) * filter.dim(3);
  return conv2d(input, reshape(filter, {filter.dim(0), filter.dim(1), 1, cm}), strides, padding, dilations);
}

// --- conv2d_transpose --- input [n,h,w,c_in], filters [kh,kw,c_out,c_in] -> output_shape:
// the input gradient of a conv2d mapping output_shape to input's shape.
Tensor conv2d_transpose(const Tensor& input, const Tensor& filters, const Shape& output_shape, const Axes& strides,
                        const std::string& padding, const Axes& dilations) {
  return conv2d_backprop_input(filters, input, output_shape, strides, padding, dilations);
}

// --- max_pool --- input [n,h,w,c] -> [n,oh,ow,c]; SAME and EXPLICIT pad with -inf (padded
// cells never win). EXPLICIT takes explicit_paddings {top, bottom, left, right}.
DF_DEFINE_OP(MaxPool, {.num_inputs = 1, .attrs = max_pool_attrs_spec(),
  .infer = [](const OpCall& c, TypeList& out) {
    DF_CHECK(c.in(0).dtype() != DType::Bool, "[", c.name(), "] does not take bool tensors");
    out.push_back({c.in(0).dtype(), pool_out_shape(c, c.in(0).shape())});
  },
  .vjp = [](const OpCall& c, const TensorList& g) {
    return TensorList{dispatch1(OpId::MaxPoolGrad, {c.in(0), c.out(0), g[0]}, max_pool_attrs(c))};
  }});
Tensor max_pool2d(const Tensor& input, const Axes& ksize, const Axes& strides, const std::string& padding) {
  return dispatch1(OpId::MaxPool, {input}, make_pool_attrs("max_pool2d", ksize, strides, padding));
}
Tensor max_pool2d(const Tensor& input, const Axes& ksize, const Axes& strides, const std::string& padding,
                  const Axes& explicit_paddings) {
  return dispatch1(OpId::MaxPool, {input},
                   make_max_pool_attrs("max_pool2d", ksize, strides, padding, explicit_paddings));
}

// --- max_pool_grad --- input [n,h,w,c], output and grad [n,oh,ow,c] -> [n,h,w,c]; each
// window's gradient goes to its first maximum in row-major order (TF's CPU rule).
// Second-order gradients through max pooling are not supported.
DF_DEFINE_OP(MaxPoolGrad, {.num_inputs = 3, .attrs = max_pool_attrs_spec(),
  .infer = [](const OpCall& c, TypeList& out) {
    check_float(c, c.in(0), "input");
    check_same_dtype(c, c.in(0), c.in(1));
    check_same_dtype(c, c.in(0), c.in(2));
    Shape y = pool_out_shape(c, c.in(0).shape());
    check_matches(c, c.in(1), "output", y, "the max_pool");
    check_matches(c, c.in(2), "grad", y, "the max_pool");
    out.push_back({c.in(0).dtype(), c.in(0).shape()});
  },
  .non_differentiable = true});
Tensor max_pool_grad(const Tensor& input, const Tensor& output, const Tensor& grad, const Axes& ksize,
                     const Axes& strides, const std::string& padding, const Axes& explicit_paddings) {
  return dispatch1(OpId::MaxPoolGrad, {input, output, grad},
                   make_max_pool_attrs("max_pool_grad", ksize, strides, padding, explicit_paddings));
}

// --- avg_pool --- input [n,h,w,c] -> [n,oh,ow,c]; divides by the valid cells of each window.
DF_DEFINE_OP(AvgPool, {.num_inputs = 1, .attrs = pool_attrs_spec(),
  .infer = [](const OpCall& c, TypeList& out) {
    check_float(c, c.in(0), "input");
    out.push_back({c.in(0).dtype(), pool_out_shape(c, c.in(0).shape())});
  },
  .vjp = [](const OpCall& c, const TensorList& g) {
    return TensorList{dispatch1(OpId::AvgPoolGrad, {g[0]}, with(pool_attrs(c), "input_sizes", c.in(0).shape()))};
  }});
Tensor avg_pool2d(const Tensor& input, const Axes& ksize, const Axes& strides, const std::string& padding) {
  return dispatch1(OpId::AvgPool, {input}, make_pool_attrs("avg_pool2d", ksize, strides, padding));
}

// --- avg_pool_grad --- grad [n,oh,ow,c] -> input_sizes [n,h,w,c]. Linear: its vjp is avg_pool.
DF_DEFINE_OP(AvgPoolGrad, {.num_inputs = 1, .attrs = [] {
    auto a = pool_attrs_spec();
    a.push_back(AttrSpec::required_of("input_sizes", AttrKind::Ints));
    return a;
  }(),
  .infer = [](const OpCall& c, TypeList& out) {
    check_float(c, c.in(0), "grad");
    Shape x = input_sizes_attr(c, "[n, h, w, c]", c.in(0));
    check_rank4(c, c.in(0).shape(), "grad", "[n, oh, ow, c]");
    check_matches(c, c.in(0), "grad", pool_out_shape(c, x), "the avg_pool");
    out.push_back({c.in(0).dtype(), x});
  },
  .vjp = [](const OpCall& c, const TensorList& g) {
    return TensorList{dispatch1(OpId::AvgPool, {g[0]}, pool_attrs(c))};
  }});
Tensor avg_pool_grad(const Tensor& grad, const Shape& input_sizes, const Axes& ksize, const Axes& strides,
                     const std::string& padding) {
  Attrs a = make_pool_attrs("avg_pool_grad", ksize, strides, padding);
  return dispatch1(OpId::AvgPoolGrad, {grad}, with(a, "input_sizes", input_sizes));
}

}  // namespace deepflow
