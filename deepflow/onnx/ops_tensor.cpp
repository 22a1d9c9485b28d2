// SPDX-License-Identifier: Apache-2.0
// ONNX shape, layout and indexing ops: Reshape, Flatten, Transpose, Concat, Split, Slice,
// Squeeze/Unsqueeze, Gather(Elements/ND), Expand, Tile, Pad, Shape, Size,
// ConstantOfShape, Range, OneHot, TopK, ArgMax/ArgMin, DepthToSpace/SpaceToDepth, Trilu,
// CumSum, EyeLike.
//
// Inputs that ONNX passes as tensors and deepflow takes as attributes (shapes, axes,
// starts/ends, pads, repeats, k) come from constant_input(); tensors made from shapes
// alone are computed at import (BuildScopeGuard(nullptr)) and enter the graph as
// constants.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/onnx/import_internal.h"
#include "deepflow/onnx/op_importer.h"
#include "deepflow/ops/op.h"

namespace deepflow::onnx {
namespace {

constexpr const char* kPrefix = "[onnx::import] ";

Axes norm_axes(NodeContext& c, Axes axes, int64_t rank) {
  for (auto& a : axes) a = onnx_axis(c, a, rank);
  return axes;
}
std::vector<int64_t> ints_of(const Tensor& t) { return t.to_vector<int64_t>(); }

// --- reshape family ---

// A shape value partly known at import time (Shape of a dynamic batch, see
// import_partial.cpp) may have one unknown element: it becomes -1, which is exact, as the
// run-time element count then fixes the one value the element can have.
TensorList import_reshape(NodeContext& c) {
  Tensor x = c.input(0);
  const detail::PartialValue* partial = detail::partial_input(c, 1);
  std::vector<int64_t> s = partial ? *c.partial_shape_input(1) : ints_of(c.constant_input(1));
  const bool allowzero = c.attr_int("allowzero", 0) != 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (partial && !partial->elems[i].value) continue;
    if (s[i] == 0 && !allowzero) {
      DF_CHECK(int(i) < x.rank(), kPrefix, c.describe(), ": shape dim ", i, " is 0 (copy) but the input ",
               x.shape().to_string(), " has rank ", x.rank());
      s[i] = x.shape()[int(i)];
    }
  }
  int64_t unknown = std::count(s.begin(), s.end(), int64_t(-1));
  if (partial && unknown > 1) {
    // A literal -1 next to unknown elements: when the unknown elements are exactly the
    // input's dynamic dims (the same dims, by where they came from), they cancel out of the
    // element count and the -1 is the ratio of the known dims.
    std::vector<std::pair<uint64_t, int>> in_dyn, out_dyn;
    int64_t in_known = 1, out_known = 1;
    for (int i = 0; i < x.rank(); ++i) {
      if (x.shape()[i] < 0) in_dyn.push_back(detail::dim_root(c, x.id(), i));
      else in_known *= x.shape()[i];
    }
    size_t literal = s.size();
    bool matched = true;
    for (size_t i = 0; i < s.size(); ++i) {
      const auto& e = partial->elems[i];
      if (!e.value) {
        if (e.src == 0) matched = false;
        out_dyn.emplace_back(e.src, e.dim);
      } else if (s[i] == -1) {
        literal = i;
      } else {
        out_known *= s[i];
      }
    }
    std::sort(in_dyn.begin(), in_dyn.end());
    std::sort(out_dyn.begin(), out_dyn.end());
    if (matched && literal < s.size() && in_dyn == out_dyn && out_known != 0 && in_known % out_known == 0) {
      s[literal] = in_known / out_known;
      unknown -= 1;
    }
  }
  if (partial) {
    DF_CHECK(unknown <= 1, kPrefix, c.describe(), ": the shape ", partial->to_string(), " (as reshape takes it: ",
             Shape(s).to_string(), ") of the input ", x.shape().to_string(),
             " has more than one dim unknown at import time or -1; deepflow's reshape infers at most one");
    int64_t known_product = 1;
    for (int64_t d : s)
      if (d >= 0) known_product *= d;
    DF_CHECK(unknown == 0 || known_product != 0, kPrefix, c.describe(), ": the shape ", partial->to_string(),
             " has an unknown dim next to a 0 dim, which leaves it undetermined");
    Tensor y = reshape(x, Shape(s));
    for (size_t i = 0; i < s.size(); ++i) {
      const auto& e = partial->elems[i];
      if (!e.value && e.src != 0 && y.is_symbolic()) detail::alias_dim(c, y.id(), int(i), e.src, e.dim);
    }
    return {y};
  }
  DF_CHECK(unknown <= 1, kPrefix, c.describe(), ": more than one -1 in the shape");
  return {reshape(x, Shape(s))};
}

TensorList import_flatten(NodeContext& c) {
  Tensor x = c.input(0);
  const int r = x.rank();
  int64_t axis = c.attr_int("axis", 1);
  DF_CHECK(axis >= -r && axis <= r, kPrefix, c.describe(), ": axis ", axis, " out of range for rank ", r);
  if (axis < 0) axis += r;
  const Shape& s = x.shape();
  int64_t outer = 1;
  bool outer_known = true;
  for (int i = 0; i < axis; ++i) {
    if (s[i] < 0) outer_known = false;
    else outer *= s[i];
  }
  int64_t inner = 1;
  bool inner_known = true;
  for (int i = int(axis); i < r; ++i) {
    if (s[i] < 0) inner_known = false;
    else inner *= s[i];
  }
  DF_CHECK(outer_known || inner_known, kPrefix, c.describe(), ": cannot flatten ", s.to_string(), " at axis ", axis);
  return {reshape(x, {outer_known ? outer : -1, inner_known ? inner : -1})};
}

TensorList import_transpose(NodeContext& c) {
  Tensor x = c.input(0);
  Tensor y = transpose(x, c.attr_ints("perm"));
  // Dynamic dims move, so a partial shape naming them still matches (see import_reshape).
  const Axes perm = c.attr_ints("perm");
  for (int i = 0; i < y.rank() && y.is_symbolic(); ++i) {
    const int from = perm.empty() ? y.rank() - 1 - i : int(perm[size_t(i)] < 0 ? perm[size_t(i)] + x.rank() : perm[size_t(i)]);
    if (y.shape()[i] < 0) detail::alias_dim(c, y.id(), i, x.id(), from);
  }
  return {y};
}

TensorList import_concat(NodeContext& c) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i)) xs.push_back(c.input(i));
  DF_CHECK(!xs.empty(), kPrefix, c.describe(), ": needs at least one input");
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 0), xs[0].rank());
  if (xs.size() == 1) return {identity(xs[0])};
  return {concat(xs, axis)};
}

TensorList do_split(NodeContext& c, const std::vector<int64_t>& sizes_in) {
  Tensor x = c.input(0);
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 0), x.rank());
  const int64_t n = int64_t(c.num_outputs());
  std::vector<int64_t> sizes = sizes_in;
  if (sizes.empty()) {
    const int64_t d = x.shape()[int(axis)];
    DF_CHECK(d >= 0, kPrefix, c.describe(), ": split of an unknown dim needs explicit sizes");
    DF_CHECK(d % n == 0, kPrefix, c.describe(), ": dim ", d, " does not split into ", n, " equal parts");
    return split(x, n, axis);
  }
  DF_CHECK(int64_t(sizes.size()) == n, kPrefix, c.describe(), ": ", sizes.size(), " split sizes for ", n, " outputs");
  return split(x, sizes, axis);
}
TensorList import_split_2(NodeContext& c) { return do_split(c, c.attr_ints("split")); }
TensorList import_split_13(NodeContext& c) {
  return do_split(c, c.has_input(1) ? ints_of(c.constant_input(1)) : std::vector<int64_t>{});
}

// ONNX Slice: starts/ends clamp to the dim, negative values count from the end, and a
// negative step walks backwards; expressed with strided_slice and explicit indices (end
// mask bits where a backward slice runs past index 0).
Tensor do_slice(NodeContext& c, const Tensor& x, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const int r = x.rank();
  DF_CHECK(starts.size() == ends.size(), kPrefix, c.describe(), ": starts and ends differ in length");
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  DF_CHECK(axes.size() == starts.size() && steps.size() == starts.size(), kPrefix, c.describe(),
           ": starts, ends, axes and steps differ in length");
  Axes begin(size_t(r), 0), end(size_t(r), 0), strides(size_t(r), 1);
  int64_t begin_mask = 0, end_mask = 0;
  for (int i = 0; i < r; ++i) {
    begin_mask |= int64_t(1) << i;
    end_mask |= int64_t(1) << i;
  }
  for (size_t j = 0; j < axes.size(); ++j) {
    const int64_t a = onnx_axis(c, axes[j], r);
    const int64_t d = x.shape()[int(a)];
    DF_CHECK(d >= 0, kPrefix, c.describe(), ": Slice along an unknown dim ", a);
    const int64_t step = steps[j];
    DF_CHECK(step != 0, kPrefix, c.describe(), ": step 0");
    const auto [s, e] = slice_bounds(starts[j], ends[j], step, d);
    begin_mask &= ~(int64_t(1) << a);
    end_mask &= ~(int64_t(1) << a);
    begin[size_t(a)] = s;
    strides[size_t(a)] = step;
    if (step < 0 && e < 0) {
      end_mask |= int64_t(1) << a;
    } else {
      end[size_t(a)] = e;
    }
    if (step < 0 && s < 0) {  // empty
      begin[size_t(a)] = 0;
      end[size_t(a)] = 0;
      strides[size_t(a)] = 1;
      end_mask &= ~(int64_t(1) << a);
    }
  }
  return strided_slice(x, begin, end, strides, begin_mask, end_mask);
}
TensorList import_slice_1(NodeContext& c) {
  return {do_slice(c, c.input(0), c.attr_ints("starts"), c.attr_ints("ends"), c.attr_ints("axes"), {})};
}
TensorList import_slice_10(NodeContext& c) {
  std::vector<int64_t> axes, steps;
  if (c.has_input(3)) axes = ints_of(c.constant_input(3));
  if (c.has_input(4)) steps = ints_of(c.constant_input(4));
  return {do_slice(c, c.input(0), ints_of(c.constant_input(1)), ints_of(c.constant_input(2)), axes, steps)};
}

Tensor do_squeeze(NodeContext& c, const Tensor& x, const Axes& axes) {
  if (axes.empty()) {
    Shape s = known_shape(c, x, "Squeeze without axes");
    Axes all;
    for (int i = 0; i < s.rank(); ++i)
      if (s[i] == 1) all.push_back(i);
    return all.empty() ? identity(x) : squeeze(x, all);
  }
  return squeeze(x, norm_axes(c, axes, x.rank()));
}
TensorList import_squeeze_1(NodeContext& c) { return {do_squeeze(c, c.input(0), c.attr_ints("axes"))}; }
TensorList import_squeeze_13(NodeContext& c) {
  return {do_squeeze(c, c.input(0), c.has_input(1) ? ints_of(c.constant_input(1)) : Axes{})};
}

// Axes refer to the output, whose rank is the input's plus the number of axes.
Tensor do_unsqueeze(NodeContext& c, const Tensor& x, Axes axes) {
  const int64_t out_rank = x.rank() + int64_t(axes.size());
  axes = norm_axes(c, axes, out_rank);
  std::sort(axes.begin(), axes.end());
  DF_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), kPrefix, c.describe(), ": repeated axes");
  Tensor y = x;
  for (int64_t a : axes) y = expand_dims(y, a);
  return axes.empty() ? identity(y) : y;
}
TensorList import_unsqueeze_1(NodeContext& c) { return {do_unsqueeze(c, c.input(0), c.attr_ints("axes"))}; }
TensorList import_unsqueeze_13(NodeContext& c) {
  return {do_unsqueeze(c, c.input(0), ints_of(c.constant_input(1)))};
}

// --- indexing ---

// Negative indices count from the end of the gathered dim.
Tensor wrap_indices(const Tensor& idx, int64_t dim) {
  Tensor i = idx;
  if (i.dtype() != DType::Int64 && i.dtype() != DType::Int32) i = cast(i, DType::Int64);
  if (dim < 0) return i;
  return where(less(i, scalar_like(i, 0)), i + scalar_like(i, double(dim)), i);
}

TensorList import_gather(NodeContext& c) {
  Tensor x = c.input(0);
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 0), x.rank());
  return {gather(x, wrap_indices(c.input(1), x.shape()[int(axis)]), axis)};
}

// The full coordinates of each element of an index tensor along `axis` of x: the index
// value on `axis`, the element's own coordinate on every other dim; [..., rank] int64,
// as gather_nd / scatter_nd take them (GatherElements and ScatterElements).
Tensor element_coordinates(NodeContext& c, const Tensor& x, const Tensor& indices, int64_t axis, const char* what) {
  const int r = x.rank();
  const Shape is = known_shape(c, indices, what);
  std::vector<Tensor> coords;
  for (int d = 0; d < r; ++d) {
    if (d == axis) {
      coords.push_back(cast(wrap_indices(indices, x.shape()[int(axis)]), DType::Int64));
      continue;
    }
    BuildScopeGuard eager(nullptr);  // the grids are constants
    Shape s(std::vector<int64_t>(size_t(r), 1));
    s[d] = is[d];
    coords.push_back(broadcast_to(reshape(arange(0, double(is[d]), 1, DType::Int64), s), is));
  }
  return stack(coords, -1);
}

TensorList import_gather_elements(NodeContext& c) {
  Tensor x = c.input(0);
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 0), x.rank());
  return {gather_nd(x, element_coordinates(c, x, c.input(1), axis, "GatherElements' indices"))};
}

// Scatter by replacement or addition: scatter_nd sums duplicates, so "none" selects the
// scattered values where any index lands (ONNX leaves duplicates undefined for "none").
Tensor scatter_into(NodeContext& c, const Tensor& data, const Tensor& idx, const Tensor& updates) {
  const std::string reduction = c.attr_string("reduction", "none");
  Shape ds = known_shape(c, data, "Scatter");
  Tensor scattered = scatter_nd(idx, updates, ds);
  if (reduction == "add") return data + scattered;
  if (reduction == "mul" || reduction == "max" || reduction == "min") {
    // One update row at a time (rows may repeat an index, and each must combine).
    Shape is = known_shape(c, idx, "ScatterND's indices");
    const int64_t q = is[is.rank() - 1];
    int64_t rows = 1;
    for (int d = 0; d + 1 < is.rank(); ++d) rows *= is[d];
    std::vector<int64_t> us{rows};
    for (int d = is.rank() - 1; d < updates.rank(); ++d) us.push_back(updates.shape()[d]);
    const Tensor idx2 = reshape(idx, {rows, 1, q});
    const Tensor upd2 = reshape(updates, Shape(us));
    Tensor y = data;
    for (int64_t k = 0; k < rows; ++k) {
      const Tensor ik = squeeze(slice(idx2, {k, 0, 0}, {1, 1, q}), {0});
      Axes b(us.size(), 0), sz(us.size(), -1);
      b[0] = k;
      sz[0] = 1;
      const Tensor uk = slice(upd2, b, sz);
      const Tensor hit = greater(scatter_nd(ik, ones_like(cast(uk, DType::Float32)), ds), scalar(0.0));
      const Tensor sk = scatter_nd(ik, uk, ds);
      const Tensor combined = reduction == "mul" ? y * sk : reduction == "max" ? maximum(y, sk) : minimum(y, sk);
      y = where(hit, combined, y);
    }
    return y;
  }
  DF_CHECK(reduction == "none", kPrefix, c.describe(), ": reduction '", reduction, "' is not supported");
  Tensor hit = greater(scatter_nd(idx, ones_like(cast(updates, DType::Float32)), ds), scalar(0.0));
  return where(hit, scattered, data);
}
TensorList import_scatter_nd(NodeContext& c) {
  Tensor idx = c.input(1);
  if (idx.dtype() != DType::Int64) idx = cast(idx, DType::Int64);
  return {scatter_into(c, c.input(0), idx, c.input(2))};
}
TensorList import_scatter_elements(NodeContext& c) {
  Tensor x = c.input(0);
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 0), x.rank());
  return {scatter_into(c, x, element_coordinates(c, x, c.input(1), axis, "ScatterElements' indices"), c.input(2))};
}

TensorList import_gather_nd(NodeContext& c) {
  Tensor x = c.input(0), idx = c.input(1);
  const int64_t batch_dims = c.attr_int("batch_dims", 0);
  if (idx.dtype() != DType::Int64) idx = cast(idx, DType::Int64);
  if (batch_dims == 0) return {gather_nd(x, idx)};
  // Batch dims become leading coordinates of the index.
  Shape is = known_shape(c, idx, "GatherND's indices");
  std::vector<Tensor> coords;
  Shape lead(std::vector<int64_t>(is.begin(), is.end() - 1));
  for (int64_t b = 0; b < batch_dims; ++b) {
    BuildScopeGuard eager(nullptr);
    Shape s(std::vector<int64_t>(size_t(lead.rank()), 1));
    s[int(b)] = lead[int(b)];
    coords.push_back(expand_dims(broadcast_to(reshape(arange(0, double(lead[int(b)]), 1, DType::Int64), s), lead), -1));
  }
  coords.push_back(idx);
  return {gather_nd(x, concat(coords, -1))};
}

// A partly known shape (import_partial.cpp) expands only where each unknown element provably
// keeps the input's dim: the input's dim there is known and not 1 (the unknown can then only
// be 1 or that dim in a valid model), or the unknown is that very dim of this input (Shape
// of it). deepflow cannot broadcast to a size known only at run time.
TensorList import_expand(NodeContext& c) {
  Tensor x = c.input(0);
  const detail::PartialValue* partial = detail::partial_input(c, 1);
  std::vector<int64_t> s = partial ? *c.partial_shape_input(1) : ints_of(c.constant_input(1));
  // Bidirectional: the result has the broadcast of both shapes.
  const int r = std::max<int>(x.rank(), int(s.size()));
  std::vector<int64_t> out(size_t(r), 1);
  for (int i = 0; i < r; ++i) {
    const int xi = i - (r - x.rank()), si = i - (r - int(s.size()));
    const int64_t a = xi >= 0 ? x.shape()[xi] : 1;
    if (partial && si >= 0 && !partial->elems[size_t(si)].value) {
      const detail::PartialElem& e = partial->elems[size_t(si)];
      const bool keeps = xi >= 0 && (a > 1 || (e.src != 0 && detail::dim_root(c, x.id(), xi) ==
                                                                std::pair<uint64_t, int>{e.src, e.dim}));
      DF_CHECK(keeps, kPrefix, c.describe(), ": cannot expand ", x.shape().to_string(), " to ", partial->to_string(),
               ": dim ", i, " of the shape is unknown at import time and not provably the input's own dim, and "
               "deepflow cannot broadcast to a size known only at run time");
      out[size_t(i)] = a;
      continue;
    }
    const int64_t b = si >= 0 ? s[size_t(si)] : 1;
    DF_CHECK(a == b || a == 1 || b == 1, kPrefix, c.describe(), ": cannot expand ", x.shape().to_string(), " to ",
             partial ? partial->to_string() : Shape(s).to_string());
    out[size_t(i)] = a == 1 ? b : a;
  }
  if (Shape(out) == x.shape()) return {identity(x)};
  if (Shape(out).is_fully_defined()) return {broadcast_to(x, Shape(out))};
  // Dynamic dims stay as they are: tile the size-1 dims instead of broadcasting to a shape
  // with unknowns in it.
  Tensor y = x;
  for (int i = x.rank(); i < r; ++i) y = expand_dims(y, 0);
  std::vector<int64_t> reps(size_t(r), 1);
  for (int i = 0; i < r; ++i) {
    if (y.shape()[i] == 1 && out[size_t(i)] != 1) reps[size_t(i)] = out[size_t(i)];
  }
  return {tile(y, reps)};
}

TensorList import_tile(NodeContext& c) { return {tile(c.input(0), ints_of(c.constant_input(1)))}; }

// Edge padding: each side repeats the border slice.
Tensor pad_edge(const Tensor& x, int axis, int64_t before, int64_t after) {
  const int64_t d = x.shape()[axis];
  std::vector<Tensor> parts;
  Axes b(size_t(x.rank()), 0), s(size_t(x.rank()), -1);
  if (before > 0) {
    s[size_t(axis)] = 1;
    Tensor first = slice(x, b, s);
    parts.push_back(before == 1 ? first : concat(std::vector<Tensor>(size_t(before), first), axis));
  }
  parts.push_back(x);
  if (after > 0) {
    b[size_t(axis)] = d - 1;
    s[size_t(axis)] = 1;
    Tensor last = slice(x, b, s);
    parts.push_back(after == 1 ? last : concat(std::vector<Tensor>(size_t(after), last), axis));
  }
  return parts.size() == 1 ? x : concat(parts, axis);
}

Tensor do_pad(NodeContext& c, const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode,
              double value, const Tensor& run_value = Tensor()) {
  const int r = x.rank();
  DF_CHECK(int(pads.size()) == 2 * r, kPrefix, c.describe(), ": pads has ", pads.size(), " values for rank ", r);
  // Negative pads crop.
  Tensor y = x;
  Axes begin(size_t(r), 0), size(size_t(r), -1);
  bool crop = false;
  std::vector<std::pair<int64_t, int64_t>> p(size_t(r), {0, 0});
  for (int i = 0; i < r; ++i) {
    int64_t pb = pads[size_t(i)], pe = pads[size_t(i + r)];
    if (pb < 0 || pe < 0) {
      const int64_t d = known_shape(c, x, "negative pads")[i];
      begin[size_t(i)] = pb < 0 ? -pb : 0;
      size[size_t(i)] = d - (pb < 0 ? -pb : 0) - (pe < 0 ? -pe : 0);
      crop = true;
    }
    p[size_t(i)] = {std::max<int64_t>(pb, 0), std::max<int64_t>(pe, 0)};
  }
  if (crop) y = slice(y, begin, size);
  if (mode == "constant") {
    if (!run_value.defined()) return pad(y, p, "CONSTANT", value);
    // A run-time pad value: pad with zeros, then select the value where the padding is.
    Tensor inside;
    {
      BuildScopeGuard eager(nullptr);
      inside = pad(ones(known_shape(c, y, "Pad with a run-time value"), DType::Float32), p);
    }
    return where(cast(inside, DType::Bool), pad(y, p), reshape(cast(run_value, y.dtype()), Shape{}));
  }
  if (mode == "reflect") return pad(y, p, "REFLECT");
  DF_CHECK(mode == "edge", kPrefix, c.describe(), ": unknown pad mode '", mode, "'");
  for (int i = 0; i < r; ++i) y = pad_edge(y, i, p[size_t(i)].first, p[size_t(i)].second);
  return y;
}
TensorList import_pad_2(NodeContext& c) {
  return {do_pad(c, c.input(0), c.attr_ints("pads"), c.attr_string("mode", "constant"), c.attr_float("value", 0.f))};
}
TensorList import_pad_11(NodeContext& c) {
  double value = 0;
  Tensor run_value;
  if (c.has_input(2)) {
    auto known = c.known_input(2);
    if (known) value = known->flat(0);
    else run_value = c.input(2);
  }
  return {do_pad(c, c.input(0), ints_of(c.constant_input(1)), c.attr_string("mode", "constant"), value, run_value)};
}

// --- shapes as values ---

TensorList import_shape(NodeContext& c) {
  Tensor x = c.input(0);
  Shape s = known_shape(c, x, "Shape");
  const int64_t r = s.rank();
  const auto [start, end] = shape_range(c, r);
  std::vector<int64_t> dims(s.begin() + start, s.begin() + end);
  return {constant(dims)};
}
TensorList import_size(NodeContext& c) {
  Tensor x = c.input(0);
  if (x.shape().is_fully_defined()) return {scalar(double(x.shape().num_elements()), DType::Int64)};
  return {size(x, DType::Int64)};
}

TensorList import_constant_of_shape(NodeContext& c) {
  std::vector<int64_t> s = ints_of(c.constant_input(0));
  Tensor value = c.has_attr("value") ? c.attr_tensor("value") : scalar(0.0);
  BuildScopeGuard eager(nullptr);
  return {broadcast_to(reshape(value, Shape{}), Shape(s))};
}

TensorList import_range(NodeContext& c) {
  Tensor start = c.constant_input(0), limit = c.constant_input(1), delta = c.constant_input(2);
  const double s = start.flat(0), l = limit.flat(0), d = delta.flat(0);
  DF_CHECK(d != 0, kPrefix, c.describe(), ": delta is 0");
  const int64_t n = std::max<int64_t>(int64_t(std::ceil((l - s) / d)), 0);
  BuildScopeGuard eager(nullptr);
  // n values start + i * delta, computed in the output dtype as ONNX's loop does.
  Tensor i = arange(0, double(n), 1, DType::Float64);
  return {cast(i * d + s, start.dtype())};
}

TensorList import_eye_like(NodeContext& c) {
  Tensor x = c.input(0);
  Shape s = known_shape(c, x, "EyeLike");
  DF_CHECK(s.rank() == 2, kPrefix, c.describe(), ": input must be 2-D, got ", s.to_string());
  const DType dt = c.has_attr("dtype") ? dtype_from_onnx(int32_t(c.attr_int("dtype", 1))) : x.dtype();
  const int64_t k = c.attr_int("k", 0);
  std::vector<double> v(size_t(s[0] * s[1]), 0.0);
  for (int64_t i = 0; i < s[0]; ++i)
    if (i + k >= 0 && i + k < s[1]) v[size_t(i * s[1] + i + k)] = 1.0;
  return {constant(v, s, dt)};
}

TensorList import_one_hot(NodeContext& c) {
  Tensor idx = c.input(0);
  const int64_t depth = int64_t(c.constant_input(1).flat(0));
  Tensor values = c.constant_input(2);
  const double off = values.flat(0), on = values.flat(1);
  Tensor i = idx.dtype() == DType::Int64 ? idx : cast(idx, DType::Int64);
  i = where(less(i, scalar_like(i, 0)), i + scalar_like(i, double(depth)), i);
  const int64_t axis = c.attr_int("axis", -1);
  return {one_hot(i, depth, on, off, axis < 0 ? axis + idx.rank() + 1 : axis, values.dtype())};
}

// --- top-k and arg reductions ---

TensorList do_top_k(NodeContext& c, int64_t k) {
  Tensor x = c.input(0);
  const int r = x.rank();
  const int64_t axis = onnx_axis(c, c.attr_int("axis", -1), r);
  const bool largest = c.attr_int("largest", 1) != 0;
  Tensor xt = x;
  Axes perm;
  if (axis != r - 1) {
    for (int i = 0; i < r; ++i) perm.push_back(i);
    std::swap(perm[size_t(axis)], perm[size_t(r - 1)]);
    xt = transpose(x, perm);
  }
  auto [values, indices] = top_k(largest ? xt : neg(xt), k, true);
  if (!largest) values = neg(values);
  indices = cast(indices, DType::Int64);
  if (!perm.empty()) {
    values = transpose(values, perm);
    indices = transpose(indices, perm);
  }
  return {values, indices};
}
TensorList import_top_k_1(NodeContext& c) { return do_top_k(c, c.attr_int("k", 1)); }
TensorList import_top_k_10(NodeContext& c) { return do_top_k(c, int64_t(c.constant_input(1).flat(0))); }

template <bool kMax>
TensorList import_arg(NodeContext& c) {
  Tensor x = c.input(0);
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 0), x.rank());
  const bool keepdims = c.attr_int("keepdims", 1) != 0;
  const bool last = c.attr_int("select_last_index", 0) != 0;
  Tensor y;
  if (last) {
    const int64_t d = x.shape()[int(axis)];
    DF_CHECK(d >= 0, kPrefix, c.describe(), ": select_last_index needs a known dim");
    Tensor r = reverse(x, {axis});
    y = kMax ? argmax(r, axis) : argmin(r, axis);
    y = scalar_like(y, double(d - 1)) - y;
  } else {
    y = kMax ? argmax(x, axis) : argmin(x, axis);
  }
  return {keepdims ? expand_dims(y, axis) : y};
}

// --- layout shuffles ---

TensorList import_depth_to_space(NodeContext& c) {
  Tensor x = c.input(0);
  Shape s = known_shape(c, x, "DepthToSpace");
  const int64_t b = c.attr_int("blocksize", 0);
  DF_CHECK(s.rank() == 4 && b > 0 && s[1] % (b * b) == 0, kPrefix, c.describe(), ": bad input ", s.to_string(),
           " or blocksize ", b);
  const int64_t n = s[0], ch = s[1], h = s[2], w = s[3];
  if (c.attr_string("mode", "DCR") == "DCR") {
    Tensor t = transpose(reshape(x, {n, b, b, ch / (b * b), h, w}), {0, 3, 4, 1, 5, 2});
    return {reshape(t, {n, ch / (b * b), h * b, w * b})};
  }
  Tensor t = transpose(reshape(x, {n, ch / (b * b), b, b, h, w}), {0, 1, 4, 2, 5, 3});
  return {reshape(t, {n, ch / (b * b), h * b, w * b})};
}
TensorList import_space_to_depth(NodeContext& c) {
  Tensor x = c.input(0);
  Shape s = known_shape(c, x, "SpaceToDepth");
  const int64_t b = c.attr_int("blocksize", 0);
  DF_CHECK(s.rank() == 4 && b > 0 && s[2] % b == 0 && s[3] % b == 0, kPrefix, c.describe(), ": bad input ",
           s.to_string(), " or blocksize ", b);
  const int64_t n = s[0], ch = s[1], h = s[2], w = s[3];
  Tensor t = transpose(reshape(x, {n, ch, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
  return {reshape(t, {n, ch * b * b, h / b, w / b})};
}

TensorList import_trilu(NodeContext& c) {
  Tensor x = c.input(0);
  Shape s = known_shape(c, x, "Trilu");
  DF_CHECK(s.rank() >= 2, kPrefix, c.describe(), ": input must be at least 2-D");
  const bool upper = c.attr_int("upper", 1) != 0;
  const int64_t rows = s.dim(-2), cols = s.dim(-1);
  // The diagonal offset j - i of every cell, compared with k (known now or at run time).
  std::vector<int64_t> diag(size_t(rows * cols), 0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) diag[size_t(i * cols + j)] = j - i;
  Tensor offsets = constant(diag, Shape{rows, cols});
  Tensor k = scalar(0, DType::Int64);
  if (c.has_input(1)) {
    auto known = c.known_input(1);
    k = known ? scalar(known->flat(0), DType::Int64) : reshape(cast(c.input(1), DType::Int64), Shape{});
  }
  Tensor mask = upper ? greater_equal(offsets, k) : less_equal(offsets, k);
  return {where(mask, x, zeros_like(x))};
}

TensorList import_cumsum(NodeContext& c) {
  Tensor x = c.input(0);
  const int64_t axis = onnx_axis(c, int64_t(c.constant_input(1).flat(0)), x.rank());
  return {cumsum(x, axis, c.attr_int("exclusive", 0) != 0, c.attr_int("reverse", 0) != 0)};
}

}  // namespace

DF_ONNX_OP("Reshape", 5, import_reshape)
DF_ONNX_OP("Flatten", 1, import_flatten)
DF_ONNX_OP("Transpose", 1, import_transpose)
DF_ONNX_OP("Concat", 4, import_concat)
DF_ONNX_OP("Split", 2, import_split_2)
DF_ONNX_OP("Split", 13, import_split_13)
DF_ONNX_OP("Slice", 1, import_slice_1)
DF_ONNX_OP("Slice", 10, import_slice_10)
DF_ONNX_OP("Squeeze", 1, import_squeeze_1)
DF_ONNX_OP("Squeeze", 13, import_squeeze_13)
DF_ONNX_OP("Unsqueeze", 1, import_unsqueeze_1)
DF_ONNX_OP("Unsqueeze", 13, import_unsqueeze_13)
DF_ONNX_OP("Gather", 1, import_gather)
DF_ONNX_OP("GatherElements", 11, import_gather_elements)
DF_ONNX_OP("GatherND", 11, import_gather_nd)
DF_ONNX_OP("ScatterND", 11, import_scatter_nd)
DF_ONNX_OP("ScatterElements", 11, import_scatter_elements)
DF_ONNX_OP("Scatter", 9, import_scatter_elements)
DF_ONNX_OP("Expand", 8, import_expand)
DF_ONNX_OP("Tile", 6, import_tile)
DF_ONNX_OP("Pad", 2, import_pad_2)
DF_ONNX_OP("Pad", 11, import_pad_11)
DF_ONNX_OP("Shape", 1, import_shape)
DF_ONNX_OP("Size", 1, import_size)
DF_ONNX_OP("ConstantOfShape", 9, import_constant_of_shape)
DF_ONNX_OP("Range", 11, import_range)
DF_ONNX_OP("EyeLike", 9, import_eye_like)
DF_ONNX_OP("OneHot", 9, import_one_hot)
DF_ONNX_OP("TopK", 1, import_top_k_1)
DF_ONNX_OP("TopK", 10, import_top_k_10)
DF_ONNX_OP("ArgMax", 1, import_arg<true>)
DF_ONNX_OP("ArgMin", 1, import_arg<false>)
DF_ONNX_OP("DepthToSpace", 1, import_depth_to_space)
DF_ONNX_OP("SpaceToDepth", 1, import_space_to_depth)
DF_ONNX_OP("Trilu", 14, import_trilu)
DF_ONNX_OP("CumSum", 11, import_cumsum)

}  // namespace deepflow::onnx
