// SPDX-License-Identifier: Apache-2.0
// Internal to the converter (converter.cpp and the files it calls): the LiteModel rewrites
// of each mode, calibration and the int8 error report.
#pragma once

#include <string>
#include <vector>

#include "deepflow/io/saved_model.h"
#include "deepflow/quantize/converter.h"
#include "deepflow/quantize/lite_model.h"
#include "deepflow/quantize/range_observer.h"

namespace deepflow::quantize::detail {

/// RELU / RELU6 / RELU_N1_TO_1 ops whose input comes only from an op with a fused
/// activation slot (conv, depthwise, FC, add, sub, mul, pools, concatenation) move into it.
void fuse_activations(LiteModel& m);
/// Every float32 constant becomes a FLOAT16 one followed by a DEQUANTIZE (at the front).
void quantize_float16(LiteModel& m);
/// Int8 weights of the ops with hybrid kernels (>= min_elements elements).
void quantize_dynamic_range(LiteModel& m, int64_t min_elements = 1024);

/// Runs the float model (deepflow_lite, every tensor preserved) on each sample of the
/// dataset and returns each tensor's range; the first `keep` samples are copied to *kept.
std::vector<Range> calibrate(const LiteModel& m, const ConverterOptions& options, int keep,
                             std::vector<TensorList>* kept);
/// The full-integer model of the float model m with the calibrated ranges.
LiteModel quantize_full_integer(const LiteModel& m, const std::vector<Range>& ranges, const ConverterOptions& options);
/// Per-op error of the int8 model against the float one on the samples.
std::vector<LayerError> int8_error_report(const LiteModel& float_model, const LiteModel& int8_model,
                                          const std::vector<TensorList>& samples);

/// A SavedModel signature's function as a graph whose inputs and outputs are in the order of
/// the signature's (sorted) keys, which are returned in *input_names and *output_names.
/// Works for both formats: TensorFlow's (the imported function's interface is in key order)
/// and deepflow's (the keys name graph values). `who` starts error messages.
Graph signature_graph(const io::LoadedSignature& sig, const char* who, std::vector<std::string>* input_names,
                      std::vector<std::string>* output_names);

/// Removes op i.
void erase_op(LiteModel& m, size_t i);

}  // namespace deepflow::quantize::detail
