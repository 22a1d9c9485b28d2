// SPDX-License-Identifier: Apache-2.0
// `deepflow saved_model show` and `deepflow saved_model run`: saved_model_cli's two
// everyday commands, with its flags and its output, line for line (docs/saved_model.md).
//
//   deepflow saved_model show --dir /models/m/1 --all
//   deepflow saved_model run --dir /models/m/1 --tag_set serve --signature_def serving_default
//       --input_exprs 'x=[[1,2,3]]' --outdir /tmp/out          (one command line)
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "cli.h"
#include "deepflow/io/npy.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/ops/ops.h"

namespace deepflow::cli {

void setup_saved_model_convert(CLI::App& saved_model);  // cmd_saved_model_convert.cpp

namespace {

namespace fs = std::filesystem;

// TensorFlow's DataType enum names, which saved_model_cli prints.
const char* tf_dtype_name(DType t) {
  switch (t) {
    case DType::Float32:
      return "DT_FLOAT";
    case DType::Float64:
      return "DT_DOUBLE";
    case DType::Float16:
      return "DT_HALF";
    case DType::BFloat16:
      return "DT_BFLOAT16";
    case DType::Int8:
      return "DT_INT8";
    case DType::UInt8:
      return "DT_UINT8";
    case DType::Int32:
      return "DT_INT32";
    case DType::Int64:
      return "DT_INT64";
    case DType::Bool:
      return "DT_BOOL";
    case DType::String:
      return "DT_STRING";
  }
  return "DT_INVALID";
}

// saved_model_cli joins the dims with ", " inside parentheses: "(-1, 784)", "(-1)", "()".
std::string tf_shape(const Shape& s) {
  std::string out = "(";
  for (int i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

// Python's repr of a str, as `print('%r' % ...)` shows a tag set.
std::string py_repr(const std::string& s) {
  const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') out += '\\';
    out += c;
  }
  return out + q;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

const io::MetaGraphInfo& find_meta_graph(const std::vector<io::MetaGraphInfo>& mgs, const std::string& dir,
                                         const std::string& tag_set) {
  const std::string want = io::tag_set_string(split(tag_set, ','));
  std::string available;
  for (const io::MetaGraphInfo& mg : mgs) {
    if (io::tag_set_string(mg.tags) == want) return mg;
    available += (available.empty() ? "'" : ", '") + io::tag_set_string(mg.tags) + "'";
  }
  fail("[saved_model] ", dir, ": MetaGraphDef associated with tag-set '", want,
       "' could not be found; available tag sets: ", available);
}

const io::SignatureInfo& find_signature(const io::MetaGraphInfo& mg, const std::string& key) {
  auto it = mg.signatures.find(key);
  if (it != mg.signatures.end()) return it->second;
  std::string keys;
  for (const auto& [k, s] : mg.signatures) keys += (keys.empty() ? "" : ", ") + k;
  fail("[saved_model] Could not find signature \"", key, "\". Please choose from: ", keys);
}

void print_tensor_info(std::ostream& os, const std::string& indent, const io::TensorInfo& ti) {
  os << indent << "    dtype: " << tf_dtype_name(ti.type.dtype) << "\n";
  os << indent << "    shape: " << tf_shape(ti.type.shape) << "\n";
  os << indent << "    name: " << ti.name << "\n";
}

void print_inputs_outputs(std::ostream& os, const io::SignatureInfo& s, int indent) {
  const std::string in(size_t(2 * indent), ' ');
  os << in << "The given SavedModel SignatureDef contains the following input(s):\n";
  for (const auto& [k, ti] : s.inputs) {
    os << in << "  inputs['" << k << "'] tensor_info:\n";
    print_tensor_info(os, in + "  ", ti);
  }
  os << in << "The given SavedModel SignatureDef contains the following output(s):\n";
  for (const auto& [k, ti] : s.outputs) {
    os << in << "  outputs['" << k << "'] tensor_info:\n";
    print_tensor_info(os, in + "  ", ti);
  }
  os << in << "Method name is: " << s.method_name << "\n";
}

struct ShowOptions {
  std::string dir, tag_set, signature_def;
  bool all = false;
};

void show(const ShowOptions& o) {
  std::vector<io::MetaGraphInfo> mgs = io::read_saved_model_info(o.dir);
  std::sort(mgs.begin(), mgs.end(), [](const auto& a, const auto& b) { return a.tags < b.tags; });
  std::ostream& os = std::cout;
  if (o.all) {
    for (const io::MetaGraphInfo& mg : mgs) {
      std::string tags;  // as stored, not sorted: what saved_model_cli does here
      for (const std::string& t : mg.tags) tags += (tags.empty() ? "" : ", ") + t;
      os << "\nMetaGraphDef with tag-set: '" << tags << "' contains the following SignatureDefs:\n";
      for (const auto& [key, s] : mg.signatures) {
        os << "\nsignature_def['" << key << "']:\n";
        print_inputs_outputs(os, s, 1);
      }
    }
    return;
  }
  if (o.tag_set.empty()) {
    // Ordered by the tags as stored, each printed sorted: saved_model_cli's two sorts.
    os << "The given SavedModel contains the following tag-sets:\n";
    for (const io::MetaGraphInfo& mg : mgs) os << py_repr(io::tag_set_string(mg.tags)) << "\n";
    return;
  }
  const io::MetaGraphInfo& mg = find_meta_graph(mgs, o.dir, o.tag_set);
  if (o.signature_def.empty()) {
    os << "The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:\n";
    for (const auto& [key, s] : mg.signatures) os << "SignatureDef key: \"" << key << "\"\n";
    return;
  }
  print_inputs_outputs(os, find_signature(mg, o.signature_def), 0);
}

// --- --input_exprs: the literals saved_model_cli's safe mode accepts, evaluated as numpy
// would (ints -> int64, any float -> float64, bools -> bool, strings -> string), plus
// np.ones / np.zeros / np.full / np.array. Nothing is ever executed.

class ExprParser {
 public:
  explicit ExprParser(const std::string& s) : s_(s) {}

  Tensor parse() {
    Tensor t = value();
    skip();
    if (pos_ != s_.size()) error("unexpected '", s_.substr(pos_), "'");
    return t;
  }

 private:
  // A parsed literal: a scalar (number, bool or string) or a list of literals.
  struct Lit {
    enum Kind { Bool, Int, Float, Str, List } kind = Int;  // numbers promote upwards, as in numpy
    double f = 0;
    int64_t i = 0;
    std::string str;
    std::vector<Lit> items;
  };

  const std::string& s_;
  size_t pos_ = 0;
  int depth_ = 0;

  template <class... Args>
  [[noreturn]] void error(Args&&... args) const {
    fail("[saved_model run] Expression \"", s_, "\" is not a valid literal: ", std::forward<Args>(args)...);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(const std::string& tok) {
    skip();
    if (s_.compare(pos_, tok.size(), tok) != 0) return false;
    pos_ += tok.size();
    return true;
  }
  void expect(const std::string& tok) {
    if (!eat(tok)) error("expected '", tok, "' at offset ", pos_);
  }

  Lit literal() {
    if (++depth_ > 64) error("nested too deeply");
    skip();
    Lit l;
    if (eat("[") || eat("(")) {
      const char close = s_[pos_ - 1] == '[' ? ']' : ')';
      l.kind = Lit::List;
      while (!eat(std::string(1, close))) {
        l.items.push_back(literal());
        if (!eat(",")) {
          expect(std::string(1, close));
          break;
        }
      }
    } else if (eat("True")) {
      l.kind = Lit::Bool;
      l.i = 1;
    } else if (eat("False")) {
      l.kind = Lit::Bool;
    } else if (pos_ < s_.size() && (s_[pos_] == '\'' || s_[pos_] == '"' || s_[pos_] == 'b')) {
      if (s_[pos_] == 'b') ++pos_;
      if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
        error("expected a quoted string at offset ", pos_);
      const char q = s_[pos_++];
      const size_t end = s_.find(q, pos_);
      if (end == std::string::npos) error("unterminated string");
      l.kind = Lit::Str;
      l.str = s_.substr(pos_, end - pos_);
      pos_ = end + 1;
    } else {
      const char* start = s_.c_str() + pos_;
      char* end = nullptr;
      errno = 0;
      const long long iv = std::strtoll(start, &end, 10);
      const bool is_int = end != start && errno == 0 && (*end == '\0' || std::strchr(" ,)]", *end) != nullptr);
      if (is_int) {
        l.kind = Lit::Int;
        l.i = iv;
      } else {
        const double fv = std::strtod(start, &end);
        if (end == start || std::isalpha(static_cast<unsigned char>(*start)))
          error("expected a number at offset ", pos_);
        l.kind = Lit::Float;
        l.f = fv;
      }
      pos_ += size_t(end - start);
    }
    --depth_;
    return l;
  }

  // The shape of a rectangular nested list, and the kind its elements promote to.
  static void shape_of(const Lit& l, std::vector<int64_t>& dims, size_t level, Lit::Kind& kind, bool& first,
                       const ExprParser& p) {
    if (l.kind != Lit::List) {
      if (level != dims.size()) p.error("the nested lists are not rectangular");
      if (first) {
        kind = l.kind;
        first = false;
      } else if ((kind == Lit::Str) != (l.kind == Lit::Str)) {
        p.error("strings mixed with numbers");
      } else {
        kind = std::max(kind, l.kind);
      }
      return;
    }
    if (level == dims.size()) {
      if (!first && level > 0) p.error("the nested lists are not rectangular");
      if (dims.size() >= size_t(kMaxRank)) p.error("rank above ", kMaxRank);
      dims.push_back(int64_t(l.items.size()));
    } else if (level > dims.size() || dims[level] != int64_t(l.items.size())) {
      p.error("the nested lists are not rectangular");
    }
    for (const Lit& item : l.items) shape_of(item, dims, level + 1, kind, first, p);
  }
  static void flatten(const Lit& l, std::vector<const Lit*>& out) {
    if (l.kind != Lit::List) out.push_back(&l);
    for (const Lit& item : l.items) flatten(item, out);
  }

  Tensor from_literal(const Lit& l, std::optional<DType> dtype) {
    std::vector<int64_t> dims;
    Lit::Kind kind = Lit::Float;  // numpy: an empty list is float64
    bool first = true;
    shape_of(l, dims, 0, kind, first, *this);
    std::vector<const Lit*> flat;
    flatten(l, flat);
    if (kind == Lit::Str) {
      std::vector<std::string> v;
      for (const Lit* x : flat) v.push_back(x->str);
      return constant(v, Shape(dims));
    }
    std::vector<double> v;
    for (const Lit* x : flat) v.push_back(x->kind == Lit::Float ? x->f : double(x->i));
    const DType natural = kind == Lit::Float ? DType::Float64 : kind == Lit::Bool ? DType::Bool : DType::Int64;
    if (kind == Lit::Int && !dtype) {  // int64 exactly, not through double
      Tensor t(Shape(dims), DType::Int64);
      for (size_t i = 0; i < flat.size(); ++i) t.data<int64_t>()[i] = flat[i]->i;
      return t;
    }
    return constant(v, Shape(dims), dtype.value_or(natural));
  }

  std::optional<DType> dtype_arg() {
    if (!eat(",")) return std::nullopt;
    if (eat(")")) {
      --pos_;
      return std::nullopt;
    }
    expect("dtype");
    expect("=");
    skip();
    std::string name;
    if (eat("np.") || eat("numpy.") || eat("tf.")) {
      while (pos_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[pos_]))) name += s_[pos_++];
    } else {
      Lit l = literal();
      if (l.kind != Lit::Str) error("dtype must be np.<type> or a string");
      name = l.str;
    }
    if (name == "float") name = "float64";
    if (name == "int") name = "int64";
    if (name == "bool_") name = "bool";
    try {
      return dtype_from_name(name);
    } catch (const Error&) {
      error("unknown dtype '", name, "'");
    }
  }

  Tensor value() {
    skip();
    if (eat("np.") || eat("numpy.")) {
      std::string fn;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.'))
        fn += s_[pos_++];
      if (fn != "array" && fn != "asarray" && fn != "ones" && fn != "zeros" && fn != "full")
        error("np.", fn, " is not supported (np.array, np.ones, np.zeros and np.full are)");
      expect("(");
      Tensor out;
      if (fn == "array" || fn == "asarray") {
        Lit l = literal();
        out = from_literal(l, dtype_arg());
      } else {  // ones, zeros, full
        Lit shape = literal();
        std::vector<int64_t> dims;
        if (shape.kind == Lit::Int) dims.push_back(shape.i);  // np.ones(3)
        for (const Lit& d : shape.items) {
          if (d.kind != Lit::Int || d.i < 0) error("np.", fn, " needs a shape of non-negative ints");
          dims.push_back(d.i);
        }
        if (shape.kind != Lit::Int && shape.kind != Lit::List) error("np.", fn, " needs a shape");
        if (dims.size() > size_t(kMaxRank)) error("rank above ", kMaxRank);
        int64_t n = 1;
        for (int64_t d : dims) {
          if (d < 0 || (d > 0 && n > (int64_t(1) << 28) / d)) error("np.", fn, " shape is too large");
          n *= d;
        }
        double fill_value = fn == "ones" ? 1 : 0;
        if (fn == "full") {
          expect(",");
          Lit v = literal();
          if (v.kind == Lit::List || v.kind == Lit::Str) error("np.full needs a number");
          fill_value = v.kind == Lit::Float ? v.f : double(v.i);
        }
        out = fill(Shape(dims), fill_value, dtype_arg().value_or(DType::Float64));
      }
      expect(")");
      return out;
    }
    return from_literal(literal(), std::nullopt);
  }
};

struct RunOptions {
  std::string dir, tag_set = "serve", signature_def, inputs, input_exprs, outdir;
  bool overwrite = false;
};

// "k=value;k2=value2" -> pairs; an entry without '=' is an error naming the flag.
std::vector<std::pair<std::string, std::string>> key_values(const std::string& s, const char* flag, const char* form) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& item : split(s, ';')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    DF_CHECK(eq != std::string::npos && eq > 0, "[saved_model run] ", flag, " \"", item,
             "\" format is incorrect. Please follow \"", form, "\"");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

Tensor load_input_file(const std::string& spec) {
  std::string file = spec, var;
  if (!spec.empty() && spec.back() == ']') {
    const size_t open = spec.rfind('[');
    DF_CHECK(open != std::string::npos && open > 0, "[saved_model run] --inputs \"", spec,
             "\" format is incorrect. Please follow \"<input_key>=<filename>\", or "
             "\"<input_key>=<filename>[<variable_name>]\"");
    file = spec.substr(0, open);
    var = spec.substr(open + 1, spec.size() - open - 2);
  }
  DF_CHECK(!(file.size() > 4 && file.compare(file.size() - 4, 4, ".npz") == 0), "[saved_model run] ", file,
           ": .npz files are not supported; save each array with np.save as a .npy file");
  Tensor t = io::read_npy(file);
  if (!var.empty())
    std::cerr << "Input file " << file << " contains a single ndarray. Name key \"" << var << "\" ignored.\n";
  return t;
}

// Feeds take the signature's dtype, as numpy arrays fed to a TF session do.
Tensor to_input_type(const Tensor& t, const std::string& key, const TensorType& want) {
  if (t.dtype() == want.dtype) return t;
  DF_CHECK(t.dtype() != DType::String && want.dtype != DType::String, "[saved_model run] input '", key, "' is ",
           dtype_name(t.dtype()), " but the signature wants ", dtype_name(want.dtype));
  return cast(t, want.dtype);
}

void run(const RunOptions& o) {
  io::SavedModel model = io::load_saved_model(o.dir, split(o.tag_set, ','));
  DF_CHECK(model.has_signature(o.signature_def), "[saved_model run] Could not find signature \"", o.signature_def,
           "\". Please choose from: ", [&] {
             std::string keys;
             for (const std::string& k : model.signature_keys()) keys += (keys.empty() ? "" : ", ") + k;
             return keys;
           }());
  const io::LoadedSignature& sig = model.signature(o.signature_def);
  const std::map<std::string, TensorType> want = sig.inputs();

  std::map<std::string, Tensor> feeds;
  for (const auto& [k, file] : key_values(o.inputs, "--inputs", "<input_key>=<filename>"))
    feeds[k] = load_input_file(file);
  for (const auto& [k, expr] : key_values(o.input_exprs, "--input_exprs", "<input_key>=<python expression>")) {
    if (feeds.count(k))
      std::cerr << "input_key " << k << " has been specified with both --inputs and --input_exprs options. "
                << "Value in --input_exprs will be used.\n";
    feeds[k] = ExprParser(expr).parse();
  }
  for (auto& [k, t] : feeds) {
    if (!want.count(k)) {
      std::string keys;
      for (const auto& [name, type] : want) keys += std::string(keys.empty() ? "\"" : ", \"") + name + "\"";
      fail("[saved_model run] \"", k, "\" is not a valid input key. Please choose from ", keys,
           ", or use --show option.");
    }
    t = to_input_type(t, k, want.at(k));
  }

  std::map<std::string, Tensor> outputs = sig(feeds);
  for (const auto& [k, t] : outputs) {
    std::cout << "Result for output key " << k << ":\n" << array_string(t) << "\n";
    if (o.outdir.empty()) continue;
    std::error_code ec;
    fs::create_directories(o.outdir, ec);
    DF_CHECK(fs::is_directory(o.outdir), "[saved_model run] cannot create --outdir ", o.outdir);
    const std::string path = (fs::path(o.outdir) / (k + ".npy")).string();
    DF_CHECK(o.overwrite || !fs::exists(path, ec), "[saved_model run] Output file ", path,
             " already exists. Add \"--overwrite\" to overwrite the existing output files.");
    io::write_npy(path, t);
    std::cout << "Output " << k << " is saved to " << path << "\n";
  }
}

void setup_saved_model(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("saved_model", "Inspect and run SavedModels (like saved_model_cli)");
  cmd->require_subcommand(1);

  auto so = std::make_shared<ShowOptions>();
  CLI::App* s = cmd->add_subcommand("show", "Show the tag sets, signatures and their inputs and outputs");
  s->add_option("--dir", so->dir, "Directory containing the SavedModel")->required();
  s->add_flag("--all", so->all, "Show every tag set and signature with its inputs and outputs");
  s->add_option("--tag_set", so->tag_set, "Comma-separated tags of the MetaGraph to show");
  s->add_option("--signature_def", so->signature_def, "The signature (by key) whose inputs and outputs to show");
  s->callback([so] { show(*so); });

  auto ro = std::make_shared<RunOptions>();
  CLI::App* r = cmd->add_subcommand("run", "Run a signature on inputs from .npy files or literals");
  r->add_option("--dir", ro->dir, "Directory containing the SavedModel")->required();
  r->add_option("--tag_set", ro->tag_set, "Comma-separated tags of the MetaGraph to run")->capture_default_str();
  r->add_option("--signature_def", ro->signature_def, "The signature (by key) to run")->required();
  r->add_option("--inputs", ro->inputs, "'<key>=<file.npy>;...': inputs loaded from .npy files");
  r->add_option("--input_exprs", ro->input_exprs,
                "'<key>=<literal>;...': nested lists of numbers, np.ones((2,3)), np.zeros(...), np.array([...]); "
                "overrides --inputs");
  r->add_option("--outdir", ro->outdir, "Also save each output as <outdir>/<key>.npy");
  r->add_flag("--overwrite", ro->overwrite, "Overwrite existing output files");
  r->callback([ro] { run(*ro); });

  setup_saved_model_convert(*cmd);
}

}  // namespace

DF_CLI_COMMAND(setup_saved_model)

}  // namespace deepflow::cli
