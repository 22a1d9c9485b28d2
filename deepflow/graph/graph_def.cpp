// SPDX-License-Identifier: Apache-2.0
// GraphDef <-> Graph. Built into the deepflow_proto library (with the generated
// graph.pb.cc), never into the core. The reader trusts nothing in the message: every
// name, index, dtype, dim and byte count is checked before use.
#include "deepflow/graph/graph_def.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "graph.pb.h"

namespace deepflow {
namespace {

namespace pb = deepflow::proto;

constexpr int kMaxFunctionDepth = 64;  // functions using functions; keeps the reader's stack bounded

pb::DataType dtype_to_proto(DType t) { return pb::DataType(int(t) + 1); }

// --- writing ---

// "node" for output 0, "node:k" otherwise; always "node:k" when the name holds a ':'
// itself, so the reader's split at the last ':' is never ambiguous.
std::string value_string(const Graph& g, ValueRef v) {
  const std::string& name = g.node(v.node).name;
  if (v.index == 0 && name.find(':') == std::string::npos) return name;
  return name + ":" + std::to_string(v.index);
}

class Writer {
 public:
  explicit Writer(const Graph& g) {
    for (const auto& [name, var] : graph_variables(g)) var_names_[var.id()] = name;
    for (const auto& [f, name] : detail::collect_functions(g)) fn_names_[f] = name;
  }

  void nodes(const Graph& g, google::protobuf::RepeatedPtrField<pb::NodeDef>* out) {
    for (const Node& n : g.nodes()) {
      DF_CHECK(n.name.empty() || n.name[0] != '^', "[graph_to_proto] node name '", n.name,
               "' cannot be serialized: '^' starts a control input");
      pb::NodeDef* nd = out->Add();
      nd->set_name(n.name);
      nd->set_op(primitive_name(n.op));
      for (const ValueRef& v : n.inputs) nd->add_input(value_string(g, v));
      for (int c : n.control_inputs) nd->add_input("^" + g.node(c).name);
      for (const auto* item : detail::ordered_attrs(n)) attr((*nd->mutable_attr())[item->first], item->second);
      for (const TensorType& t : n.outputs) {
        pb::TensorType* tt = nd->add_output_types();
        tt->set_dtype(dtype_to_proto(t.dtype));
        for (int64_t d : t.shape) tt->add_dims(d);
      }
      nd->set_device(n.device);
    }
  }

  template <class Msg> void interface(const Graph& g, Msg* out) {
    for (int i : g.inputs) out->add_inputs(g.node(i).name);
    for (const ValueRef& v : g.outputs) out->add_outputs(value_string(g, v));
  }

  void library(const Graph& g, pb::GraphDef* out) {
    for (const auto& [f, name] : detail::collect_functions(g)) {
      pb::FunctionDef* fd = out->add_library();
      fd->set_name(name);
      nodes(*f, fd->mutable_node());
      interface(*f, fd);
    }
  }

 private:
  std::unordered_map<uint64_t, std::string> var_names_;
  std::unordered_map<const Graph*, std::string> fn_names_;

  void attr(pb::AttrValue& out, const AttrValue& v) {
    switch (attr_kind(v)) {
      case AttrKind::Bool: out.set_b(std::get<bool>(v)); break;
      case AttrKind::Int: out.set_i(std::get<int64_t>(v)); break;
      case AttrKind::Float: out.set_f(std::get<double>(v)); break;
      case AttrKind::String: out.set_s(std::get<std::string>(v)); break;
      case AttrKind::DType: out.set_dtype(dtype_to_proto(std::get<DType>(v))); break;
      case AttrKind::Ints:
        for (int64_t x : std::get<std::vector<int64_t>>(v)) out.mutable_ints()->add_v(x);
        out.mutable_ints();  // set even when empty
        break;
      case AttrKind::Floats:
        for (double x : std::get<std::vector<double>>(v)) out.mutable_floats()->add_v(x);
        out.mutable_floats();
        break;
      case AttrKind::Tensor: {
        const Tensor& t = std::get<Tensor>(v);
        DF_CHECK(t.defined() && !t.is_symbolic(), "[graph_to_proto] a tensor attribute has no value");
        pb::TensorProto* tp = out.mutable_tensor();
        tp->set_dtype(dtype_to_proto(t.dtype()));
        for (int64_t d : t.shape()) tp->add_dims(d);
        if (t.dtype() == DType::String)
          for (int64_t i = 0; i < t.size(); ++i) tp->add_string_val(t.data<std::string>()[i]);
        else
          tp->set_content(static_cast<const char*>(t.raw_data()), t.nbytes());  // little-endian hosts
        break;
      }
      case AttrKind::Variable: {
        const Variable& var = std::get<Variable>(v);
        DF_CHECK(var.defined(), "[graph_to_proto] a variable attribute is undefined");
        pb::VariableRef* vr = out.mutable_variable();
        vr->set_name(var_names_.at(var.id()));
        vr->set_dtype(dtype_to_proto(var.dtype()));
        for (int64_t d : var.shape()) vr->add_shape(d);
        break;
      }
      case AttrKind::Func: {
        const GraphRef& f = std::get<GraphRef>(v);
        DF_CHECK(f, "[graph_to_proto] a function attribute is null");
        out.set_func(fn_names_.at(f.get()));
        break;
      }
    }
  }
};

// --- reading ---

class Reader {
 public:
  Reader(const pb::GraphDef& def, const ParseOptions& options) : def_(def), options_(options), vars_(options) {}

  std::shared_ptr<Graph> read() {
    DF_CHECK(def_.version() >= 1, "[parse_graph_def] missing version (truncated or not a GraphDef)");
    DF_CHECK(def_.version() <= kGraphDefVersion, "[parse_graph_def] version ", def_.version(),
             " is newer than this reader's ", kGraphDefVersion);
    for (const pb::FunctionDef& f : def_.library()) {
      DF_CHECK(!f.name().empty(), "[parse_graph_def] a library function has no name");
      DF_CHECK(fn_defs_.emplace(f.name(), &f).second, "[parse_graph_def] function '", f.name(), "' is defined twice");
    }
    for (const pb::FunctionDef& f : def_.library()) function(f.name());  // unused ones are checked too
    return build(def_.node(), def_.inputs(), def_.outputs(), "");
  }

 private:
  const pb::GraphDef& def_;
  const ParseOptions& options_;
  detail::VariableResolver vars_;
  std::unordered_map<std::string, const pb::FunctionDef*> fn_defs_;
  std::unordered_map<std::string, GraphRef> fn_done_;
  std::vector<std::string> in_progress_;

  template <class... Args> [[noreturn]] static void error(const std::string& where, Args&&... args) {
    fail("[parse_graph_def] ", where, std::forward<Args>(args)...);
  }

  GraphRef function(const std::string& name) {
    if (auto it = fn_done_.find(name); it != fn_done_.end()) return it->second;
    auto it = fn_defs_.find(name);
    DF_CHECK(it != fn_defs_.end(), "[parse_graph_def] unknown function '", name, "'");
    for (const std::string& p : in_progress_)
      DF_CHECK(p != name, "[parse_graph_def] function '", name, "' refers to itself");
    DF_CHECK(int(in_progress_.size()) < kMaxFunctionDepth, "[parse_graph_def] functions nested deeper than ",
             kMaxFunctionDepth);
    in_progress_.push_back(name);
    const pb::FunctionDef& f = *it->second;
    GraphRef g = build(f.node(), f.inputs(), f.outputs(), "function '" + name + "': ");
    in_progress_.pop_back();
    fn_done_[name] = g;
    return g;
  }

  DType dtype(int v, const std::string& where) {
    if (v < 1 || v > kNumDTypes) error(where, "invalid dtype ", v);
    return DType(v - 1);
  }
  Shape shape(const google::protobuf::RepeatedField<int64_t>& dims, bool allow_unknown, const std::string& where) {
    if (dims.size() > kMaxRank) error(where, "rank ", dims.size(), " is above ", kMaxRank);
    Shape s;
    for (int64_t d : dims) {
      if (d < (allow_unknown ? -1 : 0)) error(where, "invalid dimension ", d);
      s.push_back(d);
    }
    return s;
  }

  Tensor tensor(const pb::TensorProto& tp, const std::string& where) {
    DType dt = dtype(tp.dtype(), where);
    Shape s = shape(tp.dims(), false, where);
    uint64_t n = 1;
    for (int64_t d : s) {
      if (d != 0 && n > uint64_t(std::numeric_limits<int64_t>::max()) / uint64_t(d)) error(where, "tensor shape ", s, " is too large");
      n *= uint64_t(d);
    }
    const std::string& c = tp.content();
    if (dt == DType::String) {
      if (!c.empty()) error(where, "string tensor", s, " must have no content bytes (its values are string_val)");
      if (uint64_t(tp.string_val_size()) != n)
        error(where, "tensor string", s, " needs ", n, " string_val entries, got ", tp.string_val_size());
      Tensor t(s, dt);
      std::copy(tp.string_val().begin(), tp.string_val().end(), t.data<std::string>());
      return t;
    }
    if (tp.string_val_size() != 0) error(where, "tensor ", dtype_name(dt), s, " has string_val entries");
    if (n > c.size() / dtype_size(dt) || c.size() != n * dtype_size(dt))
      error(where, "tensor ", dtype_name(dt), s, " needs ", n, " x ", dtype_size(dt), " content bytes, got ", c.size());
    if (dt == DType::Bool)
      for (char b : c)
        if (b != 0 && b != 1) error(where, "bool tensor content must be bytes 0 or 1");
    Tensor t(s, dt);
    if (!c.empty()) std::memcpy(t.raw_data(), c.data(), c.size());
    return t;
  }

  AttrValue attr(const pb::AttrValue& v, const std::string& where) {
    switch (v.value_case()) {
      case pb::AttrValue::kB: return v.b();
      case pb::AttrValue::kI: return int64_t(v.i());
      case pb::AttrValue::kF: return v.f();
      case pb::AttrValue::kS: return v.s();
      case pb::AttrValue::kDtype: return dtype(v.dtype(), where);
      case pb::AttrValue::kInts: return std::vector<int64_t>(v.ints().v().begin(), v.ints().v().end());
      case pb::AttrValue::kFloats: return std::vector<double>(v.floats().v().begin(), v.floats().v().end());
      case pb::AttrValue::kTensor: return tensor(v.tensor(), where);
      case pb::AttrValue::kVariable: {
        const pb::VariableRef& r = v.variable();
        DType dt = dtype(r.dtype(), where);
        Shape s = shape(r.shape(), false, where);
        try {
          return vars_.resolve(r.name(), dt, s);
        } catch (const Error& e) {
          error(where, e.what());
        }
      }
      case pb::AttrValue::kFunc: return function(v.func());
      case pb::AttrValue::VALUE_NOT_SET: break;
    }
    error(where, "no value");
  }

  // Splits "name:k" (k digits) at the last ':'; "name" is output 0.
  std::pair<std::string, int> split_value(const std::string& s) {
    size_t colon = s.rfind(':');
    if (colon != std::string::npos && colon + 1 < s.size() && colon + 1 + 9 >= s.size() &&
        s.find_first_not_of("0123456789", colon + 1) == std::string::npos)
      return {s.substr(0, colon), std::stoi(s.substr(colon + 1))};
    return {s, 0};
  }

  std::shared_ptr<Graph> build(const google::protobuf::RepeatedPtrField<pb::NodeDef>& nodes,
                               const google::protobuf::RepeatedPtrField<std::string>& inputs,
                               const google::protobuf::RepeatedPtrField<std::string>& outputs,
                               const std::string& where) {
    auto g = std::make_shared<Graph>();
    for (const pb::NodeDef& nd : nodes) {
      const std::string at = where + "node '" + nd.name() + "': ";
      if (nd.name().empty()) error(where, "a node has no name");
      if (nd.name()[0] == '^') error(where, "node name '", nd.name(), "' starts with '^' (a control input)");
      if (g->find(nd.name()) >= 0) error(where, "node '", nd.name(), "' is defined twice");
      Node n;
      n.name = nd.name();
      try {
        n.op = op_id_from_name(nd.op());
      } catch (const Error&) {
        error(at, "unknown op '", nd.op(), "'");
      }
      for (const auto& [key, value] : nd.attr()) n.attrs.set(key, attr(value, at + "attribute '" + key + "': "));
      try {
        detail::coerce_and_check_attrs(op_def(n.op), n.attrs);
      } catch (const Error& e) {
        error(at, e.what());
      }
      for (const pb::TensorType& t : nd.output_types())
        n.outputs.push_back({dtype(t.dtype(), at), shape(t.dims(), true, at)});
      n.device = nd.device();
      g->add_node(std::move(n));
    }
    auto node_id = [&](const std::string& name, const std::string& at) {
      int id = g->find(name);
      if (id < 0) error(at, "input '", name, "' names no node");
      return id;
    };
    auto value = [&](const std::string& s, const std::string& at) {
      auto [name, index] = split_value(s);
      int id = node_id(name, at);
      int n = int(g->node(id).outputs.size());
      if (index >= n) error(at, "input '", s, "': node '", name, "' has ", n, " outputs");
      return ValueRef{id, index};
    };
    for (int i = 0; i < nodes.size(); ++i) {
      const pb::NodeDef& nd = nodes.Get(i);
      const std::string at = where + "node '" + nd.name() + "': ";
      Node& n = g->mutable_node(i);
      for (const std::string& in : nd.input()) {
        if (!in.empty() && in[0] == '^') {
          n.control_inputs.push_back(node_id(in.substr(1), at));
        } else {
          if (!n.control_inputs.empty()) error(at, "data input '", in, "' after a control input");
          n.inputs.push_back(value(in, at));
        }
      }
      const OpDef& def = n.def();
      if (def.num_inputs >= 0 && int(n.inputs.size()) != def.num_inputs)
        error(at, "'", def.name, "' takes ", def.num_inputs, " inputs, got ", n.inputs.size());
    }
    for (const std::string& in : inputs) {
      int id = node_id(in, where + "graph inputs: ");
      if (g->node(id).op != OpId::Placeholder) error(where, "input '", in, "' is not a placeholder");
      g->inputs.push_back(id);
    }
    for (const std::string& out : outputs) g->outputs.push_back(value(out, where + "graph outputs: "));
    if (options_.validate) {
      try {
        g->validate();
      } catch (const Error& e) {
        error(where, e.what());
      }
    }
    return g;
  }
};

}  // namespace

void graph_to_proto(const Graph& g, pb::GraphDef* out) {
  out->Clear();
  Writer w(g);
  w.library(g, out);
  w.nodes(g, out->mutable_node());
  w.interface(g, out);
  out->set_version(kGraphDefVersion);
}

std::shared_ptr<Graph> graph_from_proto(const pb::GraphDef& def, const ParseOptions& options) {
  return Reader(def, options).read();
}

std::string serialize_graph(const Graph& g) {
  pb::GraphDef def;
  graph_to_proto(g, &def);
  std::string out;
  {
    google::protobuf::io::StringOutputStream sos(&out);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);  // map entries sorted: same graph, same bytes
    DF_CHECK(def.SerializeToCodedStream(&cos), "[serialize_graph] protobuf serialization failed");
  }
  return out;
}

std::shared_ptr<Graph> parse_graph_def(const std::string& bytes, const ParseOptions& options) {
  pb::GraphDef def;
  DF_CHECK(def.ParseFromString(bytes), "[parse_graph_def] the bytes are not a valid GraphDef (truncated or corrupt, ",
           bytes.size(), " bytes)");
  return graph_from_proto(def, options);
}

}  // namespace deepflow
