// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/binary_tensor.h"

#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

#include "deepflow/serving/tensor_proto.h"

namespace deepflow::serving {
namespace {

// The format is little-endian; so is every host deepflow builds for today. A big-endian
// port would swap bytes here.
static_assert(std::endian::native == std::endian::little, "binary tensor bodies assume a little-endian host");

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& message) {
  throw ServingError(Code::InvalidArgument, "[rest binary] " + message);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// "DT_FLOAT" (TensorFlow's name) or "float32" (numpy's); strings are not carried.
DType dtype_from_text(const std::string& text, const std::string& input) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    if (t == DType::String) continue;
    if (text == tf_dtype_name(t) || text == dtype_name(t)) return t;
  }
  if (text == "DT_STRING" || text == "string")
    bad("input '" + input + "': DT_STRING cannot be sent as raw bytes; send strings in a JSON body ({\"b64\": ...})");
  bad("input '" + input + "': unknown dtype \"" + text +
      "\" (expected one of DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_INT8, DT_UINT8, DT_INT32, DT_INT64, "
      "DT_BOOL, or the numpy names float32, float64, ...)");
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(dims[i]);
  }
  out += ']';
  return out;
}

int64_t non_negative_integer(const json& v, const std::string& what) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > uint64_t(INT64_MAX)) bad(what + " is too large");
    return int64_t(v.get<uint64_t>());
  }
  if (v.is_number_integer()) {
    if (v.get<int64_t>() < 0) bad(what + " is negative (" + v.dump() + ")");
    return v.get<int64_t>();
  }
  bad(what + " must be a non-negative integer, got " + v.dump());
}

Tensor read_input(const std::string& name, const json& spec, std::string_view payload, size_t* end) {
  if (!spec.is_object())
    bad("input '" + name + "' must be an object {\"dtype\", \"shape\", \"offset\"}, got " + spec.dump());
  for (const char* key : {"dtype", "shape", "offset"})
    if (!spec.contains(key)) bad("input '" + name + "' has no \"" + key + "\"");
  for (const auto& [key, value] : spec.items())
    if (key != "dtype" && key != "shape" && key != "offset")
      bad("input '" + name + "' has an unknown field \"" + key + "\" (fields: dtype, shape, offset)");
  if (!spec["dtype"].is_string()) bad("input '" + name + "': \"dtype\" must be a string, got " + spec["dtype"].dump());
  DType dtype = dtype_from_text(spec["dtype"].get<std::string>(), name);
  if (!spec["shape"].is_array())
    bad("input '" + name + "': \"shape\" must be an array of dims, got " + spec["shape"].dump());
  std::vector<int64_t> dims;
  // Elements so far, bounded by the payload size so the product cannot overflow.
  uint64_t elements = 1;
  for (size_t i = 0; i < spec["shape"].size(); ++i) {
    int64_t d = non_negative_integer(spec["shape"][i], "input '" + name + "': dim " + std::to_string(i));
    dims.push_back(d);
    if (elements != 0 && d != 0 && uint64_t(d) > payload.size() / elements + 1) elements = payload.size() + 1;
    else elements *= uint64_t(d);
    if (elements > payload.size()) elements = payload.size() + 1;  // too big for any payload; reported below
  }
  const uint64_t offset = uint64_t(non_negative_integer(spec["offset"], "input '" + name + "': \"offset\""));
  const uint64_t bytes = elements * dtype_size(dtype);
  const std::string desc = "input '" + name + "' (" + tf_dtype_name(dtype) + " " + shape_text(dims) + ")";
  if (elements > payload.size() || offset > payload.size() || bytes > payload.size() - offset) {
    std::string need = elements > payload.size() ? "more bytes than the payload has"
                                                 : std::to_string(bytes) + " bytes at offset " + std::to_string(offset);
    bad(desc + " needs " + need + ", but the payload after the header has " + std::to_string(payload.size()) +
        " bytes (truncated body, or a wrong shape or offset?)");
  }
  Tensor t(Shape(dims), dtype);
  const char* src = payload.data() + offset;
  if (dtype == DType::Bool) {
    bool* dst = t.data<bool>();
    for (uint64_t i = 0; i < elements; ++i) dst[i] = src[i] != 0;
  } else if (bytes) {
    std::memcpy(t.raw_data(), src, bytes);
  }
  *end = std::max(*end, size_t(offset + bytes));
  return t;
}

}  // namespace

bool names_binary_media_type(std::string_view header) {
  std::string h = lower(header);
  size_t pos = 0;
  while ((pos = h.find(kBinaryTensorMediaType, pos)) != std::string::npos) {
    const bool starts = pos == 0 || h[pos - 1] == ' ' || h[pos - 1] == ',';
    const size_t after = pos + kBinaryTensorMediaType.size();
    const bool ends = after == h.size() || h[after] == ';' || h[after] == ',' || h[after] == ' ';
    if (starts && ends) return true;
    pos = after;
  }
  return false;
}

PredictRequestBinary parse_binary_predict_request(std::string_view body) {
  const size_t newline = body.find('\n');
  if (newline == std::string_view::npos)
    bad("the body has no header line: it must start with a one-line JSON header ended by '\\n' (got " +
        std::to_string(body.size()) + " bytes without a newline)");
  const std::string_view payload = body.substr(newline + 1);
  json header = json::parse(body.substr(0, newline), nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) bad("the header line is not valid JSON: " + std::string(body.substr(0, std::min<size_t>(newline, 200))));
  if (!header.is_object()) bad("the header must be a JSON object, got " + header.dump().substr(0, 200));
  PredictRequestBinary out;
  for (const auto& [key, value] : header.items()) {
    if (key == "signature_name") {
      if (!value.is_string()) bad("\"signature_name\" must be a string, got " + value.dump());
      out.signature_name = value.get<std::string>();
    } else if (key != "inputs") {
      bad("unknown header field \"" + key + "\" (fields: signature_name, inputs)");
    }
  }
  if (!header.contains("inputs") || !header["inputs"].is_object() || header["inputs"].empty())
    bad("the header needs \"inputs\": {name: {\"dtype\", \"shape\", \"offset\"}, ...} with at least one input");
  size_t end = 0;
  for (const auto& [name, spec] : header["inputs"].items()) out.inputs.emplace(name, read_input(name, spec, payload, &end));
  if (end != payload.size())
    bad("the payload has " + std::to_string(payload.size()) + " bytes but the inputs end at byte " +
        std::to_string(end) + " (trailing bytes, or a wrong shape or offset?)");
  return out;
}

std::string write_binary_predict_response(const std::string& model, int64_t version, const std::string& signature_name,
                                          const std::map<std::string, Tensor>& outputs) {
  json header;
  header["model_spec"] = {{"name", model},
                          {"version", std::to_string(version)},
                          {"signature_name", signature_name}};
  json specs = json::object();
  std::vector<size_t> offsets;
  size_t offset = 0;
  for (const auto& [name, t] : outputs) {
    if (t.dtype() == DType::String)
      bad("output '" + name + "' is DT_STRING, which raw bytes cannot carry; ask for JSON (Accept: application/json)");
    offset = (offset + 7) / 8 * 8;
    specs[name] = {{"dtype", tf_dtype_name(t.dtype())}, {"shape", t.shape().to_vector()}, {"offset", offset}};
    offsets.push_back(offset);
    offset += t.nbytes();
  }
  header["outputs"] = std::move(specs);
  std::string out = header.dump();
  out += '\n';
  const size_t base = out.size();
  out.resize(base + offset, '\0');
  size_t i = 0;
  for (const auto& [name, t] : outputs) {
    const size_t at = offsets[i++];
    if (t.nbytes()) std::memcpy(out.data() + base + at, t.raw_data(), t.nbytes());
  }
  return out;
}

}  // namespace deepflow::serving
