// SPDX-License-Identifier: Apache-2.0
// deepflow._deepflow's view of the serving optimizer (deepflow/quantize/serving_optimizer.h);
// python/deepflow/experimental/tensorrt.py builds TF-TRT's TrtGraphConverterV2 on it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "deepflow/quantize/serving_optimizer.h"

namespace deepflow::py {
namespace {

namespace q = deepflow::quantize;

// A Python callable returning the next input (a list of arrays, in the signature's key
// order) or None, as the C++ InputFn.
q::InputFn input_fn_of(nb::object fn) {
  if (fn.is_none()) return {};
  return [fn]() -> std::optional<TensorList> {
    nb::gil_scoped_acquire gil;
    nb::object item = fn();
    if (item.is_none()) return std::nullopt;
    TensorList out;
    for (nb::handle x : item) out.push_back(to_tensor(x, DType::Float32));
    return out;
  };
}

}  // namespace

void init_serving_optimizer(nb::module_& m) {
  nb::class_<q::ServingOptimizer>(m, "_ServingOptimizer")
      .def(
          "__init__",
          [](q::ServingOptimizer* self, const std::string& dir, const std::vector<std::string>& tags,
             const std::vector<std::string>& keys, const std::string& precision, int minimum_segment_size,
             int64_t max_batch_size, const std::string& calibration, double percentile) {
            q::ServingOptimizerOptions o;
            o.input_saved_model_dir = dir;
            o.input_saved_model_tags = tags;
            o.signature_keys = keys;
            o.precision_mode = q::parse_precision(precision);
            o.minimum_segment_size = minimum_segment_size;
            o.max_batch_size = max_batch_size;
            o.calibration = q::parse_calibration(calibration, "[TrtGraphConverterV2]");
            o.percentile = percentile;
            new (self) q::ServingOptimizer(std::move(o));
          },
          nb::arg("input_saved_model_dir"), nb::arg("tags"), nb::arg("signature_keys"), nb::arg("precision_mode"),
          nb::arg("minimum_segment_size"), nb::arg("max_batch_size"), nb::arg("calibration"), nb::arg("percentile"))
      .def(
          "convert",
          [](q::ServingOptimizer& self, nb::object calibration_input) {
            q::InputFn fn = input_fn_of(calibration_input);
            nb::gil_scoped_release release;
            self.convert(fn);
          },
          nb::arg("calibration_input").none())
      .def(
          "build",
          [](q::ServingOptimizer& self, nb::object input_fn, const std::string& key) {
            q::InputFn fn = input_fn_of(input_fn);
            nb::gil_scoped_release release;
            self.build(fn, key);
          },
          nb::arg("input_fn"), nb::arg("key"))
      .def(
          "save",
          [](const q::ServingOptimizer& self, const std::string& dir, bool overwrite) {
            nb::gil_scoped_release release;
            self.save(dir, overwrite);
          },
          nb::arg("output_saved_model_dir"), nb::arg("overwrite"))
      .def("summary", [](const q::ServingOptimizer& self) {
        std::vector<std::string> out;
        for (const q::SignatureSummary& s : self.summary()) out.push_back(s.to_string());
        return out;
      });
}

}  // namespace deepflow::py
