// SPDX-License-Identifier: Apache-2.0
// The TensorFlow exporter's MetaGraphDef: the signature functions, the top-level graph
// that calls them (VarHandleOps, Placeholders, StatefulPartitionedCalls), saver_def,
// signature_def and the SavedObjectGraph that tf.saved_model.load walks.
#include <algorithm>
#include <numeric>
#include <set>

#include "deepflow/core/error.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/export_graph.h"
#include "deepflow/tf/export_internal.h"
#include "deepflow/tf/export_saver.h"
#include "tensorflow/saved_model.pb.h"

namespace deepflow::tf::detail {

namespace pb = ::tensorflow;

namespace {

// GraphDef versions of TensorFlow 2.21 (what tf.saved_model.save writes).
constexpr int kProducer = 2474;
constexpr int kMinConsumer = 12;

pb::NodeDef* add_node(pb::GraphDef* g, const std::string& name, const std::string& op) {
  pb::NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  return n;
}

void set_spec(pb::StructuredValue* out, const std::string& name, const TensorType& t) {
  pb::TensorSpecProto* s = out->mutable_tensor_spec_value();
  s->set_name(name);
  set_shape_proto(s->mutable_shape(), t.shape);
  s->set_dtype(pb::DataType(tf_dtype(t.dtype)));
}

// FullArgSpec(args=[], varargs=None, varkw=None, defaults=None, kwonlyargs=keys,
// kwonlydefaults=None, annotations={}): a signature function takes keywords only.
void set_function_spec(pb::FunctionSpec* spec, const std::vector<std::string>& keys) {
  pb::NamedTupleValue* t = spec->mutable_fullargspec()->mutable_named_tuple_value();
  t->set_name("FullArgSpec");
  auto field = [&](const char* k) {
    pb::PairValue* p = t->add_values();
    p->set_key(k);
    return p->mutable_value();
  };
  field("args")->mutable_list_value();
  field("varargs")->mutable_none_value();
  field("varkw")->mutable_none_value();
  field("defaults")->mutable_none_value();
  pb::ListValue* kw = field("kwonlyargs")->mutable_list_value();
  for (const auto& k : keys) kw->add_values()->set_string_value(k);
  field("kwonlydefaults")->mutable_none_value();
  field("annotations")->mutable_dict_value();
  spec->mutable_input_signature()->mutable_none_value();
}

}  // namespace

pb::SavedModel build_tf_saved_model(const std::vector<io::SignatureSpec>& signatures, const io::SaveOptions& options,
                                    ExportVariables& vars) {
  pb::SavedModel sm;
  sm.set_saved_model_schema_version(1);
  pb::MetaGraphDef* mg = sm.add_meta_graphs();
  pb::MetaGraphDef::MetaInfoDef* info = mg->mutable_meta_info_def();
  for (const auto& t : options.tags) info->add_tags(t);
  info->set_tensorflow_version("2.21.0");
  info->set_tensorflow_git_version("deepflow");
  pb::GraphDef* gd = mg->mutable_graph_def();
  gd->mutable_versions()->set_producer(kProducer);
  gd->mutable_versions()->set_min_consumer(kMinConsumer);
  pb::FunctionDefLibrary* lib = gd->mutable_library();
  pb::SavedObjectGraph* sog = mg->mutable_object_graph_def();

  std::set<std::string> top_names = {"saver_filename", "NoOp"};
  auto top_name = [&](const std::string& base) {
    std::string n = clean_node_name(base);
    for (int k = 1; !top_names.insert(n).second; ++k) n = clean_node_name(base) + "_" + std::to_string(k);
    return n;
  };
  int next_fn = 0;
  auto fn_name = [&](const std::string& what) { return "__inference_" + what + "_" + std::to_string(next_fn++); };

  // Each signature's function, its variables gathered as it is written.
  struct Written {
    std::string fname;
    std::vector<std::string> in_keys, out_keys;  // sorted
    std::vector<TensorType> in_types, out_types;
    std::vector<Variable> resources;
  };
  std::vector<Written> written;
  std::set<std::string> keys_seen;
  for (const io::SignatureSpec& spec : signatures) {
    const std::string at = "[tf::export] signature '" + spec.key + "': ";
    DF_CHECK(!spec.key.empty(), "[tf::export] a signature has an empty key");
    DF_CHECK(spec.fn.defined(), at, "the function is undefined");
    DF_CHECK(keys_seen.insert(spec.key).second, at, "the key is used twice");
    const Graph& g = spec.fn.graph();
    const size_t n_in = g.inputs.size(), n_out = g.outputs.size();
    DF_CHECK(spec.input_names.empty() || spec.input_names.size() == n_in, at, "the function takes ", n_in,
             " inputs but ", spec.input_names.size(), " input names were given");
    DF_CHECK(spec.output_names.empty() || spec.output_names.size() == n_out, at, "the function returns ", n_out,
             " outputs but ", spec.output_names.size(), " output names were given");
    std::vector<std::string> in_keys, out_keys;
    for (size_t i = 0; i < n_in; ++i) in_keys.push_back(spec.input_names.empty() ? g.node(g.inputs[i]).name : spec.input_names[i]);
    for (size_t j = 0; j < n_out; ++j) out_keys.push_back(spec.output_names.empty() ? "output_" + std::to_string(j) : spec.output_names[j]);
    // TensorFlow flattens keyword arguments and dict outputs in sorted key order.
    std::vector<size_t> in_order(n_in), out_order(n_out);
    std::iota(in_order.begin(), in_order.end(), 0);
    std::iota(out_order.begin(), out_order.end(), 0);
    std::sort(in_order.begin(), in_order.end(), [&](size_t a, size_t b) { return in_keys[a] < in_keys[b]; });
    std::sort(out_order.begin(), out_order.end(), [&](size_t a, size_t b) { return out_keys[a] < out_keys[b]; });
    for (size_t k = 1; k < n_in; ++k)
      DF_CHECK(in_keys[in_order[k]] != in_keys[in_order[k - 1]], at, "input name '", in_keys[in_order[k]], "' is used twice");
    for (size_t k = 1; k < n_out; ++k)
      DF_CHECK(out_keys[out_order[k]] != out_keys[out_order[k - 1]], at, "output name '", out_keys[out_order[k]],
               "' is used twice");

    Written w;
    w.fname = fn_name("signature_wrapper_" + clean_arg_name(spec.key, "signature"));
    pb::FunctionDef* fd = lib->add_function();
    pb::OpDef* sig = fd->mutable_signature();
    sig->set_name(w.fname);
    std::vector<std::string> arg_names(n_in);
    std::set<std::string> used_args;
    auto* shapes = (*fd->mutable_attr())["_input_shapes"].mutable_list();
    for (size_t k = 0; k < n_in; ++k) {
      const size_t i = in_order[k];
      const std::string index = std::to_string(i);
      std::string a = clean_arg_name(in_keys[i], "input_" + index);
      while (!used_args.insert(a).second) a.append("_").append(index);
      arg_names[i] = a;
      const TensorType& t = g.node(g.inputs[i]).outputs.at(0);
      auto* arg = sig->add_input_arg();
      arg->set_name(a);
      arg->set_type(pb::DataType(tf_dtype(t.dtype)));
      set_shape_proto(shapes->add_shape(), t.shape);
      (*(*fd->mutable_arg_attr())[uint32_t(k)].mutable_attr())["_user_specified_name"].set_s(in_keys[i]);
      w.in_keys.push_back(in_keys[i]);
      w.in_types.push_back(t);
    }
    try {
      const std::vector<std::string> outs = write_body(g, arg_names, fd, &w.resources);
      for (size_t k = 0; k < n_out; ++k) {
        const size_t j = out_order[k];
        const std::string arg = k == 0 ? "identity" : "identity_" + std::to_string(k);
        auto* o = sig->add_output_arg();
        o->set_name(arg);
        o->set_type(pb::DataType(tf_dtype(g.type(g.outputs[j]).dtype)));
        (*fd->mutable_ret())[arg] = outs[j];
        w.out_keys.push_back(out_keys[j]);
        w.out_types.push_back(g.type(g.outputs[j]));
      }
    } catch (const Error& e) {
      fail(at, strip_export_prefix(e.what()));
    }
    for (size_t r = 0; r < w.resources.size(); ++r) shapes->add_shape();
    sig->set_is_stateful(!w.resources.empty());
    for (const Variable& v : w.resources) vars.add(v);
    written.push_back(std::move(w));
  }
  for (const Variable& v : options.extra_variables) {
    DF_CHECK(v.defined(), "[tf::export] an extra variable is undefined");
    vars.add(v);
  }
  vars.finish();

  // Top level: one VarHandleOp per variable, named (and shared) as its object.
  std::vector<std::string> handle(vars.list.size());
  for (size_t i = 0; i < vars.list.size(); ++i) {
    const Variable& v = vars.list[i];
    handle[i] = top_name(vars.local_names[i]);
    pb::NodeDef* n = add_node(gd, handle[i], "VarHandleOp");
    set_type(n, "dtype", v.dtype());
    set_shape_proto((*n->mutable_attr())["shape"].mutable_shape(), v.shape());
    set_string(n, "shared_name", handle[i]);
    set_string(n, "container", "");
    set_string(n, "debug_name", v.name() + "/");
    (*n->mutable_attr())["allowed_devices"].mutable_list();
  }
  auto handle_of = [&](const Variable& v) { return handle[size_t(vars.index(v))]; };

  // The SavedObjectGraph: root, its variables, the signature map, one function per signature.
  pb::SavedObject* root = sog->add_nodes();
  auto* ru = root->mutable_user_object();
  ru->set_identifier("_generic_user_object");
  ru->mutable_version()->set_producer(1);
  ru->mutable_version()->set_min_consumer(1);
  for (size_t i = 0; i < vars.list.size(); ++i) {
    auto* c = root->add_children();
    c->set_node_id(int(i) + 1);
    c->set_local_name(vars.local_names[i]);
    pb::SavedVariable* sv = sog->add_nodes()->mutable_variable();
    sv->set_dtype(pb::DataType(tf_dtype(vars.list[i].dtype())));
    set_shape_proto(sv->mutable_shape(), vars.list[i].shape());
    sv->set_trainable(vars.list[i].trainable());
    sv->set_name(handle[i]);
  }
  const int sigmap_id = sog->nodes_size();
  auto* sc = root->add_children();
  sc->set_node_id(sigmap_id);
  sc->set_local_name("signatures");
  pb::SavedObject* sigmap = sog->add_nodes();
  sigmap->mutable_user_object()->set_identifier("signature_map");
  sigmap->mutable_user_object()->mutable_version()->set_producer(1);
  sigmap->mutable_user_object()->mutable_version()->set_min_consumer(1);

  for (size_t s = 0; s < signatures.size(); ++s) {
    const io::SignatureSpec& spec = signatures[s];
    const Written& w = written[s];
    auto* child = sog->mutable_nodes(sigmap_id)->add_children();
    child->set_node_id(sog->nodes_size());
    child->set_local_name(spec.key);
    pb::SavedBareConcreteFunction* bare = sog->add_nodes()->mutable_bare_concrete_function();
    bare->set_concrete_function_name(w.fname);
    for (const auto& k : w.in_keys) bare->add_argument_keywords(k);
    set_function_spec(bare->mutable_function_spec(), w.in_keys);
    pb::SavedConcreteFunction& cf = (*sog->mutable_concrete_functions())[w.fname];
    for (const Variable& v : w.resources) cf.add_bound_inputs(vars.index(v) + 1);
    pb::TupleValue* args = cf.mutable_canonicalized_input_signature()->mutable_tuple_value();
    args->add_values()->mutable_tuple_value();
    pb::DictValue* kwargs = args->add_values()->mutable_dict_value();
    for (size_t k = 0; k < w.in_keys.size(); ++k) set_spec(&(*kwargs->mutable_fields())[w.in_keys[k]], w.in_keys[k], w.in_types[k]);
    pb::DictValue* outs = cf.mutable_output_signature()->mutable_dict_value();
    for (size_t k = 0; k < w.out_keys.size(); ++k) set_spec(&(*outs->mutable_fields())[w.out_keys[k]], w.out_keys[k], w.out_types[k]);

    // Placeholders "<key>_<input>" and the call; the signature_def names them.
    pb::SignatureDef& sd = (*mg->mutable_signature_def())[spec.key];
    sd.set_method_name(spec.method_name);
    const std::string call = top_name("StatefulPartitionedCall");
    pb::NodeDef* cn = add_node(gd, call, "StatefulPartitionedCall");
    std::vector<int> tin, tout;
    for (size_t k = 0; k < w.in_keys.size(); ++k) {
      const std::string ph = top_name(spec.key + "_" + w.in_keys[k]);
      pb::NodeDef* p = add_node(gd, ph, "Placeholder");
      set_type(p, "dtype", w.in_types[k].dtype);
      set_shape_proto((*p->mutable_attr())["shape"].mutable_shape(), w.in_types[k].shape);
      cn->add_input(ph);
      tin.push_back(tf_dtype(w.in_types[k].dtype));
      pb::TensorInfo& ti = (*sd.mutable_inputs())[w.in_keys[k]];
      ti.set_name(ph + ":0");
      ti.set_dtype(pb::DataType(tin.back()));
      set_shape_proto(ti.mutable_tensor_shape(), w.in_types[k].shape);
    }
    for (const Variable& v : w.resources) {
      cn->add_input(handle_of(v));
      tin.push_back(pb::DT_RESOURCE);
    }
    for (size_t k = 0; k < w.out_keys.size(); ++k) {
      tout.push_back(tf_dtype(w.out_types[k].dtype));
      pb::TensorInfo& ti = (*sd.mutable_outputs())[w.out_keys[k]];
      ti.set_name(call + ":" + std::to_string(k));
      ti.set_dtype(pb::DataType(tout.back()));
      set_shape_proto(ti.mutable_tensor_shape(), w.out_types[k].shape);
    }
    set_types(cn, "Tin", tin);
    set_types(cn, "Tout", tout);
    (*cn->mutable_attr())["f"].mutable_func()->set_name(w.fname);
    for (const char* a : {"config", "config_proto", "executor_type"}) set_string(cn, a, "");
  }

  // The init op, and the saver: saver_filename -> save / restore calls.
  add_node(gd, "NoOp", "NoOp");
  (*mg->mutable_collection_def())["saved_model_main_op"].mutable_node_list()->add_value("NoOp");
  pb::TensorInfo& init = (*(*mg->mutable_signature_def())["__saved_model_init_op"].mutable_outputs())["__saved_model_init_op"];
  init.set_name("NoOp");
  init.mutable_tensor_shape()->set_unknown_rank(true);
  pb::NodeDef* fname = add_node(gd, "saver_filename", "Placeholder");
  set_type(fname, "dtype", DType::String);
  (*fname->mutable_attr())["shape"].mutable_shape();
  const std::string save_fn = fn_name("_traced_save"), restore_fn = fn_name("_traced_restore");
  write_save_function(lib->add_function(), save_fn, vars.list, vars.keys, vars.object_graph);
  write_restore_function(lib->add_function(), restore_fn, vars.list, vars.keys);
  std::string calls[2];
  for (int k = 0; k < 2; ++k) {
    calls[k] = top_name("StatefulPartitionedCall");
    pb::NodeDef* n = add_node(gd, calls[k], "StatefulPartitionedCall");
    n->add_input("saver_filename");
    std::vector<int> tin{pb::DT_STRING};
    for (const std::string& h : handle) n->add_input(h), tin.push_back(pb::DT_RESOURCE);
    set_types(n, "Tin", tin);
    set_types(n, "Tout", {pb::DT_STRING});
    (*n->mutable_attr())["f"].mutable_func()->set_name(k == 0 ? save_fn : restore_fn);
    for (const char* a : {"config", "config_proto", "executor_type"}) set_string(n, a, "");
  }
  pb::SaverDef* saver = mg->mutable_saver_def();
  saver->set_filename_tensor_name("saver_filename:0");
  saver->set_save_tensor_name(calls[0] + ":0");
  saver->set_restore_op_name(calls[1]);
  saver->set_version(pb::SaverDef::V2);
  return sm;
}

}  // namespace deepflow::tf::detail
