// SPDX-License-Identifier: Apache-2.0
// The TensorFlow export table, part 2: shape, layout and indexing ops, and the run-time
// shape ops (broadcast_like, reshape_like: a TF Shape of the other input). Index inputs
// (shapes, perms, paddings, axes) are int32 Consts, as TensorFlow's Python API writes them.
#include "deepflow/core/error.h"
#include "deepflow/tf/export_internal.h"

namespace deepflow::tf::detail {
namespace {

namespace pb = ::tensorflow;

// --- shape and layout ---

pb::NodeDef* with_index(NodeExport& e, const char* op, const std::vector<int64_t>& v, const char* what,
                        const char* index_attr) {
  pb::NodeDef* n = e.add(op, {e.in[0], e.w.ints(v, e.node.name + "/" + what)}, e.in_type(0).dtype);
  set_type(n, index_attr, DType::Int32);
  return n;
}

void reshape(NodeExport& e) {
  e.out = {with_index(e, "Reshape", e.attr_ints("shape"), "shape", "Tshape")->name() + ":output:0"};
}

void transpose(NodeExport& e) {
  std::vector<int64_t> perm = e.attr_ints("perm");
  if (perm.empty())
    for (int k = e.in_type(0).shape.rank() - 1; k >= 0; --k) perm.push_back(k);
  e.out = {with_index(e, "Transpose", perm, "perm", "Tperm")->name() + ":y:0"};
}

void concat(NodeExport& e) {
  if (e.in.size() == 1) {
    e.out = {e.add("Identity", {e.in[0]}, e.in_type(0).dtype)->name() + ":output:0"};
    return;
  }
  std::vector<std::string> ins = e.in;
  ins.push_back(e.w.scalar(double(e.attr_int("axis")), DType::Int32, e.node.name + "/axis"));
  pb::NodeDef* n = e.add("ConcatV2", ins, e.in_type(0).dtype);
  set_int(n, "N", int64_t(e.in.size()));
  set_type(n, "Tidx", DType::Int32);
  e.out = {n->name() + ":output:0"};
}

void slice(NodeExport& e) {
  pb::NodeDef* n = e.add("Slice", {e.in[0], e.w.ints(e.attr_ints("begin"), e.node.name + "/begin"),
                                   e.w.ints(e.attr_ints("size"), e.node.name + "/size")},
                         e.in_type(0).dtype);
  set_type(n, "Index", DType::Int32);
  e.out = {n->name() + ":output:0"};
}

void strided_slice(NodeExport& e) {
  const auto& begin = e.attr_ints("begin");
  std::vector<int64_t> strides = e.attr_ints("strides");
  if (strides.empty()) strides.assign(begin.size(), 1);
  pb::NodeDef* n = e.add("StridedSlice", {e.in[0], e.w.ints(begin, e.node.name + "/begin"),
                                          e.w.ints(e.attr_ints("end"), e.node.name + "/end"),
                                          e.w.ints(strides, e.node.name + "/strides")},
                         e.in_type(0).dtype);
  set_type(n, "Index", DType::Int32);
  for (const char* m : {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
    set_int(n, m, e.attr_int(m));
  e.out = {n->name() + ":output:0"};
}

void pad(NodeExport& e) {
  const auto& p = e.attr_ints("paddings");
  const DType t = e.in_type(0).dtype;
  Tensor paddings(Shape{int64_t(p.size() / 2), 2}, DType::Int32);
  for (size_t i = 0; i < p.size(); ++i) paddings.data<int32_t>()[i] = int32_t(p[i]);
  std::vector<std::string> ins{e.in[0], e.w.constant(paddings, e.node.name + "/paddings")};
  const double value = e.attr_float("constant_value");
  if (value != 0) ins.push_back(e.w.scalar(value, t, e.node.name + "/constant_values"));
  pb::NodeDef* n = e.add(value != 0 ? "PadV2" : "Pad", ins, t);
  set_type(n, "Tpaddings", DType::Int32);
  e.out = {n->name() + ":output:0"};
}

void tile(NodeExport& e) {
  e.out = {with_index(e, "Tile", e.attr_ints("multiples"), "multiples", "Tmultiples")->name() + ":output:0"};
}
void broadcast_to(NodeExport& e) {
  e.out = {with_index(e, "BroadcastTo", e.attr_ints("shape"), "shape", "Tidx")->name() + ":output:0"};
}
void reverse(NodeExport& e) {
  e.out = {with_index(e, "ReverseV2", e.attr_ints("axes"), "axis", "Tidx")->name() + ":output:0"};
}

// --- indexing ---

void gather(NodeExport& e) {
  const std::string axis = e.w.scalar(double(e.attr_int("axis")), DType::Int32, e.node.name + "/axis");
  pb::NodeDef* n = e.add("GatherV2", {e.in[0], e.in[1], axis}, std::nullopt);
  set_type(n, "Tparams", e.in_type(0).dtype);
  set_type(n, "Tindices", e.in_type(1).dtype);
  set_type(n, "Taxis", DType::Int32);
  set_int(n, "batch_dims", e.attr_int("batch_dims"));
  e.out = {n->name() + ":output:0"};
}

void gather_nd(NodeExport& e) {
  pb::NodeDef* n = e.add("GatherNd", {e.in[0], e.in[1]}, std::nullopt);
  set_type(n, "Tparams", e.in_type(0).dtype);
  set_type(n, "Tindices", e.in_type(1).dtype);
  e.out = {n->name() + ":output:0"};
}

// --- run-time shapes ---

std::string shape_of(NodeExport& e, int i) {
  pb::NodeDef* n = e.add("Shape", {e.in[size_t(i)]}, e.in_type(i).dtype);
  set_type(n, "out_type", DType::Int32);
  return n->name() + ":output:0";
}

void fill_like(NodeExport& e) {
  const bool ones = e.node.op == OpId::OnesLike;
  e.out = {e.add(ones ? "OnesLike" : "ZerosLike", {e.in[0]}, e.in_type(0).dtype)->name() + ":y:0"};
}

void broadcast_like(NodeExport& e) {
  pb::NodeDef* n = e.add("BroadcastTo", {e.in[0], shape_of(e, 1)}, e.in_type(0).dtype);
  set_type(n, "Tidx", DType::Int32);
  e.out = {n->name() + ":output:0"};
}

void reshape_like(NodeExport& e) {
  pb::NodeDef* n = e.add("Reshape", {e.in[0], shape_of(e, 1)}, e.in_type(0).dtype);
  set_type(n, "Tshape", DType::Int32);
  e.out = {n->name() + ":output:0"};
}

void size(NodeExport& e) {
  pb::NodeDef* n = e.add("Size", {e.in[0]}, e.in_type(0).dtype);
  set_type(n, "out_type", e.attr_dtype("out_type"));
  e.out = {n->name() + ":output:0"};
}

}  // namespace

void add_array_ops(std::map<OpId, ExportFn>& t) {
  t[OpId::Reshape] = reshape;
  t[OpId::Transpose] = transpose;
  t[OpId::Concat] = concat;
  t[OpId::Slice] = slice;
  t[OpId::StridedSlice] = strided_slice;
  t[OpId::Pad] = pad;
  t[OpId::Tile] = tile;
  t[OpId::BroadcastTo] = broadcast_to;
  t[OpId::Reverse] = reverse;
  t[OpId::Gather] = gather;
  t[OpId::GatherNd] = gather_nd;
  t[OpId::ZerosLike] = fill_like;
  t[OpId::OnesLike] = fill_like;
  t[OpId::BroadcastLike] = broadcast_like;
  t[OpId::ReshapeLike] = reshape_like;
  t[OpId::Size] = size;
}

}  // namespace deepflow::tf::detail
