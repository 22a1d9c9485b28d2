// SPDX-License-Identifier: Apache-2.0
// The public op functions: TensorFlow's names, eager by default.
//
// Every function here goes through dispatch(), so it runs eagerly, builds a graph
// node inside a graph or tracing scope, and is recorded by GradientTape. Each
// declaration carries its shape contract. Binary ops broadcast like numpy and
// TensorFlow; their inputs must have the same dtype (no implicit promotion,
// as in TensorFlow). Axes may be negative.
//
//   Tensor x = random_normal({4, 3});
//   Tensor w = ones({3, 2});
//   Tensor y = relu(matmul(x, w) + 1.0);      // [4,2]
//   Tensor m = reduce_mean(y, {0});            // [2]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "deepflow/core/tensor.h"

namespace deepflow {

using Axes = std::vector<int64_t>;

// --- graph building blocks ---

/// A graph input of the given dtype and shape (-1 for unknown dims); it must be fed.
/// Only meaningful inside a graph scope (deepflow/graph/builder.h).
Tensor placeholder(DType dtype, const Shape& shape);
/// Zeros (ones) of x's dtype and shape; a node when x is symbolic or a graph is being built.
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);

// --- unary elementwise: x -> same shape and dtype ---

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
/// -1, 0 or 1; gradient 0 everywhere.
Tensor sign(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
/// max(x, 0); the gradient at 0 is 0.
Tensor relu(const Tensor& x);
/// relu's gradient from its output (tf.raw_ops.ReluGrad): gradients * (features > 0),
/// where features = relu(x); both of one shape and dtype. A product as in TensorFlow, so
/// a non-finite gradient where features <= 0 gives NaN, and a NaN feature gives 0 * g.
Tensor relu_grad(const Tensor& gradients, const Tensor& features);
Tensor erf(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
/// Rounds half to even, like tf.round.
Tensor round(const Tensor& x);
/// bool -> bool.
Tensor logical_not(const Tensor& x);

// --- activations (composites) ---

/// min(max(x, 0), 6).
Tensor relu6(const Tensor& x);
/// x if x > 0 else alpha * (exp(x) - 1).
Tensor elu(const Tensor& x, double alpha = 1.0);
/// scale * elu(x, alpha) with the SELU constants.
Tensor selu(const Tensor& x);
/// x * Phi(x); `approximate` uses the tanh form.
Tensor gelu(const Tensor& x, bool approximate = false);
/// log(1 + exp(x)), computed stably.
Tensor softplus(const Tensor& x);
/// x if x > 0 else alpha * x.
Tensor leaky_relu(const Tensor& x, double alpha = 0.2);

// --- binary elementwise: a, b broadcast -> broadcast shape ---

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
/// True division for floats; truncating for integers (division by zero is an error).
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
/// Ties send the gradient to a (TensorFlow's rule: a >= b).
Tensor maximum(const Tensor& a, const Tensor& b);
/// Ties send the gradient to a (a <= b).
Tensor minimum(const Tensor& a, const Tensor& b);
/// min(max(x, lo), hi); lo and hi broadcast against x.
Tensor clip_by_value(const Tensor& x, const Tensor& lo, const Tensor& hi);
Tensor clip_by_value(const Tensor& x, double lo, double hi);

/// Comparisons: a, b broadcast -> bool.
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
/// bool, bool -> bool.
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);

/// cond: bool; cond, x, y broadcast -> broadcast shape, dtype of x.
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);

/// Converts x to dtype (floats to ints truncate; bool is x != 0).
Tensor cast(const Tensor& x, DType dtype);
/// x unchanged (a distinct graph node).
Tensor identity(const Tensor& x);
/// x unchanged, and no gradient flows through it.
Tensor stop_gradient(const Tensor& x);

// --- reductions: x [d0..dn], axes (empty = all) -> reduced shape (kept as 1 with keepdims) ---

Tensor reduce_sum(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor reduce_mean(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// Ties share the gradient equally (TensorFlow's rule).
Tensor reduce_max(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor reduce_min(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor reduce_prod(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// log(sum(exp(x))) computed stably.
Tensor reduce_logsumexp(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// x [.., d_axis, ..] -> int64 [.., ..]; the first index on ties.
Tensor argmax(const Tensor& x, int64_t axis = 0, DType output_type = DType::Int64);
Tensor argmin(const Tensor& x, int64_t axis = 0, DType output_type = DType::Int64);
/// Running sum along axis: x -> same shape.
Tensor cumsum(const Tensor& x, int64_t axis = 0, bool exclusive = false, bool reverse = false);
/// x [..., n] -> values [..., k], indices int32 [..., k], largest first.
std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k = 1, bool sorted = true);
/// mean and variance over axes (tf.nn.moments).
std::pair<Tensor, Tensor> moments(const Tensor& x, const Axes& axes, bool keepdims = false);

// --- matrix products ---

/// a [..., m, k], b [..., k, n] -> [..., m, n] (batch dims broadcast);
/// transpose_a / transpose_b transpose the last two dims first.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);

// --- shape and layout ---

/// x -> shape (one dim may be -1: inferred). Zero-copy.
Tensor reshape(const Tensor& x, const Shape& shape);
/// x [d0..dn] -> [d_perm0..d_permn]; empty perm reverses the dims.
Tensor transpose(const Tensor& x, const Axes& perm = {});
/// x -> x with a 1 inserted at axis.
Tensor expand_dims(const Tensor& x, int64_t axis);
/// x -> x without the size-1 dims in axes (all size-1 dims when empty).
Tensor squeeze(const Tensor& x, const Axes& axes = {});
/// xs [.., d_i, ..] -> [.., sum d_i, ..] along axis.
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
/// xs each [d..] -> [.., n, ..] with n = xs.size() at axis.
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0);
/// x -> num equal pieces along axis.
std::vector<Tensor> split(const Tensor& x, int64_t num, int64_t axis = 0);
/// x -> pieces of the given sizes along axis (one size may be -1).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis);
/// x -> x[begin : begin + size] per dim (size -1: to the end).
Tensor slice(const Tensor& x, const Axes& begin, const Axes& size);
/// Python-style x[begin:end:strides] with TensorFlow's masks.
Tensor strided_slice(const Tensor& x, const Axes& begin, const Axes& end, const Axes& strides = {},
                     int64_t begin_mask = 0, int64_t end_mask = 0, int64_t ellipsis_mask = 0,
                     int64_t new_axis_mask = 0, int64_t shrink_axis_mask = 0);
/// paddings: one {before, after} per dim. mode: "CONSTANT", "REFLECT", "SYMMETRIC".
Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& paddings,
           const std::string& mode = "CONSTANT", double constant_value = 0);
/// x [d..] -> [d_i * multiples_i].
Tensor tile(const Tensor& x, const Axes& multiples);
/// x -> shape, by broadcasting.
Tensor broadcast_to(const Tensor& x, const Shape& shape);
/// Reverses the order along each axis in axes.
Tensor reverse(const Tensor& x, const Axes& axes);

// --- indexing ---

/// params [p0..pn], indices int [i..] -> params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis+1:].
Tensor gather(const Tensor& params, const Tensor& indices, int64_t axis = 0, int64_t batch_dims = 0);
/// params [p..], indices int [..., q] -> indices.shape[:-1] + params.shape[q:].
Tensor gather_nd(const Tensor& params, const Tensor& indices);
/// indices [..., q], updates indices.shape[:-1] + shape[q:] -> shape; duplicates add up.
Tensor scatter_nd(const Tensor& indices, const Tensor& updates, const Shape& shape);
/// data [n, ...], segment_ids int [n] -> [num_segments, ...], sums by segment.
Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids, int64_t num_segments);
/// indices int [..] -> [.., depth] (axis = -1) with on_value at the index, off_value elsewhere.
Tensor one_hot(const Tensor& indices, int64_t depth, double on_value = 1, double off_value = 0,
               int64_t axis = -1, DType dtype = DType::Float32);

// --- neural network ---

/// Softmax along axis.
Tensor softmax(const Tensor& logits, int64_t axis = -1);
Tensor log_softmax(const Tensor& logits, int64_t axis = -1);
/// labels, logits [..., c] -> [...].
Tensor softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);
/// labels int [...], logits [..., c] -> [...].
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);
/// labels, logits same shape -> same shape.
Tensor sigmoid_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);

/// input [n, h, w, c_in], filters [kh, kw, c_in / groups, c_out] -> [n, oh, ow, c_out].
/// strides and dilations: {sh, sw}; padding "SAME" or "VALID" (or explicit via pad()).
/// Groups are implied by c_in / filters.dim(2), as in tf.nn.conv2d.
Tensor conv2d(const Tensor& input, const Tensor& filters, const Axes& strides = {1, 1},
              const std::string& padding = "VALID", const Axes& dilations = {1, 1});
/// input [n, h, w, c], filter [kh, kw, c, m] -> [n, oh, ow, c * m].
Tensor depthwise_conv2d(const Tensor& input, const Tensor& filter, const Axes& strides = {1, 1},
                        const std::string& padding = "VALID", const Axes& dilations = {1, 1});
/// input [n, h, w, c_in], filters [kh, kw, c_out, c_in] -> output_shape [n, oh, ow, c_out].
Tensor conv2d_transpose(const Tensor& input, const Tensor& filters, const Shape& output_shape,
                        const Axes& strides = {1, 1}, const std::string& padding = "VALID",
                        const Axes& dilations = {1, 1});
/// input [n, h, w, c], ksize and strides {kh, kw} -> [n, oh, ow, c].
Tensor max_pool2d(const Tensor& input, const Axes& ksize, const Axes& strides,
                  const std::string& padding = "VALID");
/// Averages over the window; SAME padding divides by the number of valid cells (TensorFlow).
Tensor avg_pool2d(const Tensor& input, const Axes& ksize, const Axes& strides,
                  const std::string& padding = "VALID");
/// (x - mean) / sqrt(variance + eps) * scale + offset; mean etc. broadcast against x.
Tensor batch_normalization(const Tensor& x, const Tensor& mean, const Tensor& variance,
                           const Tensor& offset, const Tensor& scale, double variance_epsilon);
/// TensorFlow's FusedBatchNormV3, channels last: x [..., c], scale, offset, mean, variance [c].
/// training: normalizes with the batch statistics over every dim but the last and returns
/// them (the variance Bessel-corrected, as TensorFlow returns it; mean and variance inputs
/// are ignored and may be empty); inference: normalizes with the given mean and variance.
struct FusedBatchNormResult {
  Tensor y, batch_mean, batch_variance;
};
FusedBatchNormResult fused_batch_norm(const Tensor& x, const Tensor& scale, const Tensor& offset,
                                      const Tensor& mean, const Tensor& variance, double epsilon = 1e-3,
                                      bool training = true);
/// Normalizes over `axes` with per-feature gamma and beta (which broadcast against x).
Tensor layer_normalization(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                           const Axes& axes = {-1}, double epsilon = 1e-3);
/// Zeroes each element with probability `rate` and scales the rest by 1 / (1 - rate).
Tensor dropout(const Tensor& x, double rate, std::optional<int64_t> seed = std::nullopt);

// --- random (see core/random.h for seeds) ---

/// Uniform in [minval, maxval).
Tensor random_uniform(const Shape& shape, double minval = 0, double maxval = 1,
                      DType dtype = DType::Float32, std::optional<int64_t> seed = std::nullopt);
/// Uniform in [minval, maxval), shaped like `like` (known when it runs: works with
/// dims unknown while a graph is built); dtype defaults to like's.
Tensor random_uniform_like(const Tensor& like, double minval = 0, double maxval = 1,
                           std::optional<DType> dtype = std::nullopt, std::optional<int64_t> seed = std::nullopt);
Tensor random_normal(const Shape& shape, double mean = 0, double stddev = 1,
                     DType dtype = DType::Float32, std::optional<int64_t> seed = std::nullopt);
/// Normal, redrawn beyond two standard deviations.
Tensor truncated_normal(const Shape& shape, double mean = 0, double stddev = 1,
                        DType dtype = DType::Float32, std::optional<int64_t> seed = std::nullopt);

// --- optimizer updates (one pass over the weights, as TensorFlow's training ops) ---

/// One Adam step (tf.raw_ops.ApplyAdam without the bias correction, which the caller
/// folds into lr_t): m' = m + (g - m)(1 - beta_1), v' = v + (g^2 - v)(1 - beta_2),
/// var' = var - lr_t m' / (sqrt(v') + epsilon). var, m, v, grad: one float shape and
/// dtype; lr_t: a scalar of that dtype. Returns {var', m', v'}; not differentiable.
struct AdamUpdate {
  Tensor var, m, v;
};
AdamUpdate apply_adam(const Tensor& var, const Tensor& m, const Tensor& v, const Tensor& grad, const Tensor& lr_t,
                      double beta_1, double beta_2, double epsilon);

// --- operators (a scalar converts to the tensor's dtype) ---

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

/// The sum of g over the dims broadcasting added to reach g's shape, reshaped to `shape`
/// (how a vjp undoes broadcasting).
Tensor sum_to(const Tensor& g, const Shape& shape);
/// A scalar of x's dtype (a concrete tensor; captured as a constant when tracing).
Tensor scalar_like(const Tensor& x, double value);

// --- run-time shapes ---
// For graphs with unknown (-1) dims: the shape is taken from `like` when the graph runs
// (TensorFlow passes tf.shape(like) as an input). Gradients use these where a static
// shape attribute would hold -1.

/// x broadcast to like's shape: x [..] (broadcastable to like) -> like's shape, x's dtype.
Tensor broadcast_like(const Tensor& x, const Tensor& like);
/// x viewed with like's shape (zero-copy): same element count -> like's shape, x's dtype.
Tensor reshape_like(const Tensor& x, const Tensor& like);
/// g summed over the dims broadcasting added to like's shape: g [..] -> like's shape,
/// g's dtype; which dims are summed is decided when the graph runs.
Tensor sum_to_like(const Tensor& g, const Tensor& like);
/// sum_to(g, like.shape()) when like's shape is fully known, sum_to_like(g, like) otherwise.
Tensor sum_to(const Tensor& g, const Tensor& like);
/// The number of elements of x: a scalar of out_type (int32 or int64), as tf.size.
Tensor size(const Tensor& x, DType out_type = DType::Int64);

}  // namespace deepflow
