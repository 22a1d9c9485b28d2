// SPDX-License-Identifier: Apache-2.0
// Predict request bodies (row and columnar) read in one pass by json_reader.h, each
// number written straight into the buffer that becomes the tensor (no DOM). Classify and
// regress bodies and base64 are in json_examples.cpp, the writers in json_writer.cpp.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "deepflow/serving/json_reader.h"
#include "deepflow/serving/json_tensor.h"

namespace deepflow::serving {
namespace {

using namespace json_detail;  // NOLINT: the reader shared with json_examples.cpp

// Grows like a vector but in a tensor Storage, so the finished buffer becomes the
// tensor without a copy.
class ValueBuffer {
 public:
  template <class T> void push(T v) {
    if (size_ + sizeof(T) > cap_) grow();
    std::memcpy(data_ + size_, &v, sizeof(T));
    size_ += sizeof(T);
  }
  std::vector<std::string>& strings() { return strings_; }
  size_t bytes() const { return size_; }
  // Room for about `bytes` in all, so that a large batch is not copied at every doubling.
  void reserve(size_t bytes) {
    if (bytes > cap_) grow(bytes);
  }

  Tensor take(const Shape& shape, DType dtype) {
    if (dtype == DType::String) {
      Tensor t(shape, dtype);
      auto* out = t.data<std::string>();
      for (size_t i = 0; i < strings_.size(); ++i) out[i] = std::move(strings_[i]);
      return t;
    }
    if (size_ == 0) return Tensor(shape, dtype);
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = std::move(storage_);
    impl->shape = shape;
    impl->dtype = dtype;
    impl->id = TensorImpl::next_id();
    return Tensor(std::move(impl));
  }

 private:
  void grow(size_t at_least = 0) {
    size_t cap = std::max<size_t>({cap_ * 2, 4096, at_least});
    auto storage = std::make_shared<Storage>(cap);
    if (size_ > 0) std::memcpy(storage->data(), data_, size_);
    storage_ = std::move(storage);
    data_ = static_cast<char*>(storage_->data());
    cap_ = cap;
  }
  std::shared_ptr<Storage> storage_;
  char* data_ = nullptr;
  size_t size_ = 0, cap_ = 0;
  std::vector<std::string> strings_;
};

// One input being filled: the values, and the shape found so far by TF's first-element
// rule (each list's length is fixed by the first list closed at its level).
struct Builder {
  std::string name;
  TensorType type;
  int max_rank = kMaxRank;
  ValueBuffer values;
  int rank = -1;
  std::array<int64_t, kMaxRank> dims{};
  std::array<bool, kMaxRank> dim_set{};
  int64_t count = 0;       // values of the current instance (row) or of the whole input
  int64_t instance = -1;   // row format: the instance being read
  bool object_item = false;
  bool seen = false;
  Shape first_shape;       // row format: the first instance's shape
  int64_t first_count = -1;

  void begin_value() {
    rank = -1;
    dim_set.fill(false);
    count = 0;
  }
  Shape value_shape() const { return Shape(dims.begin(), dims.begin() + std::max(rank, 0)); }

  // TF's wording of an error inside an input's value, with the input, dtype and shape.
  [[noreturn]] void fail(const std::string& inner) const {
    std::string where = " (input '" + name + "': " + tf_type_string(type.dtype) + " " + type.shape.to_string() +
                        ", value index " + std::to_string(count) + ")";
    if (instance < 0) invalid(inner + where);
    invalid("Failed to process element: " + std::to_string(instance) +
            (object_item ? " key: " + name : std::string()) + " of 'instances' list. Error: " + inner + where);
  }
};

class Parser {
 public:
  explicit Parser(Reader& r) : r_(r) {}

  void value(Builder& b, int level) {
    if (r_.peek() == '[') {
      if (b.rank >= 0 && level >= b.rank)
        b.fail("Encountered list at unexpected level: " + std::to_string(level) + " expected < " +
               std::to_string(b.rank));
      if (level >= b.max_rank) b.fail("[predict] lists nested deeper than the maximum rank " + std::to_string(kMaxRank));
      r_.advance();
      int64_t n = 0;
      if (r_.peek() == ']') {
        r_.advance();
        if (b.rank < 0) b.rank = level + 1;
      } else {
        for (;;) {
          value(b, level + 1);
          ++n;
          char c = r_.peek();
          if (c == ']') break;
          if (c != ',') r_.syntax("Missing a comma or ']' after an array element");
          r_.advance();
        }
        r_.advance();
      }
      if (!b.dim_set[level]) {
        b.dims[level] = n;
        b.dim_set[level] = true;
      } else if (b.dims[level] != n) {
        b.fail("Encountered list at unexpected size: " + std::to_string(n) + " at level: " + std::to_string(level) +
               " expected size: " + std::to_string(b.dims[level]));
      }
      return;
    }
    if (b.rank < 0) b.rank = level;
    if (level != b.rank)
      b.fail("JSON Value: " + r_.excerpt(r_.pos()) + " found at incorrect level: " + std::to_string(level + 1) +
             " in the JSON DOM. Expected at level: " + std::to_string(b.rank));
    leaf(b);
    ++b.count;
  }

 private:
  [[noreturn]] void type_error(Builder& b) {
    char c = r_.peek();
    // Not a JSON value at all is a syntax error, not a type error.
    const char* at = r_.pos();
    if (c == 't' || c == 'f' || c == 'n') r_.literal(c == 't' ? "true" : c == 'f' ? "false" : "null");
    else if (c != '"' && c != '{' && c != '[' && !number_start(c)) r_.syntax("Invalid value");
    else if (number_start(c)) r_.number();
    r_.seek(at);
    b.fail("JSON Value: " + r_.excerpt(r_.pos()) + " Type: " + json_type(c) +
           " is not of expected type: " + tf_type_string(b.type.dtype));
  }
  Number number_or_type_error(Builder& b) {
    if (!number_start(r_.peek())) type_error(b);
    return r_.number();
  }
  template <class T> void float_leaf(Builder& b) {
    const char* at = r_.pos();
    Number n = number_or_type_error(b);
    T v;
    if (!as_float(n, &v))
      b.fail("Cannot convert JSON value: " + r_.excerpt(at) + " to " + tf_type_string(b.type.dtype) +
             " without loss of precision.");
    b.values.push(v);
  }
  template <class T> void int_leaf(Builder& b) {
    const char* at = r_.pos();
    Number n = number_or_type_error(b);
    int64_t v = 0;
    if (!n.integer || !as_int64(n, &v) ||
        (!std::is_same_v<T, int64_t> && (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()))) {
      r_.seek(at);
      type_error(b);
    }
    if (v < int64_t(std::numeric_limits<T>::min()) || v > int64_t(std::numeric_limits<T>::max()))
      b.fail("[predict] JSON Value: " + std::string(n.text) + " is out of range for " + tf_type_string(b.type.dtype));
    b.values.push(T(v));
  }
  void leaf(Builder& b) {
    switch (b.type.dtype) {
      case DType::Float32: return float_leaf<float>(b);
      case DType::Float64: return float_leaf<double>(b);
      case DType::Int8: return int_leaf<int8_t>(b);
      case DType::UInt8: return int_leaf<uint8_t>(b);
      case DType::Int32: return int_leaf<int32_t>(b);
      case DType::Int64: return int_leaf<int64_t>(b);
      case DType::Bool: {
        char c = r_.peek();
        if (c != 't' && c != 'f') type_error(b);
        r_.literal(c == 't' ? "true" : "false");
        return b.values.push(c == 't');
      }
      case DType::String: {
        char c = r_.peek();
        if (c == '"') {
          b.values.strings().emplace_back(r_.string(scratch_));
          return;
        }
        if (c != '{') type_error(b);
        const char* at = r_.pos();
        if (!r_.at_b64_object())
          b.fail("JSON Value: " + r_.excerpt(at) +
                 " not formatted correctly for base64 data. Expected JSON object with a single 'b64' key "
                 "whose value is a base64 string");
        r_.advance();
        r_.string(scratch_);  // "b64"
        r_.expect(':', "Missing a colon after a name of object member");
        std::string_view text = r_.string(scratch_);
        try {
          b.values.strings().push_back(base64_decode(text));
        } catch (const ServingError& e) {
          b.fail(e.what());
        }
        r_.expect('}', "Missing a comma or '}' after an object member");
        return;
      }
      default:
        throw ServingError(Code::Unimplemented, "Conversion of JSON Value: " + r_.excerpt(r_.pos()) + " to type: " +
                                                    tf_type_string(b.type.dtype) + " is not supported (input '" +
                                                    b.name + "')");
    }
  }

  Reader& r_;
  std::string scratch_;
};

std::vector<Builder> make_builders(const InputTypes& types, int max_rank) {
  std::vector<Builder> builders(types.size());
  size_t i = 0;
  for (const auto& [name, type] : types) {
    builders[i].name = name;
    builders[i].type = type;
    builders[i].max_rank = max_rank;
    ++i;
  }
  return builders;
}

Builder* find_builder(std::vector<Builder>& builders, std::string_view name) {
  for (auto& b : builders)
    if (b.name == name) return &b;
  return nullptr;
}

std::string joined_names(const std::vector<Builder>& builders) {
  std::string s;
  for (const auto& b : builders) s += (s.empty() ? "" : ",") + b.name;
  return s;
}

// After one instance's value for `b`: every instance must have the first one's shape.
void end_instance(Builder& b) {
  Shape shape = b.value_shape();
  if (b.first_count < 0) {
    b.first_shape = shape;
    b.first_count = b.count;
  } else if (b.count != b.first_count) {
    b.fail("Expecting tensor size: " + std::to_string(b.first_count) + " but got: " + std::to_string(b.count));
  } else if (shape != b.first_shape) {
    b.fail("Expecting shape " + b.first_shape.to_string() + " but got: " + shape.to_string());
  }
}

void parse_instances(Reader& r, const InputTypes& types, std::map<std::string, Tensor>& out) {
  if (r.peek() != '[') invalid("[predict] Expecting 'instances' to be an list/array");
  r.advance();
  if (r.peek() == ']') invalid("[predict] No values in 'instances' array");
  const char* start = r.pos();
  std::vector<Builder> builders = make_builders(types, kMaxRank - 1);
  Parser parser(r);
  std::string scratch;
  bool objects = false;
  int64_t item = 0;
  for (;;) {
    bool is_object = r.peek() == '{' && !r.at_b64_object();
    if (item == 0) {
      objects = is_object;
      if (!objects && builders.size() > 1)
        invalid(
            "instances is a plain list, but expecting list of objects as multiple input tensors required as per "
            "tensorinfo_map (inputs: " + joined_names(builders) + ")");
    } else if (objects && !is_object) {
      invalid("Expecting object but got list at item " + std::to_string(item) + " of input list");
    } else if (!objects && is_object) {
      invalid("Expecting value/list but got object at item " + std::to_string(item) + " of input list");
    }
    if (!objects) {
      Builder& b = builders[0];
      b.instance = item;
      b.begin_value();
      parser.value(b, 0);
      end_instance(b);
    } else {
      for (auto& b : builders) b.seen = false;
      r.advance();
      if (r.peek() != '}') {
        for (;;) {
          std::string_view key = r.string(scratch);
          Builder* b = find_builder(builders, key);
          if (b == nullptr)
            invalid("Failed to process element: " + std::to_string(item) + " key: " + std::string(key) +
                    " of 'instances' list. Error: JSON object: does not have named input: " + std::string(key));
          if (b->seen)
            invalid("[predict] Failed to process element: " + std::to_string(item) + " of 'instances' list: key " +
                    b->name + " appears twice");
          r.expect(':', "Missing a colon after a name of object member");
          b->seen = true;
          b->instance = item;
          b->object_item = true;
          b->begin_value();
          parser.value(*b, 0);
          end_instance(*b);
          char c = r.peek();
          if (c == '}') break;
          if (c != ',') r.syntax("Missing a comma or '}' after an object member");
          r.advance();
        }
      }
      r.advance();
      for (const auto& b : builders)
        if (!b.seen)
          invalid("Failed to process element: " + std::to_string(item) +
                  " of 'instances' list. JSON object keys must be equal to: " + joined_names(builders) +
                  " (missing: " + b.name + ")");
    }
    if (item == 0) {
      // Size the buffers for the whole list from the first instance's share of the body.
      double instances = 1.0 + double(r.remaining()) / double(std::max<ptrdiff_t>(r.pos() - start, 1));
      for (auto& b : builders)
        if (b.type.dtype != DType::String) b.values.reserve(size_t(double(b.values.bytes()) * instances * 1.05));
    }
    ++item;
    char c = r.peek();
    if (c == ']') break;
    if (c != ',') r.syntax("Missing a comma or ']' after an array element");
    r.advance();
  }
  r.advance();
  for (auto& b : builders) {
    Shape shape = b.first_shape;
    shape.insert(0, item);
    out.emplace(b.name, b.values.take(shape, b.type.dtype));
  }
}

void parse_inputs(Reader& r, const InputTypes& types, std::map<std::string, Tensor>& out) {
  std::vector<Builder> builders = make_builders(types, kMaxRank);
  Parser parser(r);
  if (r.peek() != '{' || r.at_b64_object()) {
    if (builders.size() > 1)
      invalid(
          "inputs is a plain value/list, but expecting an object as multiple input tensors required as per "
          "tensorinfo_map (inputs: " + joined_names(builders) + ")");
    builders[0].begin_value();
    parser.value(builders[0], 0);
    builders[0].seen = true;
  } else {
    std::string scratch;
    r.advance();
    if (r.peek() != '}') {
      for (;;) {
        std::string_view key = r.string(scratch);
        Builder* b = find_builder(builders, key);
        r.expect(':', "Missing a colon after a name of object member");
        // As TF Serving: unknown names are ignored and the first of duplicates is used.
        if (b == nullptr || b->seen) {
          r.skip(2);
        } else {
          b->seen = true;
          b->begin_value();
          parser.value(*b, 0);
        }
        char c = r.peek();
        if (c == '}') break;
        if (c != ',') r.syntax("Missing a comma or '}' after an object member");
        r.advance();
      }
    }
    r.advance();
  }
  for (auto& b : builders) {
    if (!b.seen) invalid("Missing named input: " + b.name + " in 'inputs' object.");
    out.emplace(b.name, b.values.take(b.value_shape(), b.type.dtype));
  }
}

}  // namespace

PredictRequestJson parse_predict_request(std::string_view body,
                                         const std::function<InputTypes(const std::string&)>& input_types) {
  Reader r(body);
  if (r.peek() != '{') {
    if (r.at_end()) invalid("JSON Parse error: The document is empty");
    const char* at = r.pos();
    r.skip(0);
    invalid("[predict] JSON Value: " + r.excerpt(at) + " Is not object");
  }
  r.advance();
  // The inputs' dtypes depend on "signature_name", which may come after them. When the
  // body cannot name a signature (the common case) the inputs are parsed where they are;
  // otherwise their place is noted and they are parsed once the object has been read.
  const bool in_place = body.find("signature_name") == std::string_view::npos &&
                        body.find("\\u") == std::string_view::npos;
  PredictRequestJson req;
  InputTypes types;
  bool have_types = false, have_signature = false, have_instances = false, have_inputs = false;
  const char* pending = nullptr;
  auto resolve = [&] {
    if (have_types) return;
    types = input_types(req.signature_name);
    have_types = true;
    if (types.empty())
      invalid("Failed to get input map for signature: " +
              (req.signature_name.empty() ? std::string("DEFAULT") : req.signature_name));
  };
  std::string scratch;
  if (r.peek() != '}') {
    for (;;) {
      std::string_view key = r.string(scratch);
      r.expect(':', "Missing a colon after a name of object member");
      if (key == "signature_name" && !have_signature) {
        if (r.peek() != '"') invalid("[predict] 'signature_name' key must be a string value");
        req.signature_name = std::string(r.string(scratch));
        have_signature = true;
      } else if ((key == "instances" && !have_instances) || (key == "inputs" && !have_inputs)) {
        req.row_format = key == "instances";
        (req.row_format ? have_instances : have_inputs) = true;
        if (have_instances && have_inputs)
          invalid("Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist");
        if (in_place) {
          resolve();
          req.row_format ? parse_instances(r, types, req.inputs) : parse_inputs(r, types, req.inputs);
        } else {
          pending = r.pos();
          r.skip(1);
        }
      } else {
        r.skip(1);
      }
      char c = r.peek();
      if (c == '}') break;
      if (c != ',') r.syntax("Missing a comma or '}' after an object member");
      r.advance();
    }
  }
  // Bytes after the object are ignored, as TF Serving.
  if (!have_instances && !have_inputs) invalid("Missing 'inputs' or 'instances' key");
  if (pending != nullptr) {
    resolve();
    r.seek(pending);
    req.row_format ? parse_instances(r, types, req.inputs) : parse_inputs(r, types, req.inputs);
  }
  return req;
}

}  // namespace deepflow::serving
