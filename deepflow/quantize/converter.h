// SPDX-License-Identifier: Apache-2.0
// The TF Lite converter: deepflow graphs, traced functions and SavedModels (ours or
// TensorFlow's) to .tflite files, in TensorFlow's modes (tf.lite.TFLiteConverter):
//
//   quantize::ConverterOptions o;
//   o.optimizations = {quantize::Optimize::kDefault};
//   o.representative_dataset = [&, i = 0]() mutable -> std::optional<TensorList> {
//     if (i == 100) return std::nullopt;
//     return TensorList{samples[i++]};
//   };
//   quantize::Conversion c = quantize::convert_function(fn.get_concrete_function(), o);
//   write(c.bytes);   // full integer int8, float interface; c.report: the per-op int8 error
//
// Modes, chosen as TensorFlow chooses them:
//   - no optimizations: float32;
//   - kDefault with Float16 in supported_types (and no dataset): float16 weights, each
//     followed by a DEQUANTIZE to float32;
//   - kDefault without a dataset: dynamic range: the weights of CONV_2D, DEPTHWISE_CONV_2D,
//     FULLY_CONNECTED and BATCH_MATMUL with >= 1024 elements become int8 (symmetric,
//     per output channel for convolutions), activations stay float (hybrid kernels);
//   - kDefault with a representative dataset: full integer int8 (TFLite's spec: symmetric
//     per-channel int8 weights in [-127, 127], int32 bias at s_in * s_w, asymmetric int8
//     activations whose zero point represents 0 exactly), calibrated over the dataset;
//     inference_input_type / inference_output_type Int8 or UInt8 make the interface
//     integer, otherwise QUANTIZE / DEQUANTIZE ops sit at the boundary.
// Every op must have an int8 kernel in full-integer mode: an op without one is an error
// naming it (no silent float fallback). Batch norm is folded into the convolutions
// before quantization.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "deepflow/function/function.h"
#include "deepflow/graph/graph.h"

namespace deepflow::keras {
class Model;
}

namespace deepflow::quantize {

enum class Optimize { kDefault };
/// tf.lite.OpsSet: kTfliteBuiltinsInt8 alone asks for an integer-only model.
enum class OpsSet { kTfliteBuiltins, kTfliteBuiltinsInt8 };
/// How calibration turns the observed values of a tensor into its range:
/// kMinMax: the min and max over all samples (TFLite's default);
/// kMovingAverage: the running average of each sample's min and max (TFLite's average
/// min/max: one outlying sample moves the range less);
/// kPercentile: the `percentile` and 100 - `percentile` percentiles of the values seen
/// (a reservoir of up to 65536 values per tensor);
/// kEntropy: the clipping threshold that minimizes the KL divergence between the 2048-bin
/// histogram of |x| and its 128-level quantization (TensorRT's calibrator), symmetric.
enum class Calibration { kMinMax, kMovingAverage, kPercentile, kEntropy };
/// "min_max" (or "minmax"), "moving_average", "percentile", "entropy" -> Calibration; anything
/// else is an error that starts with `who` and lists them.
Calibration parse_calibration(const std::string& name, const char* who);

/// Yields one sample (one tensor per function input) per call, nullopt at the end.
using RepresentativeDataset = std::function<std::optional<TensorList>()>;

struct ConverterOptions {
  std::vector<Optimize> optimizations;
  std::vector<DType> supported_types;  ///< target_spec.supported_types
  std::vector<OpsSet> supported_ops;   ///< target_spec.supported_ops
  RepresentativeDataset representative_dataset;
  DType inference_input_type = DType::Float32;   ///< Float32, Int8 or UInt8 (full integer)
  DType inference_output_type = DType::Float32;  ///< Float32, Int8 or UInt8 (full integer)
  Calibration calibration = Calibration::kMinMax;
  double percentile = 99.99;
  /// Samples (from the start of the dataset) on which the report compares int8 to float.
  int report_samples = 4;
  /// Signature keys (default: the placeholders' names, "output_0", ...).
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
};

/// One row of the int8 error report: an operator's output in the quantized model against
/// the same tensor of the float model, on the report samples.
struct LayerError {
  std::string op;      ///< TFLite builtin name
  std::string tensor;  ///< the output tensor's name
  std::string source;  ///< the deepflow node it was lowered from
  double scale = 0;    ///< the int8 output's scale
  double rmse = 0;     ///< root mean square of (dequantized int8 - float)
  double max_abs = 0;  ///< the largest |dequantized int8 - float|
  double float_rms = 0;  ///< root mean square of the float values (rmse / float_rms: relative error)
};

struct Conversion {
  std::string bytes;  ///< the .tflite file
  std::string mode;   ///< "float32", "float16", "dynamic_range" or "int8"
  std::vector<LayerError> report;  ///< full integer only: per op, in execution order
};

/// The graph's placeholders (graph.inputs) are the model inputs, graph.outputs its outputs.
Conversion convert_graph(const Graph& graph, const ConverterOptions& options = {});
Conversion convert_function(const ConcreteFunction& fn, const ConverterOptions& options = {});
/// A Keras model traced as model(xs, /*training=*/false) for its inputs' shapes (batch -1).
Conversion convert_keras_model(keras::Model& model, const ConverterOptions& options = {});
/// A SavedModel directory (deepflow's or TensorFlow's), one signature of it.
Conversion convert_saved_model(const std::string& dir, const ConverterOptions& options = {},
                               const std::string& signature_key = "serving_default");

/// The report as a table (`deepflow lite convert --report`).
std::string format_report(const std::vector<LayerError>& report);

}  // namespace deepflow::quantize
