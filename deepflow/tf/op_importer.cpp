// SPDX-License-Identifier: Apache-2.0
#include "deepflow/tf/op_importer.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "deepflow/core/error.h"
#include "deepflow/ops/op.h"
#include "deepflow/tf/dtype.h"
#include "tensorflow/attr_value.pb.h"
#include "tensorflow/node_def.pb.h"
#include "tensorflow/tensor.pb.h"

namespace deepflow::tf {
namespace {

std::map<std::string, OpImporter>& registry() {
  static std::map<std::string, OpImporter> r;
  return r;
}

const tensorflow::AttrValue& require_attr(const NodeContext& c, const std::string& name) {
  const tensorflow::AttrValue* a = c.attr(name);
  DF_CHECK(a, "[tf::import] ", c.describe(), ": no attr '", name, "' and no default for it");
  return *a;
}

// Copies n elements of the typed field `vals` into t, repeating the last value (TF's fill).
template <class T, class Field>
void fill_from(Tensor& t, const Field& vals) {
  T* out = t.data<T>();
  const int64_t n = t.size(), m = vals.size();
  for (int64_t i = 0; i < n; ++i) out[i] = m == 0 ? T() : T(vals.Get(int(std::min(i, m - 1))));
}

}  // namespace

OpImporterRegistrar::OpImporterRegistrar(const char* op_type, OpImporter fn) {
  registry()[op_type] = std::move(fn);
}

const OpImporter* find_op_importer(const std::string& op_type) {
  auto it = registry().find(op_type);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> registered_op_types() {
  std::vector<std::string> out;
  for (const auto& [k, v] : registry()) out.push_back(k);
  return out;
}

// --- NodeContext ---

Tensor NodeContext::input(size_t i) const {
  DF_CHECK(i < num_inputs(), "[tf::import] ", describe(), ": needs input ", i, ", has ", num_inputs());
  const Value& v = value(i);
  if (!v.tensor.defined() && v.partial) {
    // Each unknown element is the size of a dim of some tensor: size() of that tensor
    // reduced over its other dims.
    TensorList elems;
    for (size_t k = 0; k < v.partial->size(); ++k) {
      const int64_t d = (*v.partial)[k];
      if (d >= 0) {
        elems.push_back(scalar(double(d), v.partial_dtype));
        continue;
      }
      if (k >= v.sources.size() || !v.sources[k].first.defined()) {
        std::string dims;
        for (int64_t e : *v.partial) dims += (dims.empty() ? "" : ",") + (e < 0 ? std::string("?") : std::to_string(e));
        fail("[tf::import] ", describe(), ": input ", i, " is the shape value [", dims, "], whose element ", k,
             " is known only when the graph runs and comes from no tensor's shape");
      }
      const Tensor& src = v.sources[k].first;
      Axes others;
      for (int a = 0; a < src.rank(); ++a) {
        if (a != v.sources[k].second) others.push_back(a);
      }
      Tensor along = others.empty() ? zeros_like(src) : reduce_sum(zeros_like(src), others);
      elems.push_back(cast(size(along, DType::Int64), v.partial_dtype));
    }
    return v.scalar ? elems[0] : stack(elems);
  }
  DF_CHECK(v.tensor.defined(), "[tf::import] ", describe(), ": input ", i, " is a resource, not a tensor");
  return v.tensor;
}

Variable& NodeContext::variable(size_t i) const {
  DF_CHECK(i < num_inputs(), "[tf::import] ", describe(), ": needs input ", i, ", has ", num_inputs());
  const Value& v = value(i);
  DF_CHECK(v.variable, "[tf::import] ", describe(), ": input ", i, " must be a resource (a variable)");
  return *v.variable;
}

Tensor NodeContext::constant_input(size_t i) const {
  Tensor t = input(i);
  DF_CHECK(!t.is_symbolic(), "[tf::import] ", describe(), ": input ", i, " must be known at import time (",
           dtype_name(t.dtype()), t.shape(), " is computed when the graph runs)");
  return t;
}

std::vector<int64_t> NodeContext::constant_ints(size_t i) const {
  Tensor t = constant_input(i);
  DF_CHECK(is_integer(t.dtype()), "[tf::import] ", describe(), ": input ", i, " must be integers, got ",
           dtype_name(t.dtype()));
  return t.to_vector<int64_t>();
}

std::optional<std::vector<int64_t>> NodeContext::shape_input(size_t i) const {
  const Value& v = value(i);
  if (v.partial) return v.partial;
  if (v.tensor.defined() && !v.tensor.is_symbolic() && is_integer(v.tensor.dtype())) {
    return v.tensor.to_vector<int64_t>();
  }
  return std::nullopt;
}

int64_t NodeContext::attr_int(const std::string& name) const { return require_attr(*this, name).i(); }
float NodeContext::attr_float(const std::string& name) const { return require_attr(*this, name).f(); }
bool NodeContext::attr_bool(const std::string& name) const { return require_attr(*this, name).b(); }
std::string NodeContext::attr_string(const std::string& name) const { return require_attr(*this, name).s(); }
DType NodeContext::attr_type(const std::string& name) const { return require_dtype(require_attr(*this, name).type()); }

std::vector<int64_t> NodeContext::attr_ints(const std::string& name) const {
  const auto& l = require_attr(*this, name).list();
  return {l.i().begin(), l.i().end()};
}

std::vector<DType> NodeContext::attr_types(const std::string& name) const {
  std::vector<DType> out;
  for (int t : require_attr(*this, name).list().type()) out.push_back(require_dtype(t));
  return out;
}

std::vector<std::string> NodeContext::attr_strings(const std::string& name) const {
  const auto& l = require_attr(*this, name).list();
  return {l.s().begin(), l.s().end()};
}

std::optional<Shape> NodeContext::attr_shape(const std::string& name) const {
  const auto& s = require_attr(*this, name).shape();
  if (s.unknown_rank()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : s.dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  return Shape(dims);
}

Tensor NodeContext::attr_tensor(const std::string& name) const {
  return tensor_from_tf(require_attr(*this, name).tensor(), describe() + " attr '" + name + "'");
}

Tensor dynamic_zeros(const NodeContext& ctx, const std::vector<int64_t>& dims,
                     const std::vector<std::pair<Tensor, int>>& sources, DType dtype) {
  std::vector<int64_t> known = dims;
  for (int64_t& d : known) d = d < 0 ? 1 : d;
  Tensor z = zeros(Shape(known), dtype);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] >= 0) continue;
    DF_CHECK(i < sources.size() && sources[i].first.defined(), "[tf::import] ", ctx.describe(), ": dim ", i,
             " of the shape is known only at run time and comes from no tensor's Shape");
    const Tensor& src = sources[i].first;
    const int d = sources[i].second;
    // A vector as long as src's dim d (zeros), set along dim i and broadcast.
    Axes others;
    for (int k = 0; k < src.rank(); ++k) {
      if (k != d) others.push_back(k);
    }
    Tensor v = cast(zeros_like(src), dtype);
    if (!others.empty()) v = reduce_sum(v, others);
    std::vector<int64_t> at(dims.size(), 1);
    at[i] = -1;
    z = z + reshape(v, Shape(at));
  }
  return z;
}

Tensor dynamic_reshape(const NodeContext& ctx, const Tensor& x, const std::vector<int64_t>& dims,
                       const std::vector<std::pair<Tensor, int>>& sources) {
  int unknown = 0;
  for (int64_t d : dims) unknown += d < 0;
  if (unknown <= 1) return reshape(x, Shape(dims));
  return reshape_like(x, dynamic_zeros(ctx, dims, sources, x.dtype()));
}

int64_t tf_axis(const NodeContext& ctx, int64_t axis, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  DF_CHECK(axis >= -r && axis < r, "[tf::import] ", ctx.describe(), ": axis ", axis, " out of range for rank ",
           rank);
  return axis < 0 ? axis + r : axis;
}

// --- dtypes ---

DType require_dtype(int tf_type) {
  std::optional<DType> d = dtype_from_tf(tf_type > 100 ? tf_type - 100 : tf_type);
  if (!d) fail("[tf::import] TensorFlow dtype ", tf_dtype_name(tf_type), " is not supported by deepflow");
  return *d;
}

// --- TensorProto ---

Tensor tensor_from_tf(const tensorflow::TensorProto& p, const std::string& where) {
  const DType dt = require_dtype(p.dtype());
  std::vector<int64_t> dims;
  for (const auto& d : p.tensor_shape().dim()) {
    DF_CHECK(d.size() >= 0, "[tf::import] ", where, ": a constant's shape must be known, got dim ", d.size());
    dims.push_back(d.size());
  }
  const std::string& content = p.tensor_content();
  if (!content.empty()) {
    // Checked before allocating: the shape, not the bytes, is what a corrupt file inflates.
    DF_CHECK(dt != DType::String, "[tf::import] ", where, ": a string tensor cannot use tensor_content");
    const size_t item = dtype_size(dt);
    DF_CHECK(content.size() % item == 0 && int64_t(content.size() / item) == Shape(dims).num_elements(),
             "[tf::import] ", where, ": tensor_content has ", content.size(), " bytes, not what ", dtype_name(dt),
             Shape(dims), " needs");
    Tensor t(Shape(dims), dt);
    std::memcpy(t.raw_data(), content.data(), content.size());
    return t;
  }
  Tensor t(Shape(dims), dt);
  switch (dt) {
    case DType::Float32: fill_from<float>(t, p.float_val()); break;
    case DType::Float64: fill_from<double>(t, p.double_val()); break;
    case DType::Int32: fill_from<int32_t>(t, p.int_val()); break;
    case DType::Int8: fill_from<int8_t>(t, p.int_val()); break;
    case DType::UInt8: fill_from<uint8_t>(t, p.int_val()); break;
    case DType::Int64: fill_from<int64_t>(t, p.int64_val()); break;
    case DType::Bool: fill_from<bool>(t, p.bool_val()); break;
    case DType::Float16:
    case DType::BFloat16: {
      // 16-bit patterns, one per int32.
      auto* out = static_cast<uint16_t*>(t.raw_data());
      const int64_t m = p.half_val_size();
      for (int64_t i = 0; i < t.size(); ++i) out[i] = m == 0 ? 0 : uint16_t(p.half_val(int(std::min(i, m - 1))));
      break;
    }
    case DType::String: {
      auto* out = t.data<std::string>();
      const int64_t m = p.string_val_size();
      for (int64_t i = 0; i < t.size(); ++i) out[i] = m == 0 ? std::string() : p.string_val(int(std::min(i, m - 1)));
      break;
    }
  }
  return t;
}

}  // namespace deepflow::tf
