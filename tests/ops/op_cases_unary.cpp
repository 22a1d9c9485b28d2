// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the unary family (ops/unary.cpp, ops/cast.cpp, ops/activation.cpp).
#include <cmath>

#include "op_cases.h"

namespace deepflow::testing {

namespace {
using Fn = std::function<TensorList(const TensorList&)>;
template <class F> Fn unary_fn(F f) {
  return [f](const TensorList& x) { return TensorList{f(x[0])}; };
}
}  // namespace

DF_OP_CASES(unary) {
  const std::vector<DType> all_float = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};
  const std::vector<DType> f32 = {DType::Float32};
  // Exactly representable halves, so round's ties are exercised in every float dtype.
  Tensor halves = f64({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.7, 0.2, 7.5}, {10});
  return {
      {.name = "neg", .op = "neg", .inputs = {in({4, 5})}, .dtypes = all_float},
      {.name = "neg/int32", .op = "neg", .inputs = {in_int({7}, -50, 50, DType::Int32)}, .dtypes = f32, .gradcheck = false},
      {.name = "neg/int8", .op = "neg", .inputs = {in_int({7}, -100, 100, DType::Int8)}, .dtypes = f32, .gradcheck = false},
      {.name = "abs", .op = "abs", .inputs = {in_away({4, 5}, 0.05)}, .dtypes = all_float},
      {.name = "abs/int64", .op = "abs", .inputs = {in_int({9}, -9, 9)}, .dtypes = f32, .gradcheck = false},
      {.name = "sign", .op = "sign", .inputs = {in_away({3, 4}, 0.05)}, .dtypes = all_float},
      {.name = "sign/int32", .op = "sign", .inputs = {in_int({9}, -3, 3, DType::Int32)}, .dtypes = f32, .gradcheck = false},
      {.name = "exp", .op = "exp", .inputs = {in({4, 5}, -4, 4)}, .dtypes = all_float},
      {.name = "exp/large", .op = "exp", .inputs = {in({70001}, -100, 100)}, .gradcheck = false},
      {.name = "log", .op = "log", .inputs = {in({4, 5}, 0.5, 4)}, .dtypes = all_float},
      {.name = "log/large", .op = "log", .inputs = {in({70001}, 1e-3, 1e3)}, .gradcheck = false},
      {.name = "log1p", .op = "log1p", .inputs = {in({4, 5}, -0.5, 3)}, .dtypes = all_float},
      {.name = "expm1", .op = "expm1", .inputs = {in({4, 5}, -3, 3)}, .dtypes = all_float},
      {.name = "sqrt", .op = "sqrt", .inputs = {in({4, 5}, 0.5, 4)}, .dtypes = all_float},
      {.name = "rsqrt", .op = "rsqrt", .inputs = {in({4, 5}, 0.5, 4)}, .dtypes = all_float},
      {.name = "square", .op = "square", .inputs = {in({4, 5})}, .dtypes = all_float},
      {.name = "square/int32", .op = "square", .inputs = {in_int({8}, -1000, 1000, DType::Int32)}, .dtypes = f32, .gradcheck = false},
      {.name = "sin", .op = "sin", .inputs = {in({4, 5}, -4, 4)}, .dtypes = all_float},
      {.name = "cos", .op = "cos", .inputs = {in({4, 5}, -4, 4)}, .dtypes = all_float},
      {.name = "tanh", .op = "tanh", .inputs = {in({4, 5}, -3, 3)}, .dtypes = all_float},
      {.name = "tanh/large", .op = "tanh", .inputs = {in({70001}, -30, 30)}, .gradcheck = false},
      {.name = "sigmoid", .op = "sigmoid", .inputs = {in({4, 5}, -5, 5)}, .dtypes = all_float},
      {.name = "sigmoid/large", .op = "sigmoid", .inputs = {in({70001}, -100, 100)}, .gradcheck = false},
      {.name = "relu", .op = "relu", .inputs = {in_away({4, 5}, 0.05)}, .dtypes = all_float},
      {.name = "relu/int32", .op = "relu", .inputs = {in_int({9}, -5, 5, DType::Int32)}, .dtypes = f32, .gradcheck = false},
      {.name = "relu_grad", .op = "relu_grad", .inputs = {in({4, 5}), in_away({4, 5}, 0.05)}, .dtypes = all_float},
      {.name = "relu_grad/large", .op = "relu_grad", .inputs = {in({70001}), in({70001})}, .gradcheck = false},
      // Features at and around the kink, -0 and NaN (all give g * 0 but the positive one).
      {.name = "relu_grad/kink", .op = "relu_grad", .inputs = {in({6}), in_fixed(f64({-1, 0, -0.0, 1e-30, NAN, 3}, {6}))},
       .dtypes = all_float, .gradcheck = false},
      {.name = "relu_grad/int32", .op = "relu_grad",
       .inputs = {in_int({9}, -5, 5, DType::Int32), in_int({9}, -5, 5, DType::Int32)}, .dtypes = f32, .gradcheck = false},
      {.name = "erf", .op = "erf", .inputs = {in({4, 5}, -3, 3)}, .dtypes = all_float},
      {.name = "floor", .op = "floor", .inputs = {in({4, 5}, -5, 5)}, .dtypes = all_float},
      {.name = "ceil", .op = "ceil", .inputs = {in({4, 5}, -5, 5)}, .dtypes = all_float},
      {.name = "round", .op = "round", .inputs = {in({4, 5}, -5, 5)}, .dtypes = all_float},
      {.name = "round/ties", .op = "round", .inputs = {in_fixed(halves)}, .dtypes = all_float, .gradcheck = false},
      {.name = "round/int64", .op = "round", .inputs = {in_int({5}, -5, 5)}, .dtypes = f32, .gradcheck = false},
      {.name = "logical_not", .op = "logical_not", .inputs = {in_bool({3, 4})}, .dtypes = f32, .gradcheck = false},
      // Errors.
      {.name = "log/int", .op = "log", .inputs = {in_int({3}, 1, 5, DType::Int32)},
       .error = "[log] expects a floating dtype for x, got int32"},
      {.name = "sigmoid/int", .op = "sigmoid", .inputs = {in_int({3}, 1, 5)}, .error = "[sigmoid] expects a floating dtype"},
      {.name = "neg/bool", .op = "neg", .inputs = {in_bool({3})}, .error = "[neg] expects a floating or signed integer dtype"},
      {.name = "neg/uint8", .op = "neg", .inputs = {in_int({3}, 0, 5, DType::UInt8)}, .error = "got uint8"},
      {.name = "relu_grad/shape", .op = "relu_grad", .inputs = {in({2, 3}), in({3, 2})},
       .error = "[relu_grad] gradients [2,3] and features [3,2] must have the same shape"},
      {.name = "relu_grad/dtype", .op = "relu_grad", .inputs = {in({3}), in_int({3}, 0, 5, DType::Int32)},
       .error = "[relu_grad] dtypes differ"},
      {.name = "relu/bool", .op = "relu", .inputs = {in_bool({3})}, .error = "[relu] expects a numeric dtype for x, got bool"},
      {.name = "logical_not/float", .op = "logical_not", .inputs = {in({3})},
       .error = "[logical_not] expects bool for x, got float32"},

      // --- cast, identity, stop_gradient ---
      // Large enough for the threaded kernel (the reference is the oracle).
      {.name = "cast/large-to-bf16", .op = "cast", .inputs = {in({70001}, -1e3, 1e3)},
       .attrs = {{"dtype", DType::BFloat16}}, .dtypes = {DType::Float32}, .gradcheck = false},
      {.name = "cast/large-to-int32", .op = "cast", .inputs = {in({70001}, -1e10, 1e10)},
       .attrs = {{"dtype", DType::Int32}}, .dtypes = {DType::Float32}, .gradcheck = false},
      {.name = "cast/to-f64", .op = "cast", .inputs = {in({4, 5})}, .attrs = {{"dtype", DType::Float64}},
       .dtypes = {DType::Float32, DType::BFloat16, DType::Float16}},
      {.name = "cast/to-f32", .op = "cast", .inputs = {in({4, 5})}, .attrs = {{"dtype", DType::Float32}},
       .dtypes = {DType::Float64, DType::BFloat16, DType::Float16}, .gradcheck = false},
      {.name = "cast/to-bf16", .op = "cast", .inputs = {in({4, 5})}, .attrs = {{"dtype", DType::BFloat16}},
       .dtypes = {DType::Float32, DType::Float64, DType::Float16}, .gradcheck = false},
      {.name = "cast/to-f16", .op = "cast", .inputs = {in({4, 5})}, .attrs = {{"dtype", DType::Float16}},
       .dtypes = {DType::Float32, DType::Float64, DType::BFloat16}, .gradcheck = false},
      {.name = "cast/to-int32", .op = "cast", .inputs = {in({4, 5}, -100, 100)}, .attrs = {{"dtype", DType::Int32}},
       .dtypes = all_float, .gradcheck = false},
      {.name = "cast/to-uint8", .op = "cast", .inputs = {in({9}, 0, 255)}, .attrs = {{"dtype", DType::UInt8}},
       .dtypes = {DType::Float32, DType::Float64}, .gradcheck = false},
      {.name = "cast/to-bool", .op = "cast", .inputs = {in({9})}, .attrs = {{"dtype", DType::Bool}}, .gradcheck = false},
      {.name = "cast/int64-to-f32", .op = "cast", .inputs = {in_int({6}, -1000, 1000)}, .attrs = {{"dtype", DType::Float32}},
       .dtypes = f32, .gradcheck = false},
      {.name = "cast/int8-to-int64", .op = "cast", .inputs = {in_int({6}, -100, 100, DType::Int8)},
       .attrs = {{"dtype", DType::Int64}}, .dtypes = f32, .gradcheck = false},
      {.name = "cast/bool-to-f32", .op = "cast", .inputs = {in_bool({6})}, .attrs = {{"dtype", DType::Float32}},
       .dtypes = f32, .gradcheck = false},
      {.name = "cast/missing-dtype", .op = "cast", .inputs = {in({3})}, .error = "[cast] missing required attribute 'dtype'"},
      {.name = "identity", .op = "identity", .inputs = {in({3, 4})}, .dtypes = all_float},
      {.name = "identity/int", .op = "identity", .inputs = {in_int({3}, 0, 9)}, .dtypes = f32, .gradcheck = false},
      {.name = "stop_gradient", .op = "stop_gradient", .inputs = {in({3, 4})}, .dtypes = all_float, .gradcheck = false},

      // --- activations (composites) ---
      {.name = "relu6", .inputs = {in({40}, -3, 9)}, .fn = unary_fn([](const Tensor& x) { return relu6(x); }),
       .gradcheck = false},
      {.name = "relu6/grad", .inputs = {in_fixed(f64({-1.5, 0.3, 2, 5.5, 6.2, 8}, {6}))},
       .fn = unary_fn([](const Tensor& x) { return relu6(x); })},
      {.name = "elu", .inputs = {in_away({4, 5}, 0.05, 3)}, .fn = unary_fn([](const Tensor& x) { return elu(x); })},
      {.name = "elu/alpha", .inputs = {in_away({4, 5}, 0.05, 3)},
       .fn = unary_fn([](const Tensor& x) { return elu(x, 0.5); })},
      {.name = "selu", .inputs = {in_away({4, 5}, 0.05, 3)}, .fn = unary_fn([](const Tensor& x) { return selu(x); })},
      {.name = "gelu", .inputs = {in({4, 5}, -4, 4)}, .fn = unary_fn([](const Tensor& x) { return gelu(x); })},
      {.name = "gelu/approximate", .inputs = {in({4, 5}, -4, 4)},
       .fn = unary_fn([](const Tensor& x) { return gelu(x, true); })},
      {.name = "softplus", .inputs = {in_away({4, 5}, 0.05, 6)}, .fn = unary_fn([](const Tensor& x) { return softplus(x); })},
      {.name = "leaky_relu", .inputs = {in_away({4, 5}, 0.05)},
       .fn = unary_fn([](const Tensor& x) { return leaky_relu(x); })},
      {.name = "leaky_relu/alpha", .inputs = {in_away({4, 5}, 0.05)},
       .fn = unary_fn([](const Tensor& x) { return leaky_relu(x, 0.01); })},
  };
}

DF_KINK_CASES(unary) {
  auto kink = [](const char* name, Fn f, std::vector<double> x, std::vector<double> g) {
    Shape s{int64_t(x.size())};
    return KinkCase{.name = name, .fn = std::move(f), .inputs = {f64(x, s)}, .grads = {f64(g, s)}};
  };
  return {
      kink("relu'(0)=0", unary_fn([](const Tensor& x) { return relu(x); }), {-1, 0, 1}, {0, 0, 1}),
      kink("abs'(0)=0", unary_fn([](const Tensor& x) { return abs(x); }), {-1, 0, 1}, {-1, 0, 1}),
      kink("sign'=0", unary_fn([](const Tensor& x) { return sign(x); }), {-1, 0, 1}, {0, 0, 0}),
      kink("floor'=0", unary_fn([](const Tensor& x) { return floor(x); }), {-1, 1, 1.5}, {0, 0, 0}),
      kink("ceil'=0", unary_fn([](const Tensor& x) { return ceil(x); }), {-1, 1, 1.5}, {0, 0, 0}),
      kink("round'=0", unary_fn([](const Tensor& x) { return round(x); }), {-0.5, 1, 1.5}, {0, 0, 0}),
      kink("relu6'(0)=relu6'(6)=0", unary_fn([](const Tensor& x) { return relu6(x); }), {-1, 0, 3, 6, 7},
           {0, 0, 1, 0, 0}),
      kink("leaky_relu'(0)=alpha", unary_fn([](const Tensor& x) { return leaky_relu(x); }), {-1, 0, 1},
           {0.2, 0.2, 1}),
      kink("elu'(0)=1", unary_fn([](const Tensor& x) { return elu(x, 0.5); }), {0, 1}, {1, 1}),
      kink("softplus'(0)=0.5", unary_fn([](const Tensor& x) { return softplus(x); }), {0}, {0.5}),
      // No NaN from the unused branch where exp would overflow.
      kink("elu'(800)=1", unary_fn([](const Tensor& x) { return elu(x); }), {800}, {1}),
      kink("softplus'(800)=1", unary_fn([](const Tensor& x) { return softplus(x); }), {800, -800}, {1, 0}),
  };
}

}  // namespace deepflow::testing
