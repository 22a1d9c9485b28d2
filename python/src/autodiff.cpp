// SPDX-License-Identifier: Apache-2.0
// tf.Variable's state and tf.GradientTape's recording, bound over deepflow::Variable and
// deepflow::GradientTape. python/deepflow/_variables.py and backprop.py add TensorFlow's
// Python API (operators on variables, the context manager, nested structures).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bind.h"
#include "deepflow/autodiff/gradients.h"
#include "deepflow/autodiff/tape.h"

namespace deepflow::py {
namespace {

// One Python `with tf.GradientTape() as t:` block. The C++ tape records while it lives
// and unpaused; TensorFlow stops recording when the block exits but keeps what was
// recorded for gradient(), so exit pauses it (a StopRecording guard) instead of
// destroying it.
struct PyTape {
  bool persistent, watch_accessed_variables;
  std::unique_ptr<GradientTape> tape;
  std::vector<std::unique_ptr<GradientTape::StopRecording>> pauses;

  GradientTape& get() {
    if (!tape) throw nb::value_error("[GradientTape] the tape was never entered: use it in a `with` block");
    return *tape;
  }
  void pause() { pauses.push_back(std::make_unique<GradientTape::StopRecording>(get())); }
  void resume() {
    if (!pauses.empty()) pauses.pop_back();
  }
  ~PyTape() {
    pauses.clear();  // the guards refer to the tape
  }
};

Tensor source_tensor(nb::handle s) {
  if (nb::isinstance<Variable>(s)) return nb::cast<Variable>(s).value();
  return nb::cast<Tensor>(s);
}

}  // namespace

void init_autodiff(nb::module_& m) {
  nb::class_<Variable>(m, "Variable")
      // Another handle on an existing variable's state: a tf.Variable object for a C++ weight.
      .def("__init__", [](Variable* self, const Variable& other, bool) { new (self) Variable(other); },
           nb::arg("shared"), nb::arg("share"))
      .def("__init__", [](Variable* self, const TensorArg& initial, const std::string& name, bool trainable) {
        // The variable owns a copy: assigns write into its buffer, never into the caller's array.
        new (self) Variable(initial.t.clone(), name, trainable);
      }, nb::arg("initial_value"), nb::arg("name") = "Variable", nb::arg("trainable") = true)
      .def("value", &Variable::value)
      .def("_assign", [](Variable& v, const TensorArg& x) { v.assign(x); })
      .def("_assign_add", [](Variable& v, const TensorArg& x) { v.assign_add(x); })
      .def("_assign_sub", [](Variable& v, const TensorArg& x) { v.assign_sub(x); })
      .def_prop_ro("_name", &Variable::name)
      .def_prop_rw("_trainable", &Variable::trainable, &Variable::set_trainable)
      .def_prop_ro("_dtype", [](const Variable& v) { return int(v.dtype()); })
      .def_prop_ro("_shape_list", [](const Variable& v) { return v.shape().to_vector(); })
      .def_prop_ro("_id", &Variable::id)
      .def("_same", [](const Variable& a, const Variable& b) { return a.id() == b.id(); });

  nb::class_<PyTape>(m, "_Tape")
      .def("__init__", [](PyTape* self, bool persistent, bool watch) {
        new (self) PyTape{persistent, watch, nullptr, {}};
      })
      .def("_enter", [](PyTape& t) {
        if (t.tape) {  // re-entering a tape resumes it
          t.resume();
          return;
        }
        t.tape = std::make_unique<GradientTape>(t.persistent, t.watch_accessed_variables);
      })
      .def("_exit", [](PyTape& t) { t.pause(); })
      .def("_watched_variables", [](const PyTape& t) {
        return t.tape ? t.tape->watched_variables() : std::vector<Variable>{};
      })
      .def("_pause", [](PyTape& t) { t.pause(); })
      .def("_resume", [](PyTape& t) { t.resume(); })
      .def("_reset", [](PyTape& t) { t.get().reset(); })
      .def("_watch", [](PyTape& t, nb::handle x) {
        if (nb::isinstance<Variable>(x)) t.get().watch(nb::cast<Variable>(x));
        else t.get().watch(nb::cast<Tensor>(x));
      })
      .def("_gradient", [](PyTape& t, nb::handle targets, nb::handle sources, bool zeros,
                           nb::handle output_gradients) {
        std::vector<Tensor> ts, ss, og;
        for (nb::handle x : targets) ts.push_back(source_tensor(x));
        for (nb::handle x : sources) ss.push_back(source_tensor(x));
        if (!output_gradients.is_none())
          for (nb::handle x : output_gradients) og.push_back(x.is_none() ? Tensor() : to_tensor(x));
        std::vector<Tensor> g = t.get().gradient(ts, ss, zeros ? UnconnectedGradients::Zero : UnconnectedGradients::None, og);
        nb::list out;
        for (const Tensor& x : g) out.append(x.defined() ? nb::cast(x) : nb::none());
        return out;
      }, nb::arg("targets"), nb::arg("sources"), nb::arg("zeros"), nb::arg("output_gradients").none())
      .def("_jacobian", [](PyTape& t, nb::handle target, nb::handle source, bool zeros) -> nb::object {
        Tensor j = t.get().jacobian(source_tensor(target), source_tensor(source),
                                    zeros ? UnconnectedGradients::Zero : UnconnectedGradients::None);
        return j.defined() ? nb::cast(j) : nb::none();
      })
      .def("_num_recorded", [](PyTape& t) { return t.tape ? t.tape->num_recorded() : 0; });

  // tf.gradients: symbolic gradients in the graph being built (variables by their reads).
  m.def("gradients", [](nb::handle ys, nb::handle xs, nb::handle grad_ys, bool zeros) {
    std::vector<Tensor> y, x, gy;
    for (nb::handle t : ys) y.push_back(source_tensor(t));
    for (nb::handle t : xs) x.push_back(source_tensor(t));
    if (!grad_ys.is_none())
      for (nb::handle t : grad_ys) gy.push_back(t.is_none() ? Tensor() : to_tensor(t));
    std::vector<Tensor> g = gradients(y, x, gy, zeros ? UnconnectedGradients::Zero : UnconnectedGradients::None);
    nb::list out;
    for (const Tensor& t : g) out.append(t.defined() ? nb::cast(t) : nb::none());
    return out;
  }, nb::arg("ys"), nb::arg("xs"), nb::arg("grad_ys").none(), nb::arg("zeros"));
}

}  // namespace deepflow::py
