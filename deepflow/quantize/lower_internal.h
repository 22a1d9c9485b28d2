// SPDX-License-Identifier: Apache-2.0
// Internal to the lowering (lower.cpp, lower_ops.cpp): the state of one lowering and the
// per-op table that turns a deepflow node into TFLite operators.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "deepflow/graph/graph.h"
#include "deepflow/ops/op.h"
#include "deepflow/quantize/lite_model.h"
#include "deepflow/quantize/lower.h"

namespace deepflow::quantize::detail {

/// Thrown by a lowering function for a node it cannot map (collected, then reported).
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

fb::TensorType lite_type(DType d, const std::string& where);
std::vector<int32_t> lite_shape(const Shape& s);

class Lowering {
 public:
  explicit Lowering(const Graph& g);
  LiteModel run(const LowerOptions& options);

  const Graph& graph() const { return g_; }
  LiteModel& model() { return m_; }
  /// The TFLite tensor of a value, lowering its producer first when needed.
  int32_t tensor(ValueRef v);
  /// The (new) activation tensor of one of the current node's outputs.
  int32_t output(ValueRef v);
  /// Makes value v read tensor t (an op whose result is another op's tensor).
  void set_output(ValueRef v, int32_t t);
  /// An activation tensor shaped like `like`.
  int32_t temp(const std::string& name, int32_t like);
  int32_t constant_tensor(const Tensor& value, const std::string& name);
  int32_t ints(const std::vector<int64_t>& v, const std::string& name);
  void emit(fb::BuiltinOperator code, std::vector<int32_t> inputs, std::vector<int32_t> outputs, LiteOptions options,
            const std::string& source);

  /// Uses of a value by nodes and graph outputs.
  int uses(ValueRef v) const;
  const Node& producer(ValueRef v) const;
  /// A const node's value (after preparation, every constant expression is one).
  std::optional<Tensor> constant(ValueRef v) const;
  ValueRef skip_identities(ValueRef v) const;

 private:
  void lower_node(int id);
  int32_t new_tensor(ValueRef v);

  const Graph& g_;
  LiteModel m_;
  std::map<std::pair<int, int>, int32_t> done_;
  std::map<std::pair<int, int>, int> uses_;
  std::set<int> lowering_;
  std::vector<std::string> unsupported_;
};

/// One node being lowered.
struct NodeLowering {
  const Node& node;
  int id;
  Lowering& l;

  ValueRef in_value(int i) const { return node.inputs.at(size_t(i)); }
  int32_t in(int i) const { return l.tensor(in_value(i)); }
  int32_t out(int i = 0) const { return l.output({id, i}); }
  const TensorType& in_type(int i) const { return l.graph().type(in_value(i)); }
  const TensorType& out_type(int i = 0) const { return node.outputs.at(size_t(i)); }
  std::optional<Tensor> in_constant(int i) const { return l.constant(l.skip_identities(in_value(i))); }
  void emit(fb::BuiltinOperator code, std::vector<int32_t> inputs, std::vector<int32_t> outputs,
            LiteOptions options = {}) const {
    l.emit(code, std::move(inputs), std::move(outputs), std::move(options), node.name);
  }
  bool attr_bool(const char* n) const;
  int64_t attr_int(const char* n) const;
  double attr_float(const char* n) const;
  const std::string& attr_string(const char* n) const;
  DType attr_dtype(const char* n) const;
  const std::vector<int64_t>& attr_ints(const char* n) const;
};

using LowerFn = void (*)(NodeLowering& n);
/// The per-op table (lower_ops.cpp); ops absent here are reported as unsupported.
const std::map<OpId, LowerFn>& lower_table();

}  // namespace deepflow::quantize::detail
