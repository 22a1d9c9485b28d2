// SPDX-License-Identifier: Apache-2.0
// deepflow._deepflow's view of deepflow_quantize: one call that converts a concrete
// function or a SavedModel directory with tf.lite.TFLiteConverter's settings
// (python/deepflow/lite/_converter.py builds the class on it).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "deepflow/quantize/converter.h"

namespace deepflow::py {

namespace q = deepflow::quantize;

void init_lite_convert(nb::module_& m) {
  // source: a _ConcreteFunction or a SavedModel directory; dataset: a callable returning
  // the next sample (a list of arrays) or None. Returns (bytes, mode, report rows).
  m.def("_lite_convert",
        [](nb::object source, const std::string& signature_key, bool optimize, const std::vector<int>& supported_types,
           bool int8_only, nb::object dataset, int input_type, int output_type, const std::string& calibration,
           double percentile, const std::vector<std::string>& input_names,
           const std::vector<std::string>& output_names) {
          q::ConverterOptions o;
          if (optimize) o.optimizations = {q::Optimize::kDefault};
          for (int t : supported_types) o.supported_types.push_back(DType(t));
          if (int8_only) o.supported_ops = {q::OpsSet::kTfliteBuiltinsInt8};
          if (!dataset.is_none()) {
            o.representative_dataset = [dataset]() -> std::optional<TensorList> {
              nb::gil_scoped_acquire gil;
              nb::object sample = dataset();
              if (sample.is_none()) return std::nullopt;
              TensorList out;
              for (nb::handle x : sample) out.push_back(to_tensor(x, DType::Float32));
              return out;
            };
          }
          o.inference_input_type = DType(input_type);
          o.inference_output_type = DType(output_type);
          o.calibration = q::parse_calibration(calibration, "[TFLiteConverter]");
          o.percentile = percentile;
          o.input_names = input_names;
          o.output_names = output_names;
          q::Conversion c;
          if (nb::isinstance<nb::str>(source)) {
            const std::string dir = nb::cast<std::string>(source);
            nb::gil_scoped_release release;
            c = q::convert_saved_model(dir, o, signature_key);
          } else {
            ConcreteFunction fn = nb::cast<ConcreteFunction>(source);
            nb::gil_scoped_release release;
            c = q::convert_function(fn, o);
          }
          std::vector<std::tuple<std::string, std::string, std::string, double, double, double, double>> report;
          for (const auto& e : c.report) report.emplace_back(e.op, e.tensor, e.source, e.scale, e.rmse, e.max_abs, e.float_rms);
          return nb::make_tuple(nb::bytes(c.bytes.data(), c.bytes.size()), c.mode, report);
        },
        nb::arg("source"), nb::arg("signature_key"), nb::arg("optimize"), nb::arg("supported_types"),
        nb::arg("int8_only"), nb::arg("dataset").none(), nb::arg("input_type"), nb::arg("output_type"),
        nb::arg("calibration"), nb::arg("percentile"), nb::arg("input_names"), nb::arg("output_names"));
}

}  // namespace deepflow::py
