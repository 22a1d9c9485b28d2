// SPDX-License-Identifier: Apache-2.0
// Classify and Regress request bodies -> serialized tf.Examples (TF Serving's
// MakeExampleFromJsonObject rules), and base64.
#include <array>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "deepflow/serving/json_reader.h"
#include "deepflow/serving/json_tensor.h"
#include "example.pb.h"

namespace deepflow::serving {
namespace {

using namespace json_detail;  // NOLINT: the reader shared with json_tensor.cpp
using tensorflow::Feature;

const char* kind_name(Feature::KindCase kind) {
  switch (kind) {
    case Feature::kBytesList: return "bytes";
    case Feature::kFloatList: return "float";
    case Feature::kInt64List: return "int64";
    default: return "UNKNOWN";
  }
}

// Feature names are proto3 strings: a name that is not UTF-8 would give an Example that
// no parser accepts.
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || i + size_t(n) >= s.size()) return false;
    uint32_t cp = n == 0 ? c : n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
    for (int k = 1; k <= n; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + size_t(k)]);
      if ((d >> 6) != 2) return false;
      cp = cp << 6 | (d & 0x3F);
    }
    static constexpr uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += size_t(n) + 1;
  }
  return true;
}

// Map order in the bytes is fixed, so equal requests give equal examples.
std::string serialize(const tensorflow::Example& example) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    example.SerializeToCodedStream(&coded);
  }
  return out;
}

class ExampleReader {
 public:
  explicit ExampleReader(Reader& r) : r_(r) {}

  tensorflow::Example example(const char* which) {
    char c = r_.peek();
    if (c != '{')
      invalid(std::string("[classify/regress] ") + which + ": Example must be JSON object but got JSON " +
              json_type(c));
    tensorflow::Example ex;
    auto* features = ex.mutable_features()->mutable_feature();
    r_.advance();
    if (r_.peek() == '}') return r_.advance(), ex;
    for (;;) {
      std::string name(r_.string(scratch_));
      if (!valid_utf8(name)) invalid(std::string("[classify/regress] ") + which + ": a feature name is not valid UTF-8");
      r_.expect(':', "Missing a colon after a name of object member");
      Feature& feature = (*features)[name];
      feature.Clear();  // a repeated name replaces the earlier one, as TF Serving
      if (r_.peek() == '[') {
        r_.advance();
        if (r_.peek() != ']') {
          for (;;) {
            add_value(name, feature);
            char e = r_.peek();
            if (e == ']') break;
            if (e != ',') r_.syntax("Missing a comma or ']' after an array element");
            r_.advance();
          }
        }
        r_.advance();
      } else {
        add_value(name, feature);
      }
      char e = r_.peek();
      if (e == '}') break;
      if (e != ',') r_.syntax("Missing a comma or '}' after an object member");
      r_.advance();
    }
    r_.advance();
    return ex;
  }

 private:
  [[noreturn]] void unexpected(const std::string& name, char c) {
    invalid("Feature: " + name + " has element with unexpected JSON type: " + json_type(c));
  }
  void want_kind(const std::string& name, const Feature& feature, Feature::KindCase kind) {
    if (feature.kind_case() != Feature::KIND_NOT_SET && feature.kind_case() != kind)
      invalid("Unexpected element type in feature: " + name + " expecting type: " + kind_name(feature.kind_case()));
  }

  void add_value(const std::string& name, Feature& feature) {
    char c = r_.peek();
    switch (c) {
      case 't':
      case 'f':
        want_kind(name, feature, Feature::kInt64List);
        r_.literal(c == 't' ? "true" : "false");
        feature.mutable_int64_list()->add_value(c == 't' ? 1 : 0);
        return;
      case '"':
        want_kind(name, feature, Feature::kBytesList);
        feature.mutable_bytes_list()->add_value(std::string(r_.string(scratch_)));
        return;
      case '{': {
        if (!r_.at_b64_object()) unexpected(name, c);
        want_kind(name, feature, Feature::kBytesList);
        r_.advance();
        r_.string(scratch_);
        r_.expect(':', "Missing a colon after a name of object member");
        feature.mutable_bytes_list()->add_value(base64_decode(r_.string(scratch_)));
        r_.expect('}', "Missing a comma or '}' after an object member");
        return;
      }
      case 'n':
      case '[': unexpected(name, c);
      default: break;
    }
    const char* at = r_.pos();
    Number n = r_.number();
    int64_t i;
    if (n.integer && as_int64(n, &i)) {
      want_kind(name, feature, Feature::kInt64List);
      feature.mutable_int64_list()->add_value(i);
      return;
    }
    uint64_t u;
    if (n.integer && std::from_chars(n.text.data(), n.text.data() + n.text.size(), u).ec == std::errc())
      invalid("Feature: " + name + " has uint64 element. Only int64 is supported.");
    // Other numbers (fractions, exponents, NaN, integers beyond uint64) are floats.
    want_kind(name, feature, Feature::kFloatList);
    float v;
    if (!as_float(n, &v))
      invalid("Cannot convert JSON value: " + r_.excerpt(at) + " to float without loss of precision.");
    feature.mutable_float_list()->add_value(v);
  }

  Reader& r_;
  std::string scratch_;
};

constexpr std::array<int8_t, 256> kBase64Values = [] {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = int8_t(i);
  return t;
}();

}  // namespace

ExamplesRequestJson parse_examples_request(std::string_view body) {
  Reader r(body);
  if (r.peek() != '{') {
    if (r.at_end()) invalid("JSON Parse error: The document is empty");
    const char* at = r.pos();
    r.skip(0);
    invalid("[classify/regress] JSON Value: " + r.excerpt(at) + " Is not object");
  }
  r.advance();
  ExamplesRequestJson req;
  ExampleReader reader(r);
  std::vector<tensorflow::Example> examples;
  tensorflow::Example context;
  bool have_signature = false, have_context = false, have_examples = false;
  std::string scratch;
  if (r.peek() != '}') {
    for (;;) {
      std::string_view key = r.string(scratch);
      r.expect(':', "Missing a colon after a name of object member");
      if (key == "signature_name" && !have_signature) {
        if (r.peek() != '"') invalid("[classify/regress] 'signature_name' key must be a string value");
        req.signature_name = std::string(r.string(scratch));
        have_signature = true;
      } else if (key == "context" && !have_context) {
        context = reader.example("context");
        have_context = true;
      } else if (key == "examples" && !have_examples) {
        have_examples = true;
        if (r.peek() != '[') invalid("[classify/regress] Expecting 'examples' value to be an list/array");
        r.advance();
        if (r.peek() == ']') invalid("[classify/regress] 'examples' value is an empty array");
        for (;;) {
          examples.push_back(reader.example(("example " + std::to_string(examples.size())).c_str()));
          char c = r.peek();
          if (c == ']') break;
          if (c != ',') r.syntax("Missing a comma or ']' after an array element");
          r.advance();
        }
        r.advance();
      } else {
        r.skip(1);
      }
      char c = r.peek();
      if (c == '}') break;
      if (c != ',') r.syntax("Missing a comma or '}' after an object member");
      r.advance();
    }
  }
  if (!have_examples) invalid("[classify/regress] key 'examples' is expected and was not found");
  req.examples.reserve(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    for (const auto& [name, feature] : examples[i].features().feature())
      if (context.features().feature().count(name) != 0)
        invalid("[classify/regress] feature '" + name + "' is in both 'context' and example " + std::to_string(i));
    req.examples.push_back(serialize(examples[i]));
  }
  if (have_context) req.context = serialize(context);
  return req;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto byte = [&](size_t k) { return uint32_t(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    const char group[4] = {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
    out.append(group, 4);
  }
  if (bytes.size() - i == 1) {
    uint32_t v = byte(i) << 16;
    const char group[4] = {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
    out.append(group, 4);
  } else if (bytes.size() - i == 2) {
    uint32_t v = byte(i) << 16 | byte(i + 1) << 8;
    const char group[4] = {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
    out.append(group, 4);
  }
  return out;
}

std::string base64_decode(std::string_view text) {
  size_t n = text.size();
  // Padding is optional, but only where it completes the last group.
  if (n % 4 == 0 && n > 0 && text[n - 1] == '=') n -= text[n - 2] == '=' ? 2 : 1;
  if (n % 4 == 1)
    throw ServingError(Code::InvalidArgument,
                       "[base64] Unable to base64 decode: " + std::to_string(text.size()) + " characters is not a valid length");
  std::string out;
  out.reserve(n / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    int8_t v = kBase64Values[static_cast<unsigned char>(text[i])];
    if (v < 0)
      throw ServingError(Code::InvalidArgument, "[base64] Unable to base64 decode: invalid character at offset " +
                                                    std::to_string(i));
    acc = acc << 6 | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace deepflow::serving
