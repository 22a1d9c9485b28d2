// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layers/normalization.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <tuple>

#include "deepflow/core/error.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::layers {
namespace {

bool is_narrow(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16; }
Tensor cast_to(const Tensor& t, DType dt) { return t.dtype() == dt ? t : cast(t, dt); }

// "[-1, 2]" (Shape would print -1 as ?).
std::string axes_string(const std::vector<int64_t>& axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

}  // namespace

// --- BatchNormalization ---

BatchNormalizationImpl::BatchNormalizationImpl(BatchNormalizationOptions options)
    : Layer(options.name), options_(std::move(options)) {
  DF_CHECK(options_.epsilon > 0, "[BatchNormalization] epsilon must be positive, got ", options_.epsilon);
  supports_masking_ = true;
  DF_CHECK(options_.momentum >= 0 && options_.momentum <= 1, "[BatchNormalization] momentum must be in [0, 1], got ",
           options_.momentum);
}

void BatchNormalizationImpl::build(const Shape& input_shape) {
  rank_ = input_shape.rank();
  DF_CHECK(rank_ >= 2, "[", name(), "] expects inputs of rank >= 2 (batch, ..., features), got ", input_shape);
  DF_CHECK(options_.axis >= -rank_ && options_.axis < rank_, "[", name(), "] axis ", options_.axis,
           " is out of range for inputs of rank ", rank_, " ", input_shape);
  axis_ = options_.axis < 0 ? options_.axis + rank_ : options_.axis;
  const int64_t c = input_shape[int(axis_)];
  DF_CHECK(c >= 0, "[", name(), "] needs a known dim on axis ", options_.axis, ", got ", input_shape);
  const Shape shape{c};
  if (options_.scale)
    gamma_ = add_weight("gamma", shape, options_.gamma_initializer ? options_.gamma_initializer : initializers::Ones(),
                        true, options_.gamma_regularizer);
  if (options_.center)
    beta_ = add_weight("beta", shape, options_.beta_initializer ? options_.beta_initializer : initializers::Zeros(),
                       true, options_.beta_regularizer);
  moving_mean_ = add_weight("moving_mean", shape,
                            options_.moving_mean_initializer ? options_.moving_mean_initializer : initializers::Zeros(),
                            false);
  moving_variance_ = add_weight(
      "moving_variance", shape,
      options_.moving_variance_initializer ? options_.moving_variance_initializer : initializers::Ones(), false);
}

Tensor BatchNormalizationImpl::call(const Tensor& x, bool training) {
  const int64_t c = moving_mean_.shape()[0];
  DF_CHECK(x.rank() == rank_ && (x.shape()[int(axis_)] < 0 || x.shape()[int(axis_)] == c), "[", name(),
           "] expects inputs of rank ", rank_, " with dim ", c, " on axis ", options_.axis, ", got ", x.shape());
  // Keras: a frozen BatchNormalization runs in inference mode.
  const bool train = training && trainable();
  // Statistics and weights in float32 for 16-bit inputs (Keras opts BN out of mixed precision).
  const DType u = is_narrow(x.dtype()) ? DType::Float32 : x.dtype();
  const DType vdt = moving_mean_.dtype();
  const double m = options_.momentum;
  auto update = [&](Variable moving, const Tensor& batch) {
    Tensor cur = cast_to(moving.value(), u);
    moving.assign(cast_to(cur * m + batch * (1.0 - m), vdt));
  };

  if (axis_ == rank_ - 1) {
    // Channels last: TF's FusedBatchNormV3, which takes 16-bit x with float32 statistics.
    Tensor g = options_.scale ? cast_to(gamma_.value(), u) : ones({c}, u);
    Tensor b = options_.center ? cast_to(beta_.value(), u) : zeros({c}, u);
    if (!train) {
      return fused_batch_norm(x, g, b, cast_to(moving_mean_.value(), u), cast_to(moving_variance_.value(), u),
                              options_.epsilon, false)
          .y;
    }
    FusedBatchNormResult r = fused_batch_norm(x, g, b, Tensor(), Tensor(), options_.epsilon, true);
    // fused_batch_norm normalizes with the biased variance but returns it times n / max(n - 1, 1)
    // (TF); Keras 3 tracks the biased one, so undo the correction (n is known when the graph runs).
    Tensor unbias;
    if (x.shape().is_fully_defined()) {
      const double n = double(x.size() / std::max<int64_t>(c, 1));
      unbias = scalar(std::max(n - 1, 1.0) / n, u);
    } else {
      Tensor n = cast(size(x), u) / double(std::max<int64_t>(c, 1));
      unbias = maximum(n - 1.0, scalar(1.0, u)) / n;
    }
    update(moving_mean_, r.batch_mean);
    update(moving_variance_, r.batch_variance * unbias);
    return r.y;
  }

  // Another feature axis: moments over the other axes, per-feature stats broadcast as [1, c, 1, ...].
  std::vector<int64_t> bshape(size_t(rank_), 1);
  bshape[size_t(axis_)] = c;
  Axes reduce;
  for (int64_t i = 0; i < rank_; ++i)
    if (i != axis_) reduce.push_back(i);
  Tensor xf = cast_to(x, u);
  Tensor mean, variance;
  if (train) {
    std::tie(mean, variance) = moments(xf, reduce);
    update(moving_mean_, mean);
    update(moving_variance_, variance);
  } else {
    mean = cast_to(moving_mean_.value(), u);
    variance = cast_to(moving_variance_.value(), u);
  }
  const Shape bs(bshape);
  Tensor g = options_.scale ? reshape(cast_to(gamma_.value(), u), bs) : Tensor();
  Tensor b = options_.center ? reshape(cast_to(beta_.value(), u), bs) : Tensor();
  Tensor y = batch_normalization(xf, reshape(mean, bs), reshape(variance, bs), b, g, options_.epsilon);
  return cast_to(y, x.dtype());
}

Config BatchNormalizationImpl::get_config() const {
  Config c = Layer::get_config();
  c["axis"] = options_.axis;
  c["momentum"] = options_.momentum;
  c["epsilon"] = options_.epsilon;
  c["center"] = options_.center;
  c["scale"] = options_.scale;
  c["beta_initializer"] = initializers::serialize(options_.beta_initializer, "Zeros");
  c["gamma_initializer"] = initializers::serialize(options_.gamma_initializer, "Ones");
  c["moving_mean_initializer"] = initializers::serialize(options_.moving_mean_initializer, "Zeros");
  c["moving_variance_initializer"] = initializers::serialize(options_.moving_variance_initializer, "Ones");
  c["beta_regularizer"] = regularizers::serialize(options_.beta_regularizer);
  c["gamma_regularizer"] = regularizers::serialize(options_.gamma_regularizer);
  return c;
}

// --- LayerNormalization ---

LayerNormalizationImpl::LayerNormalizationImpl(LayerNormalizationOptions options)
    : Layer(options.name), options_(std::move(options)) {
  DF_CHECK(!options_.axis.empty(), "[LayerNormalization] axis needs at least one axis");
  DF_CHECK(options_.epsilon > 0, "[LayerNormalization] epsilon must be positive, got ", options_.epsilon);
  supports_masking_ = true;
}

std::vector<int64_t> LayerNormalizationImpl::axes_for(const Shape& shape) const {
  const int rank = shape.rank();
  std::vector<int64_t> axes;
  for (int64_t a : options_.axis) {
    DF_CHECK(a >= -rank && a < rank, "[", name(), "] axis ", a, " is out of range for inputs of rank ", rank, " ",
             shape);
    axes.push_back(a < 0 ? a + rank : a);
  }
  // Sorted, so gamma's dims follow the input's order whatever order the axes were given in.
  std::sort(axes.begin(), axes.end());
  DF_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), "[", name(), "] axis repeats a dim: ",
           axes_string(options_.axis));
  return axes;
}

void LayerNormalizationImpl::build(const Shape& input_shape) {
  std::vector<int64_t> dims;
  for (int64_t a : axes_for(input_shape)) {
    DF_CHECK(input_shape[int(a)] >= 0, "[", name(), "] needs known dims on the normalized axes, got ", input_shape);
    dims.push_back(input_shape[int(a)]);
  }
  param_shape_ = Shape(dims);
  const Shape& shape = param_shape_;
  if (options_.scale)
    gamma_ = add_weight("gamma", shape, options_.gamma_initializer ? options_.gamma_initializer : initializers::Ones(),
                        true, options_.gamma_regularizer);
  if (options_.center)
    beta_ = add_weight("beta", shape, options_.beta_initializer ? options_.beta_initializer : initializers::Zeros(),
                       true, options_.beta_regularizer);
}

Tensor LayerNormalizationImpl::call(const Tensor& x, bool) {
  // Negative axes count from the end of each input, so (as in Keras) another rank works
  // when the normalized dims match.
  const std::vector<int64_t> axes = axes_for(x.shape());
  bool ok = true;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t d = x.shape()[int(axes[k])];
    ok &= d < 0 || d == param_shape_[int(k)];
  }
  DF_CHECK(ok, "[", name(), "] expects dims ", param_shape_, " on axes ", axes_string(options_.axis), ", got ",
           x.shape());
  // Keras: under mixed precision normalize in float32 with the float32 weights.
  const DType u = is_narrow(x.dtype()) ? DType::Float32 : x.dtype();
  // gamma and beta [dims on axes] broadcast from the first normalized axis on, 1 elsewhere.
  std::vector<int64_t> bdims;
  for (int64_t i = axes.front(), k = 0; i < x.rank(); ++i) {
    const bool normalized = size_t(k) < axes.size() && axes[size_t(k)] == i;
    bdims.push_back(normalized ? param_shape_[int(k++)] : 1);
  }
  const Shape bshape(bdims);
  auto weight = [&](const Variable& w) {
    Tensor t = cast_to(w.value(), u);
    return bshape == w.shape() ? t : reshape(t, bshape);
  };
  Tensor g = options_.scale ? weight(gamma_) : Tensor();
  Tensor b = options_.center ? weight(beta_) : Tensor();
  return cast_to(layer_normalization(cast_to(x, u), g, b, Axes(axes.begin(), axes.end()), options_.epsilon),
                 x.dtype());
}

Config LayerNormalizationImpl::get_config() const {
  Config c = Layer::get_config();
  c["axis"] = options_.axis;
  c["epsilon"] = options_.epsilon;
  c["center"] = options_.center;
  c["scale"] = options_.scale;
  c["beta_initializer"] = initializers::serialize(options_.beta_initializer, "Zeros");
  c["gamma_initializer"] = initializers::serialize(options_.gamma_initializer, "Ones");
  c["beta_regularizer"] = regularizers::serialize(options_.beta_regularizer);
  c["gamma_regularizer"] = regularizers::serialize(options_.gamma_regularizer);
  return c;
}

// --- registration (serialization.h) ---

namespace {

namespace ser = serialization;

const bool kRegistered = [] {
  register_layer("BatchNormalization", [](const Config& c) -> LayerPtr {
    // Keras 2 could write the axis as a one-element list.
    const std::vector<int64_t> axis = c.contains("axis") ? ser::ints_of(c, "axis") : std::vector<int64_t>{-1};
    DF_CHECK(axis.size() == 1, "[keras.layers.deserialize] BatchNormalization '", ser::name_of(c),
             "' takes one axis, got ", c.at("axis").dump());
    return BatchNormalization(BatchNormalizationOptions{
        .axis = axis[0],
        .momentum = ser::value_or(c, "momentum", 0.99),
        .epsilon = ser::value_or(c, "epsilon", 1e-3),
        .center = ser::value_or(c, "center", true),
        .scale = ser::value_or(c, "scale", true),
        .beta_initializer = ser::initializer_of(c, "beta_initializer", "Zeros"),
        .gamma_initializer = ser::initializer_of(c, "gamma_initializer", "Ones"),
        .moving_mean_initializer = ser::initializer_of(c, "moving_mean_initializer", "Zeros"),
        .moving_variance_initializer = ser::initializer_of(c, "moving_variance_initializer", "Ones"),
        .beta_regularizer = ser::regularizer_of(c, "beta_regularizer"),
        .gamma_regularizer = ser::regularizer_of(c, "gamma_regularizer"),
        .name = ser::name_of(c)});
  });
  register_layer("LayerNormalization", [](const Config& c) -> LayerPtr {
    return LayerNormalization(LayerNormalizationOptions{
        .axis = c.contains("axis") ? ser::ints_of(c, "axis") : std::vector<int64_t>{-1},
        .epsilon = ser::value_or(c, "epsilon", 1e-3),
        .center = ser::value_or(c, "center", true),
        .scale = ser::value_or(c, "scale", true),
        .beta_initializer = ser::initializer_of(c, "beta_initializer", "Zeros"),
        .gamma_initializer = ser::initializer_of(c, "gamma_initializer", "Ones"),
        .beta_regularizer = ser::regularizer_of(c, "beta_regularizer"),
        .gamma_regularizer = ser::regularizer_of(c, "gamma_regularizer"),
        .name = ser::name_of(c)});
  });
  return true;
}();

}  // namespace
}  // namespace deepflow::keras::layers
