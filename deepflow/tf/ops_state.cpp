// SPDX-License-Identifier: Apache-2.0
// TensorFlow's resource-variable and checkpoint ops. A DT_RESOURCE value is the deepflow
// Variable its VarHandleOp names (graph_eval.cpp makes them, one per shared_name); reads and
// assignments become deepflow's variable ops, and RestoreV2 reads the SavedModel's
// variables/ bundle through ImportShared::restore when the restore function runs.
#include "deepflow/core/error.h"
#include "deepflow/tf/graph_eval.h"
#include "deepflow/tf/op_importer.h"

namespace deepflow::tf {
namespace {

Values import_read_variable(NodeContext& c) { return {c.read_variable(0)}; }

Values import_assign_variable(NodeContext& c) {
  Variable& v = c.variable(0);
  Tensor value = c.input(1);
  DF_CHECK(value.dtype() == v.value().dtype(), "[tf::import] ", c.describe(), ": assigns ", dtype_name(value.dtype()),
           " to variable '", v.name(), "' of ", dtype_name(v.value().dtype()));
  v.assign(value);
  return {};
}
Values import_assign_add(NodeContext& c) {
  c.variable(0).assign_add(c.input(1));
  return {};
}
Values import_assign_sub(NodeContext& c) {
  c.variable(0).assign_sub(c.input(1));
  return {};
}

Values import_resource_gather(NodeContext& c) {
  return {gather(c.read_variable(0), c.input(1), 0, c.attr_int("batch_dims"))};
}

Values import_var_is_initialized(NodeContext& c) {
  c.variable(0);
  return {scalar(1, DType::Bool)};
}

Values import_no_effect(NodeContext&) { return {}; }

}  // namespace

// RestoreV2 needs the import's checkpoint reader (ImportShared::restore, set by the
// SavedModel loader), so the evaluator calls it directly.
Values detail::import_restore_v2(NodeContext& c, ImportShared& shared) {
  DF_CHECK(shared.restore, "[tf::import] ", c.describe(), ": no checkpoint to restore from");
  const std::string prefix = c.constant_input(0).item<std::string>();
  std::vector<std::string> keys = c.constant_input(1).to_vector<std::string>();
  std::vector<DType> dtypes = c.attr_types("dtypes");
  DF_CHECK(keys.size() == dtypes.size(), "[tf::import] ", c.describe(), ": ", keys.size(), " keys but ",
           dtypes.size(), " dtypes");
  Values out;
  for (size_t i = 0; i < keys.size(); ++i) {
    Tensor t = shared.restore(prefix, keys[i]);
    DF_CHECK(t.dtype() == dtypes[i], "[tf::import] ", c.describe(), ": checkpoint key '", keys[i], "' holds ",
             dtype_name(t.dtype()), ", the graph expects ", dtype_name(dtypes[i]));
    out.push_back(t);
  }
  return out;
}

DF_TF_OP("ReadVariableOp", import_read_variable)
DF_TF_OP("AssignVariableOp", import_assign_variable)
DF_TF_OP("AssignAddVariableOp", import_assign_add)
DF_TF_OP("AssignSubVariableOp", import_assign_sub)
DF_TF_OP("ResourceGather", import_resource_gather)
DF_TF_OP("VarIsInitializedOp", import_var_is_initialized)
DF_TF_OP("DestroyResourceOp", import_no_effect)
DF_TF_OP("DisableCopyOnRead", import_no_effect)

}  // namespace deepflow::tf
