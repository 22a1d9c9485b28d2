// SPDX-License-Identifier: Apache-2.0
// fused_conv_chain's layer records: how its `layers` (ints) and `layer_params` (floats)
// attributes spell each layer, shared by the op (ops/conv_chain.cpp), its kernels and the
// passes that make and unmake it. A layer is a fused_conv2d (deepflow/ops/fused.h) plus
// the two values it reads.
#pragma once

#include <cstdint>
#include <vector>

#include "deepflow/ops/fused.h"
#include "deepflow/ops/op.h"

namespace deepflow::conv_chain {

/// Per layer: src, summand, has_bias, strides (2), dilations (2), padding code, explicit
/// paddings (4: top, bottom, left, right; zeros unless EXPLICIT), activation code.
inline constexpr int kIntsPerLayer = 13;
/// Per layer: alpha, clip_min, clip_max.
inline constexpr int kFloatsPerLayer = 3;

struct Layer {
  int src = 0;      ///< the value it convolves: 0 the chain's input, k layer k-1's result
  int summand = -1;  ///< the value added before the activation, or -1
  int filters = 1;  ///< input index of the filters
  int bias = -1;    ///< input index of the bias, or -1
  FusedConvOptions options;
};

/// Appends one layer's record: it convolves value src, adds value summand (-1: none), and
/// has a bias input when has_bias.
void encode(int src, int summand, bool has_bias, const FusedConvOptions& options, std::vector<int64_t>& ints,
            std::vector<double>& floats);
/// The layers of a call with `num_inputs` inputs; throws "[fused_conv_chain] ..." when the
/// records are malformed, a layer reads a value not yet made, or the inputs do not add up.
std::vector<Layer> decode(const std::vector<int64_t>& ints, const std::vector<double>& floats, int num_inputs);
/// A layer as fused_conv2d's attributes (constant_filter set: the chain's filters never change).
Attrs fused_attrs(const Layer& layer);

/// How an int8 chain (attribute int8_ranges) stores a value calibrated to [lo, hi]:
/// symmetric, zero point 0 (TensorRT's scheme), as uint8 with scale hi / 255 when lo >= 0
/// (relu outputs), else as int8 with scale max(|lo|, |hi|) / 127. A zero range gets scale 1.
struct Int8Value {
  float scale = 1;
  bool is_unsigned = false;
  int lowest() const { return is_unsigned ? 0 : -128; }
  int highest() const { return is_unsigned ? 255 : 127; }
};
Int8Value int8_value(double lo, double hi);
/// The int8 chain's weight scale of one output channel: max |w| / 127 (1 for a zero channel);
/// weights are rounded to [-127, 127] (symmetric, narrow range).
inline float int8_weight_scale(float abs_max) { return abs_max > 0 ? abs_max / 127.f : 1.f; }
/// The weight scale of each output channel of float32 HWIO filters (their last dim).
std::vector<float> int8_weight_scales(const Tensor& filters);
/// The per-value storage of a call's int8_ranges ({lo, hi} per value: the input, then each
/// layer's result); empty for a float chain. Throws "[fused_conv_chain] ..." when the
/// attribute does not hold two finite numbers lo <= hi per value.
std::vector<Int8Value> int8_values(const std::vector<double>& ranges, size_t num_layers);

}  // namespace deepflow::conv_chain
