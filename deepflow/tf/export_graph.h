// SPDX-License-Identifier: Apache-2.0
// Internal to the TensorFlow exporter: the variables of an export (their object names and
// checkpoint keys) and the SavedModel proto built from the signatures (export_graph.cpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "deepflow/io/saved_model.h"
#include "tensorflow/saved_model.pb.h"

namespace deepflow::tf::detail {

/// The variables of an export, in first-use order: each is a child of the root object
/// under a unique local name, saved under "<escaped name>/.ATTRIBUTES/VARIABLE_VALUE".
struct ExportVariables {
  std::vector<Variable> list;
  std::vector<std::string> local_names;
  std::vector<std::string> keys;     ///< set by finish()
  std::string object_graph;          ///< the serialized TrackableObjectGraph, set by finish()
  std::map<uint64_t, int> by_id;

  /// Adds v unless it is there (distinct variables sharing a name get "_1", "_2", ...).
  void add(const Variable& v);
  int index(const Variable& v) const { return by_id.at(v.id()); }
  /// Computes keys and object_graph.
  void finish();
};

/// The SavedModel of `signatures` (one MetaGraphDef). Fills `vars` with every variable the
/// functions read plus options.extra_variables.
tensorflow::SavedModel build_tf_saved_model(const std::vector<io::SignatureSpec>& signatures,
                                            const io::SaveOptions& options, ExportVariables& vars);

}  // namespace deepflow::tf::detail
