// SPDX-License-Identifier: Apache-2.0
// The serving optimizer: a SavedModel (ours or TensorFlow's) rewritten into one whose
// graphs are frozen (variables become constants), fused for oneDNN and, in INT8 mode,
// quantized from calibration, which `deepflow serve` and io::load_saved_model run as they
// are. It plays the part TF-TRT's TrtGraphConverterV2 plays for TensorRT, on our CPU
// backend, with the same shape of API:
//
//   quantize::ServingOptimizerOptions o;
//   o.input_saved_model_dir = "/models/resnet/1";
//   o.precision_mode = quantize::Precision::kInt8;
//   quantize::ServingOptimizer opt(o);
//   opt.convert([&, i = 0]() mutable -> std::optional<TensorList> {   // calibration input
//     if (i == 8) return std::nullopt;
//     return TensorList{batches[i++]};
//   });
//   opt.save("/models/resnet_int8/1");
//
// What each precision mode does here (docs/quantization.md maps TF-TRT's options):
//   - kFp32: the graph passes (conv + batch-norm folding, conv / matmul + bias +
//     activation fusion, conv chains kept in oneDNN's blocked layout) run once, at
//     conversion, on the frozen graph; the result is saved as our SavedModel.
//   - kInt8: as kFp32, then every fused_conv_chain with at least minimum_segment_size
//     layers runs in int8 (uint8 / int8 values between layers, per-channel int8 filters,
//     oneDNN's VNNI convolutions: deepflow/ops/fused.h, fused_conv_chain's int8_ranges),
//     with each value's range calibrated over the calibration input. Other ops (pooling,
//     dense layers, elementwise) stay float32.
//   - kFp16: not implemented yet; convert() refuses it with a message (it needs float16 /
//     bfloat16 chain kernels).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "deepflow/core/tensor.h"
#include "deepflow/graph/graph.h"
#include "deepflow/quantize/converter.h"

namespace deepflow::quantize {

/// TF-TRT's precision_mode ("FP32", "FP16", "INT8").
enum class Precision { kFp32, kFp16, kInt8 };
/// "FP32" / "FP16" / "INT8" (any case) -> Precision; anything else is an error listing them.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);

struct ServingOptimizerOptions {
  std::string input_saved_model_dir;
  std::vector<std::string> input_saved_model_tags = {"serve"};
  /// The signatures to convert and save; empty: all of them.
  std::vector<std::string> signature_keys;
  Precision precision_mode = Precision::kFp32;
  /// A conv chain with fewer layers than this stays float32 in INT8 mode (TF-TRT: the
  /// fewest nodes a TensorRT segment may have).
  int minimum_segment_size = 3;
  /// When > 0, convert() and build() refuse inputs whose batch (first dim) is larger. The
  /// saved model itself takes any batch: plans are made per input shape on first use.
  int64_t max_batch_size = 0;
  /// How calibration turns the values seen into ranges. Min / max by default: entropy
  /// (TensorRT's) clipped a trained MNIST CNN's ranges far too tight (docs/quantization.md).
  Calibration calibration = Calibration::kMinMax;
  double percentile = 99.99;
};

/// One input per call for the converted signature (the signature's inputs in key order),
/// nullopt at the end: TF-TRT's calibration_input_fn / input_fn.
using InputFn = std::function<std::optional<TensorList>()>;

/// What convert() did to one signature.
struct SignatureSummary {
  std::string key;
  int conv_chains = 0;   ///< fused_conv_chain nodes in the optimized graph
  int int8_chains = 0;   ///< of which run in int8
  int int8_layers = 0;   ///< convolutions in those
  int float_convs = 0;   ///< convolutions left in float32 (chains too short, lone fused_conv2d)
  int64_t calibration_batches = 0;
  std::string to_string() const;
};

class ServingOptimizer {
 public:
  explicit ServingOptimizer(ServingOptimizerOptions options);
  ~ServingOptimizer();
  ServingOptimizer(ServingOptimizer&&) noexcept;

  /// Loads the input SavedModel and rewrites each signature. INT8 needs calibration_input
  /// (its batches run the float graph; each input is checked against the signature); the
  /// other modes take none. Errors name the signature and input at fault.
  void convert(const InputFn& calibration_input = {});
  /// Runs the converted signature `key` (default: the first) once per input of input_fn,
  /// so that each input shape's plans are made and checked before saving (TF-TRT's build).
  void build(const InputFn& input_fn, const std::string& key = "");
  /// Writes the converted model as deepflow's SavedModel (atomically; an existing
  /// directory is an error unless overwrite).
  void save(const std::string& output_saved_model_dir, bool overwrite = false) const;

  const std::vector<SignatureSummary>& summary() const;
  /// The converted graph of signature `key`, with its inputs and outputs in key order.
  const Graph& graph(const std::string& key) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepflow::quantize
