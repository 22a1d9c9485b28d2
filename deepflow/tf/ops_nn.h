// SPDX-License-Identifier: Apache-2.0
// What the importers of TF's convolutions share (ops_nn.cpp, ops_fused.cpp): data_format,
// the spatial pair of 4-element attrs, EXPLICIT padding and BiasAdd on either layout.
// deepflow's convolutions are channels-last (NHWC); NCHW nodes are transposed around them.
//
// Internal to deepflow_tf.
#pragma once

#include <string>
#include <vector>

#include "deepflow/tf/op_importer.h"

namespace deepflow::tf::detail {

/// True for data_format NCHW (absent: NHWC); other formats are an error naming the node.
bool nchw(NodeContext& c);
inline Tensor to_nhwc(const Tensor& x) { return transpose(x, {0, 2, 3, 1}); }
inline Tensor to_nchw(const Tensor& x) { return transpose(x, {0, 3, 1, 2}); }
/// The spatial pair {h, w} of a 4-element strides / ksize / dilations attr; `fallback`
/// (4 elements) when the node has no such attr and its op no OpDef default (TF.js's ops).
Axes spatial(NodeContext& c, const std::string& name, bool channels_first,
             const std::vector<int64_t>& fallback = {});
/// Applies padding "EXPLICIT" (explicit_paddings) to NHWC x as a pad; returns the padding
/// for the op that follows ("VALID" then).
std::string padded(NodeContext& c, Tensor& x, bool channels_first);
/// BiasAdd of a 1-D bias on the node's layout.
Tensor bias_add(NodeContext& c, const Tensor& x, const Tensor& bias);

}  // namespace deepflow::tf::detail
