// SPDX-License-Identifier: Apache-2.0
// tf.keras over deepflow::keras: layers, models, compile / fit / evaluate / predict.
//
// Built-in layers, losses and optimizers are made from Keras configs (the JSON that
// Keras's get_config writes; python/deepflow/keras/ builds them from Keras's Python
// signatures) by the C++ registries, so each needs no binding of its own. Python
// subclasses of Layer, Model, Loss, Metric, Callback and Optimizer reach C++ through
// trampolines: C++ calls their build / call / update_step / on_* hooks (named _df_*).
// fit and friends release the GIL: the train step is a traced graph, and the hooks take
// the GIL back only while Python runs.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/trampoline.h>

#include <nlohmann/json.hpp>

#include "bind.h"
#include "deepflow/keras/callbacks.h"
#include "deepflow/keras/datasets/mnist.h"
#include "deepflow/keras/model.h"
#include "deepflow/keras/schedules.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/op.h"

namespace deepflow::py {
namespace {

namespace k = deepflow::keras;
using Ints = std::vector<int64_t>;

k::Config parse(const std::string& json) { return nlohmann::json::parse(json); }

nb::list shapes_to_py(const std::vector<Shape>& shapes) {
  nb::list out;
  for (const Shape& s : shapes) out.append(nb::cast(s.to_vector()));
  return out;
}

nb::object masks_to_py(const TensorList& masks) {
  if (masks.empty()) return nb::none();
  nb::list out;
  for (const Tensor& m : masks) out.append(m.defined() ? nb::cast(m) : nb::none());
  return out;
}

// A Layer subclassed in Python: build and call run the Python methods.
struct PyLayer : k::Layer {
  NB_TRAMPOLINE(k::Layer);
  explicit PyLayer(std::string name) : k::Layer(std::move(name)) {}
  void build(const std::vector<Shape>& shapes) override {
    nb::gil_scoped_acquire gil;
    nb::object self = nb::borrow(nb_trampoline.base());
    self.attr("_df_build")(shapes_to_py(shapes));
  }
  void build(const Shape& s) override { build(std::vector<Shape>{s}); }
  TensorList call(const TensorList& inputs, bool training) override {
    nb::gil_scoped_acquire gil;
    nb::object self = nb::borrow(nb_trampoline.base());
    return nb::cast<TensorList>(self.attr("_df_call")(inputs, training));
  }
  Tensor call(const Tensor& x, bool training) override { return call(TensorList{x}, training)[0]; }
  // Masks reach Python's call(mask=...) and compute_mask (None for an undefined one).
  TensorList call_masked(const TensorList& inputs, const TensorList& masks, bool training) override {
    nb::gil_scoped_acquire gil;
    nb::object self = nb::borrow(nb_trampoline.base());
    return nb::cast<TensorList>(self.attr("_df_call")(inputs, training, masks_to_py(masks)));
  }
  TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const override {
    nb::gil_scoped_acquire gil;
    nb::object out = nb::borrow(nb_trampoline.base()).attr("_df_compute_mask")(inputs, masks_to_py(masks));
    TensorList result;
    if (out.is_none()) return result;
    if (nb::isinstance<Tensor>(out)) return {nb::cast<Tensor>(out)};
    for (nb::handle m : out) result.push_back(m.is_none() ? Tensor() : nb::cast<Tensor>(m));
    return result;
  }
  std::string class_name() const override {
    nb::gil_scoped_acquire gil;
    return nb::cast<std::string>(nb::borrow(nb_trampoline.base()).attr("__class__").attr("__name__"));
  }
  k::Config get_config() const override {
    nb::gil_scoped_acquire gil;
    nb::object json = nb::borrow(nb_trampoline.base()).attr("_df_config_json")();
    return parse(nb::cast<std::string>(json));
  }
};

// A Model subclassed in Python (or functional, made from Python): call runs _df_call,
// which for a functional model calls back the C++ graph (_functional_call).
struct PyModel : k::Model {
  NB_TRAMPOLINE(k::Model);
  explicit PyModel(std::string name) : k::Model(std::move(name)) {}
  PyModel(TensorList in, TensorList out, std::string name) : k::Model(std::move(in), std::move(out), std::move(name)) {}
  void build(const std::vector<Shape>& shapes) override {
    nb::gil_scoped_acquire gil;
    nb::borrow(nb_trampoline.base()).attr("_df_build")(shapes_to_py(shapes));
  }
  void build(const Shape& s) override { build(std::vector<Shape>{s}); }
  TensorList call(const TensorList& inputs, bool training) override {
    nb::gil_scoped_acquire gil;
    return nb::cast<TensorList>(nb::borrow(nb_trampoline.base()).attr("_df_call")(inputs, training));
  }
  Tensor call(const Tensor& x, bool training) override { return call(TensorList{x}, training)[0]; }
  std::string class_name() const override {
    nb::gil_scoped_acquire gil;
    return nb::cast<std::string>(nb::borrow(nb_trampoline.base()).attr("_df_class_name")());
  }
};

// An Optimizer subclassed in Python (Keras 3's contract): C++ makes the slots it is asked
// for through build(), and runs update_step per variable inside apply_gradients (eagerly, or
// once while fit traces its step); both reach the Python object's hooks.
struct PyOptimizer : k::Optimizer {
  NB_TRAMPOLINE(k::Optimizer, 3);
  PyOptimizer(std::string name, k::OptimizerOptions o) : k::Optimizer(std::move(name), std::move(o)) {}
  void build_slots(const Variable& var) override {
    nb::gil_scoped_acquire gil;
    nb::borrow(nb_trampoline.base()).attr("_df_build_slot")(var);
  }
  void update_step(const Tensor& grad, Variable& var, const Tensor& lr) override {
    nb::gil_scoped_acquire gil;
    nb::borrow(nb_trampoline.base()).attr("_df_update_step")(grad, var, lr);
  }
  k::Config get_config() const override {
    nb::gil_scoped_acquire gil;
    return parse(nb::cast<std::string>(nb::borrow(nb_trampoline.base()).attr("_df_config_json")()));
  }
  k::Config base_config() const { return k::Optimizer::get_config(); }
  // A slot made while a step is traced is still a variable, made eagerly.
  Variable slot_of(const Variable& var, const std::string& name) {
    BuildScopeGuard eager(nullptr);
    return add_slot(var, name);
  }
};

// A Metric subclassed in Python: update_state runs Python (traced once inside fit's step,
// where its assigns become graph ops), result and reset_state too.
struct PyMetric : k::Metric {
  NB_TRAMPOLINE(k::Metric, 5);
  explicit PyMetric(std::string name) : k::Metric(std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override {
    nb::gil_scoped_acquire gil;
    nb::borrow(nb_trampoline.base())
        .attr("_df_update_state")(y_true, y_pred, sample_weight.defined() ? nb::cast(sample_weight) : nb::none());
  }
  Tensor result() const override {
    nb::gil_scoped_acquire gil;
    return to_tensor(nb::borrow(nb_trampoline.base()).attr("_df_result")());
  }
  void reset_state() override {
    nb::gil_scoped_acquire gil;
    nb::borrow(nb_trampoline.base()).attr("_df_reset_state")();
  }
  std::string class_name() const override {
    nb::gil_scoped_acquire gil;
    return nb::cast<std::string>(nb::borrow(nb_trampoline.base()).attr("_df_class_name")());
  }
  k::Config get_config() const override {
    nb::gil_scoped_acquire gil;
    return parse(nb::cast<std::string>(nb::borrow(nb_trampoline.base()).attr("_df_config_json")()));
  }
};

struct PyCallback : k::Callback {
  NB_TRAMPOLINE(k::Callback);
  void hook(const char* name, nb::object arg, const k::Logs& logs) const {
    nb::gil_scoped_acquire gil;
    nb::object self = nb::borrow(nb_trampoline.base());
    if (arg.is_valid()) self.attr(name)(arg, logs);
    else self.attr(name)(logs);
  }
  void on_train_begin(const k::Logs& l) override { hook("_df_on_train_begin", {}, l); }
  void on_train_end(const k::Logs& l) override { hook("_df_on_train_end", {}, l); }
  void on_epoch_begin(int e, const k::Logs& l) override { hook("_df_on_epoch_begin", nb::int_(e), l); }
  void on_epoch_end(int e, k::Logs& l) override {
    nb::gil_scoped_acquire gil;
    nb::object r = nb::borrow(nb_trampoline.base()).attr("_df_on_epoch_end")(e, l);
    if (!r.is_none()) l = nb::cast<k::Logs>(r);  // a callback may add to the logs
  }
  void on_train_batch_begin(int64_t b, const k::Logs& l) override { hook("_df_on_train_batch_begin", nb::int_(b), l); }
  void on_train_batch_end(int64_t b, const k::Logs& l) override { hook("_df_on_train_batch_end", nb::int_(b), l); }
  void on_test_begin(const k::Logs& l) override { hook("_df_on_test_begin", {}, l); }
  void on_test_end(const k::Logs& l) override { hook("_df_on_test_end", {}, l); }
  void on_predict_begin(const k::Logs& l) override { hook("_df_on_predict_begin", {}, l); }
  void on_predict_end(const k::Logs& l) override { hook("_df_on_predict_end", {}, l); }
};

// A loss written in Python: a callable (y_true, y_pred) -> per-sample losses.
struct FnLoss : k::Loss {
  nb::object fn;
  std::string cls;
  FnLoss(nb::object f, std::string name, k::Reduction r) : k::Loss(name, r), fn(std::move(f)), cls(std::move(name)) {}
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override {
    nb::gil_scoped_acquire gil;
    return to_tensor(fn(y_true, y_pred));
  }
  std::string class_name() const override { return cls; }
};

k::Reduction reduction_of(const std::string& r) {
  if (r == "sum_over_batch_size" || r == "auto") return k::Reduction::SumOverBatchSize;
  if (r == "sum") return k::Reduction::Sum;
  if (r == "none") return k::Reduction::None;
  fail("[keras.losses] unknown reduction '", r, "'; known: sum_over_batch_size, sum, none");
}

k::LossSpec loss_spec(nb::handle v) {
  if (nb::isinstance<nb::str>(v)) return k::LossSpec(nb::cast<std::string>(v));
  return k::LossSpec(nb::cast<k::LossPtr>(v));
}

k::MetricSpec metric_spec(nb::handle v) {
  if (nb::isinstance<nb::str>(v)) return k::MetricSpec(nb::cast<std::string>(v));
  return k::MetricSpec(nb::cast<k::MetricPtr>(v));
}

TensorList tensor_list(nb::handle v) {
  TensorList out;
  if (v.is_none()) return out;
  for (nb::handle x : v) out.push_back(to_tensor(x));
  return out;
}

nb::dict history_to_py(const k::History& h) {
  nb::dict d;
  d["history"] = nb::cast(h.history);
  d["epoch"] = nb::cast(h.epoch);
  return d;
}

}  // namespace

void init_keras(nb::module_& m) {
  nb::class_<k::Layer, PyLayer>(m, "_Layer")
      .def(nb::init<std::string>(), nb::arg("name") = "")
      // Taking self as a shared_ptr makes nanobind tie the layer's weak_this to its Python
      // object, so shared_from_this() works when a functional model records the call.
      .def("_call", [](std::shared_ptr<k::Layer> l, nb::handle inputs, std::optional<bool> training,
                       nb::handle masks) {
        TensorList in = tensor_list(inputs);
        if (masks.is_none()) return (*l)(in, training);
        TensorList ms;  // Keras's mask=: one per input, None for none
        for (nb::handle m : masks) ms.push_back(m.is_none() ? Tensor() : nb::cast<Tensor>(m));
        ms.resize(in.size());
        return (*l)(in, ms, training);
      }, nb::arg("inputs"), nb::arg("training").none() = nb::none(), nb::arg("masks").none() = nb::none())
      // The C++ layer's own compute_mask (not the trampoline's: Python's compute_mask calls this).
      .def("_compute_mask", [](const k::Layer& l, nb::handle inputs, nb::handle masks) -> nb::object {
        TensorList ms;
        if (!masks.is_none())
          for (nb::handle m : masks) ms.push_back(m.is_none() ? Tensor() : nb::cast<Tensor>(m));
        return masks_to_py(l.compute_mask(tensor_list(inputs), ms));
      }, nb::arg("inputs"), nb::arg("masks").none() = nb::none())
      .def("_build_shapes", [](k::Layer& l, const std::vector<Ints>& shapes) {
        std::vector<Shape> s;
        for (const Ints& d : shapes) s.emplace_back(d);
        l.build(s);
        l.set_built(true);
      })
      .def("_add_weight", [](k::Layer& l, const std::string& name, const Ints& shape, nb::handle init, bool trainable,
                             nb::handle regularizer, std::optional<int> dtype) {
        k::InitializerPtr i;
        if (nb::isinstance<nb::str>(init)) i = k::initializers::get(nb::cast<std::string>(init));
        else if (!init.is_none()) i = k::initializers::deserialize(parse(nb::cast<std::string>(init.attr("_df_config_json")())));
        k::RegularizerPtr r;
        if (nb::isinstance<nb::str>(regularizer)) r = k::regularizers::get(nb::cast<std::string>(regularizer));
        else if (!regularizer.is_none())
          r = k::regularizers::deserialize(parse(nb::cast<std::string>(regularizer.attr("_df_config_json")())));
        return l.add_weight(name, Shape(shape), i, trainable, r,
                            dtype ? std::optional<DType>(dtype_of_int(*dtype)) : std::nullopt);
      }, nb::arg("name"), nb::arg("shape"), nb::arg("initializer").none(), nb::arg("trainable"),
         nb::arg("regularizer").none(), nb::arg("dtype").none())
      .def("_track_variable", [](k::Layer& l, const Variable& v) { l.track_variable(v); })
      .def("_track_layer", [](k::Layer& l, std::shared_ptr<k::Layer> sub) { l.track_layer(std::move(sub)); })
      .def("_untrack_layer", [](k::Layer& l, const k::Layer* sub) { l.untrack_layer(sub); })
      .def("_sublayers", [](const k::Layer& l) { return l.layers(); })
      .def_prop_ro("_weights", &k::Layer::weights)
      .def_prop_ro("_trainable_weights", &k::Layer::trainable_weights)
      .def_prop_ro("_non_trainable_weights", &k::Layer::non_trainable_weights)
      .def("get_weights", [](const k::Layer& l) {
        nb::list out;
        for (const Tensor& t : l.get_weights()) out.append(to_numpy(t.clone(), true));
        return out;
      })
      .def("set_weights", [](k::Layer& l, nb::handle values) { l.set_weights(tensor_list(values)); })
      .def("count_params", &k::Layer::count_params)
      .def("_losses", &k::Layer::losses)
      .def("_add_loss", &k::Layer::add_loss)
      .def_prop_ro("name", &k::Layer::name)
      .def_prop_rw("_trainable", &k::Layer::trainable, &k::Layer::set_trainable)
      .def_prop_ro("built", &k::Layer::built)
      .def("_set_built", [](k::Layer& l, bool b) { l.set_built(b); })
      .def("_class_name", &k::Layer::class_name)
      .def("_config_json", [](const k::Layer& l) { return l.get_config().dump(); })
      .def("_set_dtype_policy", &k::Layer::set_dtype_policy)
      .def_prop_ro("_compute_dtype", [](const k::Layer& l) { return int(l.compute_dtype()); })
      .def_prop_ro("_variable_dtype", [](const k::Layer& l) { return int(l.variable_dtype()); })
      .def_prop_ro("_policy_name", [](const k::Layer& l) { return l.dtype_policy().name; })
      .def_prop_ro("_input_shapes", [](const k::Layer& l) { return shapes_to_py(l.input_shapes()); })
      .def_prop_ro("_output_shapes", [](const k::Layer& l) { return shapes_to_py(l.output_shapes()); });

  m.def("_layer_from_config", [](const std::string& json) { return k::layer_from_config(parse(json)); });
  m.def("_registered_layers", &k::registered_layers);
  m.def("_set_global_policy", &k::set_global_policy);
  m.def("_keras_input", [](const Ints& shape, const std::string& name, int dtype, std::optional<int64_t> batch) {
    return k::Input(Shape(shape), name, dtype_of_int(dtype), batch);
  });
  m.def("_is_keras_tensor", &k::is_keras_tensor);

  nb::class_<k::Model, k::Layer, PyModel>(m, "_Model")
      .def(nb::init<std::string>(), nb::arg("name") = "")
      .def("__init__", [](k::Model* self, nb::handle in, nb::handle out, const std::string& name) {
        new (self) PyModel(tensor_list(in), tensor_list(out), name);
      })
      .def("_functional_call", [](k::Model& m, const TensorList& in, bool training) { return m.k::Model::call(in, training); })
      .def_prop_ro("_inputs", &k::Model::inputs)
      .def_prop_ro("_outputs", &k::Model::outputs)
      .def("_model_layers", &k::Model::model_layers)
      .def("_compile", [](k::Model& m, nb::handle optimizer, nb::handle losses, nb::handle metrics,
                          std::vector<double> loss_weights, bool run_eagerly) {
        k::CompileOptions o;
        if (nb::isinstance<nb::str>(optimizer)) o.optimizer = k::OptimizerSpec(nb::cast<std::string>(optimizer));
        else o.optimizer = k::OptimizerSpec(nb::cast<k::OptimizerPtr>(optimizer));
        for (nb::handle l : losses) o.loss.push_back(loss_spec(l));
        for (nb::handle x : metrics) o.metrics.push_back(metric_spec(x));
        o.loss_weights = std::move(loss_weights);
        o.run_eagerly = run_eagerly;
        nb::gil_scoped_release nogil;
        m.compile(std::move(o));
      })
      .def("_fit", [](k::Model& m, nb::handle x, nb::handle y, int64_t batch_size, int epochs, int verbose,
                      std::vector<k::CallbackPtr> callbacks, double validation_split, nb::handle vx, nb::handle vy,
                      bool shuffle, int initial_epoch, nb::handle sample_weight, std::optional<int64_t> seed) {
        k::FitOptions o;
        o.batch_size = batch_size;
        o.epochs = epochs;
        o.verbose = verbose;
        o.callbacks = std::move(callbacks);
        o.validation_split = validation_split;
        o.validation_x = tensor_list(vx);
        o.validation_y = tensor_list(vy);
        o.shuffle = shuffle;
        o.initial_epoch = initial_epoch;
        if (!sample_weight.is_none()) o.sample_weight = to_tensor(sample_weight);
        o.seed = seed;
        TensorList xs = tensor_list(x), ys = tensor_list(y);
        k::History h;
        {
          nb::gil_scoped_release nogil;
          h = m.fit(xs, ys, std::move(o));
        }
        return history_to_py(h);
      }, nb::arg("x"), nb::arg("y"), nb::arg("batch_size"), nb::arg("epochs"), nb::arg("verbose"),
         nb::arg("callbacks"), nb::arg("validation_split"), nb::arg("vx").none(), nb::arg("vy").none(),
         nb::arg("shuffle"), nb::arg("initial_epoch"), nb::arg("sample_weight").none(), nb::arg("seed").none())
      // fit / evaluate / predict over a tf.data dataset of (x..., y...) batches: the C++
      // loop pulls the batches itself (prefetching threads, no Python per step).
      .def("_fit_dataset", [](k::Model& m, const data::Dataset& ds, int epochs, int verbose,
                              std::vector<k::CallbackPtr> callbacks, int initial_epoch, int64_t steps_per_epoch,
                              std::optional<data::Dataset> validation) {
        k::FitOptions o;
        o.epochs = epochs;
        o.verbose = verbose;
        o.callbacks = std::move(callbacks);
        o.initial_epoch = initial_epoch;
        o.steps_per_epoch = steps_per_epoch;
        if (validation) o.validation_data = *validation;
        k::History h;
        {
          nb::gil_scoped_release nogil;
          h = m.fit(ds, std::move(o));
        }
        return history_to_py(h);
      }, nb::arg("dataset"), nb::arg("epochs"), nb::arg("verbose"), nb::arg("callbacks"), nb::arg("initial_epoch"),
         nb::arg("steps_per_epoch"), nb::arg("validation").none())
      .def("_evaluate_dataset", [](k::Model& m, const data::Dataset& ds, int verbose,
                                   std::vector<k::CallbackPtr> callbacks) {
        k::EvaluateOptions o;
        o.verbose = verbose;
        o.callbacks = std::move(callbacks);
        nb::gil_scoped_release nogil;
        return m.evaluate(ds, std::move(o));
      })
      .def("_predict_dataset", [](k::Model& m, const data::Dataset& ds, int verbose) {
        k::PredictOptions o;
        o.verbose = verbose;
        nb::gil_scoped_release nogil;
        return m.predict(ds, std::move(o));
      })
      .def("_evaluate", [](k::Model& m, nb::handle x, nb::handle y, int64_t batch_size, int verbose,
                           std::vector<k::CallbackPtr> callbacks) {
        k::EvaluateOptions o;
        o.batch_size = batch_size;
        o.verbose = verbose;
        o.callbacks = std::move(callbacks);
        TensorList xs = tensor_list(x), ys = tensor_list(y);
        nb::gil_scoped_release nogil;
        return m.evaluate(xs, ys, std::move(o));
      })
      .def("_predict", [](k::Model& m, nb::handle x, int64_t batch_size, int verbose) {
        k::PredictOptions o;
        o.batch_size = batch_size;
        o.verbose = verbose;
        TensorList xs = tensor_list(x);
        nb::gil_scoped_release nogil;
        return m.predict(xs, std::move(o));
      })
      .def("_train_on_batch", [](k::Model& m, nb::handle x, nb::handle y, nb::handle sw) {
        TensorList xs = tensor_list(x), ys = tensor_list(y);
        Tensor w = sw.is_none() ? Tensor() : to_tensor(sw);
        nb::gil_scoped_release nogil;
        return m.train_on_batch(xs, ys, w);
      }, nb::arg("x"), nb::arg("y"), nb::arg("sample_weight").none())
      .def("_test_on_batch", [](k::Model& m, nb::handle x, nb::handle y) {
        TensorList xs = tensor_list(x), ys = tensor_list(y);
        nb::gil_scoped_release nogil;
        return m.test_on_batch(xs, ys);
      })
      .def("_summary", &k::Model::summary)
      .def("_to_dot", &k::Model::to_dot)
      .def("_save_weights", &k::Model::save_weights, nb::call_guard<nb::gil_scoped_release>())
      .def("_load_weights", &k::Model::load_weights, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("_compiled", &k::Model::compiled)
      .def_prop_ro("_optimizer", &k::Model::optimizer)
      .def_prop_ro("_metrics", &k::Model::metrics)
      .def_rw("stop_training", &k::Model::stop_training)
      .def("_to_json", [](const k::Model& m) { return k::model_to_json(m); });

  nb::class_<k::Sequential, k::Model>(m, "_Sequential")
      .def(nb::init<std::vector<k::LayerPtr>, std::string>(), nb::arg("layers"), nb::arg("name") = "")
      .def("add", &k::Sequential::add)
      .def("pop", &k::Sequential::pop)
      .def("_build_shape", [](k::Sequential& s, const Ints& shape) { s.build(Shape(shape)); });

  m.def("_read_idx", [](const std::string& path) {
    nb::gil_scoped_release nogil;
    return k::datasets::read_idx(path);
  });
  m.def("_mnist_dir", &k::datasets::mnist::default_dir);
  m.def("_model_from_json", [](const std::string& json) { return k::model_from_config(parse(json)); });

  // Losses, metrics, optimizers: the C++ objects, made from configs or names.
  nb::class_<k::Loss>(m, "_Loss")
      .def("__call__", [](const k::Loss& l, const TensorArg& y_true, const TensorArg& y_pred, nb::handle sw) {
        return l(y_true, y_pred, sw.is_none() ? Tensor() : to_tensor(sw));
      }, nb::arg("y_true"), nb::arg("y_pred"), nb::arg("sample_weight").none() = nb::none())
      .def("call", [](const k::Loss& l, const TensorArg& y_true, const TensorArg& y_pred) { return l.call(y_true, y_pred); })
      .def_prop_ro("name", &k::Loss::name)
      .def("_config_json", [](const k::Loss& l) { return l.get_config().dump(); });
  m.def("_loss_from_config", [](const std::string& json) { return k::losses::deserialize(parse(json)); });
  m.def("_loss_get", [](const std::string& name) { return k::losses::get(name); });
  m.def("_fn_loss", [](nb::object fn, const std::string& name, const std::string& reduction) -> k::LossPtr {
    return std::make_shared<FnLoss>(std::move(fn), name, reduction_of(reduction));
  });

  nb::class_<k::Metric, PyMetric>(m, "_Metric")
      .def(nb::init<std::string>(), nb::arg("name"))
      .def("update_state", [](k::Metric& mt, const TensorArg& y_true, const TensorArg& y_pred, nb::handle sw) {
        mt.update_state(y_true, y_pred, sw.is_none() ? Tensor() : to_tensor(sw));
      }, nb::arg("y_true"), nb::arg("y_pred"), nb::arg("sample_weight").none() = nb::none())
      .def("result", &k::Metric::result)
      .def("reset_state", &k::Metric::reset_state)
      .def_prop_ro("name", &k::Metric::name)
      .def("_class_name", &k::Metric::class_name)
      .def("_config_json", [](const k::Metric& mt) { return mt.get_config().dump(); });
  m.def("_metric_get", [](const std::string& name, const k::Loss* loss) { return k::metrics::get(name, loss); },
        nb::arg("name"), nb::arg("loss").none() = nb::none());
  // A metric object: the class (Keras's name), its name and its parameters.
  m.def("_metric_make", [](const std::string& cls, const std::string& name, double threshold, int k_or_n) -> k::MetricPtr {
    namespace mt = k::metrics;
    if (cls == "Mean") return std::make_shared<mt::Mean>(name);
    if (cls == "Accuracy") return mt::Accuracy(name);
    if (cls == "BinaryAccuracy") return mt::BinaryAccuracy(name, threshold);
    if (cls == "CategoricalAccuracy") return mt::CategoricalAccuracy(name);
    if (cls == "SparseCategoricalAccuracy") return mt::SparseCategoricalAccuracy(name);
    if (cls == "SparseTopKCategoricalAccuracy") return mt::SparseTopKCategoricalAccuracy(k_or_n, name);
    if (cls == "TopKCategoricalAccuracy") return mt::TopKCategoricalAccuracy(k_or_n, name);
    if (cls == "Precision") return mt::Precision(threshold, name);
    if (cls == "Recall") return mt::Recall(threshold, name);
    if (cls == "AUC") return mt::AUC(k_or_n, name);
    if (cls == "MeanSquaredError") return mt::MeanSquaredError(name);
    if (cls == "MeanAbsoluteError") return mt::MeanAbsoluteError(name);
    fail("[keras.metrics] no metric class '", cls, "'");
  });

  nb::class_<k::Optimizer, PyOptimizer>(m, "_Optimizer")
      .def("__init__", [](k::Optimizer* self, const std::string& name, double lr, const std::string& schedule,
                          std::optional<double> clipnorm, std::optional<double> clipvalue,
                          std::optional<double> global_clipnorm, std::optional<double> weight_decay) {
        k::OptimizerOptions o{.clipnorm = clipnorm, .clipvalue = clipvalue, .global_clipnorm = global_clipnorm,
                              .weight_decay = weight_decay};
        o.learning_rate = schedule.empty() ? k::LearningRate(lr) : k::LearningRate(k::schedules::deserialize(parse(schedule)));
        new (self) PyOptimizer(name, o);
      }, nb::arg("name"), nb::arg("learning_rate"), nb::arg("schedule"), nb::arg("clipnorm").none(),
         nb::arg("clipvalue").none(), nb::arg("global_clipnorm").none(), nb::arg("weight_decay").none())
      .def("_add_slot", [](k::Optimizer& o, const Variable& var, const std::string& name) {
        auto* py = dynamic_cast<PyOptimizer*>(&o);
        DF_CHECK(py != nullptr, "[Optimizer.add_variable_from_reference] only for optimizers written in Python");
        return py->slot_of(var, name);
      })
      .def("_base_config_json", [](const k::Optimizer& o) {
        auto* py = dynamic_cast<const PyOptimizer*>(&o);
        return (py ? py->base_config() : o.get_config()).dump();
      })
      .def("apply_gradients", [](k::Optimizer& o, nb::handle grads_and_vars) {
        std::vector<std::pair<Tensor, Variable>> gv;
        for (nb::handle item : grads_and_vars) {
          nb::tuple t = nb::cast<nb::tuple>(item);
          if (t[0].is_none()) continue;  // Keras skips variables without a gradient
          gv.emplace_back(to_tensor(t[0]), nb::cast<Variable>(t[1]));
        }
        o.apply_gradients(gv);
      })
      .def("build", &k::Optimizer::build)
      .def_prop_ro("_learning_rate", &k::Optimizer::learning_rate)
      .def("_set_learning_rate", &k::Optimizer::set_learning_rate)
      .def("_current_learning_rate", &k::Optimizer::current_learning_rate)
      .def_prop_ro("iterations", [](const k::Optimizer& o) { return o.iterations(); })
      .def_prop_ro("variables", &k::Optimizer::variables)
      .def_prop_ro("name", &k::Optimizer::name)
      .def("_config_json", [](const k::Optimizer& o) { return o.get_config().dump(); });
  m.def("_optimizer_from_config", [](const std::string& json) { return k::optimizers::deserialize(parse(json)); });
  m.def("_optimizer_get", [](const std::string& name) { return k::optimizers::get(name); });

  nb::class_<k::Callback, PyCallback>(m, "_Callback").def(nb::init<>());
  // The built-in callbacks (deepflow/keras/callbacks.h), by Keras's arguments.
  m.def("_early_stopping", [](const std::string& monitor, double min_delta, int patience, const std::string& mode,
                              bool restore, int start, int verbose) {
    return k::callbacks::EarlyStopping({monitor, min_delta, patience, mode, restore, start, verbose});
  });
  m.def("_model_checkpoint", [](const std::string& path, const std::string& monitor, bool best, const std::string& mode,
                                int verbose) {
    return k::callbacks::ModelCheckpoint({path, monitor, best, mode, verbose});
  });
  m.def("_reduce_lr_on_plateau", [](const std::string& monitor, double factor, int patience, const std::string& mode,
                                    double min_delta, int cooldown, double min_lr, int verbose) {
    return k::callbacks::ReduceLROnPlateau({monitor, factor, patience, mode, min_delta, cooldown, min_lr, verbose});
  });
  m.def("_csv_logger", [](const std::string& file, const std::string& sep, bool append) {
    return k::callbacks::CSVLogger(file, sep.empty() ? ',' : sep[0], append);
  });
  m.def("_terminate_on_nan", [] { return k::callbacks::TerminateOnNaN(); });
  m.def("_lr_scheduler", [](nb::object fn, int verbose) {
    auto f = std::make_shared<nb::object>(std::move(fn));
    return k::callbacks::LearningRateScheduler([f](int epoch, double lr) {
      nb::gil_scoped_acquire gil;
      return nb::cast<double>((*f)(epoch, lr));
    }, verbose);
  });
}

}  // namespace deepflow::py
