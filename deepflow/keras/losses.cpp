// SPDX-License-Identifier: Apache-2.0
// Losses (tf.keras.losses), built from public ops so they are differentiable and run
// inside traced functions with an unknown batch dim (counts come from size(), never
// from host shapes). Formulas follow Keras 3 (keras/src/losses/losses.py and the
// TensorFlow backend's nn.py).
#include "deepflow/keras/losses.h"
#include "deepflow/keras/loss_util.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <utility>

#include "deepflow/ops/ops.h"

namespace deepflow::keras {

namespace detail {

Tensor cast_to(const Tensor& x, DType t) { return x.dtype() == t ? x : cast(x, t); }

std::pair<Tensor, Tensor> squeeze_or_expand(Tensor a, Tensor b) {
  const int ra = a.rank(), rb = b.rank();
  if (ra == rb + 1 && a.dim(-1) == 1) {
    if (rb == 1) b = expand_dims(b, -1);
    else a = squeeze(a, {-1});
  } else if (rb == ra + 1 && b.dim(-1) == 1) {
    if (ra == 1) a = expand_dims(a, -1);
    else b = squeeze(b, {-1});
  }
  return {a, b};
}

bool fits(const Shape& a, const Shape& b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1 && a[i] >= 0 && b[i] >= 0) return false;
  return true;
}

void shapes_do_not_fit(const std::string& loss, const Tensor& y_true, const Tensor& y_pred) {
  fail("[", loss, "] labels ", y_true.shape(), " do not fit predictions ", y_pred.shape());
}

}  // namespace detail

using detail::cast_to;
using detail::fits;
using detail::shapes_do_not_fit;
using detail::squeeze_or_expand;

namespace {

constexpr double kEpsilon = 1e-7;  // keras.backend.epsilon()

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::SumOverBatchSize: return "sum_over_batch_size";
    case Reduction::Sum: return "sum";
    case Reduction::None: return "none";
  }
  return "?";
}

Reduction reduction_from_name(const std::string& s) {
  if (s == "sum_over_batch_size" || s == "auto") return Reduction::SumOverBatchSize;  // "auto": TF's alias
  if (s == "sum") return Reduction::Sum;
  if (s == "none") return Reduction::None;
  fail("[losses] unknown reduction '", s, "'; known: sum_over_batch_size, sum, none");
}

// 16-bit floats are computed in float32 (mixed precision); float32 and float64 stay.
DType compute_dtype(DType t) { return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t; }


// y_true cast to y_pred's dtype and brought to its rank; throws when the shapes cannot broadcast.
std::pair<Tensor, Tensor> align(const std::string& loss, const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = squeeze_or_expand(cast_to(y_true, y_pred.dtype()), y_pred);
  if (!fits(t.shape(), p.shape())) shapes_do_not_fit(loss, y_true, y_pred);
  DF_CHECK(p.rank() >= 1, "[", loss, "] predictions must have rank >= 1, got shape ", y_pred.shape());
  return {t, p};
}

// a / b, 0 where b == 0 (tf.math.divide_no_nan).
Tensor divide_no_nan(const Tensor& a, const Tensor& b) {
  Tensor zero = equal(b, zeros_like(b));
  Tensor safe = where(zero, ones_like(b), b);
  return where(zero, zeros_like(a / safe), a / safe);
}

// Moves `axis` to the end (the fused cross-entropy ops work on the last axis).
Tensor axis_last(const Tensor& x, int axis) {
  if (axis == x.rank() - 1) return x;
  Axes perm;
  for (int i = 0; i < x.rank(); ++i)
    if (i != axis) perm.push_back(i);
  perm.push_back(axis);
  return transpose(x, perm);
}

using LossFn = std::function<Tensor(const std::string& name, const Tensor& y_true, const Tensor& y_pred)>;

// Keras's LossFunctionWrapper: a per-sample function plus the config it was made with.
class FunctionLoss : public Loss {
 public:
  FunctionLoss(std::string cls, const losses::Options& o, const std::string& default_name, LossFn fn, Config extra)
      : Loss(o.name.empty() ? default_name : o.name, o.reduction),
        cls_(std::move(cls)),
        fn_(std::move(fn)),
        extra_(std::move(extra)) {}

  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override {
    DF_CHECK(y_true.defined() && y_pred.defined(), "[", name(), "] needs both labels and predictions");
    DF_CHECK(is_floating(y_pred.dtype()), "[", name(), "] predictions must be floating, got ",
             dtype_name(y_pred.dtype()));
    return fn_(name(), y_true, cast_to(y_pred, compute_dtype(y_pred.dtype())));
  }
  std::string class_name() const override { return cls_; }
  Config get_config() const override {
    Config c = Loss::get_config();
    for (auto& [k, v] : extra_.items()) c[k] = v;
    return c;
  }

 private:
  std::string cls_;
  LossFn fn_;
  Config extra_;
};

Config crossentropy_config(const losses::CrossentropyOptions& o) {
  return {{"from_logits", o.from_logits}, {"label_smoothing", o.label_smoothing}, {"axis", o.axis}};
}

// --- per-sample functions ---

Tensor mse_fn(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = align(name, y_true, y_pred);
  return reduce_mean(square(t - p), {-1});
}

Tensor mae_fn(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = align(name, y_true, y_pred);
  return reduce_mean(abs(t - p), {-1});
}

Tensor huber_fn(const std::string& name, const Tensor& y_true, const Tensor& y_pred, double delta) {
  auto [t, p] = align(name, y_true, y_pred);
  Tensor err = p - t;
  Tensor abs_err = abs(err);
  Tensor quadratic = square(err) * 0.5;
  Tensor linear = abs_err * delta - 0.5 * delta * delta;
  return reduce_mean(where(less_equal(abs_err, scalar_like(abs_err, delta)), quadratic, linear), {-1});
}

Tensor bce_fn(const std::string& name, const Tensor& y_true, const Tensor& y_pred,
              const losses::CrossentropyOptions& o) {
  auto [t, p] = align(name, y_true, y_pred);
  if (o.label_smoothing != 0) t = t * (1.0 - o.label_smoothing) + 0.5 * o.label_smoothing;
  const int axis = normalize_axis(name.c_str(), o.axis, p.rank());
  Tensor per_elem;
  if (o.from_logits) {
    // The fused op wants equal shapes: broadcast either side that has a 1.
    if (t.shape() != p.shape()) {
      Tensor t0 = t;
      t = t + zeros_like(p);
      p = p + zeros_like(t0);
    }
    per_elem = sigmoid_cross_entropy_with_logits(t, p);
  } else {
    Tensor pc = clip_by_value(p, kEpsilon, 1.0 - kEpsilon);
    per_elem = neg(t * log(pc) + (1.0 - t) * log(1.0 - pc));
  }
  return reduce_mean(per_elem, {axis});
}

Tensor cce_fn(const std::string& name, const Tensor& y_true, const Tensor& y_pred,
              const losses::CrossentropyOptions& o) {
  Tensor t = cast_to(y_true, y_pred.dtype());
  Tensor p = y_pred;
  // Keras requires equal ranks and compatible shapes here (no broadcasting).
  if (!t.shape().compatible_with(p.shape()) || p.rank() < 1) shapes_do_not_fit(name, y_true, y_pred);
  const int axis = normalize_axis(name.c_str(), o.axis, p.rank());
  if (o.label_smoothing != 0) {
    // The class count at run time (the class dim may be unknown while tracing).
    Tensor classes = reduce_sum(ones_like(t), {axis}, true);
    t = t * (1.0 - o.label_smoothing) + o.label_smoothing / classes;
  }
  if (o.from_logits) return softmax_cross_entropy_with_logits(axis_last(t, axis), axis_last(p, axis));
  p = p / reduce_sum(p, {axis}, true);  // Keras renormalizes the probabilities first
  p = clip_by_value(p, kEpsilon, 1.0 - kEpsilon);
  return neg(reduce_sum(t * log(p), {axis}));
}

Tensor scce_fn(const std::string& name, const Tensor& y_true, const Tensor& y_pred,
               const losses::CrossentropyOptions& o) {
  const Tensor& p = y_pred;
  DF_CHECK(p.rank() >= 1, "[", name, "] predictions must have rank >= 1, got shape ", p.shape());
  DF_CHECK(o.axis == -1 || o.axis == p.rank() - 1, "[", name, "] only axis=-1 is supported, got axis=", o.axis);
  DF_CHECK(is_integer(y_true.dtype()) || is_floating(y_true.dtype()), "[", name,
           "] expects integer (or integer-valued float) labels, got ", dtype_name(y_true.dtype()));
  Tensor t = y_true;
  if (t.rank() == p.rank() && t.dim(-1) == 1) t = squeeze(t, {-1});
  Shape batch = p.shape();
  batch.erase(batch.rank() - 1);
  if (!t.shape().compatible_with(batch)) shapes_do_not_fit(name, y_true, y_pred);
  t = cast_to(t, DType::Int32);
  if (o.from_logits) return sparse_softmax_cross_entropy_with_logits(t, p);
  // As Keras's TF backend: log of the clipped probabilities used as logits (which also
  // renormalizes them).
  return sparse_softmax_cross_entropy_with_logits(t, log(clip_by_value(p, kEpsilon, 1.0 - kEpsilon)));
}

Tensor kld_fn(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = align(name, y_true, y_pred);
  t = clip_by_value(t, kEpsilon, 1.0);
  p = clip_by_value(p, kEpsilon, 1.0);
  return reduce_sum(t * log(t / p), {-1});
}

}  // namespace

// --- Loss ---

Loss::Loss(std::string name, Reduction reduction) : name_(std::move(name)), reduction_(reduction) {}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const {
  Tensor values = call(y_true, y_pred);
  const DType dt = is_floating(values.dtype()) ? compute_dtype(values.dtype()) : DType::Float32;
  values = cast_to(values, dt);
  if (sample_weight.defined()) {
    auto [v, w] = squeeze_or_expand(values, cast_to(sample_weight, dt));
    // Per-sample weights [B] on losses [B, T, ...] weight whole rows (TF's convention).
    while (w.rank() > 0 && w.rank() < v.rank()) w = expand_dims(w, -1);
    DF_CHECK(w.rank() == 0 || fits(w.shape(), v.shape()), "[", name_, "] sample_weight ", sample_weight.shape(),
             " does not fit the losses ", values.shape());
    values = v * w;
  }
  switch (reduction_) {
    case Reduction::None: return values;
    case Reduction::Sum: return reduce_sum(values);
    case Reduction::SumOverBatchSize:
      // Keras divides by the number of elements of the (weighted) per-sample losses.
      return divide_no_nan(reduce_sum(values), cast(size(values), dt));
  }
  return values;
}

Config Loss::get_config() const { return {{"name", name_}, {"reduction", reduction_name(reduction_)}}; }

namespace losses {

LossPtr MeanSquaredError(Options o) {
  return std::make_shared<FunctionLoss>("MeanSquaredError", o, "mean_squared_error", mse_fn, Config::object());
}

LossPtr MeanAbsoluteError(Options o) {
  return std::make_shared<FunctionLoss>("MeanAbsoluteError", o, "mean_absolute_error", mae_fn, Config::object());
}

LossPtr Huber(HuberOptions o) {
  const double delta = o.delta;
  DF_CHECK(delta >= 0, "[huber_loss] delta must be >= 0, got ", delta);
  auto fn = [delta](const std::string& n, const Tensor& t, const Tensor& p) { return huber_fn(n, t, p, delta); };
  return std::make_shared<FunctionLoss>("Huber", o, "huber_loss", fn, Config{{"delta", delta}});
}

LossPtr BinaryCrossentropy(CrossentropyOptions o) {
  DF_CHECK(o.label_smoothing >= 0 && o.label_smoothing <= 1,
           "[binary_crossentropy] label_smoothing must be in [0, 1], got ", o.label_smoothing);
  auto fn = [o](const std::string& n, const Tensor& t, const Tensor& p) { return bce_fn(n, t, p, o); };
  return std::make_shared<FunctionLoss>("BinaryCrossentropy", o, "binary_crossentropy", fn, crossentropy_config(o));
}

LossPtr CategoricalCrossentropy(CrossentropyOptions o) {
  DF_CHECK(o.label_smoothing >= 0 && o.label_smoothing <= 1,
           "[categorical_crossentropy] label_smoothing must be in [0, 1], got ", o.label_smoothing);
  auto fn = [o](const std::string& n, const Tensor& t, const Tensor& p) { return cce_fn(n, t, p, o); };
  return std::make_shared<FunctionLoss>("CategoricalCrossentropy", o, "categorical_crossentropy", fn,
                                        crossentropy_config(o));
}

LossPtr SparseCategoricalCrossentropy(CrossentropyOptions o) {
  DF_CHECK(o.label_smoothing == 0,
           "[sparse_categorical_crossentropy] label_smoothing is not supported for integer labels (got ",
           o.label_smoothing, "); use CategoricalCrossentropy with one-hot labels");
  auto fn = [o](const std::string& n, const Tensor& t, const Tensor& p) { return scce_fn(n, t, p, o); };
  return std::make_shared<FunctionLoss>("SparseCategoricalCrossentropy", o, "sparse_categorical_crossentropy", fn,
                                        Config{{"from_logits", o.from_logits}});
}

LossPtr KLDivergence(Options o) {
  return std::make_shared<FunctionLoss>("KLDivergence", o, "kl_divergence", kld_fn, Config::object());
}

namespace {

constexpr const char* kKnownLosses =
    "mse, mean_squared_error, mae, mean_absolute_error, huber, binary_crossentropy, categorical_crossentropy, "
    "sparse_categorical_crossentropy, kl_divergence, kld (or the class names)";

// The class of a Keras name or class name, or "".
std::string class_of(const std::string& name) {
  if (name == "mse" || name == "mean_squared_error" || name == "MeanSquaredError") return "MeanSquaredError";
  if (name == "mae" || name == "mean_absolute_error" || name == "MeanAbsoluteError") return "MeanAbsoluteError";
  if (name == "huber" || name == "huber_loss" || name == "Huber") return "Huber";
  if (name == "binary_crossentropy" || name == "BinaryCrossentropy") return "BinaryCrossentropy";
  if (name == "categorical_crossentropy" || name == "CategoricalCrossentropy") return "CategoricalCrossentropy";
  if (name == "sparse_categorical_crossentropy" || name == "SparseCategoricalCrossentropy")
    return "SparseCategoricalCrossentropy";
  if (name == "kl_divergence" || name == "kld" || name == "kullback_leibler_divergence" || name == "KLDivergence")
    return "KLDivergence";
  return "";
}

LossPtr make(const std::string& cls, const Config& c) {
  auto get_or = [&](const char* key, auto fallback) {
    return c.contains(key) && !c[key].is_null() ? c[key].get<decltype(fallback)>() : fallback;
  };
  CrossentropyOptions o;
  o.name = get_or("name", std::string());
  o.reduction = reduction_from_name(get_or("reduction", std::string("sum_over_batch_size")));
  o.from_logits = get_or("from_logits", false);
  o.label_smoothing = get_or("label_smoothing", 0.0);
  o.axis = get_or("axis", -1);
  const Options base = o;
  if (cls == "MeanSquaredError") return MeanSquaredError(base);
  if (cls == "MeanAbsoluteError") return MeanAbsoluteError(base);
  if (cls == "Huber") return Huber({.delta = get_or("delta", 1.0), .reduction = o.reduction, .name = o.name});
  if (cls == "BinaryCrossentropy") return BinaryCrossentropy(o);
  if (cls == "CategoricalCrossentropy") return CategoricalCrossentropy(o);
  if (cls == "SparseCategoricalCrossentropy") return SparseCategoricalCrossentropy(o);
  if (cls == "KLDivergence") return KLDivergence(base);
  fail("[losses] unknown loss class '", cls, "'; known: ", kKnownLosses);
}

}  // namespace

LossPtr get(const std::string& name) {
  std::string cls = class_of(name);
  if (cls.empty()) fail("[losses] unknown loss '", name, "'; known: ", kKnownLosses);
  return make(cls, Config::object());
}

Config serialize(const Loss& loss) {
  return {{"module", "keras.losses"},
          {"class_name", loss.class_name()},
          {"config", loss.get_config()},
          {"registered_name", nullptr}};
}

LossPtr deserialize(const Config& config) {
  if (config.is_string()) return get(config.get<std::string>());
  DF_CHECK(config.is_object() && config.contains("class_name") && config["class_name"].is_string(),
           "[losses] deserialize expects {\"class_name\": ..., \"config\": {...}} or a name, got ", config.dump());
  const std::string cls = config["class_name"].get<std::string>();
  const Config args = config.contains("config") && config["config"].is_object() ? config["config"] : Config::object();
  std::string known = class_of(cls);
  if (known.empty()) fail("[losses] unknown loss class '", cls, "'; known: ", kKnownLosses);
  return make(known, args);
}

}  // namespace losses
}  // namespace deepflow::keras
