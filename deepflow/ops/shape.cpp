// SPDX-License-Identifier: Apache-2.0
// Shape and layout primitives (reshape, transpose, concat, slice, strided_slice,
// strided_slice_grad, pad, tile, broadcast_to, reverse) and their composites
// (expand_dims, squeeze, stack, split, REFLECT/SYMMETRIC pad).
#include <algorithm>
#include <cctype>

#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"
#include "deepflow/ops/shape_util.h"

namespace deepflow {
namespace {

// "[1,-1,3]": attribute lists may hold -1, which Shape would print as "?".
std::string ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

bool known(int64_t d) { return d >= 0; }

// --- strided slice planning (TensorFlow's ValidateStridedSliceOp) ---

constexpr int kNewAxis = -1, kShrinkAxis = -2;

struct StridedPlan {
  std::vector<int64_t> begin, stride, count;  // per input dim; count -1 when unknown
  Shape final_shape;
};

bool bit(int64_t mask, int i) { return i < 63 && ((mask >> i) & 1); }

StridedPlan plan_strided(const OpCall& c, const Shape& in) {
  const auto& b = c.attr_ints("begin");
  const auto& e = c.attr_ints("end");
  std::vector<int64_t> st = c.attr_ints("strides");
  if (st.empty()) st.assign(b.size(), 1);  // our default: unit strides
  DF_CHECK(b.size() == e.size() && b.size() == st.size(), "[", c.name(), "] begin ", ints(b), ", end ", ints(e),
           " and strides ", ints(st), " must have the same length");
  DF_CHECK(b.size() < 63, "[", c.name(), "] too many slice entries: ", b.size());
  const int64_t begin_mask = c.attr_int("begin_mask"), end_mask = c.attr_int("end_mask");
  const int64_t new_axis_mask = c.attr_int("new_axis_mask"), shrink_mask = c.attr_int("shrink_axis_mask");
  int64_t ellipsis_mask = c.attr_int("ellipsis_mask");
  DF_CHECK((ellipsis_mask & (ellipsis_mask - 1)) == 0, "[", c.name(),
           "] multiple ellipses in slice spec not allowed (ellipsis_mask ", ellipsis_mask, ")");

  // Sparse spec: count new axes after the ellipsis; add an implicit trailing ellipsis.
  int sdims = int(b.size()), add_after = 0;
  bool seen = false;
  for (int i = 0; i < sdims; ++i) {
    if (seen && bit(new_axis_mask, i)) ++add_after;
    if (bit(ellipsis_mask, i)) seen = true;
  }
  if (!seen) ellipsis_mask |= int64_t(1) << sdims++;

  // Dense spec: one entry per input dim.
  const int dims = in.rank();
  std::vector<int64_t> db(size_t(dims), 0), de(size_t(dims), 0), ds(size_t(dims), 1);
  std::vector<bool> dbm(dims, false), dem(dims, false), dshrink(dims, false);
  std::vector<int> gather;
  int full = 0;
  for (int i = 0; i < sdims; ++i) {
    if (bit(ellipsis_mask, i)) {
      int next = std::min(dims - (sdims - i) + 1 + add_after, dims);
      for (; full < next; ++full) {
        dbm[size_t(full)] = dem[size_t(full)] = true;
        gather.push_back(full);
      }
    } else if (bit(new_axis_mask, i)) {
      gather.push_back(kNewAxis);
    } else {
      DF_CHECK(full < dims, "[", c.name(), "] index out of range using input dim ", full, "; input ", in,
               " has only ", dims, " dims");
      db[size_t(full)] = b[size_t(i)];
      de[size_t(full)] = e[size_t(i)];
      ds[size_t(full)] = st[size_t(i)];
      dbm[size_t(full)] = bit(begin_mask, i);
      dem[size_t(full)] = bit(end_mask, i);
      dshrink[size_t(full)] = bit(shrink_mask, i);
      gather.push_back(bit(shrink_mask, i) ? kShrinkAxis : full);
      ++full;
    }
  }

  // Canonical ranges, clamped as TensorFlow does, and the count per dim.
  StridedPlan p;
  for (int d = 0; d < dims; ++d) {
    const size_t k = size_t(d);
    const int64_t dim = in[d], s = ds[k];
    DF_CHECK(s != 0, "[", c.name(), "] strides[", d, "] must be non-zero");
    int64_t begin = 0, count = -1;
    if (dshrink[k]) {
      DF_CHECK(s > 0, "[", c.name(), "] only stride 1 allowed on non-range indexing (shrink axis ", d,
               " has stride ", s, ")");
      count = 1;
      if (known(dim)) {
        begin = db[k] < 0 ? dim + db[k] : db[k];
        DF_CHECK(begin >= 0 && begin < dim, "[", c.name(), "] slice index ", db[k], " of dimension ", d,
                 " out of bounds for shape ", in);
      }
    } else if (known(dim)) {
      const int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dim : dim - 1;
      auto canonical = [&](int64_t x, bool masked, bool is_begin) {
        if (masked) return (s > 0) == is_begin ? lo : hi;
        int64_t fwd = x < 0 ? dim + x : x;
        return std::clamp(fwd, lo, hi);
      };
      begin = canonical(db[k], dbm[k], true);
      int64_t end = canonical(de[k], dem[k], false);
      int64_t len = end - begin;
      count = (len == 0 || (len < 0) != (s < 0)) ? 0 : len / s + (len % s != 0 ? 1 : 0);
    }
    p.begin.push_back(begin);
    p.stride.push_back(s);
    p.count.push_back(count);
  }
  for (int g : gather) {
    if (g >= 0) p.final_shape.push_back(p.count[size_t(g)]);
    else if (g == kNewAxis) p.final_shape.push_back(1);
  }
  return p;
}

Attrs without(const Attrs& a, const char* name) {
  Attrs r;
  for (const auto& [n, v] : a.items())
    if (n != name) r.set(n, v);
  return r;
}

std::vector<AttrSpec> strided_attrs(bool with_shape) {
  std::vector<AttrSpec> a = {AttrSpec::required_of("begin", AttrKind::Ints),
                             AttrSpec::required_of("end", AttrKind::Ints),
                             {"strides", std::vector<int64_t>{}},
                             {"begin_mask", int64_t(0)},
                             {"end_mask", int64_t(0)},
                             {"ellipsis_mask", int64_t(0)},
                             {"new_axis_mask", int64_t(0)},
                             {"shrink_axis_mask", int64_t(0)}};
  if (with_shape) a.insert(a.begin(), AttrSpec::required_of("shape", AttrKind::Ints));
  return a;
}

int unknown_dims(const Shape& s) {
  int n = 0;
  for (int64_t d : s) n += !known(d);
  return n;
}

// A mask with every one of the n low bits set but bit `except`.
int64_t all_but(int n, int except) { return ((int64_t(1) << n) - 1) & ~(int64_t(1) << except); }

// Slices [start, start + len) along one axis.
Tensor slice_axis(const Tensor& x, int axis, int64_t start, int64_t len) {
  Axes begin(size_t(x.rank()), 0), size(size_t(x.rank()), -1);
  begin[size_t(axis)] = start;
  size[size_t(axis)] = len;
  return slice(x, begin, size);
}

}  // namespace

namespace detail {
void strided_slice_dense(const OpCall& c, const Shape& in, std::vector<int64_t>& begin,
                         std::vector<int64_t>& stride, std::vector<int64_t>& count) {
  StridedPlan p = plan_strided(c, in);
  begin = std::move(p.begin);
  stride = std::move(p.stride);
  count = std::move(p.count);
}
}  // namespace detail

// --- reshape --- x -> shape (one -1 inferred); a view of x, no copy.
static void infer_reshape(const OpCall& c, TypeList& out) {
  const Shape& in = c.in(0).shape();
  const auto& target = c.attr_ints("shape");
  DF_CHECK(int(target.size()) <= kMaxRank, "[reshape] rank above ", kMaxRank, " is not supported: ", ints(target));
  int unknown = -1;
  int64_t product = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      DF_CHECK(unknown < 0, "[reshape] only one dim may be -1, got ", ints(target));
      unknown = int(i);
    } else {
      DF_CHECK(target[i] >= 0, "[reshape] dims must be >= 0 or -1, got ", ints(target));
      product *= target[i];
    }
  }
  Shape s(target);
  const int64_t n = in.num_elements();
  if (n >= 0 && unknown >= 0) {
    DF_CHECK(product > 0, "[reshape] cannot infer the -1 dim of ", ints(target), " for ", in, " (", n,
             " elements) when another dim is 0");
    DF_CHECK(n % product == 0, "[reshape] cannot reshape ", in, " (", n, " elements) to ", ints(target), ": ", n,
             " is not a multiple of ", product);
    s[unknown] = n / product;
  } else if (n >= 0) {
    DF_CHECK(product == n, "[reshape] cannot reshape ", in, " (", n, " elements) to ", s, " (", product,
             " elements)");
  }
  out.push_back({c.in(0).dtype(), s});
}
DF_DEFINE_OP(Reshape, {.attrs = {AttrSpec::required_of("shape", AttrKind::Ints)},
                       .infer = infer_reshape,
                       .vjp = [](const OpCall& c, const TensorList& g) {
                         const Tensor& x = c.in(0);
                         return TensorList{x.shape().is_fully_defined() ? reshape(g[0], x.shape())
                                                                        : reshape_like(g[0], x)};
                       },
                       .view_output = true, .strings = true});
Tensor reshape(const Tensor& x, const Shape& shape) {
  return dispatch1(OpId::Reshape, {x}, {{"shape", shape.to_vector()}});
}

// --- transpose --- x [d0..dn] -> [d_perm0..d_permn]; empty perm reverses the dims.
static Axes full_perm(const OpCall& c) {
  const int r = c.in(0).rank();
  Axes perm = c.attr_ints("perm");
  if (perm.empty())
    for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  std::vector<bool> used(r, false);
  bool ok = int(perm.size()) == r;
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && perm[i] < r && !used[size_t(perm[i])];
    if (ok) used[size_t(perm[i])] = true;
  }
  DF_CHECK(ok, "[transpose] perm ", ints(perm), " is not a permutation of the dims of ", c.in(0).shape());
  return perm;
}
DF_DEFINE_OP(Transpose, {.attrs = {{"perm", std::vector<int64_t>{}}},
                         .infer = [](const OpCall& c, TypeList& out) {
                           Axes perm = full_perm(c);
                           Shape s;
                           for (int64_t p : perm) s.push_back(c.in(0).shape()[int(p)]);
                           out.push_back({c.in(0).dtype(), s});
                         },
                         .vjp = [](const OpCall& c, const TensorList& g) {
                           Axes perm = full_perm(c), inv(perm.size());
                           for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
                           return TensorList{transpose(g[0], inv)};
                         }, .strings = true});
Tensor transpose(const Tensor& x, const Axes& perm) { return dispatch1(OpId::Transpose, {x}, {{"perm", perm}}); }

// --- concat --- xs [.., d_i, ..] (same dtype, same other dims) -> [.., sum d_i, ..].
static void infer_concat(const OpCall& c, TypeList& out) {
  DF_CHECK(c.num_inputs() >= 1, "[concat] needs at least one input");
  const Tensor& x0 = c.in(0);
  DF_CHECK(x0.rank() >= 1, "[concat] cannot concatenate scalars (use stack)");
  const int axis = normalize_axis("concat", c.attr_int("axis"), x0.rank());
  Shape s = x0.shape();
  for (int i = 1; i < c.num_inputs(); ++i) {
    const Tensor& x = c.in(i);
    DF_CHECK(x.dtype() == x0.dtype(), "[concat] input ", i, " is ", dtype_name(x.dtype()), x.shape(),
             " but input 0 is ", dtype_name(x0.dtype()), x0.shape());
    DF_CHECK(x.rank() == x0.rank(), "[concat] input ", i, " has shape ", x.shape(), " but input 0 has shape ",
             x0.shape(), ": ranks differ");
    for (int d = 0; d < s.rank(); ++d) {
      const int64_t xd = x.shape()[d];
      if (d == axis) {
        s[d] = known(s[d]) && known(xd) ? s[d] + xd : -1;
      } else {
        DF_CHECK(!known(s[d]) || !known(xd) || s[d] == xd, "[concat] input ", i, " has shape ", x.shape(),
                 " but input 0 has shape ", x0.shape(), ": dim ", d, " differs (axis is ", axis, ")");
        if (!known(s[d])) s[d] = xd;
      }
    }
  }
  out.push_back({x0.dtype(), s});
}
DF_DEFINE_OP(Concat, {.num_inputs = -1,
                      .attrs = {{"axis", int64_t(0)}},
                      .infer = infer_concat,
                      .vjp = [](const OpCall& c, const TensorList& g) {
                        const int axis = normalize_axis("concat", c.attr_int("axis"), c.in(0).rank());
                        std::vector<int64_t> sizes;
                        for (const Tensor& x : c.inputs) sizes.push_back(x.shape()[axis]);
                        if (sizes.size() == 1) return TensorList{g[0]};
                        return split(g[0], sizes, axis);
                      }, .strings = true});
Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  return dispatch1(OpId::Concat, std::span<const Tensor>(xs), {{"axis", axis}});
}

// --- slice --- x -> x[begin : begin + size] per dim (size -1: to the end).
static void infer_slice(const OpCall& c, TypeList& out) {
  const Shape& in = c.in(0).shape();
  const auto& begin = c.attr_ints("begin");
  const auto& size = c.attr_ints("size");
  DF_CHECK(int(begin.size()) == in.rank() && int(size.size()) == in.rank(), "[slice] begin ", ints(begin),
           " and size ", ints(size), " must have one entry per dim of ", in);
  Shape s;
  for (int d = 0; d < in.rank(); ++d) {
    const int64_t b = begin[size_t(d)], n = size[size_t(d)], dim = in[d];
    DF_CHECK(b >= 0 && n >= -1, "[slice] begin ", ints(begin), " and size ", ints(size),
             " must be >= 0 (size may be -1)");
    if (!known(dim)) {
      s.push_back(n);
      continue;
    }
    const int64_t len = n == -1 ? dim - b : n;
    DF_CHECK(b <= dim && b + len <= dim, "[slice] begin ", ints(begin), " and size ", ints(size),
             " exceed shape ", in, " in dim ", d);
    s.push_back(len);
  }
  out.push_back({c.in(0).dtype(), s});
}
// g padded back to x's shape. Where x's dim is unknown and the slice stops short of its
// end, the zeros after it are zeros_like a slice of x, since their count is known only at run time.
static TensorList vjp_slice(const OpCall& c, const TensorList& g) {
  const Tensor& x = c.in(0);
  const auto& begin = c.attr_ints("begin");
  const auto& size = c.attr_ints("size");
  std::vector<std::pair<int64_t, int64_t>> pads;
  std::vector<int> tails;
  for (int d = 0; d < x.rank(); ++d) {
    const int64_t b = begin[size_t(d)];
    if (known(x.shape()[d])) {
      pads.emplace_back(b, x.shape()[d] - b - g[0].shape()[d]);
    } else {
      pads.emplace_back(b, 0);
      if (size[size_t(d)] != -1) tails.push_back(d);
    }
  }
  Tensor r = pad(g[0], pads);
  for (size_t t = 0; t < tails.size(); ++t) {
    const int d = tails[t];
    Axes zb(size_t(x.rank()), 0), zs(size_t(x.rank()), -1);
    zb[size_t(d)] = begin[size_t(d)] + size[size_t(d)];
    for (size_t u = t + 1; u < tails.size(); ++u) {
      const size_t e = size_t(tails[u]);
      zs[e] = begin[e] + size[e];
    }
    r = concat({r, zeros_like(slice(x, zb, zs))}, d);
  }
  return {r};
}
DF_DEFINE_OP(Slice, {.attrs = {AttrSpec::required_of("begin", AttrKind::Ints),
                               AttrSpec::required_of("size", AttrKind::Ints)},
                     .infer = infer_slice,
                     .vjp = vjp_slice, .strings = true});
Tensor slice(const Tensor& x, const Axes& begin, const Axes& size) {
  return dispatch1(OpId::Slice, {x}, {{"begin", begin}, {"size", size}});
}

// --- strided_slice --- x -> x[begin:end:strides] with TensorFlow's masks.
DF_DEFINE_OP(StridedSlice, {.attrs = strided_attrs(false),
                            .infer = [](const OpCall& c, TypeList& out) {
                              out.push_back({c.in(0).dtype(), plan_strided(c, c.in(0).shape()).final_shape});
                            },
                            .vjp = [](const OpCall& c, const TensorList& g) {
                              Attrs a = *c.attrs;
                              const Tensor& x = c.in(0);
                              a.set("shape", x.shape().to_vector());
                              if (x.shape().is_fully_defined())
                                return TensorList{dispatch1(OpId::StridedSliceGrad, {g[0]}, a)};
                              return TensorList{dispatch1(OpId::StridedSliceGrad, {g[0], x}, a)};
                            }, .strings = true});
Tensor strided_slice(const Tensor& x, const Axes& begin, const Axes& end, const Axes& strides, int64_t begin_mask,
                     int64_t end_mask, int64_t ellipsis_mask, int64_t new_axis_mask, int64_t shrink_axis_mask) {
  return dispatch1(OpId::StridedSlice, {x},
                   {{"begin", begin}, {"end", end}, {"strides", strides}, {"begin_mask", begin_mask},
                    {"end_mask", end_mask}, {"ellipsis_mask", ellipsis_mask}, {"new_axis_mask", new_axis_mask},
                    {"shrink_axis_mask", shrink_axis_mask}});
}

// --- strided_slice_grad --- g (the slice's shape)[, like] -> zeros of `shape` with g scattered
// into the slice. Unknown (-1) dims of `shape` are taken from the optional input `like` (x, in
// graphs with unknown dims), whose shape is concrete when the graph runs.
DF_DEFINE_OP(StridedSliceGrad, {.num_inputs = -1,
                                .attrs = strided_attrs(true),
                                .infer = [](const OpCall& c, TypeList& out) {
                                  DF_CHECK(c.num_inputs() == 1 || c.num_inputs() == 2,
                                           "[strided_slice_grad] expects g and an optional like, got ",
                                           c.num_inputs(), " inputs");
                                  const auto& sv = c.attr_ints("shape");
                                  Shape s(sv);
                                  if (c.num_inputs() == 2) {
                                    const Shape& like = c.in(1).shape();
                                    DF_CHECK(like.rank() == s.rank(), "[strided_slice_grad] like ", like,
                                             " does not have the rank of shape ", ints(sv));
                                    for (int i = 0; i < s.rank(); ++i) {
                                      DF_CHECK(!known(s[i]) || !known(like[i]) || s[i] == like[i],
                                               "[strided_slice_grad] like ", like, " does not match shape ", ints(sv));
                                      if (!known(s[i])) s[i] = like[i];
                                    }
                                  }
                                  for (int64_t d : s)
                                    DF_CHECK(d >= -1 && (d >= 0 || c.num_inputs() == 2), "[strided_slice_grad] shape ",
                                             ints(sv), " must be known");
                                  Shape want = plan_strided(c, s).final_shape;
                                  DF_CHECK(c.in(0).shape().compatible_with(want), "[strided_slice_grad] gradient ",
                                           c.in(0).shape(), " does not match the slice shape ", want, " of ", s);
                                  out.push_back({c.in(0).dtype(), s});
                                },
                                .vjp = [](const OpCall& c, const TensorList& g) {
                                  TensorList r{dispatch1(OpId::StridedSlice, {g[0]}, without(*c.attrs, "shape"))};
                                  if (c.num_inputs() == 2) r.emplace_back();
                                  return r;
                                }});

// --- pad (constant) --- x -> [before_i + d_i + after_i]; paddings flat [b0, a0, b1, a1, ...].
static void infer_pad(const OpCall& c, TypeList& out) {
  const Shape& in = c.in(0).shape();
  const auto& p = c.attr_ints("paddings");
  DF_CHECK(int(p.size()) == 2 * in.rank(), "[pad] paddings ", ints(p), " must hold 2 entries per dim of ", in);
  Shape s;
  for (int d = 0; d < in.rank(); ++d) {
    const int64_t b = p[size_t(2 * d)], a = p[size_t(2 * d + 1)];
    DF_CHECK(b >= 0 && a >= 0, "[pad] paddings must be >= 0, got ", ints(p), " for ", in);
    s.push_back(known(in[d]) ? b + in[d] + a : -1);
  }
  out.push_back({c.in(0).dtype(), s});
}
DF_DEFINE_OP(Pad, {.attrs = {AttrSpec::required_of("paddings", AttrKind::Ints), {"constant_value", 0.0}},
                   .infer = infer_pad,
                   .vjp = [](const OpCall& c, const TensorList& g) {
                     const auto& p = c.attr_ints("paddings");
                     const Shape& in = c.in(0).shape();
                     Axes begin, size, end;
                     int64_t end_mask = 0;
                     for (int d = 0; d < in.rank(); ++d) {
                       begin.push_back(p[size_t(2 * d)]);
                       size.push_back(in[d]);
                       const int64_t after = p[size_t(2 * d + 1)];
                       end.push_back(-after);  // counted from the end: x's dim may be unknown
                       if (after == 0) end_mask |= int64_t(1) << d;
                     }
                     if (in.is_fully_defined()) return TensorList{slice(g[0], begin, size)};
                     return TensorList{strided_slice(g[0], begin, end, {}, 0, end_mask)};
                   }});

// REFLECT and SYMMETRIC: per dim, concat [reversed left edge, x, reversed right edge] (TF's limits:
// REFLECT paddings < dim, SYMMETRIC paddings <= dim).
Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& paddings, const std::string& mode,
           double constant_value) {
  DF_CHECK(int(paddings.size()) == x.rank(), "[pad] paddings has ", paddings.size(), " entries for ", x.shape(),
           " (rank ", x.rank(), ")");
  std::string m = mode;
  for (char& ch : m) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  if (m == "CONSTANT") {
    std::vector<int64_t> flat;
    for (const auto& [b, a] : paddings) flat.insert(flat.end(), {b, a});
    return dispatch1(OpId::Pad, {x}, {{"paddings", flat}, {"constant_value", constant_value}});
  }
  DF_CHECK(m == "REFLECT" || m == "SYMMETRIC", "[pad] mode must be CONSTANT, REFLECT or SYMMETRIC, got '", mode, "'");
  const int64_t skip = m == "REFLECT" ? 1 : 0;
  Tensor y = x;
  for (int d = 0; d < x.rank(); ++d) {
    const auto [b, a] = paddings[size_t(d)];
    const int64_t n = x.shape()[d];
    DF_CHECK(b >= 0 && a >= 0, "[pad] paddings must be >= 0, got [", b, ",", a, "] in dim ", d);
    DF_CHECK(!known(n) || (b + skip <= n && a + skip <= n), "[pad] ", m, " paddings [", b, ",", a, "] of dim ", d,
             " must be ", skip ? "less than" : "at most", " its size ", n, " (shape ", x.shape(), ")");
    if (b == 0 && a == 0) continue;
    std::vector<Tensor> parts;
    if (b > 0) parts.push_back(reverse(slice_axis(y, d, skip, b), {d}));
    parts.push_back(y);
    if (a > 0 && known(n)) parts.push_back(reverse(slice_axis(y, d, n - a - skip, a), {d}));
    if (a > 0 && !known(n)) {
      // The right edge counted from the end: y[n-a-skip : n-skip] along d.
      const int r = x.rank();
      Axes begin(size_t(r), 0), end(size_t(r), 0);
      begin[size_t(d)] = -(a + skip);
      end[size_t(d)] = -skip;
      const int64_t end_mask = skip ? all_but(r, d) : (int64_t(1) << r) - 1;
      parts.push_back(reverse(strided_slice(y, begin, end, {}, all_but(r, d), end_mask), {d}));
    }
    y = concat(parts, d);
  }
  return y;
}

// --- tile --- x [d..] -> [d_i * multiples_i].
static void infer_tile(const OpCall& c, TypeList& out) {
  const Shape& in = c.in(0).shape();
  const auto& m = c.attr_ints("multiples");
  DF_CHECK(int(m.size()) == in.rank(), "[tile] multiples ", ints(m), " must have one entry per dim of ", in);
  Shape s;
  for (int d = 0; d < in.rank(); ++d) {
    const int64_t k = m[size_t(d)];
    DF_CHECK(k >= 0, "[tile] multiples must be >= 0, got ", ints(m));
    s.push_back(k == 0 ? 0 : known(in[d]) ? in[d] * k : -1);
  }
  out.push_back({c.in(0).dtype(), s});
}
// g [m0*d0, ..] -> [m0, d0, ..], summed over the multiple axes (split only where m != 1).
static TensorList vjp_tile(const OpCall& c, const TensorList& g) {
  const Shape& in = c.in(0).shape();
  const auto& m = c.attr_ints("multiples");
  Shape split_shape;
  Axes axes;
  for (int d = 0; d < in.rank(); ++d) {
    if (m[size_t(d)] != 1) {
      axes.push_back(split_shape.rank());
      split_shape.push_back(m[size_t(d)]);
    }
    split_shape.push_back(in[d]);
  }
  if (axes.empty()) return {g[0]};
  return {reduce_sum(reshape(g[0], split_shape), axes)};
}
DF_DEFINE_OP(Tile, {.attrs = {AttrSpec::required_of("multiples", AttrKind::Ints)},
                    .infer = infer_tile,
                    .vjp = vjp_tile, .strings = true});
Tensor tile(const Tensor& x, const Axes& multiples) { return dispatch1(OpId::Tile, {x}, {{"multiples", multiples}}); }

// --- broadcast_to --- x -> shape (x must broadcast to exactly shape).
static void infer_broadcast_to(const OpCall& c, TypeList& out) {
  const Shape& in = c.in(0).shape();
  const auto& sv = c.attr_ints("shape");
  for (int64_t d : sv) DF_CHECK(d >= -1, "[broadcast_to] bad target shape ", ints(sv));
  Shape s(sv);
  bool ok = in.rank() <= s.rank();
  for (int i = 0; ok && i < in.rank(); ++i) {
    const int64_t a = in[i], t = s[s.rank() - in.rank() + i];
    ok = a == 1 || !known(a) || !known(t) || a == t;
  }
  DF_CHECK(ok, "[broadcast_to] cannot broadcast ", in, " to ", s);
  out.push_back({c.in(0).dtype(), s});
}
DF_DEFINE_OP(BroadcastTo, {.attrs = {AttrSpec::required_of("shape", AttrKind::Ints)},
                           .infer = infer_broadcast_to,
                           .vjp = [](const OpCall& c, const TensorList& g) {
                             return TensorList{sum_to(g[0], c.in(0))};
                           }, .strings = true});
Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  return dispatch1(OpId::BroadcastTo, {x}, {{"shape", shape.to_vector()}});
}

// --- reverse --- x -> x reversed along each axis in axes.
static void infer_reverse(const OpCall& c, TypeList& out) {
  std::vector<bool> seen(size_t(c.in(0).rank()));
  for (int64_t a : c.attr_ints("axes")) {
    const int d = normalize_axis("reverse", a, c.in(0).rank());
    DF_CHECK(!seen[size_t(d)], "[reverse] axis ", d, " listed more than once in ", ints(c.attr_ints("axes")));
    seen[size_t(d)] = true;
  }
  out.push_back({c.in(0).dtype(), c.in(0).shape()});
}
DF_DEFINE_OP(Reverse, {.attrs = {AttrSpec::required_of("axes", AttrKind::Ints)},
                       .infer = infer_reverse,
                       .vjp = [](const OpCall& c, const TensorList& g) {
                         return TensorList{reverse(g[0], c.attr_ints("axes"))};
                       }, .strings = true});
Tensor reverse(const Tensor& x, const Axes& axes) { return dispatch1(OpId::Reverse, {x}, {{"axes", axes}}); }

// --- composites ---

Tensor expand_dims(const Tensor& x, int64_t axis) {
  const int r = x.rank();
  DF_CHECK(axis >= -r - 1 && axis <= r, "[expand_dims] axis ", axis, " out of range for shape ", x.shape());
  const int a = int(axis < 0 ? axis + r + 1 : axis);
  Shape s = x.shape();
  s.insert(a, 1);
  if (unknown_dims(s) <= 1) return reshape(x, s);
  // A reshape can name one unknown dim only: x[..., newaxis, ...] keeps them all.
  return strided_slice(x, Axes(size_t(r + 1), 0), Axes(size_t(r + 1), 0), {}, all_but(r + 1, a), all_but(r + 1, a),
                       0, int64_t(1) << a);
}

Tensor squeeze(const Tensor& x, const Axes& axes) {
  std::vector<bool> drop(size_t(x.rank()), axes.empty());
  if (axes.empty()) {
    for (int d = 0; d < x.rank(); ++d) drop[size_t(d)] = x.shape()[d] == 1;
  } else {
    for (int64_t a : axes) {
      const int d = normalize_axis("squeeze", a, x.rank());
      DF_CHECK(x.shape()[d] == 1 || !known(x.shape()[d]), "[squeeze] cannot squeeze dim ", d, " of shape ",
               x.shape(), ": its size is ", x.shape()[d], ", not 1");
      drop[size_t(d)] = true;
    }
  }
  Shape s;
  for (int d = 0; d < x.rank(); ++d)
    if (!drop[size_t(d)]) s.push_back(x.shape()[d]);
  if (unknown_dims(s) <= 1) return reshape(x, s);
  // Several unknown dims: x[..., 0, ...] at each dropped dim keeps them.
  int64_t shrink = 0;
  for (int d = 0; d < x.rank(); ++d)
    if (drop[size_t(d)]) shrink |= int64_t(1) << d;
  const int r = x.rank();
  Axes end(size_t(r), 0);
  for (int d = 0; d < r; ++d)
    if (drop[size_t(d)]) end[size_t(d)] = 1;
  return strided_slice(x, Axes(size_t(r), 0), end, {}, ~shrink & ((int64_t(1) << r) - 1),
                       ~shrink & ((int64_t(1) << r) - 1), 0, 0, shrink);
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  DF_CHECK(!xs.empty(), "[stack] needs at least one tensor");
  const int r = xs[0].rank();
  DF_CHECK(axis >= -r - 1 && axis <= r, "[stack] axis ", axis, " out of range for shape ", xs[0].shape());
  const int64_t a = axis < 0 ? axis + r + 1 : axis;
  std::vector<Tensor> parts;
  for (size_t i = 0; i < xs.size(); ++i) {
    DF_CHECK(xs[i].shape().compatible_with(xs[0].shape()), "[stack] input ", i, " has shape ", xs[i].shape(),
             " but input 0 has shape ", xs[0].shape());
    parts.push_back(expand_dims(xs[i], a));
  }
  return concat(parts, a);
}

std::vector<Tensor> split(const Tensor& x, int64_t num, int64_t axis) {
  const int a = normalize_axis("split", axis, x.rank());
  const int64_t n = x.shape()[a];
  DF_CHECK(num > 0 && n % num == 0, "[split] dim ", a, " of shape ", x.shape(), " (size ", n,
           ") cannot be split into ", num, " equal pieces");
  return split(x, std::vector<int64_t>(size_t(num), n / num), a);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  const int a = normalize_axis("split", axis, x.rank());
  const int64_t n = x.shape()[a];
  std::vector<int64_t> s = sizes;
  int64_t total = 0;
  int unknown = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      DF_CHECK(unknown < 0, "[split] only one size may be -1, got ", ints(sizes));
      unknown = int(i);
    } else {
      DF_CHECK(s[i] >= 0, "[split] sizes must be >= 0 or -1, got ", ints(sizes));
      total += s[i];
    }
  }
  if (!known(n)) {
    // The dim is known only at run time: the pieces after the one of unknown size are
    // counted from the end (strided_slice takes negative bounds).
    std::vector<int64_t> known_sizes;
    for (int64_t v : s) known_sizes.push_back(v < 0 ? 0 : v);
    std::vector<Tensor> out;
    int64_t start = 0, rest = total;  // rest: the known sizes from the current piece on
    bool from_end = false;
    const int r = x.rank();
    for (size_t i = 0; i < s.size(); ++i) {
      if (!from_end && s[i] >= 0) {
        out.push_back(slice_axis(x, a, start, s[i]));
        start += s[i];
        rest -= s[i];
        continue;
      }
      Axes begin(size_t(r), 0), end(size_t(r), 0);
      int64_t end_mask = all_but(r, a);
      begin[size_t(a)] = from_end ? -rest : start;
      const int64_t after = rest - known_sizes[i];
      end[size_t(a)] = -after;
      if (after == 0) end_mask |= int64_t(1) << a;
      out.push_back(strided_slice(x, begin, end, {}, all_but(r, a), end_mask));
      from_end = true;
      rest = after;
    }
    return out;
  }
  if (unknown >= 0 && total <= n) s[size_t(unknown)] = n - total, total = n;
  DF_CHECK(total == n, "[split] sizes ", ints(sizes), " do not add up to dim ", a, " of shape ", x.shape());
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t len : s) {
    out.push_back(slice_axis(x, a, start, len));
    start += len;
  }
  return out;
}

}  // namespace deepflow
