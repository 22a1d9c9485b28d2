// SPDX-License-Identifier: Apache-2.0
// The converter's entry points: pick the mode as TensorFlow does, lower, rewrite, check.
#include "deepflow/quantize/converter.h"

#include <algorithm>

#include "deepflow/core/error.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/keras/model.h"
#include "deepflow/quantize/lower.h"
#include "deepflow/quantize/quantize_internal.h"

namespace deepflow::quantize {

namespace {

template <class T>
bool contains(const std::vector<T>& v, T x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string mode_of(const ConverterOptions& o, bool trained_ranges) {
  const bool int8_only = o.supported_ops.size() == 1 && o.supported_ops[0] == OpsSet::kTfliteBuiltinsInt8;
  const bool integer_io = o.inference_input_type != DType::Float32 || o.inference_output_type != DType::Float32;
  if (o.optimizations.empty()) {
    DF_CHECK(!int8_only && !integer_io, "[lite::convert] an integer-only model (supported_ops "
             "TFLITE_BUILTINS_INT8, or an int8 / uint8 inference type) needs optimizations = [DEFAULT] and a "
             "representative dataset");
    return "float32";
  }
  if (o.representative_dataset || trained_ranges) return "int8";  // calibrated, or ranges from QAT
  DF_CHECK(!int8_only && !integer_io, "[lite::convert] an integer-only model (supported_ops TFLITE_BUILTINS_INT8, "
           "or an int8 / uint8 inference type) needs a representative dataset to calibrate the activations");
  if (contains(o.supported_types, DType::Float16)) return "float16";
  return "dynamic_range";
}

}  // namespace

Conversion convert_graph(const Graph& graph, const ConverterOptions& options) {
  Conversion c;
  LiteModel m = lower_to_lite(graph, {.input_names = options.input_names, .output_names = options.output_names});
  const bool trained = std::any_of(m.tensors.begin(), m.tensors.end(), [](const LiteTensor& t) { return t.has_range; });
  c.mode = mode_of(options, trained);
  detail::fuse_activations(m);
  if (c.mode == "float16") {
    detail::quantize_float16(m);
  } else if (c.mode == "dynamic_range") {
    detail::quantize_dynamic_range(m);
  } else if (c.mode == "int8") {
    std::vector<TensorList> kept;
    const std::vector<detail::Range> ranges =
        options.representative_dataset ? detail::calibrate(m, options, options.report_samples, &kept)
                                       : std::vector<detail::Range>(m.tensors.size());
    LiteModel q = detail::quantize_full_integer(m, ranges, options);
    if (!kept.empty()) c.report = detail::int8_error_report(m, q, kept);
    m = std::move(q);
  }
  c.bytes = serialize_lite_model(m);
  return c;
}

Conversion convert_function(const ConcreteFunction& fn, const ConverterOptions& options) {
  return convert_graph(fn.graph(), options);
}

Conversion convert_keras_model(keras::Model& model, const ConverterOptions& options) {
  Signature sig;
  for (const Tensor& t : model.inputs()) {
    Shape s = t.shape();
    if (s.rank() > 0) s[0] = -1;
    sig.push_back({t.dtype(), s});
  }
  if (sig.empty()) {
    DF_CHECK(!model.input_shapes().empty(), "[lite::convert] Keras model '", model.name(),
             "' has never been called, so its input signature is unknown: call it once first");
    for (Shape s : model.input_shapes()) {
      if (s.rank() > 0) s[0] = -1;
      sig.push_back({DType::Float32, s});
    }
  }
  Function serve = function([&model](const TensorList& xs) { return model(xs, false); },
                            FunctionOptions{.name = model.name(), .input_signature = sig});
  return convert_function(serve.get_concrete_function(), options);
}

Conversion convert_saved_model(const std::string& dir, const ConverterOptions& options,
                               const std::string& signature_key) {
  io::SavedModel sm = io::load_saved_model(dir);
  DF_CHECK(sm.has_signature(signature_key), "[lite::convert] SavedModel ", dir, " has no signature '", signature_key,
           "'");
  ConverterOptions o = options;
  const Graph g = detail::signature_graph(sm.signature(signature_key), "[lite::convert]", &o.input_names, &o.output_names);
  return convert_graph(g, o);
}

}  // namespace deepflow::quantize
