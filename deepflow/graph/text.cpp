// SPDX-License-Identifier: Apache-2.0
// The graph text form: the printer, graph equality and the helpers the readers share.
// The parser is in text_parse.cpp; docs/graph_text.md describes the format.
#include "deepflow/graph/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <unordered_set>

#include "deepflow/graph/text_util.h"

namespace deepflow {

namespace text_detail {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '/' || c == '-';
}

void write_quoted(std::string& out, const std::string& s) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void write_name(std::string& out, const std::string& s) {
  if (!s.empty() && std::all_of(s.begin(), s.end(), is_name_char)) out += s;
  else write_quoted(out, s);
}

void write_nan_bits(std::string& out, uint64_t bits, int hex_digits) {
  static const char kHex[] = "0123456789abcdef";
  out += "nan(0x";
  for (int i = hex_digits - 1; i >= 0; --i) out += kHex[(bits >> (4 * i)) & 15];
  out += ')';
}

template <class T> void write_float(std::string& out, T v, bool mark_float) {
  if (std::isnan(v)) {
    // The quiet NaN of either sign is "nan" / "-nan"; any other NaN keeps its exact bits.
    using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
    T canonical = std::signbit(v) ? -std::numeric_limits<T>::quiet_NaN() : std::numeric_limits<T>::quiet_NaN();
    Bits b, c;
    std::memcpy(&b, &v, sizeof(T));
    std::memcpy(&c, &canonical, sizeof(T));
    if (b == c) out += std::signbit(v) ? "-nan" : "nan";
    else write_nan_bits(out, b, int(2 * sizeof(T)));
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-inf" : "inf";
    return;
  }
  // Shortest digits that read back to the same bits (exact round trip, and 0.1 stays "0.1").
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, r.ptr);
  if (mark_float && s.find_first_of(".e") == std::string::npos) s += ".0";
  out += s;
}
template void write_float<float>(std::string&, float, bool);
template void write_float<double>(std::string&, double, bool);

void write_type(std::string& out, const TensorType& t) {
  out += dtype_short_name(t.dtype);
  out += t.shape.to_string();
}

}  // namespace text_detail

using namespace text_detail;

namespace {

template <class H> void write_half(std::string& out, H h) {
  const float f = float(h);
  // A NaN that reading "nan" would not give back keeps its 16 bits.
  if (std::isnan(f) && H(f).bits != h.bits) write_nan_bits(out, h.bits, 4);
  else write_float(out, f, false);
}

void write_element(std::string& out, const Tensor& t, int64_t i) {
  const void* p = t.raw_data();
  switch (t.dtype()) {
    case DType::Float32: write_float(out, static_cast<const float*>(p)[i], false); break;
    case DType::Float64: write_float(out, static_cast<const double*>(p)[i], false); break;
    // 16-bit floats as their exact float values: the shortest float digits read back exactly.
    case DType::Float16: write_half(out, static_cast<const Half*>(p)[i]); break;
    case DType::BFloat16: write_half(out, static_cast<const BFloat16*>(p)[i]); break;
    case DType::Int8: out += std::to_string(static_cast<const int8_t*>(p)[i]); break;
    case DType::UInt8: out += std::to_string(static_cast<const uint8_t*>(p)[i]); break;
    case DType::Int32: out += std::to_string(static_cast<const int32_t*>(p)[i]); break;
    case DType::Int64: out += std::to_string(static_cast<const int64_t*>(p)[i]); break;
    case DType::Bool: out += static_cast<const bool*>(p)[i] ? "true" : "false"; break;
    case DType::String: write_quoted(out, static_cast<const std::string*>(p)[i]); break;
  }
}

class Printer {
 public:
  std::string out;
  std::unordered_map<std::string, Variable> vars_by_name;

  // Function bodies first (each before any function or graph that uses it), then `g`.
  void print_top(const Graph& g) {
    declare_functions(g);
    print_nodes(g, "");
    if (!g.inputs.empty()) {
      out += "inputs(";
      print_input_list(g);
      out += ")\n";
    }
    if (!g.outputs.empty()) {
      out += "outputs(";
      print_output_list(g);
      out += ")\n";
    }
  }

 private:
  std::unordered_map<const Graph*, std::string> fn_names_;
  std::unordered_map<uint64_t, std::string> var_names_;

  void declare_functions(const Graph& g) {
    for (const auto& [f, name] : detail::collect_functions(g)) {
      fn_names_[f] = name;
      print_function(*f, name);
    }
  }

  void print_function(const Graph& g, const std::string& name) {
    out += "func @";
    write_name(out, name);
    out += '(';
    print_input_list(g);
    out += ") -> (";
    print_output_list(g);
    out += ") {\n";
    print_nodes(g, "  ");
    out += "}\n";
  }

  void print_node_ref(const Graph& g, int id) {
    out += '%';
    if (id >= 0 && id < g.num_nodes()) write_name(out, g.node(id).name);
    else write_quoted(out, "<no node " + std::to_string(id) + ">");  // printing never throws
  }
  void print_value(const Graph& g, ValueRef v) {
    print_node_ref(g, v.node);
    if (v.index != 0) out += ':' + std::to_string(v.index);
  }
  void print_input_list(const Graph& g) {
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (i) out += ", ";
      print_node_ref(g, g.inputs[i]);
    }
  }
  void print_output_list(const Graph& g) {
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      if (i) out += ", ";
      print_value(g, g.outputs[i]);
    }
  }

  void print_nodes(const Graph& g, const char* indent) {
    for (const Node& n : g.nodes()) {
      out += indent;
      out += '%';
      write_name(out, n.name);
      out += " = ";
      write_name(out, primitive_name(n.op));
      out += '(';
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (i) out += ", ";
        print_value(g, n.inputs[i]);
      }
      out += ')';
      for (int c : n.control_inputs) {
        out += " ^";
        print_node_ref(g, c);
      }
      auto attrs = detail::ordered_attrs(n);
      if (!attrs.empty()) {
        out += " {";
        for (size_t i = 0; i < attrs.size(); ++i) {
          if (i) out += ", ";
          out += attrs[i]->first;
          out += '=';
          print_attr(attrs[i]->second);
        }
        out += '}';
      }
      out += " : ";
      if (n.outputs.empty()) out += "()";
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        if (i) out += ", ";
        write_type(out, n.outputs[i]);
      }
      if (!n.device.empty()) {
        out += " @";
        write_quoted(out, n.device);
      }
      out += '\n';
    }
  }

  const std::string& variable_name(const Variable& v) {
    auto it = var_names_.find(v.id());
    if (it != var_names_.end()) return it->second;
    std::string name = v.name();
    for (int i = 1; vars_by_name.count(name); ++i) name = v.name() + "_" + std::to_string(i);
    vars_by_name[name] = v;
    return var_names_[v.id()] = name;
  }

  void print_attr(const AttrValue& v) {
    switch (attr_kind(v)) {
      case AttrKind::Bool: out += std::get<bool>(v) ? "true" : "false"; break;
      case AttrKind::Int: out += std::to_string(std::get<int64_t>(v)); break;
      case AttrKind::Float: write_float(out, std::get<double>(v), true); break;
      case AttrKind::String: write_quoted(out, std::get<std::string>(v)); break;
      case AttrKind::DType: out += dtype_short_name(std::get<DType>(v)); break;
      case AttrKind::Ints: {
        const auto& xs = std::get<std::vector<int64_t>>(v);
        out += '[';
        for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + std::to_string(xs[i]);
        out += ']';
        break;
      }
      case AttrKind::Floats: {
        const auto& xs = std::get<std::vector<double>>(v);
        out += '[';
        for (size_t i = 0; i < xs.size(); ++i) {
          if (i) out += ", ";
          write_float(out, xs[i], true);
        }
        out += ']';
        break;
      }
      case AttrKind::Tensor: {
        const Tensor& t = std::get<Tensor>(v);
        if (!t.defined() || t.is_symbolic()) {
          out += "tensor<?>";  // not a value: the parser rejects it
          break;
        }
        out += "tensor<";
        write_type(out, {t.dtype(), t.shape()});
        out += ">[";
        for (int64_t i = 0, n = t.size(); i < n; ++i) {
          if (i) out += ", ";
          write_element(out, t, i);
        }
        out += ']';
        break;
      }
      case AttrKind::Variable: {
        const Variable& var = std::get<Variable>(v);
        if (!var.defined()) {
          out += "var<?>";
          break;
        }
        out += "var<";
        write_quoted(out, variable_name(var));
        out += ", ";
        write_type(out, {var.dtype(), var.shape()});
        out += '>';
        break;
      }
      case AttrKind::Func: {
        const GraphRef& f = std::get<GraphRef>(v);
        auto it = f ? fn_names_.find(f.get()) : fn_names_.end();
        out += '@';
        if (it == fn_names_.end()) out += '?';
        else write_name(out, it->second);
        break;
      }
    }
  }
};

bool attrs_equal(const AttrValue& a, const AttrValue& b, std::string* why, const std::string& where);

}  // namespace

std::string print_graph(const Graph& g) {
  Printer p;
  p.print_top(g);
  return std::move(p.out);
}

std::string Graph::to_string() const { return print_graph(*this); }

std::unordered_map<std::string, Variable> graph_variables(const Graph& g) {
  Printer p;  // the names are the printer's, so printing and this always agree
  p.print_top(g);
  return std::move(p.vars_by_name);
}

namespace {

bool differ(std::string* why, const std::string& what) {
  if (why) *why = what;
  return false;
}

bool attrs_equal(const AttrValue& a, const AttrValue& b, std::string* why, const std::string& where) {
  if (a.index() != b.index())
    return differ(why, where + ": kinds " + attr_kind_name(attr_kind(a)) + " and " + attr_kind_name(attr_kind(b)));
  if (attr_kind(a) == AttrKind::Func) {
    const GraphRef &f = std::get<GraphRef>(a), &h = std::get<GraphRef>(b);
    if (f == h) return true;
    if (!f || !h) return differ(why, where + ": one function is null");
    std::string inner;
    if (!graph_equal(*f, *h, why ? &inner : nullptr)) return differ(why, where + " (function): " + inner);
    return true;
  }
  bool same;
  if (attr_kind(a) == AttrKind::Float) {  // bitwise: NaN equals itself, -0 differs from 0
    same = std::memcmp(&std::get<double>(a), &std::get<double>(b), sizeof(double)) == 0;
  } else if (attr_kind(a) == AttrKind::Floats) {
    const auto &x = std::get<std::vector<double>>(a), &y = std::get<std::vector<double>>(b);
    same = x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0);
  } else {
    same = attr_equal(a, b);
  }
  if (!same) return differ(why, where + ": " + attr_to_string(a) + " vs " + attr_to_string(b));
  return true;
}

std::string list_text(const Graph& g, const std::vector<ValueRef>& vs) {
  std::string s;
  for (const ValueRef& v : vs) {
    if (!s.empty()) s += ',';
    s += std::to_string(v.node);
    s += ':';
    s += std::to_string(v.index);
  }
  return s;
}

}  // namespace

bool graph_equal(const Graph& a, const Graph& b, std::string* why) {
  if (a.num_nodes() != b.num_nodes())
    return differ(why, std::to_string(a.num_nodes()) + " vs " + std::to_string(b.num_nodes()) + " nodes");
  for (int i = 0; i < a.num_nodes(); ++i) {
    const Node &x = a.node(i), &y = b.node(i);
    const std::string at = "node " + std::to_string(i) + " '" + x.name + "'";
    if (x.name != y.name) return differ(why, at + ": name '" + y.name + "'");
    if (x.op != y.op) return differ(why, at + ": op " + primitive_name(x.op) + " vs " + primitive_name(y.op));
    if (x.inputs != y.inputs) return differ(why, at + ": inputs " + list_text(a, x.inputs) + " vs " + list_text(b, y.inputs));
    if (x.control_inputs != y.control_inputs) return differ(why, at + ": control inputs differ");
    if (x.outputs != y.outputs) return differ(why, at + ": output types differ");
    if (x.device != y.device) return differ(why, at + ": device '" + x.device + "' vs '" + y.device + "'");
    if (x.attrs.items().size() != y.attrs.items().size()) return differ(why, at + ": attribute counts differ");
    for (const auto& [name, value] : x.attrs.items()) {
      const AttrValue* other = y.attrs.find(name);
      if (!other) return differ(why, at + ": attribute '" + name + "' missing");
      if (!attrs_equal(value, *other, why, at + " attribute '" + name + "'")) return false;
    }
  }
  if (a.inputs != b.inputs) return differ(why, "graph inputs differ");
  if (a.outputs != b.outputs) return differ(why, "graph outputs differ");
  return true;
}

namespace detail {

namespace {
struct FunctionCollector {
  std::vector<std::pair<const Graph*, std::string>> order;
  std::unordered_map<const Graph*, std::string> names;
  std::unordered_set<std::string> used;

  void walk(const Graph& g) {
    for (const Node& n : g.nodes())
      for (const auto* item : ordered_attrs(n)) {
        const auto* f = std::get_if<GraphRef>(&item->second);
        if (!f || !*f || names.count(f->get())) continue;
        // Named before its body is walked, so a (malformed) self-reference cannot recurse forever.
        std::string base = n.name + "." + item->first, name = base;
        for (int i = 1; used.count(name); ++i) name = base + "_" + std::to_string(i);
        used.insert(name);
        names[f->get()] = name;
        walk(**f);
        order.emplace_back(f->get(), name);
      }
  }
};
}  // namespace

std::vector<std::pair<const Graph*, std::string>> collect_functions(const Graph& g) {
  FunctionCollector c;
  c.walk(g);
  return std::move(c.order);
}

std::vector<const std::pair<std::string, AttrValue>*> ordered_attrs(const Node& n) {
  std::vector<const std::pair<std::string, AttrValue>*> out;
  for (const auto& item : n.attrs.items()) out.push_back(&item);
  const OpDef* def = find_op_def(n.op);
  auto rank = [&](const std::string& name) {
    if (def)
      for (size_t i = 0; i < def->attrs.size(); ++i)
        if (def->attrs[i].name == name) return i;
    return size_t(-1);
  };
  std::stable_sort(out.begin(), out.end(), [&](const auto* x, const auto* y) {
    size_t rx = rank(x->first), ry = rank(y->first);
    return rx != ry ? rx < ry : x->first < y->first;
  });
  return out;
}

void coerce_and_check_attrs(const OpDef& def, Attrs& attrs) {
  for (const AttrSpec& spec : def.attrs) {
    const AttrValue* v = attrs.find(spec.name);
    if (!v) continue;
    if (spec.kind == AttrKind::Float && attr_kind(*v) == AttrKind::Int) {
      attrs.set(spec.name, double(std::get<int64_t>(*v)));
    } else if (spec.kind == AttrKind::Floats && attr_kind(*v) == AttrKind::Ints) {
      const auto& xs = std::get<std::vector<int64_t>>(*v);
      attrs.set(spec.name, std::vector<double>(xs.begin(), xs.end()));
    }
  }
  check_attrs(def, attrs);
}

Variable VariableResolver::resolve(const std::string& name, DType dtype, const Shape& shape) {
  auto describe = [](DType d, const Shape& s) { return std::string(dtype_short_name(d)) + s.to_string(); };
  if (auto it = options_.variables.find(name); it != options_.variables.end()) {
    const Variable& v = it->second;
    DF_CHECK(v.defined(), "variable '", name, "' in ParseOptions::variables is undefined");
    DF_CHECK(v.dtype() == dtype && v.shape() == shape, "variable '", name, "' is ", describe(dtype, shape),
             " here but ", describe(v.dtype(), v.shape()), " in ParseOptions::variables");
    return v;
  }
  if (auto it = created_.find(name); it != created_.end()) {
    const Variable& v = it->second;
    DF_CHECK(v.dtype() == dtype && v.shape() == shape, "variable '", name, "' is both ",
             describe(v.dtype(), v.shape()), " and ", describe(dtype, shape));
    return v;
  }
  DF_CHECK(shape.is_fully_defined(), "variable '", name, "' has an unknown dimension: ", describe(dtype, shape));
  size_t bytes = dtype_size(dtype);
  for (int64_t d : shape) {
    DF_CHECK(d == 0 || bytes <= options_.max_new_variable_bytes / size_t(d), "variable '", name, "' ",
             describe(dtype, shape), " is too large to create (limit ", options_.max_new_variable_bytes,
             " bytes); pass it in ParseOptions::variables");
    bytes *= size_t(d);
  }
  Variable v(zeros(shape, dtype), name);
  created_[name] = v;
  return v;
}

}  // namespace detail

}  // namespace deepflow
