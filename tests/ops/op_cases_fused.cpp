// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the fused primitives (ops/fused.cpp), which graph passes create.
#include "deepflow/graph/passes.h"
#include "op_cases.h"

namespace deepflow::testing {

namespace {
Attrs fm(const char* act, bool bias, bool ta = false, bool tb = false) {
  return {{"transpose_a", ta}, {"transpose_b", tb}, {"activation", std::string(act)}, {"has_bias", bias}};
}
Attrs prog(const char* p) { return {{"program", std::string(p)}}; }
using V = std::vector<int64_t>;
// fused_conv2d's attributes: padding, activation, bias; the rest through `more`.
Attrs fc(const char* padding, const char* act, bool bias, Attrs more = {}) {
  Attrs a{{"padding", std::string(padding)}, {"activation", std::string(act)}, {"has_bias", bias}};
  for (const auto& [k, v] : more.items()) a.set(k, v);
  return a;
}
}  // namespace

DF_OP_CASES(fused) {
  std::vector<OpCase> rows = {
      // fused_matmul: every activation, with and without bias, transposes, batches.
      {.name = "fused_matmul/bias", .op = "fused_matmul", .inputs = {in({3, 4}), in({4, 5}), in({5})},
       .attrs = fm("", true)},
      {.name = "fused_matmul/relu", .op = "fused_matmul", .inputs = {in_away({3, 4}, 0.2), in({4, 5}), in({5})},
       .attrs = fm("relu", true), .gradcheck = false},
      {.name = "fused_matmul/relu-grad", .op = "fused_matmul",
       .inputs = {in_fixed(f64({1, 2, 3, 4, -1, -2}, {2, 3})), in_fixed(f64({1, -1, 0.5, 2, -1, 1}, {3, 2})),
                  in_fixed(f64({0.25, -0.5}, {2}))},
       .attrs = fm("relu", true)},
      {.name = "fused_matmul/tanh-nt", .op = "fused_matmul", .inputs = {in({3, 4}), in({5, 4}), in({5})},
       .attrs = fm("tanh", true, false, true)},
      {.name = "fused_matmul/sigmoid-tn", .op = "fused_matmul", .inputs = {in({4, 3}), in({4, 5}), in({5})},
       .attrs = fm("sigmoid", true, true, false)},
      {.name = "fused_matmul/gelu-tt", .op = "fused_matmul", .inputs = {in({4, 3}), in({5, 4}), in({5})},
       .attrs = fm("gelu", true, true, true), .rtol = 1e-4, .atol = 1e-5},
      {.name = "fused_matmul/relu-no-bias", .op = "fused_matmul", .inputs = {in({3, 4}), in({4, 5})},
       .attrs = fm("relu", false), .gradcheck = false},
      {.name = "fused_matmul/batch-folded", .op = "fused_matmul", .inputs = {in({2, 3, 4}), in({4, 5}), in({5})},
       .attrs = fm("tanh", true)},
      {.name = "fused_matmul/batch-equal", .op = "fused_matmul", .inputs = {in({2, 3, 4}), in({2, 5, 4}), in({5})},
       .attrs = fm("sigmoid", true, false, true)},
      {.name = "fused_matmul/large", .op = "fused_matmul", .inputs = {in({64, 300}), in({300, 70}), in({70})},
       .attrs = fm("relu", true), .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      // One row times a transposed b (the classifier's own loop): k with an unrolled part,
      // 8-wide steps and a scalar tail (75, 203), and k below one vector; then 2 to 8 rows
      // (oneDNN), batch dims folded into rows.
      {.name = "fused_matmul/row1-nt-bias", .op = "fused_matmul", .inputs = {in({1, 75}), in({9, 75}), in({9})},
       .attrs = fm("", true, false, true)},
      {.name = "fused_matmul/row1-nt-relu-no-bias", .op = "fused_matmul", .inputs = {in({1, 203}), in({33, 203})},
       .attrs = fm("relu", false, false, true), .gradcheck = false},
      {.name = "fused_matmul/row1-folded-nt-short-k", .op = "fused_matmul",
       .inputs = {in({1, 1, 5}), in({6, 5}), in({6})}, .attrs = fm("relu", true, false, true), .gradcheck = false},
      {.name = "fused_matmul/rows2-nt-relu", .op = "fused_matmul", .inputs = {in({2, 75}), in({9, 75}), in({9})},
       .attrs = fm("relu", true, false, true), .gradcheck = false},
      {.name = "fused_matmul/rows3-nt", .op = "fused_matmul", .inputs = {in({3, 75}), in({9, 75})},
       .attrs = fm("", false, false, true)},
      {.name = "fused_matmul/rows5-nt-bias", .op = "fused_matmul", .inputs = {in({5, 75}), in({9, 75}), in({9})},
       .attrs = fm("", true, false, true)},
      {.name = "fused_matmul/rows7-nt-relu-no-bias", .op = "fused_matmul", .inputs = {in({7, 75}), in({9, 75})},
       .attrs = fm("relu", false, false, true), .gradcheck = false},
      {.name = "fused_matmul/rows8-nt-relu", .op = "fused_matmul", .inputs = {in({8, 203}), in({33, 203}), in({33})},
       .attrs = fm("relu", true, false, true), .gradcheck = false},
      {.name = "fused_matmul/rows6-folded-nt", .op = "fused_matmul", .inputs = {in({2, 3, 13}), in({4, 13}), in({4})},
       .attrs = fm("", true, false, true)},
      {.name = "fused_matmul/rows4-nt-short-k", .op = "fused_matmul", .inputs = {in({4, 5}), in({6, 5}), in({6})},
       .attrs = fm("relu", true, false, true), .gradcheck = false},
      {.name = "fused_matmul/bad-bias", .op = "fused_matmul", .inputs = {in({3, 4}), in({4, 5}), in({4})},
       .attrs = fm("", true), .error = "[fused_matmul] bias must be [5] (the columns of the product [3,5]), got [4]"},
      {.name = "fused_matmul/bad-activation", .op = "fused_matmul", .inputs = {in({3, 4}), in({4, 5})},
       .attrs = fm("swish", false), .error = "[fused_matmul] unknown activation \"swish\""},
      {.name = "fused_matmul/inner-mismatch", .op = "fused_matmul", .inputs = {in({3, 4}), in({5, 5})},
       .attrs = fm("", false), .error = "[fused_matmul] [matmul] inner dimensions differ"},
      // fused_conv2d: every padding kind and activation, groups, depthwise, the cached filter.
      {.name = "fused_conv2d/same-bias", .op = "fused_conv2d", .inputs = {in({2, 5, 5, 3}), in({3, 3, 3, 4}), in({4})},
       .attrs = fc("SAME", "", true)},
      {.name = "fused_conv2d/explicit-tanh", .op = "fused_conv2d",
       .inputs = {in({1, 6, 5, 2}), in({3, 2, 2, 3}), in({3})},
       .attrs = fc("EXPLICIT", "tanh", true, {{"explicit_paddings", V{1, 2, 0, 1}}, {"strides", V{2, 1}}})},
      {.name = "fused_conv2d/valid-sigmoid-dilated", .op = "fused_conv2d",
       .inputs = {in({1, 7, 7, 2}), in({2, 2, 2, 3})},
       .attrs = fc("VALID", "sigmoid", false, {{"dilations", V{2, 2}}})},
      {.name = "fused_conv2d/explicit-elu", .op = "fused_conv2d",
       .inputs = {in({2, 4, 4, 2}), in({2, 2, 2, 3}), in({3})},
       .attrs = fc("EXPLICIT", "elu", true, {{"explicit_paddings", V{0, 1, 1, 0}}}), .rtol = 1e-4, .atol = 1e-5},
      {.name = "fused_conv2d/grouped-relu", .op = "fused_conv2d",
       .inputs = {in({1, 5, 5, 4}), in({3, 3, 2, 6}), in({6})},
       .attrs = fc("SAME", "relu", true), .gradcheck = false},
      {.name = "fused_conv2d/depthwise-relu6", .op = "fused_conv2d",
       .inputs = {in({2, 6, 6, 3}, -4, 4), in({3, 3, 1, 6}, -2, 2), in({6}, -3, 3)},
       .attrs = fc("SAME", "relu6", true, {{"strides", V{2, 2}}}), .gradcheck = false},
      {.name = "fused_conv2d/clip", .op = "fused_conv2d", .inputs = {in({1, 4, 4, 8}), in({1, 1, 8, 8}), in({8})},
       .attrs = fc("VALID", "clip", true, {{"clip_min", -0.5}, {"clip_max", 0.5}}), .gradcheck = false},
      {.name = "fused_conv2d/leaky-relu", .op = "fused_conv2d", .inputs = {in({1, 4, 4, 2}), in({3, 3, 2, 2})},
       .attrs = fc("EXPLICIT", "leaky_relu", false, {{"explicit_paddings", V{1, 1, 1, 1}}, {"alpha", 0.1}}),
       .gradcheck = false},
      {.name = "fused_conv2d/relu-grad", .op = "fused_conv2d",
       .inputs = {in_fixed(f64({1, -2, 0.5, 3, -1, 2, 0.25, -0.5, 1.5}, {1, 3, 3, 1})),
                  in_fixed(f64({1, -1, 0.5, 2}, {2, 2, 1, 1})), in_fixed(f64({0.3}, {1}))},
       .attrs = fc("VALID", "relu", true)},
      {.name = "fused_conv2d/clip-grad", .op = "fused_conv2d",
       .inputs = {in_fixed(f64({1, -2, 0.5, 3, -1, 2, 0.25, -0.5, 1.5}, {1, 3, 3, 1})),
                  in_fixed(f64({1, -1, 0.5, 2}, {2, 2, 1, 1})), in_fixed(f64({0.25}, {1}))},
       .attrs = fc("VALID", "clip", true, {{"clip_min", -1.3}, {"clip_max", 3.1}})},
      {.name = "fused_conv2d/constant-filter", .op = "fused_conv2d",
       .inputs = {in({2, 9, 9, 16}), in({3, 3, 16, 32}, -0.5, 0.5), in({32})},
       .attrs = fc("EXPLICIT", "relu", true, {{"explicit_paddings", V{1, 1, 1, 1}}, {"constant_filter", true}}),
       .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      {.name = "fused_conv2d/large-depthwise", .op = "fused_conv2d",
       .inputs = {in({2, 12, 12, 32}), in({3, 3, 1, 32}), in({32})},
       .attrs = fc("SAME", "relu6", true, {{"constant_filter", true}}), .gradcheck = false, .rtol = 1e-4,
       .atol = 1e-4},
      // The residual summand (sum post-op, then the activation), with and without bias.
      {.name = "fused_conv2d/summand-tanh", .op = "fused_conv2d",
       .inputs = {in({1, 5, 5, 2}), in({3, 3, 2, 3}), in({1, 3, 3, 3})},
       .attrs = fc("VALID", "tanh", false, {{"has_summand", true}})},
      {.name = "fused_conv2d/summand-bias-relu", .op = "fused_conv2d",
       .inputs = {in({2, 5, 5, 3}), in({3, 3, 3, 4}), in({4}), in({2, 5, 5, 4})},
       .attrs = fc("SAME", "relu", true, {{"has_summand", true}}), .gradcheck = false},
      {.name = "fused_conv2d/summand-clip-grad", .op = "fused_conv2d",
       .inputs = {in_fixed(f64({1, -2, 0.5, 3, -1, 2, 0.25, -0.5, 1.5}, {1, 3, 3, 1})),
                  in_fixed(f64({1, -1, 0.5, 2}, {2, 2, 1, 1})), in_fixed(f64({0.25}, {1})),
                  in_fixed(f64({0.5, -1, 2, -0.25}, {1, 2, 2, 1}))},
       .attrs = fc("VALID", "clip", true, {{"clip_min", -1.3}, {"clip_max", 3.1}, {"has_summand", true}})},
      {.name = "fused_conv2d/summand-large", .op = "fused_conv2d",
       .inputs = {in({2, 9, 9, 16}), in({3, 3, 16, 32}, -0.5, 0.5), in({32}), in({2, 9, 9, 32})},
       .attrs = fc("EXPLICIT", "relu", true,
                   {{"explicit_paddings", V{1, 1, 1, 1}}, {"constant_filter", true}, {"has_summand", true}}),
       .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      {.name = "fused_conv2d/summand-depthwise-strided", .op = "fused_conv2d",
       .inputs = {in({2, 12, 12, 32}), in({3, 3, 1, 32}), in({32}), in({2, 6, 6, 32})},
       .attrs = fc("SAME", "", true, {{"strides", V{2, 2}}, {"has_summand", true}}), .gradcheck = false,
       .rtol = 1e-4, .atol = 1e-4},
      {.name = "fused_conv2d/bad-summand", .op = "fused_conv2d",
       .inputs = {in({1, 4, 4, 2}), in({3, 3, 2, 5}), in({1, 4, 4, 4})},
       .attrs = fc("SAME", "", false, {{"has_summand", true}}),
       .error = "[fused_conv2d] summand must be float32[1,4,4,5] (the output's type), got float32[1,4,4,4]"},
      {.name = "fused_conv2d/missing-summand", .op = "fused_conv2d",
       .inputs = {in({1, 4, 4, 2}), in({3, 3, 2, 5}), in({5})},
       .attrs = fc("SAME", "", true, {{"has_summand", true}}),
       .error = "[fused_conv2d] takes 4 inputs (has_bias is true, has_summand is true), got 3"},
      {.name = "fused_conv2d/bad-bias", .op = "fused_conv2d", .inputs = {in({1, 4, 4, 2}), in({3, 3, 2, 5}), in({4})},
       .attrs = fc("SAME", "", true),
       .error = "[fused_conv2d] bias must be [5] (the output channels of filters [3,3,2,5]), got [4]"},
      {.name = "fused_conv2d/bad-activation", .op = "fused_conv2d", .inputs = {in({1, 4, 4, 2}), in({3, 3, 2, 5})},
       .attrs = fc("SAME", "swish", false), .error = "[fused_conv2d] unknown activation \"swish\""},
      {.name = "fused_conv2d/bad-explicit", .op = "fused_conv2d", .inputs = {in({1, 4, 4, 2}), in({3, 3, 2, 5})},
       .attrs = fc("EXPLICIT", "", false, {{"explicit_paddings", V{1, 1, -1, 1}}}),
       .error = "[fused_conv2d] EXPLICIT padding needs explicit_paddings = 4 non-negative ints"},
      {.name = "fused_conv2d/paddings-without-explicit", .op = "fused_conv2d",
       .inputs = {in({1, 4, 4, 2}), in({3, 3, 2, 5})},
       .attrs = fc("SAME", "", false, {{"explicit_paddings", V{1, 1, 1, 1}}}),
       .error = "[fused_conv2d] explicit_paddings [1,1,1,1] given with padding \"SAME\""},
      {.name = "fused_conv2d/clip-bounds", .op = "fused_conv2d", .inputs = {in({1, 4, 4, 2}), in({3, 3, 2, 5})},
       .attrs = fc("SAME", "clip", false, {{"clip_min", 2.0}, {"clip_max", 1.0}}),
       .error = "[fused_conv2d] clip_min 2 is greater than clip_max 1"},
      {.name = "fused_conv2d/window-too-big", .op = "fused_conv2d", .inputs = {in({1, 2, 4, 2}), in({4, 3, 2, 5})},
       .attrs = fc("EXPLICIT", "", false, {{"explicit_paddings", V{0, 1, 0, 0}}}),
       .error = "[fused_conv2d] the window (4 dilated by 1) does not fit input size 2 padded by 0 + 1"},
      {.name = "fused_conv2d/channels", .op = "fused_conv2d", .inputs = {in({1, 4, 4, 3}), in({3, 3, 2, 4})},
       .attrs = fc("SAME", "", false), .error = "[fused_conv2d] input channels 3 do not match filter in-channels 2"},
      // fused_elementwise: chains with scalars, immediates and rows; every op the programs use.
      {.name = "fused_elementwise/bias-relu", .op = "fused_elementwise", .inputs = {in_away({3, 4}, 0.1), in({4})},
       .attrs = prog("$0 $1 add relu"), .gradcheck = false},
      {.name = "fused_elementwise/chain", .op = "fused_elementwise", .inputs = {in({2, 3, 5}), in({2, 3, 5}), in({})},
       .attrs = prog("$0 $1 mul $2 sub #0.5 mul tanh $0 add")},
      {.name = "fused_elementwise/unary-all", .op = "fused_elementwise", .inputs = {in({40}, 0.5, 2)},
       .attrs = prog("$0 exp log sqrt rsqrt neg abs square sin cos sigmoid log1p expm1 erf tanh")},
      {.name = "fused_elementwise/binary-all", .op = "fused_elementwise", .inputs = {in({33}, 0.5, 2), in({33}, 0.5, 2)},
       .attrs = prog("$0 $1 pow $0 div $1 maximum $0 minimum $1 add $0 sub #2 mul")},
      {.name = "fused_elementwise/floor-ceil-round", .op = "fused_elementwise", .inputs = {in({300}, -5, 5)},
       .attrs = prog("$0 floor $0 ceil add $0 round add $0 sign add"), .gradcheck = false},
      {.name = "fused_elementwise/exp-wide", .op = "fused_elementwise",
       .inputs = {in_fixed(f64({-1e9, -200, -90, 0, 1, 88, 100, -0.5}, {8}))}, .attrs = prog("$0 exp $0 sigmoid add"),
       .gradcheck = false},
      {.name = "fused_elementwise/large", .op = "fused_elementwise", .inputs = {in({300, 257}), in({257})},
       .attrs = prog("$0 $1 add #0.1 mul $0 mul tanh"), .gradcheck = false},
      {.name = "fused_elementwise/bad-program", .op = "fused_elementwise", .inputs = {in({3})},
       .attrs = prog("$0 add"), .error = "[fused_elementwise] 'add' needs 2 operands, the stack has 1"},
      {.name = "fused_elementwise/bad-input", .op = "fused_elementwise", .inputs = {in({3})},
       .attrs = prog("$1 relu"), .error = "[fused_elementwise] bad input token '$1'"},
      {.name = "fused_elementwise/not-elementwise", .op = "fused_elementwise", .inputs = {in({3})},
       .attrs = prog("$0 matmul"), .error = "[fused_elementwise] 'matmul' is not an elementwise op"},
      {.name = "fused_elementwise/shape-mismatch", .op = "fused_elementwise", .inputs = {in({3, 4}), in({3})},
       .attrs = prog("$0 $1 add"), .error = "[fused_elementwise] input 1 has shape [3]"},
      // The public functions.
      {.name = "fused_matmul/fn", .op = "fused_matmul",
       .inputs = {in({3, 4}), in({4, 2}), in({2})},
       .fn = [](const TensorList& x) { return TensorList{fused_matmul(x[0], x[1], x[2], false, false, "tanh")}; }},
      {.name = "fused_conv2d/fn", .op = "fused_conv2d", .inputs = {in({1, 5, 5, 2}), in({3, 3, 2, 3}), in({3})},
       .fn = [](const TensorList& x) {
         return TensorList{fused_conv2d(x[0], x[1], x[2],
                                        {.strides = {2}, .padding = "EXPLICIT", .explicit_paddings = {1, 0, 0, 1},
                                         .activation = "tanh"})};
       }},
      {.name = "fused_conv2d/fn-summand", .op = "fused_conv2d",
       .inputs = {in({1, 5, 5, 2}), in({1, 1, 2, 3}), in({1, 5, 5, 3})},
       .fn = [](const TensorList& x) {
         return TensorList{fused_conv2d(x[0], x[1], Tensor(), {.activation = "sigmoid"}, x[2])};
       }},
      {.name = "fused_elementwise/fn", .op = "fused_elementwise",
       .inputs = {in({3, 4}), in({3, 4})},
       .fn = [](const TensorList& x) { return TensorList{fused_elementwise({x[0], x[1]}, "$0 $1 mul sigmoid")}; }},
  };
  // As conv2d's rows: with every leading dim unknown the filters get an unknown kh, and the
  // filter gradient needs the filter shape.
  for (OpCase& r : rows)
    if (r.op == "fused_conv2d" && r.gradcheck) r.graph_unknown_dims = false;
  return rows;
}

}  // namespace deepflow::testing
