// SPDX-License-Identifier: Apache-2.0
// deepflow graph -> float32 LiteModel: preparation (variables to constants, the inference
// passes) and the demand-driven walk from the outputs, so that the inner nodes of a
// matched composition (softmax, mean, relu6) are never lowered on their own.
#include "deepflow/quantize/lower.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>

#include "deepflow/core/error.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/passes.h"
#include "deepflow/ops/ops.h"
#include "deepflow/ops/variable.h"
#include "deepflow/quantize/lower_internal.h"

namespace deepflow::quantize {

std::shared_ptr<Graph> prepare_for_lite(const Graph& source) {
  Graph g = source;
  for (int id = 0; id < g.num_nodes(); ++id) {
    Node& n = g.mutable_node(id);
    DF_CHECK(n.op != OpId::AssignVariable && n.op != OpId::Send && n.op != OpId::Recv, "[lite::convert] node '",
             n.name, "' (", n.def().name, ") changes state; convert an inference function");
    if (n.op != OpId::ReadVariable) continue;
    Tensor value = std::get<Variable>(*n.attrs.find("variable")).value();
    n.op = OpId::Const;
    n.attrs = Attrs{{"value", value}};
  }
  for (int id = 0; id < g.num_nodes(); ++id) g.mutable_node(id).control_inputs.clear();
  PassOptions o;
  o.fuse_elementwise = false;
  o.fuse_conv_chain = false;
  o.sink_transposes = false;
  o.max_folded_elements = int64_t(1) << 40;  // every constant expression becomes one tensor
  return optimize(g, o);
}

namespace detail {

fb::TensorType lite_type(DType d, const std::string& where) {
  switch (d) {
    case DType::Float32: return fb::TensorType::FLOAT32;
    case DType::Float16: return fb::TensorType::FLOAT16;
    case DType::Int8: return fb::TensorType::INT8;
    case DType::UInt8: return fb::TensorType::UINT8;
    case DType::Int32: return fb::TensorType::INT32;
    case DType::Int64: return fb::TensorType::INT64;
    case DType::Bool: return fb::TensorType::BOOL;
    default: fail("[lite::convert] ", where, ": dtype ", dtype_name(d), " has no TFLite tensor type here");
  }
}

std::vector<int32_t> lite_shape(const Shape& s) {
  std::vector<int32_t> out;
  for (int64_t d : s) out.push_back(int32_t(d < 0 ? 1 : d));
  return out;
}

Lowering::Lowering(const Graph& g) : g_(g) {
  for (int id = 0; id < g.num_nodes(); ++id)
    for (const ValueRef& v : g.node(id).inputs) ++uses_[{v.node, v.index}];
  for (const ValueRef& v : g.outputs) ++uses_[{v.node, v.index}];
}

int Lowering::uses(ValueRef v) const {
  auto it = uses_.find({v.node, v.index});
  return it == uses_.end() ? 0 : it->second;
}

const Node& Lowering::producer(ValueRef v) const { return g_.node(v.node); }

std::optional<Tensor> Lowering::constant(ValueRef v) const {
  const Node& n = g_.node(v.node);
  if (n.op == OpId::Const) return std::get<Tensor>(*n.attrs.find("value"));
  return std::nullopt;
}

ValueRef Lowering::skip_identities(ValueRef v) const {
  while (g_.node(v.node).op == OpId::Identity || g_.node(v.node).op == OpId::StopGradient) v = g_.node(v.node).inputs[0];
  return v;
}

int32_t Lowering::new_tensor(ValueRef v) {
  const TensorType& t = g_.type(v);
  const std::string name = g_.value_name(v);
  LiteTensor lt{.name = name, .type = lite_type(t.dtype, "value '" + name + "'"), .shape = lite_shape(t.shape)};
  if (std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; }))
    for (int64_t d : t.shape) lt.shape_signature.push_back(int32_t(d < 0 ? -1 : d));
  return m_.add_tensor(std::move(lt));
}

int32_t Lowering::constant_tensor(const Tensor& value, const std::string& name) {
  Tensor c = value;
  if (c.dtype() == DType::Float64) {
    BuildScopeGuard eager(nullptr);
    c = cast(c, DType::Float32);
  }
  const fb::TensorType type = lite_type(c.dtype(), "constant '" + name + "'");
  std::vector<uint8_t> bytes(c.nbytes());
  if (!bytes.empty()) std::memcpy(bytes.data(), c.raw_data(), bytes.size());
  return m_.add_constant(name, type, lite_shape(c.shape()), std::move(bytes));
}

int32_t Lowering::ints(const std::vector<int64_t>& v, const std::string& name) {
  std::vector<int32_t> w(v.begin(), v.end());
  return m_.add_int32_constant(name, {int32_t(w.size())}, w);
}

int32_t Lowering::tensor(ValueRef v) {
  v = skip_identities(v);
  auto it = done_.find({v.node, v.index});
  if (it != done_.end()) return it->second;
  const Node& n = g_.node(v.node);
  if (n.op == OpId::Const) {
    int32_t t = constant_tensor(std::get<Tensor>(*n.attrs.find("value")), g_.value_name(v));
    done_[{v.node, v.index}] = t;
    return t;
  }
  DF_CHECK(n.op != OpId::Placeholder, "[lite::convert] placeholder '", n.name, "' is not an input of the function");
  lower_node(v.node);
  it = done_.find({v.node, v.index});
  DF_CHECK(it != done_.end(), "[lite::convert] node '", n.name, "' (", n.def().name, ") did not produce output ",
           v.index);
  return it->second;
}

int32_t Lowering::output(ValueRef v) {
  auto key = std::pair{v.node, v.index};
  auto it = done_.find(key);
  if (it != done_.end()) return it->second;
  int32_t t = new_tensor(v);
  done_[key] = t;
  return t;
}

void Lowering::set_output(ValueRef v, int32_t t) { done_[{v.node, v.index}] = t; }

int32_t Lowering::temp(const std::string& name, int32_t like) {
  return m_.add_like(name, like, m_.tensors[size_t(like)].type);
}

void Lowering::emit(fb::BuiltinOperator code, std::vector<int32_t> inputs, std::vector<int32_t> outputs,
                    LiteOptions options, const std::string& source) {
  m_.add_op({.code = code, .inputs = std::move(inputs), .outputs = std::move(outputs), .options = std::move(options),
             .source = source});
}

void Lowering::lower_node(int id) {
  const Node& n = g_.node(id);
  DF_CHECK(!lowering_.count(id), "[lite::convert] cycle through node '", n.name, "'");
  lowering_.insert(id);
  const auto& table = lower_table();
  auto it = table.find(n.op);
  if (it == table.end()) {
    unsupported_.push_back("'" + n.name + "' (" + n.def().name + ")");
    for (size_t i = 0; i < n.outputs.size(); ++i) output({id, int(i)});  // keep going to list them all
    return;
  }
  NodeLowering nl{n, id, *this};
  try {
    it->second(nl);
  } catch (const Unsupported& e) {
    unsupported_.push_back("'" + n.name + "' (" + n.def().name + "): " + e.what());
    for (size_t i = 0; i < n.outputs.size(); ++i) output({id, int(i)});
  }
}

LiteModel Lowering::run(const LowerOptions& options) {
  for (size_t i = 0; i < g_.inputs.size(); ++i) {
    const int id = g_.inputs[i];
    int32_t t = output({id, 0});
    m_.inputs.push_back(t);
    m_.input_names.push_back(i < options.input_names.size() ? options.input_names[i] : g_.node(id).name);
  }
  for (size_t i = 0; i < g_.outputs.size(); ++i) {
    int32_t t = tensor(g_.outputs[i]);
    // An output that is an input or a constant, or one output twice, needs an op of its own.
    const bool taken = std::find(m_.outputs.begin(), m_.outputs.end(), t) != m_.outputs.end();
    if (m_.producer(t) < 0 || taken) {
      int32_t copy = temp(m_.tensors[size_t(t)].name + "_out", t);
      emit(fb::BuiltinOperator::RESHAPE, {t, ints(std::vector<int64_t>(m_.tensors[size_t(t)].shape.begin(),
                                                                     m_.tensors[size_t(t)].shape.end()), "shape")},
           {copy}, {.new_shape = m_.tensors[size_t(t)].shape}, "output");
      t = copy;
    }
    m_.outputs.push_back(t);
    m_.output_names.push_back(i < options.output_names.size() ? options.output_names[i]
                                                              : "output_" + std::to_string(i));
  }
  if (!unsupported_.empty()) {
    std::string list;
    for (const auto& u : unsupported_) list += "\n  " + u;
    fail("[lite::convert] ", unsupported_.size(), " op(s) have no TFLite builtin mapping (nothing falls back to ",
         "another runtime):", list);
  }
  return std::move(m_);
}

}  // namespace detail

LiteModel lower_to_lite(const Graph& g, const LowerOptions& options) {
  std::shared_ptr<Graph> prepared = prepare_for_lite(g);
  detail::Lowering l(*prepared);
  return l.run(options);
}

std::vector<std::string> lowerable_ops() {
  std::vector<std::string> ops;
  for (const auto& [id, fn] : detail::lower_table()) ops.push_back(op_def(id).name);
  for (OpId id : {OpId::Const, OpId::Placeholder, OpId::ReadVariable, OpId::Identity, OpId::StopGradient})
    ops.push_back(op_def(id).name);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

}  // namespace deepflow::quantize
