// SPDX-License-Identifier: Apache-2.0
// Response side of TF Serving's REST bodies, written straight into one string (no DOM).
// Compact JSON (TF Serving pretty-prints; whitespace carries no meaning). Floats are
// shortest round-trip (std::to_chars) with TF Serving's ".0" on whole numbers.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "deepflow/serving/json_tensor.h"
#include "deepflow/serving/tensor_proto.h"

namespace deepflow::serving {
namespace {

class JsonOut {
 public:
  explicit JsonOut(size_t reserve = 256) { s_.reserve(reserve); }
  JsonOut& raw(std::string_view text) {
    s_.append(text);
    return *this;
  }
  JsonOut& ch(char c) {
    s_.push_back(c);
    return *this;
  }
  // A JSON string: quotes, backslashes and control characters escaped, other bytes as
  // they are (UTF-8 passes through; TF Serving does the same with binary strings).
  JsonOut& str(std::string_view text) {
    s_.push_back('"');
    size_t run = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      if (c >= 0x20 && c != '"' && c != '\\') continue;
      s_.append(text.substr(run, i - run));
      run = i + 1;
      switch (c) {
        case '"': s_.append("\\\""); break;
        case '\\': s_.append("\\\\"); break;
        case '\b': s_.append("\\b"); break;
        case '\f': s_.append("\\f"); break;
        case '\n': s_.append("\\n"); break;
        case '\r': s_.append("\\r"); break;
        case '\t': s_.append("\\t"); break;
        default: {
          static constexpr char kHex[] = "0123456789abcdef";
          char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
          s_.append(esc, 6);
        }
      }
    }
    s_.append(text.substr(run));
    s_.push_back('"');
    return *this;
  }
  JsonOut& key(std::string_view k) {
    str(k);
    s_.push_back(':');
    return *this;
  }
  template <class T> JsonOut& real(T v) {
    if (std::isnan(v)) return raw("NaN");
    if (std::isinf(v)) return raw(v < 0 ? "-Infinity" : "Infinity");
    char buf[32];
    char* end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
    s_.append(buf, end);
    if (std::find_if(buf, end, [](char c) { return c == '.' || c == 'e'; }) == end) s_.append(".0");
    return *this;
  }
  template <class T> JsonOut& integer(T v) {
    char buf[24];
    s_.append(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
    return *this;
  }
  JsonOut& quoted(int64_t v) {  // proto3 JSON prints int64 as a string
    s_.push_back('"');
    integer(v);
    s_.push_back('"');
    return *this;
  }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

// Writes elements [*offset, ...) of `t` as the nested lists of dims [dim, rank).
class TensorWriter {
 public:
  TensorWriter(JsonOut& out, const Tensor& t, bool bytes) : out_(out), t_(t), bytes_(bytes) {}

  void write(int dim, int64_t* offset) {
    if (dim >= t_.rank()) return element((*offset)++);
    out_.ch('[');
    int64_t n = t_.dim(dim);
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) out_.ch(',');
      if (dim + 1 == t_.rank()) element((*offset)++);
      else write(dim + 1, offset);
    }
    out_.ch(']');
  }

 private:
  void element(int64_t i) {
    const void* d = t_.raw_data();
    switch (t_.dtype()) {
      case DType::Float32: out_.real(static_cast<const float*>(d)[i]); break;
      case DType::Float64: out_.real(static_cast<const double*>(d)[i]); break;
      // No JSON mapping in TF Serving; written as the float values they are.
      case DType::Float16: out_.real(float(static_cast<const Half*>(d)[i])); break;
      case DType::BFloat16: out_.real(float(static_cast<const BFloat16*>(d)[i])); break;
      case DType::Int8: out_.integer(int(static_cast<const int8_t*>(d)[i])); break;
      case DType::UInt8: out_.integer(int(static_cast<const uint8_t*>(d)[i])); break;
      case DType::Int32: out_.integer(static_cast<const int32_t*>(d)[i]); break;
      case DType::Int64: out_.integer(static_cast<const int64_t*>(d)[i]); break;
      case DType::Bool: out_.raw(static_cast<const bool*>(d)[i] ? "true" : "false"); break;
      case DType::String: {
        const std::string& s = static_cast<const std::string*>(d)[i];
        if (bytes_) out_.ch('{').key("b64").str(base64_encode(s)).ch('}');
        else out_.str(s);
        break;
      }
    }
  }

  JsonOut& out_;
  const Tensor& t_;
  bool bytes_;
};

bool is_bytes(const std::string& name, const Tensor& t) {
  return t.dtype() == DType::String && name.size() >= 6 && name.compare(name.size() - 6, 6, "_bytes") == 0;
}

size_t size_hint(const std::map<std::string, Tensor>& outputs) {
  size_t n = 64;
  for (const auto& [name, t] : outputs) n += name.size() * 4 + size_t(t.size()) * 14;
  return n;
}

void tensor_info(JsonOut& out, const io::TensorInfo& info) {
  out.ch('{').key("dtype").str(tf_dtype_name(info.type.dtype)).ch(',').key("tensor_shape").ch('{').key("dim").ch('[');
  for (int i = 0; i < info.type.shape.rank(); ++i) {
    if (i > 0) out.ch(',');
    out.ch('{').key("size").quoted(info.type.shape[i]).ch(',').key("name").str("").ch('}');
  }
  out.raw("],").key("unknown_rank").raw("false}").ch(',').key("name").str(info.name).ch('}');
}

void tensor_infos(JsonOut& out, const std::map<std::string, io::TensorInfo>& infos) {
  out.ch('{');
  bool first = true;
  for (const auto& [key, info] : infos) {
    if (!first) out.ch(',');
    first = false;
    out.key(key);
    tensor_info(out, info);
  }
  out.ch('}');
}

}  // namespace

std::string write_predict_response(const std::map<std::string, Tensor>& outputs, bool row_format) {
  if (outputs.empty()) throw ServingError(Code::InvalidArgument, "Cannot convert empty tensor map to JSON");
  JsonOut out(size_hint(outputs));
  const bool several = outputs.size() > 1;
  if (!row_format) {
    out.raw("{\"outputs\":");
    if (several) out.ch('{');
    bool first = true;
    for (const auto& [name, t] : outputs) {
      if (!first) out.ch(',');
      first = false;
      if (several) out.key(name);
      int64_t offset = 0;
      TensorWriter(out, t, is_bytes(name, t)).write(0, &offset);
    }
    if (several) out.ch('}');
    return out.ch('}').take();
  }
  int64_t batch = -1;
  for (const auto& [name, t] : outputs) {
    if (t.rank() == 0) throw ServingError(Code::InvalidArgument, "Tensor name: " + name + " has no shape information ");
    if (batch >= 0 && t.dim(0) != batch)
      throw ServingError(Code::InvalidArgument, "Tensor name: " + name + " has inconsistent batch size: " +
                                                    std::to_string(t.dim(0)) + " expecting: " + std::to_string(batch));
    batch = t.dim(0);
  }
  std::vector<int64_t> offsets(outputs.size(), 0);
  out.raw("{\"predictions\":[");
  for (int64_t item = 0; item < batch; ++item) {
    if (item > 0) out.ch(',');
    if (several) out.ch('{');
    size_t k = 0;
    for (const auto& [name, t] : outputs) {
      if (k > 0) out.ch(',');
      if (several) out.key(name);
      TensorWriter(out, t, is_bytes(name, t)).write(1, &offsets[k]);
      ++k;
    }
    if (several) out.ch('}');
  }
  return out.raw("]}").take();
}

std::string write_classify_response(const std::vector<std::vector<ClassScore>>& results) {
  JsonOut out(32 + results.size() * 32);
  out.raw("{\"results\":[");
  for (size_t i = 0; i < results.size(); ++i) {
    if (i > 0) out.ch(',');
    out.ch('[');
    for (size_t j = 0; j < results[i].size(); ++j) {
      if (j > 0) out.ch(',');
      out.ch('[').str(results[i][j].label).ch(',').real(results[i][j].score).ch(']');
    }
    out.ch(']');
  }
  return out.raw("]}").take();
}

std::string write_regress_response(const std::vector<float>& results) {
  JsonOut out(32 + results.size() * 14);
  out.raw("{\"results\":[");
  for (size_t i = 0; i < results.size(); ++i) {
    if (i > 0) out.ch(',');
    out.real(results[i]);
  }
  return out.raw("]}").take();
}

std::string write_status_response(const std::vector<VersionStatus>& statuses) {
  JsonOut out;
  out.raw("{\"model_version_status\":[");
  for (size_t i = 0; i < statuses.size(); ++i) {
    const VersionStatus& s = statuses[i];
    if (i > 0) out.ch(',');
    out.ch('{').key("version").quoted(s.version).ch(',').key("state").str(state_name(s.state)).ch(',');
    out.key("status").ch('{').key("error_code").str(code_name(s.error_code)).ch(',');
    out.key("error_message").str(s.error_message).raw("}}");
  }
  return out.raw("]}").take();
}

std::string write_metadata_response(const Servable& servable) {
  JsonOut out(1024);
  out.raw("{\"model_spec\":{").key("name").str(servable.name).ch(',').key("signature_name").str("").ch(',');
  out.key("version").quoted(servable.version).raw("},\"metadata\":{\"signature_def\":{\"signature_def\":{");
  bool first = true;
  for (const auto& [key, sig] : servable.model.info().signatures) {
    if (!first) out.ch(',');
    first = false;
    out.key(key).ch('{').key("inputs");
    tensor_infos(out, sig.inputs);
    out.ch(',').key("outputs");
    tensor_infos(out, sig.outputs);
    out.ch(',').key("method_name").str(sig.method_name).ch(',').key("defaults").raw("{}}");
  }
  return out.raw("}}}}").take();
}

std::string write_error(std::string_view message) {
  JsonOut out(message.size() + 16);
  return out.raw("{\"error\":").str(message).ch('}').take();
}

}  // namespace deepflow::serving
