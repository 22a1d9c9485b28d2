// SPDX-License-Identifier: Apache-2.0
#include "deepflow/ops/op.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "deepflow/ops/kernel.h"

namespace deepflow {

// --- attributes ---

AttrKind attr_kind(const AttrValue& v) { return AttrKind(v.index()); }

const char* attr_kind_name(AttrKind k) {
  static const char* kNames[] = {"bool", "int", "float", "string", "dtype", "ints", "floats",
                                 "tensor", "variable", "func"};
  return kNames[int(k)];
}

std::string attr_to_string(const AttrValue& v) {
  std::ostringstream os;
  os.precision(17);
  switch (attr_kind(v)) {
    case AttrKind::Bool: os << (std::get<bool>(v) ? "true" : "false"); break;
    case AttrKind::Int: os << std::get<int64_t>(v); break;
    case AttrKind::Float: os << std::get<double>(v); break;
    case AttrKind::String: os << '"' << std::get<std::string>(v) << '"'; break;
    case AttrKind::DType: os << dtype_short_name(std::get<DType>(v)); break;
    case AttrKind::Ints: {
      os << '[';
      const auto& xs = std::get<std::vector<int64_t>>(v);
      for (size_t i = 0; i < xs.size(); ++i) os << (i ? "," : "") << xs[i];
      os << ']';
      break;
    }
    case AttrKind::Floats: {
      os << '[';
      const auto& xs = std::get<std::vector<double>>(v);
      for (size_t i = 0; i < xs.size(); ++i) os << (i ? "," : "") << xs[i];
      os << ']';
      break;
    }
    case AttrKind::Tensor: {
      const Tensor& t = std::get<Tensor>(v);
      os << "tensor<" << (t.defined() ? dtype_short_name(t.dtype()) : "?") << (t.defined() ? t.shape().to_string() : "")
         << '>';
      break;
    }
    case AttrKind::Variable: {
      const Variable& var = std::get<Variable>(v);
      os << "var<\"" << (var.defined() ? var.name() : "") << "\">";
      break;
    }
    case AttrKind::Func: os << "func<" << (std::get<GraphRef>(v) ? "graph" : "null") << '>'; break;
  }
  return os.str();
}

bool attr_equal(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  switch (attr_kind(a)) {
    case AttrKind::Tensor: {
      const Tensor &x = std::get<Tensor>(a), &y = std::get<Tensor>(b);
      if (x.impl() == y.impl()) return true;
      if (!x.defined() || !y.defined() || x.dtype() != y.dtype() || x.shape() != y.shape()) return false;
      if (x.is_symbolic() || y.is_symbolic()) return false;
      if (x.dtype() == DType::String)
        return std::equal(x.data<std::string>(), x.data<std::string>() + x.size(), y.data<std::string>());
      return std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
    }
    case AttrKind::Variable: {
      const Variable &x = std::get<Variable>(a), &y = std::get<Variable>(b);
      return x.defined() == y.defined() && (!x.defined() || x.id() == y.id());
    }
    case AttrKind::Func: return std::get<GraphRef>(a) == std::get<GraphRef>(b);
    default:
      return std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, Variable> || std::is_same_v<T, GraphRef>)
              return false;  // handled above
            else
              return x == std::get<T>(b);
          },
          a);
  }
}

void Attrs::set(const std::string& name, AttrValue v) {
  for (auto& [n, val] : items_)
    if (n == name) {
      val = std::move(v);
      return;
    }
  items_.emplace_back(name, std::move(v));
}

const AttrValue* Attrs::find(const std::string& name) const {
  for (const auto& [n, val] : items_)
    if (n == name) return &val;
  return nullptr;
}

AttrSpec AttrSpec::required_of(std::string n, AttrKind k) {
  AttrSpec s(std::move(n), false);
  s.kind = k;
  s.required = true;
  return s;
}

// --- OpCall attribute access ---

const char* OpCall::name() const { return def->name.c_str(); }

const AttrValue& OpCall::attr(const char* n) const {
  if (attrs)
    if (const AttrValue* v = attrs->find(n)) return *v;
  for (const AttrSpec& s : def->attrs)
    if (s.name == n) {
      DF_CHECK(!s.required, "[", def->name, "] missing required attribute '", n, "'");
      return s.default_value;
    }
  fail("[", def->name, "] has no attribute '", n, "'");
}

template <class T> static const T& get_attr(const OpCall& c, const char* n) {
  const AttrValue& v = c.attr(n);
  const T* p = std::get_if<T>(&v);
  DF_CHECK(p, "[", c.def->name, "] attribute '", n, "' has kind ", attr_kind_name(attr_kind(v)));
  return *p;
}
bool OpCall::attr_bool(const char* n) const { return get_attr<bool>(*this, n); }
int64_t OpCall::attr_int(const char* n) const { return get_attr<int64_t>(*this, n); }
double OpCall::attr_float(const char* n) const { return get_attr<double>(*this, n); }
const std::string& OpCall::attr_string(const char* n) const { return get_attr<std::string>(*this, n); }
DType OpCall::attr_dtype(const char* n) const { return get_attr<DType>(*this, n); }
const std::vector<int64_t>& OpCall::attr_ints(const char* n) const {
  return get_attr<std::vector<int64_t>>(*this, n);
}
const std::vector<double>& OpCall::attr_floats(const char* n) const {
  return get_attr<std::vector<double>>(*this, n);
}
const Tensor& OpCall::attr_tensor(const char* n) const { return get_attr<Tensor>(*this, n); }
const Variable& OpCall::attr_variable(const char* n) const { return get_attr<Variable>(*this, n); }
const GraphRef& OpCall::attr_func(const char* n) const { return get_attr<GraphRef>(*this, n); }

// --- registry ---

namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<OpDef>> defs = std::vector<std::unique_ptr<OpDef>>(kNumPrimitives);
  std::unordered_map<std::string, OpId> by_name;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

const char* const kPrimitiveNames[] = {
#define DF_OP_NAME_(name, str) str,
    DEEPFLOW_PRIMITIVES(DF_OP_NAME_)
#undef DF_OP_NAME_
};

}  // namespace

void register_op(OpId id, OpDef def) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  size_t i = size_t(id);
  if (i < size_t(kNumPrimitives) && def.name.empty()) def.name = kPrimitiveNames[i];
  DF_CHECK(!def.name.empty(), "[register_op] op ", i, " has no name");
  DF_CHECK(def.infer, "[register_op] op '", def.name, "' has no infer function");
  DF_CHECK(!r.by_name.count(def.name), "[register_op] op '", def.name, "' is already registered");
  if (i >= r.defs.size()) r.defs.resize(i + 1);
  def.id = id;
  r.by_name[def.name] = id;
  r.defs[i] = std::make_unique<OpDef>(std::move(def));
}

OpId register_custom_op(OpDef def) {
  OpId id;
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    id = OpId(std::max<size_t>(registry().defs.size(), size_t(kNumPrimitives)));
  }
  register_op(id, std::move(def));
  return id;
}

const OpDef* find_op_def(OpId id) {
  Registry& r = registry();
  size_t i = size_t(id);
  return i < r.defs.size() ? r.defs[i].get() : nullptr;
}

const OpDef& op_def(OpId id) {
  const OpDef* d = find_op_def(id);
  DF_CHECK(d, "[dispatch] op '", primitive_name(id), "' has no registered definition");
  return *d;
}

OpId op_id_from_name(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_name.find(name);
  DF_CHECK(it != r.by_name.end(), "[op] unknown op '", name, "'");
  return it->second;
}

const char* primitive_name(OpId id) {
  size_t i = size_t(id);
  if (i < size_t(kNumPrimitives)) return kPrimitiveNames[i];
  const OpDef* d = find_op_def(id);
  return d ? d->name.c_str() : "<unknown>";
}

int num_ops() { return int(registry().defs.size()); }

// --- dispatch ---

namespace {
thread_local BuildScope* t_scope = nullptr;
}  // namespace

BuildScope* current_build_scope() { return t_scope; }
void detail::set_build_scope(BuildScope* scope) { t_scope = scope; }
BuildScopeGuard::BuildScopeGuard(BuildScope* scope) : prev_(t_scope) { t_scope = scope; }
BuildScopeGuard::~BuildScopeGuard() { t_scope = prev_; }

namespace detail {

thread_local int g_active_tapes = 0;

void check_attrs(const OpDef& def, const Attrs& attrs) {
  for (const auto& [name, value] : attrs.items()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : def.attrs)
      if (s.name == name) spec = &s;
    DF_CHECK(spec, "[", def.name, "] unknown attribute '", name, "'");
    DF_CHECK(attr_kind(value) == spec->kind, "[", def.name, "] attribute '", name, "' must be ",
             attr_kind_name(spec->kind), ", got ", attr_kind_name(attr_kind(value)), " ",
             attr_to_string(value));
  }
  for (const AttrSpec& s : def.attrs)
    DF_CHECK(!s.required || attrs.find(s.name), "[", def.name, "] missing required attribute '", s.name, "'");
}

}  // namespace detail

static void check_inputs(const OpDef& def, std::span<const Tensor> inputs) {
  DF_CHECK(def.num_inputs < 0 || int(inputs.size()) == def.num_inputs, "[", def.name, "] expects ",
           def.num_inputs, " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    DF_CHECK(inputs[i].defined(), "[", def.name, "] input ", i, " is an undefined tensor");
}

// Most kernels copy elements as raw bytes or do arithmetic; only ops marked `strings`
// may see a std::string buffer. Checked before infer so the message is the same for all.
static void check_no_strings(const OpDef& def, std::span<const Tensor> inputs) {
  if (def.strings) return;
  for (size_t i = 0; i < inputs.size(); ++i)
    DF_CHECK(inputs[i].dtype() != DType::String, "[", def.name, "] unsupported dtype string (input ", i,
             " of shape ", inputs[i].shape(), ")");
}
static void check_no_string_outputs(const OpDef& def, const TypeList& types) {
  if (def.strings) return;
  for (size_t i = 0; i < types.size(); ++i)
    DF_CHECK(types[i].dtype != DType::String, "[", def.name, "] unsupported dtype string (output ", i, ")");
}

TypeList infer_types(OpId op, std::span<const Tensor> inputs, const Attrs& attrs) {
  const OpDef& def = op_def(op);
  check_inputs(def, inputs);
  check_no_strings(def, inputs);
  detail::check_attrs(def, attrs);
  TypeList types;
  def.infer(OpCall{&def, inputs, &attrs, {}}, types);
  check_no_string_outputs(def, types);
  return types;
}

TensorList dispatch(OpId op, std::span<const Tensor> inputs, const Attrs& attrs) {
  const OpDef& def = op_def(op);
  check_inputs(def, inputs);
  check_no_strings(def, inputs);
  if (!attrs.empty() || !def.attrs.empty()) detail::check_attrs(def, attrs);
  OpCall call{&def, inputs, &attrs, {}};
  TypeList types;
  types.reserve(2);
  def.infer(call, types);
  check_no_string_outputs(def, types);

  TensorList outputs;
  BuildScope* scope = t_scope;
  bool symbolic = false;
  for (const Tensor& t : inputs) symbolic |= t.is_symbolic();
  if (scope && (symbolic || scope->captures(inputs))) {
    outputs = scope->add_node(def, inputs, attrs, types);
  } else {
    DF_CHECK(!symbolic, "[", def.name, "] got a symbolic input outside a graph scope");
    outputs.reserve(types.size());
    if (def.view_output) outputs.resize(types.size());  // the kernel sets views
    else for (const TensorType& t : types) {
      DF_CHECK(t.shape.is_fully_defined(), "[", def.name, "] output shape ", t.shape,
               " is not fully known");
      outputs.emplace_back(t.shape, t.dtype);
    }
    const KernelDef& k = select_kernel(call);
    k.run(call, outputs);
  }
  if (detail::g_active_tapes > 0 && !def.non_differentiable) detail::record_on_tapes(def, inputs, attrs, outputs);
  return outputs;
}

Tensor dispatch1(OpId op, std::span<const Tensor> inputs, const Attrs& attrs) {
  TensorList out = dispatch(op, inputs, attrs);
  DF_CHECK(out.size() == 1, "[", op_def(op).name, "] has ", out.size(), " outputs, not 1");
  return std::move(out[0]);
}

}  // namespace deepflow
