// SPDX-License-Identifier: Apache-2.0
// compile / fit / evaluate / predict: the steps (traced or eager), batching and logs.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>

#include "deepflow/autodiff/tape.h"
#include "deepflow/core/error.h"
#include "deepflow/core/random.h"
#include "deepflow/function/control_flow.h"
#include "deepflow/function/function.h"
#include "deepflow/keras/callbacks.h"
#include "deepflow/keras/model.h"
#include "deepflow/keras/progbar.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras {

struct Model::Compiled {
  OptimizerPtr optimizer;
  std::vector<LossPtr> losses;  // one per output
  std::vector<double> loss_weights;
  struct NamedMetric {
    std::string log_name;
    MetricPtr metric;
    size_t output;
  };
  std::vector<NamedMetric> metrics;
  std::shared_ptr<metrics::Mean> loss_tracker = std::make_shared<metrics::Mean>("loss");
  bool run_eagerly = false;
  // mixed_float16: dynamic loss scaling (Keras's LossScaleOptimizer defaults: start at
  // 2^15, halve on a non-finite gradient and skip the step, double after 2000 good steps).
  Variable loss_scale, good_steps;
  static constexpr double kInitialScale = 32768.0, kGrowthInterval = 2000.0;
  // Traced steps, made on first use (their signatures need the data's dtypes and shapes).
  std::optional<Function> train_fn, train_fn_weighted, test_fn, predict_fn;
  bool optimizer_built = false;  // the model is built and the optimizer has its slots

  Tensor total_loss(const TensorList& ys, const TensorList& preds, const Tensor& sw) const {
    DF_CHECK(ys.size() == preds.size(), "[fit] the model has ", preds.size(), " outputs, got ", ys.size(),
             " targets");
    Tensor total;
    for (size_t i = 0; i < preds.size(); ++i) {
      Tensor l = (*losses[i])(ys[i], preds[i], sw);
      if (l.dtype() != DType::Float32) l = cast(l, DType::Float32);
      if (loss_weights.size() > i && loss_weights[i] != 1.0) l = l * loss_weights[i];
      total = total.defined() ? total + l : l;
    }
    return total;
  }

  void update_metrics(const TensorList& ys, const TensorList& preds, const Tensor& sw) {
    for (NamedMetric& m : metrics) m.metric->update_state(ys[m.output], preds[m.output], sw);
  }

  void reset_metrics() {
    loss_tracker->reset_state();
    for (NamedMetric& m : metrics) m.metric->reset_state();
  }

  Logs logs() const {
    Logs l{{"loss", loss_tracker->result().item<double>()}};
    for (const NamedMetric& m : metrics) {
      Tensor r = m.metric->result();
      if (r.size() == 1) l[m.log_name] = r.item<double>();
    }
    return l;
  }
};

namespace {

Signature batch_signature(const TensorList& xs) {
  Signature sig;
  for (const Tensor& x : xs) {
    Shape s = x.shape();
    if (s.rank() > 0) s[0] = -1;
    sig.push_back({x.dtype(), s});
  }
  return sig;
}

int64_t num_samples(const TensorList& xs, const TensorList& ys, const char* what) {
  DF_CHECK(!xs.empty(), "[", what, "] needs at least one input tensor");
  const int64_t n = xs[0].rank() > 0 ? xs[0].dim(0) : -1;
  for (const TensorList* list : {&xs, &ys})
    for (const Tensor& t : *list)
      DF_CHECK(t.rank() > 0 && t.dim(0) == n, "[", what, "] every input and target needs the same number of "
               "samples (first dim): ", xs[0].shape(), " vs ", t.shape());
  return n;
}

TensorList take(const TensorList& xs, int64_t begin, int64_t end, const Tensor& index) {
  TensorList out;
  for (const Tensor& x : xs) out.push_back(index.defined() ? gather(x, index) : x.slice0(begin, end));
  return out;
}

}  // namespace

// --- compile ---

void Model::compile(CompileOptions options) {
  auto c = std::make_shared<Compiled>();
  c->optimizer = options.optimizer.optimizer ? options.optimizer.optimizer : optimizers::get(options.optimizer.name);
  DF_CHECK(!options.loss.empty(), "[compile] needs a loss (a name such as \"mse\" or a keras::losses object)");
  const size_t outputs = std::max<size_t>(1, outputs_.size());
  DF_CHECK(options.loss.size() == 1 || options.loss.size() == outputs, "[compile] the model has ", outputs,
           " outputs, got ", options.loss.size(), " losses");
  for (size_t i = 0; i < outputs; ++i) {
    const LossSpec& spec = options.loss[options.loss.size() == 1 ? 0 : i];
    c->losses.push_back(spec.loss ? spec.loss : losses::get(spec.name));
  }
  c->loss_weights = options.loss_weights;
  for (size_t i = 0; i < outputs; ++i)
    for (const MetricSpec& spec : options.metrics) {
      DF_CHECK(spec.metric == nullptr || outputs == 1, "[compile] metric objects need a single-output model; "
               "give metrics by name for ", outputs, " outputs");
      MetricPtr m = spec.metric ? spec.metric : metrics::get(spec.name, c->losses[i].get());
      std::string log_name = spec.metric ? m->name() : spec.name;
      if (outputs > 1) log_name = "output_" + std::to_string(i) + "_" + log_name;
      c->metrics.push_back({log_name, m, i});
    }
  c->run_eagerly = options.run_eagerly;
  if (compute_dtype() == DType::Float16) {
    c->loss_scale = Variable(scalar(Compiled::kInitialScale), name() + "/loss_scale", false);
    c->good_steps = Variable(scalar(0.0), name() + "/loss_scale_good_steps", false);
  }
  compile_options_ = std::make_shared<const CompileOptions>(options);
  compiled_ = std::move(c);
}

OptimizerPtr Model::optimizer() const { return compiled_ ? compiled_->optimizer : nullptr; }

double Model::loss_scale() const {
  return compiled_ && compiled_->loss_scale.defined() ? compiled_->loss_scale.value().item<double>() : 0.0;
}

std::vector<MetricPtr> Model::metrics() const {
  std::vector<MetricPtr> out;
  if (!compiled_) return out;
  out.push_back(compiled_->loss_tracker);
  for (const auto& m : compiled_->metrics) out.push_back(m.metric);
  return out;
}

// --- steps ---

namespace {

// The gradients of loss * scale, unscaled; the step runs only when all are finite.
void apply_scaled(Model::Compiled& c, GradientTape& tape, const Tensor& loss, const std::vector<Variable>& vars) {
  Tensor scale = c.loss_scale.value();
  std::vector<Tensor> grads = tape.gradient(loss * scale, vars);
  Tensor bad = scalar(0.0);  // 0 * inf and 0 * NaN are NaN: one sum finds any
  for (Tensor& g : grads) {
    if (!g.defined()) continue;
    g = cast(g, DType::Float32) / scale;
    bad = bad + reduce_sum(g * 0.0);
  }
  Tensor finite = equal(bad, scalar(0.0));
  cond(
      finite,
      [&]() -> TensorList {
        c.optimizer->apply_gradients(grads, vars);
        Tensor good = c.good_steps.value() + 1.0;
        Tensor grow = greater_equal(good, scalar(Model::Compiled::kGrowthInterval));
        c.loss_scale.assign(where(grow, scale * 2.0, scale));
        c.good_steps.assign(where(grow, scalar(0.0), good));
        return {};
      },
      [&]() -> TensorList {
        c.loss_scale.assign(maximum(scale * 0.5, scalar(1.0)));
        c.good_steps.assign(scalar(0.0));
        return {};
      });
}

// Builds the model eagerly on one sample (inference mode: no state changes) so that
// every weight exists before a step is traced. A model is built by its first call.
void build_model(Model& m, const TensorList& xs) {
  if (!m.built()) m(take(xs, 0, 1, Tensor()), false);
}

}  // namespace

std::map<std::string, double> Model::train_on_batch(const TensorList& x, const TensorList& y,
                                                    const Tensor& sample_weight) {
  DF_CHECK(compiled_, "[", name(), ".train_on_batch] call compile() first");
  Compiled& c = *compiled_;
  if (!c.optimizer_built) {  // once per compile(), not on every step
    build_model(*this, x);
    c.optimizer->build(trainable_weights());
    c.optimizer_built = true;
  }
  auto step = [this, &c](const TensorList& xs, const TensorList& ys, const Tensor& sw) -> Tensor {
    LearningPhaseScope phase(true);
    std::vector<Variable> vars = trainable_weights();
    GradientTape tape;
    TensorList preds = (*this)(xs, true);
    Tensor loss = c.total_loss(ys, preds, sw);
    for (const Tensor& r : losses()) loss = loss + (r.dtype() == DType::Float32 ? r : cast(r, DType::Float32));
    if (!c.loss_scale.defined()) {
      std::vector<Tensor> grads = tape.gradient(loss, vars);
      c.optimizer->apply_gradients(grads, vars);
    } else {
      apply_scaled(c, tape, loss, vars);
    }
    c.loss_tracker->update_state(loss);
    c.update_metrics(ys, preds, sw);
    return loss;
  };
  const bool weighted = sample_weight.defined();
  if (weighted)
    DF_CHECK(sample_weight.rank() == 1 && sample_weight.dim(0) == x[0].dim(0), "[", name(),
             ".train_on_batch] sample_weight must be [", x[0].dim(0), "] (one per sample), got ", sample_weight.shape());
  const Tensor sw = weighted ? cast(sample_weight, DType::Float32) : Tensor();
  if (c.run_eagerly) {
    step(x, y, sw);
  } else {
    // One traced step without sample weights and one with (an extra [?] float32 input).
    std::optional<Function>& fn = weighted ? c.train_fn_weighted : c.train_fn;
    if (!fn) {
      Signature sig = batch_signature(x);
      for (const TensorType& t : batch_signature(y)) sig.push_back(t);
      if (weighted) sig.push_back({DType::Float32, Shape{-1}});
      const size_t nx = x.size(), ny = y.size();
      fn = function(
          [step, nx, ny, weighted](const TensorList& in) -> TensorList {
            TensorList xs(in.begin(), in.begin() + long(nx)), ys(in.begin() + long(nx), in.begin() + long(nx + ny));
            return {step(xs, ys, weighted ? in.back() : Tensor())};
          },
          FunctionOptions{.name = weighted ? "train_function_weighted" : "train_function", .input_signature = sig});
    }
    TensorList in = x;
    in.insert(in.end(), y.begin(), y.end());
    if (weighted) in.push_back(sw);
    (*fn)(in);
  }
  return c.logs();
}

std::map<std::string, double> Model::test_on_batch(const TensorList& x, const TensorList& y) {
  DF_CHECK(compiled_, "[", name(), ".test_on_batch] call compile() first");
  Compiled& c = *compiled_;
  build_model(*this, x);
  auto step = [this, &c](const TensorList& xs, const TensorList& ys) -> Tensor {
    LearningPhaseScope phase(false);
    TensorList preds = (*this)(xs, false);
    Tensor loss = c.total_loss(ys, preds, Tensor());
    for (const Tensor& r : losses()) loss = loss + (r.dtype() == DType::Float32 ? r : cast(r, DType::Float32));
    c.loss_tracker->update_state(loss);
    c.update_metrics(ys, preds, Tensor());
    return loss;
  };
  if (c.run_eagerly) {
    step(x, y);
  } else {
    if (!c.test_fn) {
      Signature sig = batch_signature(x);
      for (const TensorType& t : batch_signature(y)) sig.push_back(t);
      const size_t nx = x.size();
      c.test_fn = function(
          [step, nx](const TensorList& in) -> TensorList {
            TensorList xs(in.begin(), in.begin() + long(nx)), ys(in.begin() + long(nx), in.end());
            return {step(xs, ys)};
          },
          FunctionOptions{.name = "test_function", .input_signature = sig});
    }
    TensorList in = x;
    in.insert(in.end(), y.begin(), y.end());
    (*c.test_fn)(in);
  }
  return c.logs();
}

// --- fit ---

namespace {

// One batch for a train step.
struct Batch {
  TensorList x, y;
  Tensor sw;
};

// The batches of one epoch: next() fills a batch, false when the epoch's data ends.
struct EpochFeed {
  int64_t steps = 0;  // for the progress bar; 0 when unknown
  std::function<bool(Batch&)> next;
};

// The epoch and batch loop of fit(), shared by tensors and datasets: callbacks,
// metrics, progress bar, validation and history.
History fit_loop(Model& m, Model::Compiled& c, const FitOptions& options, const std::function<EpochFeed()>& epoch_feed,
                 const std::function<Logs()>& validate) {
  std::vector<CallbackPtr> callbacks = options.callbacks;
  for (const CallbackPtr& cb : callbacks) cb->set_model(&m);
  History history;
  m.stop_training = false;
  for (const CallbackPtr& cb : callbacks) cb->on_train_begin({});
  for (int epoch = options.initial_epoch; epoch < options.epochs && !m.stop_training; ++epoch) {
    if (options.verbose) std::printf("Epoch %d/%d\n", epoch + 1, options.epochs);
    for (const CallbackPtr& cb : callbacks) cb->on_epoch_begin(epoch, {});
    c.reset_metrics();
    EpochFeed feed = epoch_feed();
    Progbar bar(feed.steps, options.verbose);
    Logs logs;
    int64_t b = 0;
    Batch batch;
    while (!m.stop_training && feed.next(batch)) {
      for (const CallbackPtr& cb : callbacks) cb->on_train_batch_begin(b, {});
      logs = m.train_on_batch(batch.x, batch.y, batch.sw);
      for (const CallbackPtr& cb : callbacks) cb->on_train_batch_end(b, logs);
      bar.update(++b, logs);
    }
    if (validate && !m.stop_training)
      for (const auto& [k, v] : validate()) logs["val_" + k] = v;
    bar.update(feed.steps > 0 ? feed.steps : b, logs, /*finalize=*/true);
    for (const CallbackPtr& cb : callbacks) cb->on_epoch_end(epoch, logs);
    history.epoch.push_back(epoch);
    for (const auto& [k, v] : logs) history.history[k].push_back(v);
  }
  for (const CallbackPtr& cb : callbacks) cb->on_train_end({});
  return history;
}

// How many leading components of a dataset element are the model's inputs.
size_t model_input_count(const Model& m) { return m.inputs().empty() ? 1 : m.inputs().size(); }

// A dataset element as (x..., y...[, sample_weight]).
Batch split_element(const data::Element& e, size_t nx, size_t ny, bool weights_allowed, const char* op, int64_t index) {
  const size_t n = e.size();
  DF_CHECK(n == nx + ny || (weights_allowed && n == nx + ny + 1), "[", op, "] dataset element ", index, " has ", n,
           " components ", data::ElementSpec::of(e).to_string(), "; the model takes ", nx, " input(s) and ", ny,
           " target(s)", weights_allowed ? ", then optionally sample weights" : "",
           ": make (x, y) elements with map()");
  Batch b;
  b.x.assign(e.tensors().begin(), e.tensors().begin() + long(nx));
  b.y.assign(e.tensors().begin() + long(nx), e.tensors().begin() + long(nx + ny));
  if (n == nx + ny + 1) b.sw = e[n - 1];
  return b;
}

int64_t finite_steps(const data::Dataset& ds, const char* op) {
  DF_CHECK(ds.defined(), "[", op, "] the dataset is undefined");
  const int64_t card = ds.cardinality();
  DF_CHECK(card != data::kInfiniteCardinality, "[", op, "] the dataset is infinite (repeat() without a count?)",
           std::string(op) == "fit" ? ": give steps_per_epoch" : "");
  return card >= 0 ? card : 0;
}

}  // namespace

History Model::fit(const TensorList& x, const TensorList& y, FitOptions options) {
  DF_CHECK(compiled_, "[", name(), ".fit] call compile() first");
  DF_CHECK(options.batch_size > 0, "[fit] batch_size must be positive, got ", options.batch_size);
  DF_CHECK(options.validation_split >= 0 && options.validation_split < 1,
           "[fit] validation_split must be in [0, 1), got ", options.validation_split);
  int64_t n = num_samples(x, y, "fit");
  TensorList train_x = x, train_y = y, val_x = options.validation_x, val_y = options.validation_y;
  if (val_x.empty() && options.validation_split > 0) {
    const int64_t n_val = int64_t(double(n) * options.validation_split);
    DF_CHECK(n_val > 0 && n_val < n, "[fit] validation_split ", options.validation_split, " of ", n,
             " samples leaves no training or validation data");
    train_x = take(x, 0, n - n_val, Tensor());
    train_y = take(y, 0, n - n_val, Tensor());
    val_x = take(x, n - n_val, n, Tensor());
    val_y = take(y, n - n_val, n, Tensor());
    n -= n_val;
  }
  Tensor train_sw = options.sample_weight;
  if (train_sw.defined()) {
    DF_CHECK(train_sw.rank() == 1 && train_sw.dim(0) == x[0].dim(0), "[fit] sample_weight must be [", x[0].dim(0),
             "] (one per sample), got ", train_sw.shape());
    if (n < x[0].dim(0)) train_sw = train_sw.slice0(0, n);  // the validation split's weights are not used
  }
  const int64_t steps = (n + options.batch_size - 1) / options.batch_size;
  auto [seed, seed2] = detail::resolve_seeds(options.seed);
  std::mt19937_64 rng(uint64_t(seed) * 0x9E3779B97F4A7C15ull ^ uint64_t(seed2));
  std::vector<int32_t> order(static_cast<size_t>(n));
  auto epoch_feed = [&]() -> EpochFeed {
    std::iota(order.begin(), order.end(), 0);
    if (options.shuffle) std::shuffle(order.begin(), order.end(), rng);
    return {steps, [&, b = int64_t(0)](Batch& out) mutable {
              if (b >= steps) return false;
              const int64_t begin = b * options.batch_size, end = std::min(n, begin + options.batch_size);
              Tensor index;
              if (options.shuffle)
                index = constant(std::vector<int32_t>(order.begin() + begin, order.begin() + end), Shape{end - begin});
              out = {take(train_x, begin, end, index), take(train_y, begin, end, index),
                     train_sw.defined() ? take({train_sw}, begin, end, index)[0] : Tensor()};
              ++b;
              return true;
            }};
  };
  std::function<Logs()> validate;
  if (!val_x.empty())
    validate = [&] { return evaluate(val_x, val_y, {.batch_size = options.batch_size, .verbose = 0}); };
  return fit_loop(*this, *compiled_, options, epoch_feed, validate);
}

History Model::fit(const data::Dataset& dataset, FitOptions options) {
  DF_CHECK(compiled_, "[", name(), ".fit] call compile() first");
  DF_CHECK(dataset.defined(), "[fit] the dataset is undefined");
  DF_CHECK(options.steps_per_epoch == -1 || options.steps_per_epoch > 0,
           "[fit] steps_per_epoch must be positive (or -1: a pass per epoch), got ", options.steps_per_epoch);
  const int64_t per_epoch = options.steps_per_epoch;
  const int64_t steps = per_epoch > 0 ? per_epoch : finite_steps(dataset, "fit");
  const size_t nx = model_input_count(*this), ny = compiled_->losses.size();
  // Without steps_per_epoch every epoch is a fresh pass (a shuffle reshuffles); with
  // it, one iterator carries on across epochs, as Keras does.
  std::optional<data::Iterator> it;
  auto epoch_feed = [&]() -> EpochFeed {
    if (per_epoch < 0 || !it) it = dataset.iter();
    return {steps, [&, b = int64_t(0)](Batch& out) mutable {
              if (per_epoch > 0 && b >= per_epoch) return false;
              std::optional<data::Element> e = it->next();
              if (!e) {
                if (per_epoch > 0) {
                  std::fprintf(stderr, "deepflow: [fit] the dataset ran out of data after %lld steps of an epoch "
                               "of %lld; stopping (use repeat() for more epochs)\n", (long long)b, (long long)per_epoch);
                  stop_training = true;
                }
                return false;
              }
              out = split_element(*e, nx, ny, true, "fit", b++);
              return true;
            }};
  };
  std::function<Logs()> validate;
  if (options.validation_data.defined())
    validate = [&] { return evaluate(options.validation_data, {.verbose = 0}); };
  return fit_loop(*this, *compiled_, options, epoch_feed, validate);
}

// --- evaluate / predict ---

std::map<std::string, double> Model::evaluate(const TensorList& x, const TensorList& y, EvaluateOptions options) {
  DF_CHECK(compiled_, "[", name(), ".evaluate] call compile() first");
  DF_CHECK(options.batch_size > 0, "[evaluate] batch_size must be positive, got ", options.batch_size);
  Compiled& c = *compiled_;
  const int64_t n = num_samples(x, y, "evaluate");
  const int64_t steps = (n + options.batch_size - 1) / options.batch_size;
  for (const CallbackPtr& cb : options.callbacks) cb->set_model(this);
  for (const CallbackPtr& cb : options.callbacks) cb->on_test_begin({});
  c.reset_metrics();
  Progbar bar(steps, options.verbose);
  Logs logs;
  for (int64_t b = 0; b < steps; ++b) {
    const int64_t begin = b * options.batch_size, end = std::min(n, begin + options.batch_size);
    logs = test_on_batch(take(x, begin, end, Tensor()), take(y, begin, end, Tensor()));
    for (const CallbackPtr& cb : options.callbacks) cb->on_test_batch_end(b, logs);
    bar.update(b + 1, logs);
  }
  bar.update(steps, logs, true);
  for (const CallbackPtr& cb : options.callbacks) cb->on_test_end(logs);
  return logs;
}

std::map<std::string, double> Model::evaluate(const data::Dataset& dataset, EvaluateOptions options) {
  DF_CHECK(compiled_, "[", name(), ".evaluate] call compile() first");
  const int64_t steps = finite_steps(dataset, "evaluate");
  Compiled& c = *compiled_;
  const size_t nx = model_input_count(*this), ny = c.losses.size();
  for (const CallbackPtr& cb : options.callbacks) cb->set_model(this);
  for (const CallbackPtr& cb : options.callbacks) cb->on_test_begin({});
  c.reset_metrics();
  Progbar bar(steps, options.verbose);
  Logs logs;
  int64_t b = 0;
  data::Iterator it = dataset.iter();
  while (std::optional<data::Element> e = it.next()) {
    Batch batch = split_element(*e, nx, ny, false, "evaluate", b);
    logs = test_on_batch(batch.x, batch.y);
    for (const CallbackPtr& cb : options.callbacks) cb->on_test_batch_end(b, logs);
    bar.update(++b, logs);
  }
  if (b == 0) logs = c.logs();
  bar.update(steps > 0 ? steps : b, logs, true);
  for (const CallbackPtr& cb : options.callbacks) cb->on_test_end(logs);
  return logs;
}

namespace {

// Runs the predict step on every batch next() gives and concatenates the outputs.
TensorList predict_loop(Model& m, Model::Compiled* c, const std::function<bool(TensorList&)>& next) {
  TensorList batch;
  if (!next(batch)) return {};
  build_model(m, batch);
  const bool eager = c && c->run_eagerly;
  std::optional<Function> local;
  std::optional<Function>* fn = nullptr;
  if (!eager) {
    fn = c ? &c->predict_fn : &local;
    if (!*fn)
      *fn = function([&m](const TensorList& in) -> TensorList { return m(in, false); },
                     FunctionOptions{.name = "predict_function", .input_signature = batch_signature(batch)});
  }
  std::vector<TensorList> parts;
  do {
    parts.push_back(fn ? (**fn)(batch) : m(batch, false));
  } while (next(batch));
  TensorList out;
  for (size_t i = 0; i < parts[0].size(); ++i) {
    std::vector<Tensor> pieces;
    for (const TensorList& p : parts) pieces.push_back(p[i]);
    out.push_back(pieces.size() == 1 ? pieces[0] : concat(pieces, 0));
  }
  return out;
}

}  // namespace

TensorList Model::predict(const TensorList& x, PredictOptions options) {
  DF_CHECK(options.batch_size > 0, "[predict] batch_size must be positive, got ", options.batch_size);
  const int64_t n = num_samples(x, {}, "predict");
  int64_t begin = 0;
  return predict_loop(*this, compiled_.get(), [&](TensorList& batch) {
    if (begin >= n) return false;
    const int64_t end = std::min(n, begin + options.batch_size);
    batch = take(x, begin, end, Tensor());
    begin = end;
    return true;
  });
}

TensorList Model::predict(const data::Dataset& dataset, PredictOptions) {
  finite_steps(dataset, "predict");
  const size_t nx = model_input_count(*this);
  data::Iterator it = dataset.iter();
  int64_t b = 0;
  return predict_loop(*this, compiled_.get(), [&](TensorList& batch) {
    std::optional<data::Element> e = it.next();
    if (!e) return false;
    DF_CHECK(e->size() >= nx, "[predict] dataset element ", b, " has ", e->size(), " components ",
             data::ElementSpec::of(*e).to_string(), "; the model takes ", nx, " input(s)");
    batch.assign(e->tensors().begin(), e->tensors().begin() + long(nx));
    ++b;
    return true;
  });
}

}  // namespace deepflow::keras
