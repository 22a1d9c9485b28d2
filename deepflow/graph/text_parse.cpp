// SPDX-License-Identifier: Apache-2.0
// The graph text form's parser (the printer is text.cpp; the grammar is in
// docs/graph_text.md). A hand-written recursive-descent reader over the bytes: no
// recursion deeper than one function body, so hostile input cannot exhaust the stack;
// every problem is a deepflow::Error "[parse_graph] line N: ...".
#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <type_traits>
#include <optional>
#include <string_view>

#include "deepflow/graph/text.h"
#include "deepflow/graph/text_util.h"

namespace deepflow {
namespace {

using text_detail::is_name_char;

bool is_word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }
bool is_number_char(char c) { return is_word_char(c) || c == '.' || c == '-' || c == '+'; }

// A node as read, before its inputs (which may name later lines) are resolved.
struct PendingNode {
  int line = 0;
  std::vector<std::pair<std::string, int>> inputs;  // node name, output index
  std::vector<std::string> controls;
};

// One graph being read: the top level or a function body.
struct GraphBuild {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  std::vector<PendingNode> pending;  // by node id
  std::vector<std::string> input_names;
  std::vector<std::pair<std::string, int>> output_values;
  int io_line = 0;
  bool has_inputs = false, has_outputs = false;
};

class Parser {
 public:
  Parser(const std::string& text, const ParseOptions& options) : s_(text), options_(options), vars_(options) {}

  std::shared_ptr<Graph> parse() {
    GraphBuild top;
    while (true) {
      skip_ws();
      if (pos_ >= s_.size()) break;
      if (s_[pos_] == '%') {
        parse_node(top);
        continue;
      }
      int line = line_;
      std::string word = read_word();
      if (word == "func") parse_function();
      else if (word == "inputs" || word == "outputs") parse_io(top, word == "inputs", line);
      else if (!word.empty()) error_at(line, "expected a node ('%name = op(...)'), 'func', 'inputs' or 'outputs', got '", word, "'");
      else error("expected a node ('%name = op(...)'), 'func', 'inputs' or 'outputs', got ", got());
    }
    finish(top, "");
    return top.g;
  }

 private:
  const std::string& s_;
  size_t pos_ = 0;
  int line_ = 1;
  const ParseOptions& options_;
  detail::VariableResolver vars_;
  std::unordered_map<std::string, GraphRef> functions_;

  template <class... Args> [[noreturn]] void error_at(int line, Args&&... args) {
    fail("[parse_graph] line ", line, ": ", std::forward<Args>(args)...);
  }
  template <class... Args> [[noreturn]] void error(Args&&... args) { error_at(line_, std::forward<Args>(args)...); }

  // What comes next, for error messages.
  std::string got() {
    skip_ws();
    if (pos_ >= s_.size()) return "the end of the text";
    size_t end = pos_;
    while (end < s_.size() && end - pos_ < 16 && s_[end] != '\n') ++end;
    std::string quoted;
    text_detail::write_quoted(quoted, s_.substr(pos_, std::max<size_t>(end - pos_, 1)));
    quoted.front() = quoted.back() = '\'';
    return quoted;
  }

  void skip_ws() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '\n') ++line_;
      if (c == '#') {  // comment to the end of the line
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
        continue;
      }
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') break;
      ++pos_;
    }
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const char* context) {
    if (!accept(c)) error("expected '", c, "' ", context, ", got ", got());
  }
  void expect_arrow() {
    skip_ws();
    if (s_.compare(pos_, 2, "->") != 0) error("expected '->' after the function inputs, got ", got());
    pos_ += 2;
  }

  std::string read_word() {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && is_word_char(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  std::string read_string() {
    skip_ws();
    if (pos_ >= s_.size() || s_[pos_] != '"') error("expected a quoted string, got ", got());
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') error("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) error("unterminated string");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'x': {
          auto hex = [&](char h) -> int {
            if (h >= '0' && h <= '9') return h - '0';
            if (h >= 'a' && h <= 'f') return h - 'a' + 10;
            if (h >= 'A' && h <= 'F') return h - 'A' + 10;
            error("bad \\x escape in a string");
          };
          if (pos_ + 2 > s_.size()) error("bad \\x escape in a string");
          out += char(hex(s_[pos_]) * 16 + hex(s_[pos_ + 1]));
          pos_ += 2;
          break;
        }
        default: error("unknown escape '\\", e, "' in a string");
      }
    }
  }

  // A bare name (letters, digits, _ . / -) or a quoted one.
  std::string read_name(const char* what) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '"') {
      std::string n = read_string();
      if (n.empty()) error("empty ", what);
      return n;
    }
    size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    if (pos_ == start) error("expected ", what, ", got ", got());
    return s_.substr(start, pos_ - start);
  }

  // %name or %name:k (the index written right after the name).
  std::pair<std::string, int> read_value(const char* what) {
    expect('%', what);
    std::string name = read_name("a node name after '%'");
    int index = 0;
    if (pos_ < s_.size() && s_[pos_] == ':' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9') {
      ++pos_;
      size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      auto r = std::from_chars(s_.data() + start, s_.data() + pos_, index);
      if (r.ec != std::errc() || index <= 0)
        error("bad output index in '%", name, ":", s_.substr(start, pos_ - start), "'");
    }
    return {name, index};
  }

  std::string_view read_number_token() {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && is_number_char(s_[pos_])) ++pos_;
    if (pos_ == start) error("expected a number, got ", got());
    if (pos_ - start == 3 && s_.compare(start, 3, "nan") == 0 && pos_ < s_.size() && s_[pos_] == '(') {
      size_t close = s_.find(')', pos_);  // nan(0x7fc00001): a NaN by its bits
      if (close == std::string::npos || close - pos_ > 24) error("bad NaN '", s_.substr(start, 24), "'");
      pos_ = close + 1;
    }
    return std::string_view(s_).substr(start, pos_ - start);
  }

  // The bits of "nan(0xHHHH)"; nullopt for other tokens. Checks the bits are a NaN of `Bits`.
  template <class Bits> std::optional<Bits> nan_bits(std::string_view t, int exp_bits) {
    if (t.substr(0, 6) != "nan(0x") return std::nullopt;
    std::string_view hex = t.substr(6, t.size() - 7);
    uint64_t v = 0;
    auto r = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
    const int bits = int(8 * sizeof(Bits)), man_bits = bits - 1 - exp_bits;
    const uint64_t exp_mask = ((uint64_t(1) << exp_bits) - 1) << man_bits, man_mask = (uint64_t(1) << man_bits) - 1;
    if (r.ec != std::errc() || r.ptr != hex.data() + hex.size() || hex.size() > size_t(bits / 4) ||
        (v & exp_mask) != exp_mask || (v & man_mask) == 0)
      error("bad NaN '", t, "'");
    return Bits(v);
  }

  static bool looks_float(std::string_view t) {
    return t.find_first_of(".eEin") != std::string_view::npos;  // 1.5, 1e3, inf, nan
  }

  template <class T> T parse_float(std::string_view t) {
    T v{};
    using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
    if (auto b = nan_bits<Bits>(t, sizeof(T) == 8 ? 11 : 8)) {
      std::memcpy(&v, &*b, sizeof(T));
      return v;
    }
    auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ec == std::errc::result_out_of_range) error("number '", t, "' is out of range");
    if (r.ec != std::errc() || r.ptr != t.data() + t.size()) error("bad number '", t, "'");
    return v;
  }
  int64_t parse_int(std::string_view t) {
    int64_t v = 0;
    auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ec == std::errc::result_out_of_range) error("integer '", t, "' is out of range");
    if (r.ec != std::errc() || r.ptr != t.data() + t.size()) error("bad integer '", t, "'");
    return v;
  }

  DType read_dtype() {
    int line = line_;
    std::string w = read_word();
    if (w.empty()) error("expected a dtype (f32, i64, bool, ...), got ", got());
    try {
      return dtype_from_name(w);
    } catch (const Error&) {
      error_at(line, "unknown dtype '", w, "'");
    }
  }

  // f32[2,?]
  TensorType read_type() {
    TensorType t;
    t.dtype = read_dtype();
    expect('[', "to open a shape");
    if (!accept(']')) {
      do {
        if (t.shape.rank() == kMaxRank) error("a shape has more than ", kMaxRank, " dims");
        if (accept('?')) {
          t.shape.push_back(kUnknownDim);
          continue;
        }
        std::string_view tok = read_number_token();
        int64_t d = parse_int(tok);
        if (d < 0) error("a dimension must be >= 0 or '?', got ", d);
        t.shape.push_back(d);
      } while (accept(','));
      expect(']', "to close a shape");
    }
    return t;
  }

  // tensor<f32[2,2]>[1, 2, 3, 4]
  Tensor read_tensor() {
    expect('<', "after 'tensor'");
    if (accept('?')) error("a tensor attribute without a value (tensor<?>)");
    int line = line_;
    TensorType type = read_type();
    expect('>', "after the tensor type");
    if (!type.shape.is_fully_defined()) error_at(line, "a tensor value needs a fully known shape, got ", type.shape);
    expect('[', "to open the tensor elements");
    int64_t n = 1;
    for (int64_t d : type.shape) {
      if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) error_at(line, "tensor shape ", type.shape, " is too large");
      n *= d;
    }
    auto check_count = [&](size_t got) {
      if (int64_t(got) != n)
        error_at(line, "tensor<", dtype_short_name(type.dtype), type.shape, "> needs ", n, " elements, got ", got);
    };
    if (type.dtype == DType::String) {  // tensor<str[2]>["a", "b\x00"]: quoted, escaped as names are
      std::vector<std::string> vals;
      if (!accept(']')) {
        do vals.push_back(read_string());
        while (accept(','));
        expect(']', "to close the tensor elements");
      }
      check_count(vals.size());
      Tensor t(type.shape, type.dtype);
      std::move(vals.begin(), vals.end(), t.data<std::string>());
      return t;
    }
    std::vector<std::string_view> elems;
    if (!accept(']')) {
      do elems.push_back(read_number_token());
      while (accept(','));
      expect(']', "to close the tensor elements");
    }
    check_count(elems.size());
    Tensor t(type.shape, type.dtype);
    void* p = t.raw_data();
    for (size_t i = 0; i < elems.size(); ++i) {
      std::string_view e = elems[i];
      switch (type.dtype) {
        case DType::Float32: static_cast<float*>(p)[i] = parse_float<float>(e); break;
        case DType::Float64: static_cast<double*>(p)[i] = parse_float<double>(e); break;
        case DType::Float16:
          if (auto b = nan_bits<uint16_t>(e, 5)) static_cast<Half*>(p)[i].bits = *b;
          else static_cast<Half*>(p)[i] = Half(parse_float<float>(e));
          break;
        case DType::BFloat16:
          if (auto b = nan_bits<uint16_t>(e, 8)) static_cast<BFloat16*>(p)[i].bits = *b;
          else static_cast<BFloat16*>(p)[i] = BFloat16(parse_float<float>(e));
          break;
        case DType::Int8: static_cast<int8_t*>(p)[i] = int8_t(int_in_range(e, -128, 127)); break;
        case DType::UInt8: static_cast<uint8_t*>(p)[i] = uint8_t(int_in_range(e, 0, 255)); break;
        case DType::Int32: static_cast<int32_t*>(p)[i] = int32_t(int_in_range(e, INT32_MIN, INT32_MAX)); break;
        case DType::Int64: static_cast<int64_t*>(p)[i] = parse_int(e); break;
        case DType::Bool:
          if (e != "true" && e != "false") error("a bool tensor element must be true or false, got '", e, "'");
          static_cast<bool*>(p)[i] = e == "true";
          break;
        case DType::String: break;  // read above
      }
    }
    return t;
  }
  int64_t int_in_range(std::string_view e, int64_t lo, int64_t hi) {
    int64_t v = parse_int(e);
    if (v < lo || v > hi) error("element ", v, " is out of range [", lo, ", ", hi, "]");
    return v;
  }

  // var<"name", f32[3,2]>
  Variable read_variable() {
    expect('<', "after 'var'");
    if (accept('?')) error("a variable attribute without a variable (var<?>)");
    int line = line_;
    std::string name = read_string();
    expect(',', "after the variable name");
    TensorType type = read_type();
    expect('>', "to close var<...>");
    try {
      return vars_.resolve(name, type.dtype, type.shape);
    } catch (const Error& e) {
      error_at(line, e.what());
    }
  }

  AttrValue read_attr_value() {
    skip_ws();
    if (pos_ >= s_.size()) error("expected an attribute value, got the end of the text");
    char c = s_[pos_];
    if (c == '"') return read_string();
    if (c == '@') {
      ++pos_;
      if (accept('?')) error("a function attribute without a function (@?)");
      std::string name = read_name("a function name after '@'");
      auto it = functions_.find(name);
      if (it == functions_.end()) error("undefined function '@", name, "' (functions are defined before use)");
      return it->second;
    }
    if (c == '[') {
      ++pos_;
      std::vector<std::string_view> toks;
      bool any_float = false;
      if (!accept(']')) {
        do {
          toks.push_back(read_number_token());
          any_float |= looks_float(toks.back());
        } while (accept(','));
        expect(']', "to close a list");
      }
      if (any_float) {
        std::vector<double> xs;
        for (auto t : toks) xs.push_back(parse_float<double>(t));
        return xs;
      }
      std::vector<int64_t> xs;
      for (auto t : toks) xs.push_back(parse_int(t));
      return xs;
    }
    if ((c >= '0' && c <= '9') || c == '-' || c == '.') {
      std::string_view t = read_number_token();
      if (looks_float(t)) return parse_float<double>(t);
      return parse_int(t);
    }
    int line = line_;
    const size_t start = pos_;
    std::string w = read_word();
    if (w == "true") return true;
    if (w == "false") return false;
    if (w == "inf" || w == "nan") {
      pos_ = start;  // nan(0x...) too
      return parse_float<double>(read_number_token());
    }
    if (w == "tensor") return read_tensor();
    if (w == "var") return read_variable();
    if (w.empty()) error("expected an attribute value, got ", got());
    try {
      return dtype_from_name(w);
    } catch (const Error&) {
      error_at(line, "unknown attribute value '", w, "'");
    }
  }

  // %name = op(%a, %b:1) ^%c {k=v, ...} : f32[2], i32[] @"/cpu:0"
  void parse_node(GraphBuild& b) {
    const int line = line_;
    Node n;
    PendingNode p;
    p.line = line;
    expect('%', "to start a node");
    n.name = read_name("a node name after '%'");
    if (b.g->find(n.name) >= 0) error("node '%", n.name, "' is defined twice");
    if (n.name[0] == '^') error("node name '", n.name, "' starts with '^' (GraphDef control inputs do)");
    expect('=', ("after '%" + n.name + "'").c_str());
    int op_line = line_;
    std::string op = read_name("an op name");
    try {
      n.op = op_id_from_name(op);
    } catch (const Error&) {
      error_at(op_line, "unknown op '", op, "'");
    }
    const OpDef& def = op_def(n.op);
    expect('(', "after the op name");
    if (!accept(')')) {
      do p.inputs.push_back(read_value("before an input"));
      while (accept(','));
      expect(')', "to close the inputs");
    }
    if (def.num_inputs >= 0 && int(p.inputs.size()) != def.num_inputs)
      error_at(line, "'", def.name, "' takes ", def.num_inputs, " inputs, got ", p.inputs.size());
    while (accept('^')) {
      expect('%', "after '^'");
      p.controls.push_back(read_name("a node name after '^%'"));
    }
    if (accept('{')) {
      if (!accept('}')) {
        do {
          int attr_line = line_;
          std::string key = read_word();
          if (key.empty()) error("expected an attribute name, got ", got());
          if (n.attrs.find(key)) error_at(attr_line, "attribute '", key, "' is given twice");
          expect('=', "after the attribute name");
          n.attrs.set(key, read_attr_value());
        } while (accept(','));
        expect('}', "to close the attributes");
      }
      try {
        detail::coerce_and_check_attrs(def, n.attrs);
      } catch (const Error& e) {
        error_at(line, e.what());
      }
    } else {
      try {
        detail::check_attrs(def, n.attrs);  // required attributes
      } catch (const Error& e) {
        error_at(line, e.what());
      }
    }
    expect(':', "before the output types");
    if (accept('(')) {
      expect(')', "in '()' (no outputs)");
    } else {
      do n.outputs.push_back(read_type());
      while (accept(','));
    }
    if (accept('@')) n.device = read_string();
    b.g->add_node(std::move(n));
    b.pending.push_back(std::move(p));
  }

  // inputs(%x, %y) / outputs(%a, %b:1)
  void parse_io(GraphBuild& b, bool inputs, int line) {
    bool& seen = inputs ? b.has_inputs : b.has_outputs;
    if (seen) error_at(line, "'", inputs ? "inputs" : "outputs", "' is given twice");
    seen = true;
    b.io_line = line;
    expect('(', inputs ? "after 'inputs'" : "after 'outputs'");
    read_io_list(b, inputs);
  }
  void read_io_list(GraphBuild& b, bool inputs) {
    if (accept(')')) return;
    do {
      if (inputs) {
        expect('%', "before an input name");
        b.input_names.push_back(read_name("an input name"));
      } else {
        b.output_values.push_back(read_value("before an output"));
      }
    } while (accept(','));
    expect(')', "to close the list");
  }

  // func @name(%x, %y) -> (%a, %b:1) { nodes }
  void parse_function() {
    const int line = line_;
    expect('@', "after 'func'");
    std::string name = read_name("a function name");
    if (functions_.count(name)) error("function '@", name, "' is defined twice");
    GraphBuild b;
    b.io_line = line;
    b.has_inputs = b.has_outputs = true;
    expect('(', "to open the function inputs");
    read_io_list(b, true);
    expect_arrow();
    expect('(', "to open the function outputs");
    read_io_list(b, false);
    expect('{', "to open the function body");
    while (!accept('}')) {
      skip_ws();
      if (pos_ >= s_.size()) error_at(line, "function '@", name, "' has no closing '}'");
      if (s_[pos_] != '%') error("expected a node or '}' in function '@", name, "', got ", got());
      parse_node(b);
    }
    finish(b, "in func @" + name + ": ");
    functions_[name] = b.g;
  }

  int resolve_node(const GraphBuild& b, const std::string& name, int line) {
    int id = b.g->find(name);
    if (id < 0) error_at(line, "undefined value '%", name, "'");
    return id;
  }
  ValueRef resolve_value(const GraphBuild& b, const std::pair<std::string, int>& v, int line) {
    int id = resolve_node(b, v.first, line);
    int n = int(b.g->node(id).outputs.size());
    if (v.second >= n) error_at(line, "'%", v.first, "' has ", n, " outputs, there is no '%", v.first, ":", v.second, "'");
    return {id, v.second};
  }

  // Resolves names (forward references allowed), then validates.
  void finish(GraphBuild& b, const std::string& where) {
    Graph& g = *b.g;
    for (int id = 0; id < g.num_nodes(); ++id) {
      const PendingNode& p = b.pending[size_t(id)];
      Node& n = g.mutable_node(id);
      for (const auto& v : p.inputs) n.inputs.push_back(resolve_value(b, v, p.line));
      for (const auto& c : p.controls) n.control_inputs.push_back(resolve_node(b, c, p.line));
    }
    for (const std::string& name : b.input_names) {
      int id = resolve_node(b, name, b.io_line);
      if (g.node(id).op != OpId::Placeholder)
        error_at(b.io_line, "input '%", name, "' is a ", g.node(id).def().name, " node, not a placeholder");
      g.inputs.push_back(id);
    }
    for (const auto& v : b.output_values) g.outputs.push_back(resolve_value(b, v, b.io_line));
    if (!options_.validate) return;
    try {
      g.validate();
    } catch (const Error& e) {
      fail("[parse_graph] ", where, e.what());
    }
  }
};

}  // namespace

std::shared_ptr<Graph> parse_graph(const std::string& text, const ParseOptions& options) {
  return Parser(text, options).parse();
}

}  // namespace deepflow
