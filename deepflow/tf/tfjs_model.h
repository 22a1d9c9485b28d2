// SPDX-License-Identifier: Apache-2.0
// TF.js graph models (`tensorflowjs_converter --input_format=tf_saved_model` output): a
// model.json whose `modelTopology` is a GraphDef in protobuf's JSON form, with the weights
// of its Const nodes in binary shards listed by `weightsManifest`, imported as a traced
// deepflow function, like a frozen GraphDef (graph_def.h).
//
//   tf::GraphDefModel m = tf::import_tfjs_model("web_model/model.json");
//   Tensor y = m.function(TensorList{x})[0];
//
// Inputs and outputs come from model.json's `signature` (or `userDefinedMetadata.signature`,
// as older converters wrote it), in the file's order, with the signature's keys; names
// given here ("x" or "x:0" placeholders, "node:k" outputs) replace them. Weights: each
// manifest group's shard files are read in order as one byte run, cut in manifest order
// (little-endian; strings as a uint32 length and the bytes); quantized weights (uint8 or
// uint16 with min and scale: q * scale + min, rounded for int32 weights; float16) come
// back in their original dtype. TF.js's own ops (FusedDepthwiseConv2dNative, Prelu and the
// fused forms with Prelu) import with the others (ops_fused.cpp). Functions in the
// library (StatelessWhile bodies) are imported too; their Consts' weights are named
// "<function>/<const>". Model initializers (lookup tables) are not supported.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "deepflow/tf/graph_def.h"

namespace deepflow::tf {

/// Reads `model_json_path` and the weight shards next to it.
GraphDefModel import_tfjs_model(const std::string& model_json_path, std::vector<std::string> inputs = {},
                                std::vector<std::string> outputs = {});

/// Returns the bytes of a weight file, by its path as the manifest writes it (relative to
/// model.json); throws a deepflow::Error when it cannot.
using TfjsFileReader = std::function<std::string(const std::string& path)>;

/// model.json's bytes, weight files through `read_file`; `source` names the model in messages.
GraphDefModel import_tfjs_model_from_bytes(std::string_view model_json, const std::string& source,
                                           const TfjsFileReader& read_file, std::vector<std::string> inputs = {},
                                           std::vector<std::string> outputs = {});

}  // namespace deepflow::tf
