// SPDX-License-Identifier: Apache-2.0
// The importer table and NodeContext's attribute helpers.
#include "deepflow/onnx/op_importer.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>

#include "deepflow/core/error.h"
#include "deepflow/onnx/import_internal.h"

namespace deepflow::onnx {
namespace {

struct Entry {
  int64_t since;
  OpImporter fn;
};

// Registrations run from static initializers of several translation units, so the table
// is a function-local static (constructed on first use, whatever the init order).
std::map<std::string, std::vector<Entry>>& registry() {
  static std::map<std::string, std::vector<Entry>> table;
  return table;
}

const char* attr_type_name(int t) {
  using A = ::onnx::AttributeProto;
  switch (t) {
    case A::FLOAT: return "FLOAT";
    case A::INT: return "INT";
    case A::STRING: return "STRING";
    case A::TENSOR: return "TENSOR";
    case A::GRAPH: return "GRAPH";
    case A::SPARSE_TENSOR: return "SPARSE_TENSOR";
    case A::TYPE_PROTO: return "TYPE_PROTO";
    case A::FLOATS: return "FLOATS";
    case A::INTS: return "INTS";
    case A::STRINGS: return "STRINGS";
    case A::TENSORS: return "TENSORS";
    case A::GRAPHS: return "GRAPHS";
    case A::SPARSE_TENSORS: return "SPARSE_TENSORS";
    case A::TYPE_PROTOS: return "TYPE_PROTOS";
    default: return "UNDEFINED";
  }
}

// Some exporters leave `type` unset (UNDEFINED) on old models; then the populated field
// decides, as onnx's own helpers do.
bool attr_is(const ::onnx::AttributeProto& a, ::onnx::AttributeProto::AttributeType t) {
  using A = ::onnx::AttributeProto;
  if (a.type() != A::UNDEFINED) return a.type() == t;
  switch (t) {
    case A::FLOAT: return a.has_f();
    case A::INT: return a.has_i();
    case A::STRING: return a.has_s();
    case A::TENSOR: return a.has_t();
    case A::GRAPH: return a.has_g();
    case A::FLOATS: return a.floats_size() > 0;
    case A::INTS: return a.ints_size() > 0;
    default: return false;
  }
}

void check_type(const NodeContext& ctx, const ::onnx::AttributeProto& a, ::onnx::AttributeProto::AttributeType t) {
  DF_CHECK(attr_is(a, t), "[onnx::import] ", ctx.describe(), ": attribute '", a.name(), "' must be ",
           attr_type_name(t), ", got ", attr_type_name(a.type()));
}

}  // namespace

OpImporterRegistrar::OpImporterRegistrar(const char* op_type, int64_t since, OpImporter fn) {
  auto& list = registry()[op_type];
  auto it = std::find_if(list.begin(), list.end(), [&](const Entry& e) { return e.since >= since; });
  if (it != list.end() && it->since == since) {
    it->fn = std::move(fn);  // a later registration of the same version replaces the earlier
  } else {
    list.insert(it, Entry{since, std::move(fn)});
  }
}

const OpImporter* find_op_importer(const std::string& op_type, int64_t opset) {
  auto& table = registry();
  auto it = table.find(op_type);
  if (it == table.end()) return nullptr;
  const OpImporter* best = nullptr;
  for (const Entry& e : it->second) {  // sorted by since
    if (e.since <= opset) best = &e.fn;
  }
  return best;
}

std::vector<std::string> registered_op_types() {
  std::vector<std::string> out;
  for (const auto& [name, list] : registry()) out.push_back(name);
  return out;  // std::map keeps them sorted
}

Tensor NodeContext::constant_input(size_t i) const {
  std::optional<Tensor> v = known_input(i);
  if (v) return *v;
  const auto& n = node();
  std::string name = i < size_t(n.input_size()) ? n.input(int(i)) : std::string();
  DF_CHECK(!name.empty() && i < num_inputs(), "[onnx::import] ", describe(), ": input ", i, " of ", n.op_type(),
           " is required");
  fail("[onnx::import] ", describe(), ": input ", i, " (", name, ") of ", n.op_type(),
       " must be known at import time");
}

std::optional<std::vector<int64_t>> NodeContext::partial_shape_input(size_t i) const {
  std::optional<Tensor> v = known_input(i);
  if (!v || v->rank() > 1 || !is_integer(v->dtype())) return std::nullopt;
  return v->to_vector<int64_t>();
}

int64_t NodeContext::attr_int(const std::string& name, int64_t fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  check_type(*this, *a, ::onnx::AttributeProto::INT);
  return a->i();
}

float NodeContext::attr_float(const std::string& name, float fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  check_type(*this, *a, ::onnx::AttributeProto::FLOAT);
  return a->f();
}

std::string NodeContext::attr_string(const std::string& name, const std::string& fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  check_type(*this, *a, ::onnx::AttributeProto::STRING);
  return a->s();
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name, const std::vector<int64_t>& fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  // An empty list written by an exporter that leaves `type` unset reads as the fallback.
  if (a->type() == ::onnx::AttributeProto::UNDEFINED && a->ints_size() == 0) return fallback;
  check_type(*this, *a, ::onnx::AttributeProto::INTS);
  return {a->ints().begin(), a->ints().end()};
}

std::vector<float> NodeContext::attr_floats(const std::string& name, const std::vector<float>& fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() == ::onnx::AttributeProto::UNDEFINED && a->floats_size() == 0) return fallback;
  check_type(*this, *a, ::onnx::AttributeProto::FLOATS);
  return {a->floats().begin(), a->floats().end()};
}

Tensor NodeContext::attr_tensor(const std::string& name) const {
  const auto* a = attr(name);
  DF_CHECK(a != nullptr, "[onnx::import] ", describe(), ": missing attribute '", name, "'");
  check_type(*this, *a, ::onnx::AttributeProto::TENSOR);
  return detail::tensor_from_proto(a->t(), describe() + " attribute '" + name + "'");
}

int64_t onnx_axis(const NodeContext& ctx, int64_t axis, int64_t rank) {
  DF_CHECK(axis >= -std::max<int64_t>(rank, 1) && axis < std::max<int64_t>(rank, 1), "[onnx::import] ",
           ctx.describe(), ": axis ", axis, " out of range for rank ", rank);
  return axis < 0 ? axis + std::max<int64_t>(rank, 1) : axis;
}

Shape known_shape(const NodeContext& ctx, const Tensor& x, const char* what) {
  DF_CHECK(x.shape().is_fully_defined(), "[onnx::import] ", ctx.describe(), ": ", what, " needs a known shape, got ",
           x.shape().to_string());
  return x.shape();
}

std::pair<int64_t, int64_t> shape_range(const NodeContext& ctx, int64_t rank) {
  int64_t start = ctx.attr_int("start", 0), end = ctx.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  return {start, std::clamp<int64_t>(end, start, rank)};
}

std::pair<int64_t, int64_t> slice_bounds(int64_t start, int64_t end, int64_t step, int64_t d) {
  int64_t s = start < 0 ? start + d : start, e = end < 0 ? end + d : end;
  if (end < -d) e = -1;
  if (step > 0) return {std::clamp<int64_t>(s, 0, d), std::clamp<int64_t>(e, 0, d)};
  return {std::clamp<int64_t>(s, -1, d - 1), std::clamp<int64_t>(e, -1, d - 1)};
}

}  // namespace deepflow::onnx
