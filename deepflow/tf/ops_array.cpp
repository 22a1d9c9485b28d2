// SPDX-License-Identifier: Apache-2.0
// TensorFlow's array ops: shapes, reshapes, slicing, concatenation, padding, gathers.
// Shape-carrying inputs (Reshape's shape, Pad's paddings, ...) must be known at import
// time; a Shape of a tensor with dynamic dims gives a partly known Value, which
// StridedSlice, Slice, GatherV2, Pack, ConcatV2, Cast and Identity carry on, so the common
// `Shape -> StridedSlice -> Pack -> Reshape` chains of Keras exports import with -1 for
// the dims only known when the graph runs.
#include <string>

#include "deepflow/core/error.h"
#include "deepflow/ops/op.h"
#include "deepflow/tf/op_importer.h"

namespace deepflow::tf {
namespace {

using Sources = std::vector<std::pair<Tensor, int>>;

// A shape vector (or scalar) as a Value: concrete when every element is known.
Value shape_value(const std::vector<int64_t>& elems, bool scalar, DType dtype, Sources sources = {}) {
  bool known = true;
  for (int64_t e : elems) known &= e >= 0;
  if (known) {
    BuildScopeGuard eager(nullptr);  // a constant, even while a signature is traced
    return cast(constant(elems, scalar ? Shape{} : Shape{int64_t(elems.size())}), dtype);
  }
  Value v;
  v.partial = elems;
  v.scalar = scalar;
  v.partial_dtype = dtype;
  sources.resize(elems.size());
  v.sources = std::move(sources);
  return v;
}

// Element i's source (Value::sources), or none.
std::pair<Tensor, int> source_of(const Value& v, size_t i) {
  return i < v.sources.size() ? v.sources[i] : std::pair<Tensor, int>{Tensor(), -1};
}

// Runs an index-selecting op eagerly on [0, n) to learn which elements of a partial
// vector it picks (the op's own semantics, so masks and negative indices match TF's).
std::vector<int64_t> picked(int64_t n, const std::function<Tensor(const Tensor&)>& op, bool* scalar) {
  BuildScopeGuard eager(nullptr);
  Tensor idx = op(arange(0, double(n), 1, DType::Int64));
  *scalar = idx.rank() == 0;
  return idx.to_vector<int64_t>();
}
Value pick(const Value& v, const std::vector<int64_t>& idx, bool scalar) {
  std::vector<int64_t> out;
  Sources src;
  for (int64_t i : idx) {
    out.push_back((*v.partial)[size_t(i)]);
    src.push_back(source_of(v, size_t(i)));
  }
  return shape_value(out, scalar, DType::Int32, src);
}

Values import_identity(NodeContext& c) { return {c.value(0)}; }
Values import_identity_n(NodeContext& c) {
  Values out;
  for (size_t i = 0; i < c.num_inputs(); ++i) out.push_back(c.value(i));
  return out;
}
Values import_stop_gradient(NodeContext& c) { return {stop_gradient(c.input(0))}; }
Values import_const(NodeContext& c) { return {c.attr_tensor("value")}; }

Values import_shape(NodeContext& c) {
  Tensor x = c.input(0);
  const Shape& s = x.shape();
  Sources src;
  for (int i = 0; i < s.rank(); ++i) src.emplace_back(x, i);
  return {shape_value(std::vector<int64_t>(s.begin(), s.end()), false, c.attr_type("out_type"), src)};
}
Values import_size(NodeContext& c) {
  const Shape& s = c.input(0).shape();
  int64_t n = 1;
  for (int64_t d : s) n = (d < 0 || n < 0) ? -1 : n * d;
  return {shape_value({n}, true, c.attr_type("out_type"))};
}
Values import_rank(NodeContext& c) {
  BuildScopeGuard eager(nullptr);
  return {scalar(double(c.input(0).rank()), DType::Int32)};
}

Values import_reshape(NodeContext& c) {
  auto target = c.shape_input(1);
  DF_CHECK(target, "[tf::import] ", c.describe(), ": the target shape must be known at import time or come from ",
           "Shape and integer ops on it");
  std::vector<int64_t> dims = *target;
  int unknown = 0;
  for (int64_t d : dims) unknown += d < 0;
  if (unknown <= 1) return {reshape(c.input(0), Shape(dims))};
  // Several dims known only at run time: each must be the size of some tensor's dim.
  for (size_t i = 0; i < dims.size(); ++i) {
    DF_CHECK(dims[i] >= 0 || (i < c.value(1).sources.size() && c.value(1).sources[i].first.defined()), "[tf::import] ",
             c.describe(), ": the target shape has ", unknown, " dims known only when the graph runs, and dim ", i,
             " comes from no tensor's shape");
  }
  return {dynamic_reshape(c, c.input(0), dims, c.value(1).sources)};
}

Values import_expand_dims(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t axis = c.constant_input(1).item<int64_t>();
  if (axis < 0) axis += x.rank() + 1;
  return {expand_dims(x, axis)};
}

Values import_squeeze(NodeContext& c) {
  Tensor x = c.input(0);
  Axes axes;
  for (int64_t a : c.attr_ints("squeeze_dims")) axes.push_back(tf_axis(c, a, x.rank()));
  return {squeeze(x, axes)};
}

Values import_transpose(NodeContext& c) {
  std::vector<int64_t> perm = c.constant_ints(1);
  return {transpose(c.input(0), Axes(perm.begin(), perm.end()))};
}

Values import_concat(NodeContext& c, size_t first, size_t count, size_t axis_input) {
  bool partial = false;
  for (size_t i = first; i < first + count; ++i) partial |= c.value(i).partial.has_value();
  if (partial) {
    std::vector<int64_t> elems;
    Sources src;
    for (size_t i = first; i < first + count; ++i) {
      auto p = c.shape_input(i);
      DF_CHECK(p, "[tf::import] ", c.describe(), ": input ", i, " of a shape concatenation must be known");
      for (size_t k = 0; k < p->size(); ++k) src.push_back(source_of(c.value(i), k));
      elems.insert(elems.end(), p->begin(), p->end());
    }
    return {shape_value(elems, false, DType::Int32, src)};
  }
  std::vector<Tensor> xs;
  for (size_t i = first; i < first + count; ++i) xs.push_back(c.input(i));
  return {concat(xs, tf_axis(c, c.constant_input(axis_input).item<int64_t>(), xs[0].rank()))};
}
Values import_concat_v2(NodeContext& c) { return import_concat(c, 0, c.num_inputs() - 1, c.num_inputs() - 1); }
Values import_concat_v1(NodeContext& c) { return import_concat(c, 1, c.num_inputs() - 1, 0); }

Values import_pack(NodeContext& c) {
  bool partial = false;
  for (size_t i = 0; i < c.num_inputs(); ++i) partial |= c.value(i).partial.has_value();
  if (partial) {
    std::vector<int64_t> elems;
    Sources src;
    for (size_t i = 0; i < c.num_inputs(); ++i) {
      auto p = c.shape_input(i);
      DF_CHECK(p && p->size() == 1, "[tf::import] ", c.describe(), ": input ", i, " of a shape Pack must be a scalar");
      elems.push_back((*p)[0]);
      src.push_back(source_of(c.value(i), 0));
    }
    return {shape_value(elems, false, DType::Int32, src)};
  }
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.num_inputs(); ++i) xs.push_back(c.input(i));
  return {stack(xs, tf_axis(c, c.attr_int("axis"), xs[0].rank() + 1))};
}

Values import_unpack(NodeContext& c) {
  Tensor x = c.input(0);
  const int64_t axis = tf_axis(c, c.attr_int("axis"), x.rank());
  Values out;
  for (const Tensor& t : split(x, c.attr_int("num"), axis)) out.push_back(squeeze(t, {axis}));
  return out;
}

Values import_split(NodeContext& c) {
  Tensor x = c.input(1);
  Values out;
  for (const Tensor& t : split(x, c.attr_int("num_split"), tf_axis(c, c.constant_input(0).item<int64_t>(), x.rank())))
    out.push_back(t);
  return out;
}

Values import_split_v(NodeContext& c) {
  Tensor x = c.input(0);
  const int64_t axis = tf_axis(c, c.constant_input(2).item<int64_t>(), x.rank());
  std::vector<int64_t> sizes = c.constant_ints(1);
  int64_t known = 0, unknown = -1;
  for (size_t i = 0; i < sizes.size(); ++i) (sizes[i] < 0 ? unknown = int64_t(i) : known += sizes[i]);
  if (unknown >= 0) sizes[size_t(unknown)] = x.dim(int(axis)) - known;
  Values out;
  for (const Tensor& t : split(x, sizes, axis)) out.push_back(t);
  return out;
}

Values import_strided_slice(NodeContext& c) {
  std::vector<int64_t> b = c.constant_ints(1), e = c.constant_ints(2), s = c.constant_ints(3);
  auto op = [&](const Tensor& x) {
    return strided_slice(x, Axes(b.begin(), b.end()), Axes(e.begin(), e.end()), Axes(s.begin(), s.end()),
                         c.attr_int("begin_mask"), c.attr_int("end_mask"), c.attr_int("ellipsis_mask"),
                         c.attr_int("new_axis_mask"), c.attr_int("shrink_axis_mask"));
  };
  const Value& v = c.value(0);
  if (v.partial && !v.scalar) {
    bool scalar = false;
    std::vector<int64_t> idx = picked(int64_t(v.partial->size()), op, &scalar);
    return {pick(v, idx, scalar)};
  }
  return {op(c.input(0))};
}

Values import_slice(NodeContext& c) {
  std::vector<int64_t> b = c.constant_ints(1), n = c.constant_ints(2);
  auto op = [&](const Tensor& x) { return slice(x, Axes(b.begin(), b.end()), Axes(n.begin(), n.end())); };
  const Value& v = c.value(0);
  if (v.partial && !v.scalar) {
    bool scalar = false;
    return {pick(v, picked(int64_t(v.partial->size()), op, &scalar), scalar)};
  }
  return {op(c.input(0))};
}

Values import_gather_v2(NodeContext& c) {
  const Value& v = c.value(0);
  const int64_t batch_dims = c.attr_int("batch_dims");
  if (v.partial && !v.scalar) {
    Tensor idx = c.constant_input(1);
    bool scalar = false;
    auto op = [&](const Tensor& x) { return gather(x, idx, 0); };
    return {pick(v, picked(int64_t(v.partial->size()), op, &scalar), scalar)};
  }
  Tensor x = c.input(0);
  return {gather(x, c.input(1), tf_axis(c, c.constant_input(2).item<int64_t>(), x.rank()), batch_dims)};
}
Values import_gather_v1(NodeContext& c) { return {gather(c.input(0), c.input(1), 0)}; }
Values import_gather_nd(NodeContext& c) { return {gather_nd(c.input(0), c.input(1))}; }

Values import_pad(NodeContext& c, const std::string& mode, double value) {
  Tensor x = c.input(0);
  std::vector<int64_t> p = c.constant_ints(1);
  DF_CHECK(int64_t(p.size()) == 2 * x.rank(), "[tf::import] ", c.describe(), ": paddings must be [", x.rank(),
           ", 2], got ", p.size(), " values");
  std::vector<std::pair<int64_t, int64_t>> pads;
  for (size_t i = 0; i < p.size(); i += 2) pads.emplace_back(p[i], p[i + 1]);
  return {pad(x, pads, mode, value)};
}
Values import_pad_v1(NodeContext& c) { return import_pad(c, "CONSTANT", 0); }
Values import_pad_v2(NodeContext& c) { return import_pad(c, "CONSTANT", c.constant_input(2).item<double>()); }
Values import_mirror_pad(NodeContext& c) { return import_pad(c, c.attr_string("mode"), 0); }

Values import_tile(NodeContext& c) {
  Tensor x = c.input(0);
  const Value& mv = c.value(1);
  if (mv.partial) {
    // Multiples known only at run time tile dims of size 1: a broadcast to that size.
    std::vector<int64_t> dims;
    Sources src;
    for (size_t i = 0; i < mv.partial->size(); ++i) {
      const int64_t m = (*mv.partial)[i];
      DF_CHECK(m >= 0 || x.dim(int(i)) == 1, "[tf::import] ", c.describe(), ": a multiple known only at run time ",
               "must tile a dim of size 1, got ", x.shape());
      dims.push_back(m < 0 ? -1 : m * x.dim(int(i)));
      src.push_back(source_of(mv, i));
    }
    return {broadcast_like(x, dynamic_zeros(c, dims, src, DType::Float32))};
  }
  std::vector<int64_t> m = c.constant_ints(1);
  return {tile(x, Axes(m.begin(), m.end()))};
}

// A tensor of shape input `i` (known, or partly known from Shape) with x broadcast into it.
Tensor broadcast_into(NodeContext& c, const Tensor& x, size_t i) {
  auto dims = c.shape_input(i);
  DF_CHECK(dims, "[tf::import] ", c.describe(), ": the shape must be known at import time or come from Shape");
  bool known = true;
  for (int64_t d : *dims) known &= d >= 0;
  if (known) return broadcast_to(x, Shape(*dims));
  return broadcast_like(x, dynamic_zeros(c, *dims, c.value(i).sources, DType::Float32));
}
Values import_fill(NodeContext& c) { return {broadcast_into(c, c.input(1), 0)}; }
Values import_broadcast_to(NodeContext& c) { return {broadcast_into(c, c.input(0), 1)}; }

Values import_range(NodeContext& c) {
  Tensor start = c.constant_input(0);
  return {arange(start.item<double>(), c.constant_input(1).item<double>(), c.constant_input(2).item<double>(),
                 c.attr_type("Tidx"))};
}

Values import_one_hot(NodeContext& c) {
  Tensor on = c.constant_input(2), off = c.constant_input(3);
  return {one_hot(c.input(0), c.constant_input(1).item<int64_t>(), on.item<double>(), off.item<double>(),
                  c.attr_int("axis"), on.dtype())};
}

Values import_top_k(NodeContext& c) {
  auto [values, indices] = top_k(c.input(0), c.constant_input(1).item<int64_t>(), c.attr_bool("sorted"));
  return {values, cast(indices, DType::Int32)};
}

Values import_zeros_like(NodeContext& c) { return {zeros_like(c.input(0))}; }
Values import_ones_like(NodeContext& c) { return {ones_like(c.input(0))}; }

Values import_reverse(NodeContext& c) {
  Tensor x = c.input(0);
  Axes axes;
  for (int64_t a : c.constant_ints(1)) axes.push_back(tf_axis(c, a, x.rank()));
  return {reverse(x, axes)};
}

Values import_ensure_shape(NodeContext& c) { return {c.value(0)}; }

// Cast of a partial shape keeps it partial (int32 <-> int64 in Keras's shape arithmetic).
Values import_cast(NodeContext& c) {
  const Value& v = c.value(0);
  if (v.partial) return {shape_value(*v.partial, v.scalar, c.attr_type("DstT"), v.sources)};
  return {cast(c.input(0), c.attr_type("DstT"))};
}

}  // namespace

DF_TF_OP("Const", import_const)
DF_TF_OP("Identity", import_identity)
DF_TF_OP("Snapshot", import_identity)
DF_TF_OP("PreventGradient", import_identity)
DF_TF_OP("EnsureShape", import_ensure_shape)
DF_TF_OP("IdentityN", import_identity_n)
DF_TF_OP("StopGradient", import_stop_gradient)
DF_TF_OP("Shape", import_shape)
DF_TF_OP("Size", import_size)
DF_TF_OP("Rank", import_rank)
DF_TF_OP("Reshape", import_reshape)
DF_TF_OP("ExpandDims", import_expand_dims)
DF_TF_OP("Squeeze", import_squeeze)
DF_TF_OP("Transpose", import_transpose)
DF_TF_OP("ConcatV2", import_concat_v2)
DF_TF_OP("Concat", import_concat_v1)
DF_TF_OP("Pack", import_pack)
DF_TF_OP("Unpack", import_unpack)
DF_TF_OP("Split", import_split)
DF_TF_OP("SplitV", import_split_v)
DF_TF_OP("StridedSlice", import_strided_slice)
DF_TF_OP("Slice", import_slice)
DF_TF_OP("GatherV2", import_gather_v2)
DF_TF_OP("Gather", import_gather_v1)
DF_TF_OP("GatherNd", import_gather_nd)
DF_TF_OP("Pad", import_pad_v1)
DF_TF_OP("PadV2", import_pad_v2)
DF_TF_OP("MirrorPad", import_mirror_pad)
DF_TF_OP("Tile", import_tile)
DF_TF_OP("Fill", import_fill)
DF_TF_OP("BroadcastTo", import_broadcast_to)
DF_TF_OP("Range", import_range)
DF_TF_OP("OneHot", import_one_hot)
DF_TF_OP("TopKV2", import_top_k)
DF_TF_OP("ZerosLike", import_zeros_like)
DF_TF_OP("OnesLike", import_ones_like)
DF_TF_OP("ReverseV2", import_reverse)
DF_TF_OP("Cast", import_cast)

}  // namespace deepflow::tf
