// SPDX-License-Identifier: Apache-2.0
// ONNX import: ModelProto -> checks -> a traced Function that evaluates the graph
// (import_graph.cpp) through the op importers.
#include "deepflow/onnx/onnx.h"

#include <climits>
#include <mutex>
#include <cstring>
#include <fstream>
#include <sstream>

#include "deepflow/core/error.h"
#include "deepflow/onnx/import_internal.h"
#include "deepflow/ops/op.h"

namespace deepflow::onnx {
namespace {

// Beyond what protobuf's ParseFromArray takes (int size), and far beyond any model we run.
constexpr size_t kMaxModelBytes = size_t(INT_MAX);
// A tensor larger than this is taken as a corrupt header (dims) rather than allocated.
constexpr int64_t kMaxTensorElements = int64_t(1) << 34;

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

std::string read_file(const std::string& path, const char* tag) {
  std::ifstream f(path, std::ios::binary);
  DF_CHECK(f.good(), tag, " cannot open ", path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The typed field values converted into out's dtype.
template <class Src, class Field>
void copy_field(const Field& f, Tensor& out) {
  DF_DISPATCH_ALL(out.dtype(), "onnx::import", [&] {
    scalar_t* d = out.data<scalar_t>();
    for (int64_t i = 0; i < out.size(); ++i) d[i] = convert<scalar_t>(Src(f.Get(int(i))));
  });
}

TensorType value_info_type(const ::onnx::ValueInfoProto& v, const std::string& where, bool* rank_known) {
  const auto& tp = v.type();
  if (!tp.has_tensor_type()) {
    const char* kind = tp.has_sequence_type() ? "sequence" : tp.has_optional_type() ? "optional"
                       : tp.has_map_type()    ? "map"
                       : tp.has_sparse_tensor_type() ? "sparse tensor"
                                                     : "undefined";
    fail("[onnx::import] ", where, " '", v.name(), "' has unsupported type ", kind, " (only tensors are supported)");
  }
  const auto& tt = tp.tensor_type();
  TensorType out;
  out.dtype = dtype_from_onnx(tt.elem_type());
  *rank_known = tt.has_shape();
  if (tt.has_shape()) {
    DF_CHECK(tt.shape().dim_size() <= kMaxRank, "[onnx::import] ", where, " '", v.name(), "' has rank ",
             tt.shape().dim_size(), " (at most ", kMaxRank, " supported)");
    for (const auto& d : tt.shape().dim()) {
      out.shape.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : kUnknownDim);
    }
  }
  return out;
}

void collect_unsupported(const ::onnx::GraphProto& g, int64_t opset, std::map<std::string, int>& counts,
                         std::vector<std::string>& order) {
  for (const auto& n : g.node()) {
    std::string key;
    if (!is_default_domain(n.domain())) {
      key = n.domain() + "." + n.op_type();
    } else if (find_op_importer(n.op_type(), opset) == nullptr) {
      key = n.op_type();
    }
    if (!key.empty()) {
      if (counts[key]++ == 0) order.push_back(key);
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_unsupported(a.g(), opset, counts, order);
      for (const auto& sg : a.graphs()) collect_unsupported(sg, opset, counts, order);
    }
  }
}

::onnx::ModelProto parse_model(std::string_view bytes, const std::string& source) {
  DF_CHECK(bytes.size() <= kMaxModelBytes, "[onnx::import] ", source, ": ", bytes.size(),
           " bytes is larger than protobuf can parse (2 GiB)");
  ::onnx::ModelProto m;
  DF_CHECK(m.ParseFromArray(bytes.data(), int(bytes.size())), "[onnx::import] ", source,
           ": not a valid ONNX model (protobuf parse failed)");
  return m;
}

int64_t model_opset(const ::onnx::ModelProto& m, const std::string& source) {
  DF_CHECK(m.has_graph(), "[onnx::import] ", source, ": not a valid ONNX model (no graph)");
  DF_CHECK(m.ir_version() >= 1, "[onnx::import] ", source, ": not a valid ONNX model (no ir_version)");
  DF_CHECK(m.ir_version() <= kMaxIrVersion, "[onnx::import] ", source, ": IR version ", m.ir_version(),
           " is not supported (at most ", kMaxIrVersion, ")");
  int64_t opset = -1;
  for (const auto& o : m.opset_import()) {
    if (is_default_domain(o.domain())) opset = o.version();
  }
  DF_CHECK(opset >= 0, "[onnx::import] ", source, ": the model imports no default-domain (ai.onnx) opset");
  DF_CHECK(opset >= kMinOpset && opset <= kMaxOpset, "[onnx::import] ", source, ": opset ", opset,
           " is not supported (ai.onnx opsets ", kMinOpset, " to ", kMaxOpset, ")");
  return opset;
}

std::vector<std::string> unsupported_list(const ::onnx::GraphProto& g, int64_t opset) {
  std::map<std::string, int> counts;
  std::vector<std::string> order;
  collect_unsupported(g, opset, counts, order);
  std::vector<std::string> out;
  for (const auto& k : order) out.push_back(counts[k] > 1 ? k + " (" + std::to_string(counts[k]) + " nodes)" : k);
  return out;
}

bool has_unknown_dims(const Signature& sig) {
  for (const auto& t : sig) {
    if (!t.shape.is_fully_defined()) return true;
  }
  return false;
}

}  // namespace

namespace detail {

Tensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& where) {
  using TP = ::onnx::TensorProto;
  DF_CHECK(!(t.has_data_location() && t.data_location() == TP::EXTERNAL), "[onnx::import] ", where,
           ": external data is not supported");
  DF_CHECK(!t.has_segment(), "[onnx::import] ", where, ": segmented tensors are not supported");
  DType dtype = dtype_from_onnx(t.data_type());
  DF_CHECK(t.dims_size() <= kMaxRank, "[onnx::import] ", where, ": rank ", t.dims_size(), " (at most ", kMaxRank,
           " supported)");
  Shape shape;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    DF_CHECK(d >= 0, "[onnx::import] ", where, ": negative dim ", d);
    shape.push_back(d);
    if (d != 0 && n > kMaxTensorElements / d) fail("[onnx::import] ", where, ": too many elements");
    n *= d;
  }
  DF_CHECK(n <= kMaxTensorElements, "[onnx::import] ", where, ": too many elements");
  auto count_check = [&](int64_t have, const char* field) {
    DF_CHECK(have == n, "[onnx::import] ", where, ": ", field, " holds ", have, " values, the shape ", shape,
             " needs ", n);
  };

  if (dtype == DType::String) {
    DF_CHECK(!t.has_raw_data(), "[onnx::import] ", where, ": string tensors cannot use raw_data");
    count_check(t.string_data_size(), "string_data");
    Tensor out(shape, DType::String);
    auto* d = out.data<std::string>();
    for (int64_t i = 0; i < n; ++i) d[i] = t.string_data(int(i));
    return out;
  }
  if (t.has_raw_data()) {
    size_t want = size_t(n) * dtype_size(dtype);
    DF_CHECK(t.raw_data().size() == want, "[onnx::import] ", where, ": raw_data has ", t.raw_data().size(),
             " bytes, ", onnx_type_name(t.data_type()), shape, " needs ", want);
    Tensor out(shape, dtype);
    if (dtype == DType::Bool) {
      // Bytes other than 0/1 are not valid bools in C++: normalize.
      const auto* src = reinterpret_cast<const uint8_t*>(t.raw_data().data());
      bool* d = out.data<bool>();
      for (int64_t i = 0; i < n; ++i) d[i] = src[i] != 0;
    } else if (want > 0) {
      std::memcpy(out.raw_data(), t.raw_data().data(), want);  // little-endian, as ONNX stores it
    }
    return out;
  }
  Tensor out(shape, dtype);
  switch (dtype) {
    case DType::Float32: count_check(t.float_data_size(), "float_data"); copy_field<float>(t.float_data(), out); break;
    case DType::Float64: count_check(t.double_data_size(), "double_data"); copy_field<double>(t.double_data(), out); break;
    case DType::Int64: count_check(t.int64_data_size(), "int64_data"); copy_field<int64_t>(t.int64_data(), out); break;
    case DType::Int32:
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      count_check(t.int32_data_size(), "int32_data");
      copy_field<int32_t>(t.int32_data(), out);
      break;
    case DType::Float16:
    case DType::BFloat16: {
      // int32_data holds the 16-bit patterns.
      count_check(t.int32_data_size(), "int32_data");
      auto* d = static_cast<uint16_t*>(out.raw_data());
      for (int64_t i = 0; i < n; ++i) d[i] = uint16_t(t.int32_data(int(i)));
      break;
    }
    case DType::String: break;
  }
  return out;
}

}  // namespace detail

struct OnnxModel::State {
  std::string source;
  int64_t ir_version = 0, opset = 0;
  std::string producer;
  std::vector<ValueInfo> inputs, outputs;
  std::vector<bool> rank_known;
  std::shared_ptr<::onnx::ModelProto> model;
  std::shared_ptr<detail::ImportShared> shared;
  std::map<std::string, Tensor> initializers;  // constants and variable reads
  std::map<std::string, Variable> variables;
  Function function;               // traced with the declared input signature
  Function specialized;            // traced per concrete input shapes (no signature)
  bool use_specialized = false;    // the declared signature cannot be traced (a fold needs a shape)
  bool signature_complete = true;  // every input's rank is declared
  // Small integer inputs (axes, shapes, pads fed as graph inputs): when a fold needs their
  // values, run() traces one function per distinct value set, with those values as constants.
  std::vector<size_t> value_inputs;
  bool fold_values = false;
  std::mutex by_value_mu;
  std::map<std::string, Function> by_value;
  FunctionOptions specialized_options;
};

namespace {

// `folded`: inputs replaced by these concrete values (known to the importers).
Function::Callable make_callable(const std::shared_ptr<OnnxModel::State>& st,
                                 std::map<size_t, Tensor> folded = {}) {
  std::weak_ptr<OnnxModel::State> weak = st;
  return [weak, folded = std::move(folded)](const TensorList& given) -> TensorList {
    auto s = weak.lock();
    DF_CHECK(s != nullptr, "[onnx::run] the model was destroyed");
    TensorList args = given;
    for (const auto& [i, t] : folded) {
      if (i < args.size()) args[i] = t;
    }
    std::map<std::string, Tensor> inits = s->initializers;
    // Variables are read inside the trace, so assignments between runs are seen.
    for (const auto& [name, v] : s->variables) inits[name] = v.value();
    return detail::evaluate_graph(s->model->graph(), nullptr, args, *s->shared, "", &inits);
  };
}

constexpr int64_t kMaxFoldedInputElements = 4096;

constexpr int64_t kMaxFoldedFloatElements = 64;

// Integer and bool inputs up to kMaxFoldedInputElements (axes, shapes, pads, masks) and
// floating inputs up to kMaxFoldedFloatElements (Range's start, OneHot's depth,
// NonMaxSuppression's boxes).
int64_t fold_limit(DType d) {
  if (d == DType::String) return -1;
  return is_floating(d) ? kMaxFoldedFloatElements : kMaxFoldedInputElements;
}

bool is_value_input(const TensorType& t) {
  int64_t limit = fold_limit(t.dtype), n = t.shape.num_elements();
  return limit >= 0 && (n < 0 || n <= limit);
}

OnnxModel import_model_proto(std::shared_ptr<::onnx::ModelProto> m, const ImportOptions& options,
                             const std::string& source) {
  auto st = std::make_shared<OnnxModel::State>();
  st->source = source;
  st->opset = model_opset(*m, source);
  st->ir_version = m->ir_version();
  st->producer = m->producer_name() + (m->producer_version().empty() ? "" : " " + m->producer_version());
  const auto& g = m->graph();

  std::vector<std::string> unsupported = unsupported_list(g, st->opset);
  if (!unsupported.empty()) {
    std::string list;
    for (const auto& u : unsupported) list += (list.empty() ? "" : ", ") + u;
    fail("[onnx::import] ", source, ": unsupported ops: ", list, " (opset ", st->opset, ")");
  }

  for (const auto& t : g.initializer()) {
    DF_CHECK(!t.name().empty(), "[onnx::import] ", source, ": an initializer has no name");
    Tensor v = detail::tensor_from_proto(t, source + ": initializer '" + t.name() + "'");
    // Only floating initializers become Variables: integer ones are shapes, axes and
    // indices that importers need as known values.
    if (options.variables && is_floating(v.dtype())) {
      st->variables.emplace(t.name(), Variable(v, t.name()));
    } else {
      st->initializers[t.name()] = v;
    }
  }
  DF_CHECK(g.sparse_initializer_size() == 0, "[onnx::import] ", source, ": sparse initializers are not supported");

  Signature sig;
  for (const auto& in : g.input()) {
    if (st->initializers.count(in.name()) || st->variables.count(in.name())) continue;
    bool rank_known = true;
    TensorType type = value_info_type(in, source + ": input", &rank_known);
    st->inputs.push_back({in.name(), type});
    st->rank_known.push_back(rank_known);
    if (is_value_input(type)) st->value_inputs.push_back(st->inputs.size() - 1);
    if (!rank_known) st->signature_complete = false;
    sig.push_back(type);
  }
  for (const auto& out : g.output()) {
    bool rank_known = true;
    TensorType type;
    if (out.has_type() && out.type().has_tensor_type() && out.type().tensor_type().has_elem_type()) {
      type = value_info_type(out, source + ": output", &rank_known);
    } else {
      DF_CHECK(!out.has_type() || out.type().has_tensor_type() || out.type().value_case() == 0, "[onnx::import] ",
               source, ": output '", out.name(), "' has unsupported type (only tensors are supported)");
    }
    st->outputs.push_back({out.name(), type});
  }

  st->shared = std::make_shared<detail::ImportShared>();
  st->shared->source = source;
  st->shared->opset = st->opset;
  st->model = std::move(m);

  FunctionOptions fo;
  fo.name = st->model->graph().name().empty() ? "onnx_model" : st->model->graph().name();
  fo.optimize = options.optimize;
  FunctionOptions specialized = fo;
  specialized.generalize_shapes = false;
  st->specialized = Function(make_callable(st), specialized);
  st->specialized_options = specialized;
  if (st->signature_complete) {
    fo.input_signature = sig;
    st->function = Function(make_callable(st), fo);
    // Trace now: importer errors (bad attributes, shapes) surface at import. A model whose
    // folds need the concrete input shapes (Reshape to a Shape of a dynamic input) or the
    // values of small integer inputs (axes fed as an input) is traced per input shape, or
    // per such values, by run() instead.
    try {
      st->function.get_concrete_function();
    } catch (const Error& e) {
      bool needs_value = std::string(e.what()).find("must be known at import time") != std::string::npos;
      if (!needs_value || (!has_unknown_dims(sig) && st->value_inputs.empty())) throw;
      st->use_specialized = true;
      st->fold_values = !st->value_inputs.empty();
    }
  } else {
    st->use_specialized = true;
    st->fold_values = !st->value_inputs.empty();
  }
  return OnnxModel(st);
}

}  // namespace

const std::vector<ValueInfo>& OnnxModel::inputs() const { return state_->inputs; }
const std::vector<ValueInfo>& OnnxModel::outputs() const { return state_->outputs; }
int64_t OnnxModel::ir_version() const { return state_->ir_version; }
int64_t OnnxModel::opset() const { return state_->opset; }
const std::string& OnnxModel::producer() const { return state_->producer; }
const std::map<std::string, Variable>& OnnxModel::variables() const { return state_->variables; }

const Function& OnnxModel::function() const {
  return state_->use_specialized ? state_->specialized : state_->function;
}

ConcreteFunction OnnxModel::concrete_function() const {
  DF_CHECK(state_->signature_complete, "[onnx::import] ", state_->source,
           ": an input has no declared shape, so there is no declared signature to trace");
  Signature sig;
  for (const auto& in : state_->inputs) sig.push_back(in.type);
  if (state_->use_specialized) return state_->specialized.get_concrete_function(sig);
  return state_->function.get_concrete_function();
}

std::map<std::string, Tensor> OnnxModel::run(const std::map<std::string, Tensor>& inputs) const {
  const State& s = *state_;
  for (const auto& [name, t] : inputs) {
    bool found = false;
    for (const auto& in : s.inputs) found = found || in.name == name;
    if (!found) {
      std::string names;
      for (const auto& in : s.inputs) names += (names.empty() ? "" : ", ") + in.name;
      fail("[onnx::run] ", s.source, ": unknown input '", name, "' (the model's inputs: ", names, ")");
    }
  }
  TensorList args;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const ValueInfo& in = s.inputs[i];
    auto it = inputs.find(in.name);
    DF_CHECK(it != inputs.end(), "[onnx::run] ", s.source, ": missing input '", in.name, "'");
    const Tensor& t = it->second;
    DF_CHECK(t.defined(), "[onnx::run] ", s.source, ": input '", in.name, "' is an undefined tensor");
    DF_CHECK(t.dtype() == in.type.dtype, "[onnx::run] ", s.source, ": input '", in.name, "' must be ",
             in.type.dtype, ", got ", t.dtype());
    if (s.rank_known[i]) {
      DF_CHECK(t.shape().compatible_with(in.type.shape), "[onnx::run] ", s.source, ": input '", in.name,
               "' must have shape ", in.type.shape, ", got ", t.shape());
    }
    args.push_back(t);
  }
  TensorList outs;
  if (s.fold_values) {
    std::map<size_t, Tensor> folded;
    std::ostringstream key;
    for (size_t i : s.value_inputs) {
      const Tensor& t = args[i];
      if (t.size() > fold_limit(t.dtype())) continue;
      folded[i] = t;
      key << i << ':' << t.dtype() << t.shape() << '=';
      key.write(static_cast<const char*>(t.raw_data()), std::streamsize(t.nbytes()));
      key << ';';
    }
    Function f;
    {
      std::lock_guard<std::mutex> lock(state_->by_value_mu);
      auto it = state_->by_value.find(key.str());
      if (it == state_->by_value.end()) {
        it = state_->by_value.emplace(key.str(), Function(make_callable(state_, folded), s.specialized_options)).first;
      }
      f = it->second;
    }
    outs = f(args);
  } else {
    outs = function()(args);
  }
  DF_CHECK(outs.size() == s.outputs.size(), "[onnx::run] ", s.source, ": the graph returned ", outs.size(),
           " outputs, expected ", s.outputs.size());
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < outs.size(); ++i) result[s.outputs[i].name] = outs[i];
  return result;
}

OnnxModel import_model(const std::string& path, const ImportOptions& options) {
  std::string bytes = read_file(path, "[onnx::import]");
  return import_model_from_bytes(bytes, options, path);
}

OnnxModel import_model_from_bytes(std::string_view bytes, const ImportOptions& options, const std::string& source) {
  auto m = std::make_shared<::onnx::ModelProto>(parse_model(bytes, source));
  return import_model_proto(std::move(m), options, source);
}

std::vector<std::string> unsupported_ops(const std::string& path) {
  std::string bytes = read_file(path, "[onnx::import]");
  ::onnx::ModelProto m = parse_model(bytes, path);
  int64_t opset = model_opset(m, path);
  return unsupported_list(m.graph(), opset);
}

Tensor read_tensor_file(const std::string& path) {
  std::string bytes = read_file(path, "[onnx::read_tensor_file]");
  DF_CHECK(bytes.size() <= kMaxModelBytes, "[onnx::read_tensor_file] ", path, ": file too large");
  ::onnx::TensorProto t;
  DF_CHECK(t.ParseFromArray(bytes.data(), int(bytes.size())), "[onnx::read_tensor_file] ", path,
           ": not a valid TensorProto (protobuf parse failed)");
  return detail::tensor_from_proto(t, path);
}

}  // namespace deepflow::onnx
