// SPDX-License-Identifier: Apache-2.0
// deepflow._deepflow: the extension module. Errors of the core (deepflow::Error, whose
// message starts with "[op]") become TensorFlow's exception classes: the Python side
// registers a factory (python/deepflow/errors.py) that picks the class from the message.
#include <nanobind/nanobind.h>
#include <omp.h>

#include "bind.h"
#include "deepflow/core/error.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/saved_model.h"

namespace deepflow::py {
namespace {

nb::object& error_factory() {
  static nb::object* f = new nb::object();  // never destroyed: lives as long as the interpreter
  return *f;
}

}  // namespace

void raise_error(const std::exception& e) {
  nb::object& factory = error_factory();
  if (!factory.is_valid()) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return;
  }
  nb::object exc = factory(nb::str(e.what()));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
}

}  // namespace deepflow::py

NB_MODULE(_deepflow, m) {
  using namespace deepflow::py;
  m.doc() = "deepflow's C++ core: tensors, ops, autodiff, traced functions and graphs";
  // Tensors held by module globals (the error factory, caches of traced functions) are
  // still alive at interpreter exit, which nanobind would report as leaks.
  nb::set_leak_warnings(false);
  // tf.train.Checkpoint.restore takes checkpoints TensorFlow wrote (object graph matched).
  deepflow::tf::register_tf_checkpoint_format();
  // tf.saved_model.load and the converters take SavedModels TensorFlow wrote.
  deepflow::tf::register_tf_saved_model_format();
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const deepflow::Error& e) {
      raise_error(e);
    }
  });
  m.def("_set_error_factory", [](nb::object f) { error_factory() = std::move(f); });
  // tf.config.threading: the intra-op threads are OpenMP's (oneDNN and our kernels).
  m.def("set_intra_op_threads", [](int n) { omp_set_num_threads(n > 0 ? n : omp_get_num_procs()); });
  m.def("intra_op_threads", [] { return omp_get_max_threads(); });
  init_convert(m);
  init_tensor(m);
  init_ops(m);
  init_autodiff(m);
  init_function(m);
  init_py_ops(m);
  init_data(m);
  init_keras(m);
  init_saving(m);
  init_lite(m);
  init_lite_convert(m);
  init_serving_optimizer(m);
}
