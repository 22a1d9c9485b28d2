// SPDX-License-Identifier: Apache-2.0
// Op-table rows of fused_conv_chain (ops/conv_chain.cpp): inverted-residual and residual
// blocks, an NCHW stem, odd channel counts (padded in oneDNN's blocked layout), a summand
// that is also the layer's input, value reuse, and malformed layer records.
#include "deepflow/ops/conv_chain.h"
#include "op_cases.h"

namespace deepflow::testing {

namespace {
using V = std::vector<int64_t>;

struct L {
  int src, summand;
  bool bias;
  FusedConvOptions o;
};

Attrs chain(const std::vector<L>& layers, const char* format = "NHWC", const char* output_format = "NHWC") {
  std::vector<int64_t> ints;
  std::vector<double> floats;
  for (const L& l : layers) conv_chain::encode(l.src, l.summand, l.bias, l.o, ints, floats);
  return {{"layers", ints},
          {"layer_params", floats},
          {"data_format", std::string(format)},
          {"output_format", std::string(output_format)}};
}

Attrs with_int8(Attrs a, std::vector<double> ranges) {
  a.set("int8_ranges", std::move(ranges));
  return a;
}

FusedConvOptions opt(const char* padding, const char* act, V strides = {1, 1}, V pads = {}) {
  FusedConvOptions o;
  o.padding = padding, o.activation = act, o.strides = strides, o.explicit_paddings = pads;
  return o;
}
}  // namespace

DF_OP_CASES(conv_chain) {
  // MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 project + the block's input.
  const Attrs inverted = chain({{0, -1, true, opt("VALID", "relu6")},
                                {1, -1, true, opt("SAME", "relu6")},
                                {2, 0, true, opt("VALID", "")}});
  std::vector<OpCase> rows = {
      {.name = "fused_conv_chain/inverted-residual", .op = "fused_conv_chain",
       .inputs = {in({2, 9, 9, 8}), in({1, 1, 8, 16}, -0.5, 0.5), in({16}), in({3, 3, 1, 16}, -0.5, 0.5), in({16}),
                  in({1, 1, 16, 8}, -0.5, 0.5), in({8})},
       .attrs = inverted, .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      // A 3-channel NCHW stem with explicit pads and stride 2, 24 channels (not a block
      // multiple), then a layer that sums its own input, then one reading value 1 again; NCHW out.
      {.name = "fused_conv_chain/nchw-stem", .op = "fused_conv_chain",
       .inputs = {in({1, 3, 11, 11}), in({3, 3, 3, 24}, -0.5, 0.5), in({24}), in({3, 3, 24, 24}, -0.2, 0.2),
                  in({1, 1, 24, 40}, -0.5, 0.5)},
       .attrs = chain({{0, -1, true, opt("EXPLICIT", "relu", {2, 2}, {1, 1, 1, 1})},
                       {1, 1, false, opt("SAME", "tanh")},
                       {1, -1, false, opt("VALID", "sigmoid")}},
                      "NCHW", "NCHW"),
       .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      // Large enough (the 1x1 result over 4 MiB) for oneDNN to run the 1x1 and the
      // depthwise conv as one primitive (its depthwise post-op), stride 1 and 2.
      {.name = "fused_conv_chain/expand-depthwise-fused", .op = "fused_conv_chain",
       .inputs = {in({2, 112, 112, 16}), in({1, 1, 16, 48}, -0.5, 0.5), in({48}), in({3, 3, 1, 48}, -0.5, 0.5),
                  in({48}), in({1, 1, 48, 48}, -0.5, 0.5), in({48}), in({3, 3, 1, 48}, -0.5, 0.5), in({48})},
       .attrs = chain({{0, -1, true, opt("VALID", "relu6")},
                       {1, -1, true, opt("EXPLICIT", "relu6", {1, 1}, {1, 1, 1, 1})},
                       {2, -1, true, opt("VALID", "")},
                       {3, -1, true, opt("EXPLICIT", "tanh", {2, 2}, {1, 1, 1, 1})}}),
       .dtypes = {DType::Float32}, .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      // ResNet's downsampling block: the shortcut is a strided 1x1 conv of the input.
      {.name = "fused_conv_chain/resnet-downsample", .op = "fused_conv_chain",
       .inputs = {in({2, 8, 8, 16}), in({3, 3, 16, 32}, -0.2, 0.2), in({32}), in({3, 3, 32, 32}, -0.2, 0.2), in({32}),
                  in({1, 1, 16, 32}, -0.5, 0.5), in({32})},
       .attrs = chain({{0, -1, true, opt("SAME", "relu", {2, 2})},
                       {1, -1, true, opt("SAME", "")},
                       {0, 2, true, opt("VALID", "relu", {2, 2})}}),
       .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      // Float64 and smooth activations: the gradient check replays the layers' own vjps,
      // through a value read twice and a summand.
      {.name = "fused_conv_chain/grad", .op = "fused_conv_chain",
       .inputs = {in({1, 4, 4, 2}), in({1, 1, 2, 3}), in({3}), in({3, 3, 1, 3}), in({1, 1, 3, 3})},
       .attrs = chain({{0, -1, true, opt("VALID", "tanh")},
                       {1, 1, false, opt("SAME", "sigmoid")},
                       {2, 1, false, opt("VALID", "")}})},
      {.name = "fused_conv_chain/grad-nchw", .op = "fused_conv_chain",
       .inputs = {in({1, 2, 4, 3}), in({2, 2, 2, 3}), in({1, 1, 3, 2})},
       .attrs = chain({{0, -1, false, opt("EXPLICIT", "elu", {1, 1}, {1, 0, 0, 1})},
                       {1, -1, false, opt("VALID", "tanh")}},
                      "NCHW", "NCHW"),
       .rtol = 1e-4, .atol = 1e-5},
      {.name = "fused_conv_chain/fn", .op = "fused_conv_chain",
       .inputs = {in({1, 5, 5, 2}), in({3, 3, 2, 4}), in({4}), in({1, 1, 4, 4})},
       .fn = [](const TensorList& x) {
         return TensorList{fused_conv_chain(x[0], {{.src = 0, .filters = x[1], .bias = x[2],
                                                    .options = {.padding = "SAME", .activation = "tanh"}},
                                                   {.src = 1, .summand = 1, .filters = x[3]}})};
       }},
      // int8 (the serving optimizer's): the kernels against the reference's fake-quantized
      // layers, within a step of the last value (4 / 127, 4 / 255); uint8 relu values, an
      // int8 summand of a uint8 result, a depthwise layer.
      {.name = "fused_conv_chain/int8-inverted-residual", .op = "fused_conv_chain",
       .inputs = {in({2, 9, 9, 8}), in({1, 1, 8, 16}, -0.5, 0.5), in({16}), in({3, 3, 1, 16}, -0.5, 0.5), in({16}),
                  in({1, 1, 16, 8}, -0.5, 0.5), in({8})},
       .attrs = with_int8(inverted, {-1, 1, 0, 4, 0, 4, -4, 4}), .dtypes = {DType::Float32}, .gradcheck = false,
       .rtol = 0, .atol = 0.035},
      {.name = "fused_conv_chain/int8-resnet-downsample", .op = "fused_conv_chain",
       .inputs = {in({2, 16, 8, 8}), in({3, 3, 16, 32}, -0.2, 0.2), in({32}), in({3, 3, 32, 32}, -0.2, 0.2), in({32}),
                  in({1, 1, 16, 32}, -0.5, 0.5), in({32})},
       .attrs = with_int8(chain({{0, -1, true, opt("SAME", "relu", {2, 2})},
                                 {1, -1, true, opt("SAME", "")},
                                 {0, 2, true, opt("VALID", "relu", {2, 2})}},
                                "NCHW", "NCHW"),
                          {-1, 1, 0, 3, -3, 3, 0, 4}),
       .dtypes = {DType::Float32}, .gradcheck = false, .rtol = 0, .atol = 0.035},
      {.name = "fused_conv_chain/int8-ranges", .op = "fused_conv_chain",
       .inputs = {in({1, 4, 4, 2}), in({1, 1, 2, 2})},
       .attrs = with_int8(chain({{0, -1, false, opt("VALID", "")}}), {-1, 1, 2, 1}),
       .dtypes = {DType::Float32},
       .error = "[fused_conv_chain] int8_ranges of value 1 is [2, 1]: need finite lo <= hi"},
      {.name = "fused_conv_chain/int8-ranges-count", .op = "fused_conv_chain",
       .inputs = {in({1, 4, 4, 2}), in({1, 1, 2, 2})},
       .attrs = with_int8(chain({{0, -1, false, opt("VALID", "")}}), {-1, 1}), .dtypes = {DType::Float32},
       .error = "[fused_conv_chain] int8_ranges must hold {lo, hi} for each of the 2 values"},
      {.name = "fused_conv_chain/reads-later-value", .op = "fused_conv_chain",
       .inputs = {in({1, 4, 4, 2}), in({1, 1, 2, 2})}, .attrs = chain({{1, -1, false, opt("VALID", "")}}),
       .error = "[fused_conv_chain] layer 0 reads value 1 and sums value -1: a layer reads the input (0) or an "
                "earlier layer's result"},
      {.name = "fused_conv_chain/input-count", .op = "fused_conv_chain",
       .inputs = {in({1, 4, 4, 2}), in({1, 1, 2, 2})}, .attrs = chain({{0, -1, true, opt("VALID", "")}}),
       .error = "[fused_conv_chain] its 1 layers take 3 inputs (the input, then each layer's filters and bias), got 2"},
      {.name = "fused_conv_chain/layer-shapes", .op = "fused_conv_chain",
       .inputs = {in({1, 4, 4, 2}), in({1, 1, 2, 3}), in({1, 1, 2, 2})},
       .attrs = chain({{0, -1, false, opt("VALID", "")}, {1, -1, false, opt("VALID", "")}}),
       .error = "[fused_conv_chain] layer 1: [fused_conv2d] input channels 3 do not match filter in-channels 2"},
      {.name = "fused_conv_chain/summand-shape", .op = "fused_conv_chain",
       .inputs = {in({1, 4, 4, 2}), in({1, 1, 2, 3})}, .attrs = chain({{0, 0, false, opt("VALID", "")}}),
       .error = "[fused_conv_chain] layer 0: [fused_conv2d] summand must be float32[1,4,4,3]"},
      {.name = "fused_conv_chain/output-format", .op = "fused_conv_chain",
       .inputs = {in({1, 4, 4, 2}), in({1, 1, 2, 2})},
       .attrs = chain({{0, -1, false, opt("VALID", "")}}, "NHWC", "CHWN"),
       .error = "[fused_conv_chain] output_format must be \"NHWC\" or \"NCHW\", got \"CHWN\""},
      {.name = "fused_conv_chain/data-format", .op = "fused_conv_chain",
       .inputs = {in({1, 4, 4, 2}), in({1, 1, 2, 2})}, .attrs = chain({{0, -1, false, opt("VALID", "")}}, "NCWH"),
       .error = "[fused_conv_chain] data_format must be \"NHWC\" or \"NCHW\", got \"NCWH\""},
  };
  // As fused_conv2d's rows: the filter gradient needs the filter shape.
  for (OpCase& r : rows) r.graph_unknown_dims = !r.gradcheck;
  return rows;
}

}  // namespace deepflow::testing
