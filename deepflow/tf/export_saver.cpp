// SPDX-License-Identifier: Apache-2.0
// The TensorFlow exporter's variables (object names, checkpoint keys) and its save and
// restore functions: what saver_def names, so that TF's
// C++ session loader and TF Serving restore the variables (RestoreV2 + AssignVariableOp),
// and a session can save them again (SaveV2), as tf.saved_model.save writes them.
#include <algorithm>

#include "deepflow/core/error.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/export_graph.h"
#include "deepflow/tf/export_internal.h"
#include "deepflow/tf/export_saver.h"
#include "deepflow/tf/object_graph.h"
#include "tensorflow/trackable_object_graph.pb.h"

namespace deepflow::tf::detail {

namespace pb = ::tensorflow;

namespace {

// file_prefix, then one resource argument per variable; returns the argument names.
std::vector<std::string> saver_signature(pb::FunctionDef* fd, const std::string& name,
                                         const std::vector<Variable>& vars, const std::string& arg_base) {
  pb::OpDef* sig = fd->mutable_signature();
  sig->set_name(name);
  sig->set_is_stateful(true);
  auto* prefix = sig->add_input_arg();
  prefix->set_name("file_prefix");
  prefix->set_type(pb::DT_STRING);
  std::vector<std::string> names;
  for (size_t i = 0; i < vars.size(); ++i) {
    auto* a = sig->add_input_arg();
    a->set_name(arg_base + "_" + std::to_string(i));
    a->set_type(pb::DT_RESOURCE);
    auto* hd = a->add_handle_data();
    hd->set_dtype(pb::DataType(tf_dtype(vars[i].dtype())));
    set_shape_proto(hd->mutable_shape(), vars[i].shape());
    names.push_back(a->name());
  }
  auto* out = sig->add_output_arg();
  out->set_name("identity");
  out->set_type(pb::DT_STRING);
  return names;
}

Tensor strings(const std::vector<std::string>& v) {
  Tensor t(Shape{int64_t(v.size())}, DType::String);
  for (size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = v[i];
  return t;
}

}  // namespace

void ExportVariables::add(const Variable& v) {
  if (by_id.count(v.id())) return;
  std::string name = v.name().empty() ? "Variable" : v.name();
  const std::string base = name;
  for (int k = 1; std::find(local_names.begin(), local_names.end(), name) != local_names.end(); ++k)
    name = base + "_" + std::to_string(k);
  by_id[v.id()] = int(list.size());
  list.push_back(v);
  local_names.push_back(name);
}

void ExportVariables::finish() {
  ObjectGraphBuilder b;
  keys.clear();
  for (const std::string& n : local_names) keys.push_back(b.add_variable({n}));
  DF_CHECK(b.graph().SerializeToString(&object_graph), "[tf::export] cannot serialize the object graph");
}

void write_restore_function(pb::FunctionDef* fd, const std::string& name, const std::vector<Variable>& vars,
                            const std::vector<std::string>& keys) {
  const std::vector<std::string> args = saver_signature(fd, name, vars, "assignvariableop_resource");
  Graph empty;
  FunctionWriter w(empty, fd);
  for (const auto& a : args) w.fresh(a);
  w.fresh("file_prefix");
  // The object graph is read too, as TensorFlow does (RestoreV2 needs one tensor at least).
  std::vector<std::string> all_keys = keys;
  all_keys.push_back(kObjectGraphKey);
  const std::string names = w.constant(strings(all_keys), "RestoreV2/tensor_names");
  const std::string slices = w.constant(strings(std::vector<std::string>(all_keys.size())), "RestoreV2/shape_and_slices");
  pb::NodeDef* restore = w.add("RestoreV2", "RestoreV2", {"file_prefix", names, slices});
  restore->set_device("/device:CPU:0");
  std::vector<int> dtypes;
  for (const Variable& v : vars) dtypes.push_back(tf_dtype(v.dtype()));
  dtypes.push_back(pb::DT_STRING);
  set_types(restore, "dtypes", dtypes);
  std::vector<std::string> assigns;
  for (size_t i = 0; i < vars.size(); ++i) {
    pb::NodeDef* id = w.add("Identity", "Identity", {restore->name() + ":tensors:" + std::to_string(i)});
    set_type(id, "T", vars[i].dtype());
    pb::NodeDef* assign = w.add("AssignVariableOp", "AssignVariableOp", {args[i], id->name() + ":output:0"});
    set_type(assign, "dtype", vars[i].dtype());
    assigns.push_back(assign->name());
    fd->mutable_signature()->add_control_output(assign->name());
    (*fd->mutable_control_ret())[assign->name()] = assign->name();
  }
  std::vector<std::string> ins{"file_prefix"};
  for (const auto& a : assigns) ins.push_back("^" + a);
  pb::NodeDef* out = w.add("Identity", "Identity", ins);
  set_type(out, "T", DType::String);
  (*fd->mutable_ret())["identity"] = out->name() + ":output:0";
}

void write_save_function(pb::FunctionDef* fd, const std::string& name, const std::vector<Variable>& vars,
                         const std::vector<std::string>& keys, const std::string& object_graph) {
  const std::vector<std::string> args = saver_signature(fd, name, vars, "savev2_resource");
  Graph empty;
  FunctionWriter w(empty, fd);
  for (const auto& a : args) w.fresh(a);
  w.fresh("file_prefix");
  std::vector<std::string> all_keys = keys;
  all_keys.push_back(kObjectGraphKey);
  const std::string names = w.constant(strings(all_keys), "SaveV2/tensor_names");
  const std::string slices = w.constant(strings(std::vector<std::string>(all_keys.size())), "SaveV2/shape_and_slices");
  std::vector<std::string> ins{"file_prefix", names, slices};
  std::vector<int> dtypes;
  for (size_t i = 0; i < vars.size(); ++i) {
    pb::NodeDef* r = w.add("ReadVariableOp", "ReadVariableOp", {args[i]});
    set_type(r, "dtype", vars[i].dtype());
    ins.push_back(r->name() + ":value:0");
    dtypes.push_back(tf_dtype(vars[i].dtype()));
  }
  Tensor graph(Shape{}, DType::String);
  graph.data<std::string>()[0] = object_graph;
  ins.push_back(w.constant(graph, "object_graph"));
  dtypes.push_back(pb::DT_STRING);
  pb::NodeDef* save = w.add("SaveV2", "SaveV2", ins);
  save->set_device("/device:CPU:0");
  set_types(save, "dtypes", dtypes);
  fd->mutable_signature()->add_control_output(save->name());
  (*fd->mutable_control_ret())[save->name()] = save->name();
  pb::NodeDef* out = w.add("Identity", "Identity", {"file_prefix", "^" + save->name()});
  set_type(out, "T", DType::String);
  (*fd->mutable_ret())["identity"] = out->name() + ":output:0";
}

}  // namespace deepflow::tf::detail
