// SPDX-License-Identifier: Apache-2.0
// Assorted ONNX ops built from deepflow's public ops: Einsum, Det, ReverseSequence,
// MaxUnpool, BitShift (uint8), DFT, and the ops whose output shape depends on input
// values (Compress, NonZero, Unique, NonMaxSuppression), which need those values known at import.
//
// Shapes are known at import, so index tensors (diagonal masks, minors, DFT matrices)
// are made here as constants and the data flows through gather / matmul / reductions.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/onnx/op_importer.h"
#include "deepflow/ops/op.h"

namespace deepflow::onnx {
namespace {

constexpr const char* kPrefix = "[onnx::import] ";

// --- Einsum ---
//
// Each operand's labels (the ellipsis expanded to labels of its own) are made unique by
// taking diagonals, transposed to one global label order and broadcast-multiplied; the
// labels missing from the output are summed. Simple and exact; fine for the small
// contractions ONNX models carry (large ones come as MatMul).

std::string strip(const std::string& s) {
  std::string out;
  for (char ch : s)
    if (ch != ' ') out += ch;
  return out;
}

// Labels of one operand term, with "..." replaced by `ell` labels ('A' + k counting back
// from the last ellipsis dim, so broadcasting aligns right).
std::string expand_term(NodeContext& c, const std::string& term, int rank, int* ell_rank) {
  const size_t dots = term.find("...");
  if (dots == std::string::npos) {
    DF_CHECK(int(term.size()) == rank, kPrefix, c.describe(), ": term '", term, "' for an operand of rank ", rank);
    return term;
  }
  const int named = int(term.size()) - 3;
  const int e = rank - named;
  DF_CHECK(e >= 0, kPrefix, c.describe(), ": term '", term, "' for an operand of rank ", rank);
  *ell_rank = std::max(*ell_rank, e);
  std::string ell;
  for (int k = e - 1; k >= 0; --k) ell += char('A' + k);
  return term.substr(0, dots) + ell + term.substr(dots + 3);
}

// x with its dims p and q (same label, same size) reduced to their diagonal, kept at p.
Tensor take_diagonal(const Tensor& x, int p, int q) {
  const int64_t n = x.shape()[p];
  std::vector<int64_t> s(size_t(x.rank()), 1);
  s[size_t(p)] = n;
  s[size_t(q)] = n;
  return reduce_sum(x * cast(reshape(eye(n), Shape(s)), x.dtype()), {q});
}

TensorList import_einsum(NodeContext& c) {
  const std::string eq = strip(c.attr_string("equation", ""));
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t b = 0;;) {
    const size_t e = lhs.find(',', b);
    terms.push_back(lhs.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  DF_CHECK(terms.size() == c.num_inputs(), kPrefix, c.describe(), ": equation '", eq, "' has ", terms.size(),
           " terms for ", c.num_inputs(), " inputs");
  int ell_rank = 0;
  std::vector<Tensor> xs;
  std::vector<std::string> labels;
  std::map<char, int64_t> dim_of;
  for (size_t i = 0; i < terms.size(); ++i) {
    Tensor x = c.input(i);
    std::string l = expand_term(c, terms[i], x.rank(), &ell_rank);
    for (int p = 0; p < int(l.size()); ++p) {
      for (int q = int(l.size()) - 1; q > p; --q) {
        if (l[size_t(q)] != l[size_t(p)]) continue;
        x = take_diagonal(x, p, q);
        l.erase(size_t(q), 1);
      }
    }
    for (int p = 0; p < int(l.size()); ++p) {
      const int64_t d = x.shape()[p];
      auto it = dim_of.find(l[size_t(p)]);
      if (it == dim_of.end() || it->second == 1) dim_of[l[size_t(p)]] = d;
    }
    xs.push_back(x);
    labels.push_back(l);
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
    const size_t dots = out.find("...");
    if (dots != std::string::npos) {
      std::string ell;
      for (int k = ell_rank - 1; k >= 0; --k) ell += char('A' + k);
      out = out.substr(0, dots) + ell + out.substr(dots + 3);
    }
  } else {
    // Implicit output: the ellipsis dims, then labels used once, alphabetically.
    for (int k = ell_rank - 1; k >= 0; --k) out += char('A' + k);
    std::map<char, int> count;
    for (const auto& l : terms)
      for (char ch : l)
        if (ch != '.') ++count[ch];
    for (const auto& [ch, n] : count)
      if (n == 1) out += ch;
  }
  // Global order: output labels, then the summed ones.
  std::string order = out;
  for (const auto& [ch, d] : dim_of)
    if (order.find(ch) == std::string::npos) order += ch;
  Tensor prod;
  for (size_t i = 0; i < xs.size(); ++i) {
    const std::string& l = labels[i];
    Axes perm;
    std::string present;
    for (char ch : order)
      if (l.find(ch) != std::string::npos) {
        perm.push_back(int64_t(l.find(ch)));
        present += ch;
      }
    Tensor t = transpose(xs[i], perm);
    std::vector<int64_t> s;
    for (char ch : order) s.push_back(present.find(ch) != std::string::npos ? xs[i].shape()[int(l.find(ch))] : 1);
    t = reshape(t, Shape(s));
    prod = prod.defined() ? prod * t : t;
  }
  Axes sum_axes;
  for (size_t k = out.size(); k < order.size(); ++k) sum_axes.push_back(int64_t(k));
  if (!sum_axes.empty()) prod = reduce_sum(prod, sum_axes);
  return {prod};
}

// --- Det --- cofactor expansion along the first row (n is known and small).

Tensor det_of(const Tensor& m, int64_t n) {
  const int r = m.rank();
  auto at = [&](int64_t i, int64_t j) {
    return squeeze(gather(gather(m, constant(std::vector<int64_t>{i}), r - 2), constant(std::vector<int64_t>{j}), r - 1),
                   {r - 2, r - 1});
  };
  if (n == 1) return at(0, 0);
  if (n == 2) return at(0, 0) * at(1, 1) - at(0, 1) * at(1, 0);
  Tensor out;
  std::vector<int64_t> rows;
  for (int64_t i = 1; i < n; ++i) rows.push_back(i);
  const Tensor lower = gather(m, constant(rows), r - 2);
  for (int64_t j = 0; j < n; ++j) {
    std::vector<int64_t> cols;
    for (int64_t k = 0; k < n; ++k)
      if (k != j) cols.push_back(k);
    const Tensor term = at(0, j) * det_of(gather(lower, constant(cols), r - 1), n - 1);
    out = !out.defined() ? term : (j % 2 == 0 ? out + term : out - term);
  }
  return out;
}

TensorList import_det(NodeContext& c) {
  const Tensor x = c.input(0);
  DF_CHECK(x.rank() >= 2 && x.shape()[x.rank() - 1] == x.shape()[x.rank() - 2] && x.shape()[x.rank() - 1] > 0,
           kPrefix, c.describe(), ": needs known square matrices, got ", x.shape().to_string());
  const int64_t n = x.shape()[x.rank() - 1];
  DF_CHECK(n <= 6, kPrefix, c.describe(), ": matrices larger than 6x6 are not supported, got ", n, "x", n);
  return {det_of(x, n)};
}

// --- ReverseSequence ---

TensorList import_reverse_sequence(NodeContext& c) {
  Tensor x = c.input(0);
  const Tensor lens = cast(c.input(1), DType::Int64);
  const int64_t batch_axis = onnx_axis(c, c.attr_int("batch_axis", 1), x.rank());
  const int64_t time_axis = onnx_axis(c, c.attr_int("time_axis", 0), x.rank());
  const int64_t steps = x.shape()[int(time_axis)];
  DF_CHECK(steps >= 0, kPrefix, c.describe(), ": the time dim must be known, got ", x.shape().to_string());
  // Batch-major [B, T, ...]; row b reads time where(t < len_b, len_b - 1 - t, t).
  Axes perm{batch_axis, time_axis};
  for (int64_t a = 0; a < x.rank(); ++a)
    if (a != batch_axis && a != time_axis) perm.push_back(a);
  const Tensor xb = transpose(x, perm);
  const Tensor t = reshape(arange(0, double(steps), 1, DType::Int64), {1, steps});
  const Tensor l = reshape(lens, {-1, 1});
  const Tensor idx = where(less(t, l), l - 1 - t, t + zeros_like(l));
  const Tensor y = gather(xb, idx, 1, 1);
  Axes inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
  return {transpose(y, inv)};
}

// --- MaxUnpool --- values scattered to their flat (whole-tensor) indices.

TensorList import_max_unpool(NodeContext& c) {
  const Tensor x = c.input(0), ind = c.input(1);
  const Shape& s = x.shape();
  DF_CHECK(s.is_fully_defined(), kPrefix, c.describe(), ": needs a known input shape, got ", s.to_string());
  std::vector<int64_t> out_shape;
  {
    const std::vector<int64_t> k = c.attr_ints("kernel_shape");
    const int nsp = s.rank() - 2;
    std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(size_t(nsp), 1));
    std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(size_t(2 * nsp), 0));
    DF_CHECK(int(k.size()) == nsp, kPrefix, c.describe(), ": kernel_shape has ", k.size(), " dims for ", nsp,
             " spatial dims");
    out_shape = {s[0], s[1]};
    for (int i = 0; i < nsp; ++i)
      out_shape.push_back((s[i + 2] - 1) * strides[size_t(i)] + k[size_t(i)] - pads[size_t(i)] -
                          pads[size_t(i + nsp)]);
  }
  Tensor flat_ind = reshape(cast(ind, DType::Int64), {-1, 1});
  if (c.num_inputs() > 2 && c.has_input(2)) {
    // The indices address the unpadded (default) output; re-address them in the requested one.
    const std::vector<int64_t> requested = c.constant_input(2).to_vector<int64_t>();
    DF_CHECK(requested.size() == out_shape.size(), kPrefix, c.describe(), ": output_shape has ", requested.size(),
             " dims for rank ", out_shape.size());
    Tensor rem = flat_ind, moved = zeros_like(flat_ind);
    int64_t stride_out = 1;
    for (int i = int(out_shape.size()) - 1; i >= 0; --i) {
      const Tensor q = div(rem, scalar(double(out_shape[size_t(i)]), DType::Int64));
      const Tensor coord = rem - q * scalar(double(out_shape[size_t(i)]), DType::Int64);
      moved = moved + coord * scalar(double(stride_out), DType::Int64);
      rem = q;
      stride_out *= requested[size_t(i)];
    }
    flat_ind = moved;
    out_shape = requested;
  }
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  const Tensor flat = scatter_nd(flat_ind, reshape(x, {-1}), Shape{total});
  return {reshape(flat, Shape(out_shape))};
}

// --- BitShift --- in float64, exact for the 8-bit (and 32-bit) range; wraps like C.

TensorList import_bit_shift(NodeContext& c) {
  const Tensor x = c.input(0), y = c.input(1);
  DF_CHECK(x.dtype() == DType::UInt8, kPrefix, c.describe(), ": only uint8 is supported, got ", x.dtype());
  const std::string dir = c.attr_string("direction", "");
  const Tensor xf = cast(x, DType::Float64);
  const Tensor p = pow(scalar(2.0, DType::Float64), cast(y, DType::Float64));
  Tensor v;
  if (dir == "LEFT") {
    v = xf * p;
    v = v - floor(v / 256.0) * 256.0;
  } else {
    DF_CHECK(dir == "RIGHT", kPrefix, c.describe(), ": direction must be LEFT or RIGHT, got '", dir, "'");
    v = floor(xf / p);
  }
  return {cast(v, DType::UInt8)};
}

// --- DFT (opset 17) --- real/imaginary parts times cos/sin matrices.

TensorList import_dft(NodeContext& c) {
  Tensor x = c.input(0);
  const int r = x.rank();
  DF_CHECK(r >= 2 && (x.shape()[r - 1] == 1 || x.shape()[r - 1] == 2), kPrefix, c.describe(),
           ": the last dim must be 1 (real) or 2 (complex), got ", x.shape().to_string());
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 1), r - 1);
  const bool inverse = c.attr_int("inverse", 0) != 0, onesided = c.attr_int("onesided", 0) != 0;
  const bool complex_in = x.shape()[r - 1] == 2;
  Tensor xr = squeeze(slice(x, Axes(size_t(r), 0), [&] {
                        Axes s(size_t(r), -1);
                        s[size_t(r - 1)] = 1;
                        return s;
                      }()),
                      {r - 1});
  Tensor xi;
  if (complex_in) {
    Axes b(size_t(r), 0), s(size_t(r), -1);
    b[size_t(r - 1)] = 1;
    s[size_t(r - 1)] = 1;
    xi = squeeze(slice(x, b, s), {r - 1});
  }
  int64_t n = xr.shape()[int(axis)];
  DF_CHECK(n > 0, kPrefix, c.describe(), ": the transformed dim must be known, got ", x.shape().to_string());
  int64_t len = n;
  if (c.num_inputs() > 1 && c.has_input(1)) len = c.constant_input(1).to_vector<int64_t>()[0];
  const int64_t m = onesided ? len / 2 + 1 : len;
  // Move the axis last.
  Axes perm;
  for (int64_t a = 0; a < r - 1; ++a)
    if (a != axis) perm.push_back(a);
  perm.push_back(axis);
  Axes inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
  auto fit = [&](Tensor t) {
    t = transpose(t, perm);
    if (len < n) {
      Axes b(perm.size(), 0), s(perm.size(), -1);
      s.back() = len;
      t = slice(t, b, s);
    } else if (len > n) {
      std::vector<std::pair<int64_t, int64_t>> p(perm.size(), {0, 0});
      p.back() = {0, len - n};
      t = pad(t, p);
    }
    return t;
  };
  xr = fit(xr);
  if (xi.defined()) xi = fit(xi);
  std::vector<double> cs(size_t(len * m)), sn(size_t(len * m));
  for (int64_t j = 0; j < len; ++j)
    for (int64_t k = 0; k < m; ++k) {
      const double ang = 2 * std::numbers::pi * double((j * k) % len) / double(len);
      cs[size_t(j * m + k)] = std::cos(ang);
      sn[size_t(j * m + k)] = std::sin(ang);
    }
  const Tensor C = constant(cs, Shape{len, m}, x.dtype()), S = constant(sn, Shape{len, m}, x.dtype());
  // Forward: e^{-i a}; inverse: e^{+i a} / len.
  const double sg = inverse ? 1.0 : -1.0;
  Tensor yr = matmul(xr, C), yi = matmul(xr, S) * sg;
  if (xi.defined()) {
    yr = yr - matmul(xi, S) * sg;
    yi = yi + matmul(xi, C);
  }
  if (inverse) {
    yr = yr / double(len);
    yi = yi / double(len);
  }
  return {stack({transpose(yr, inv), transpose(yi, inv)}, -1)};
}


// --- data-dependent shapes: the deciding values must be known at import ---

TensorList import_compress(NodeContext& c) {
  Tensor x = c.input(0);
  const std::vector<int64_t> cond = c.constant_input(1).to_vector<int64_t>();
  int64_t axis = 0;
  if (c.has_attr("axis")) {
    axis = onnx_axis(c, c.attr_int("axis", 0), x.rank());
  } else {
    x = reshape(x, {-1});
  }
  const int64_t dim = x.shape()[int(axis)];
  DF_CHECK(dim < 0 || int64_t(cond.size()) <= dim, kPrefix, c.describe(), ": condition has ", cond.size(),
           " values for a dim of ", dim);
  std::vector<int64_t> idx;
  for (size_t i = 0; i < cond.size(); ++i)
    if (cond[i] != 0) idx.push_back(int64_t(i));
  return {gather(x, constant(idx, Shape{int64_t(idx.size())}), axis)};
}

TensorList import_non_zero(NodeContext& c) {
  const Tensor x = c.constant_input(0);
  const Shape& s = x.shape();
  const std::vector<double> v = x.to_vector<double>();
  std::vector<std::vector<int64_t>> coords(size_t(s.rank()));
  for (int64_t i = 0; i < int64_t(v.size()); ++i) {
    if (v[size_t(i)] == 0) continue;
    int64_t rem = i;
    for (int d = s.rank() - 1; d >= 0; --d) {
      coords[size_t(d)].push_back(rem % s[d]);
      rem /= s[d];
    }
  }
  const int64_t nnz = s.rank() > 0 ? int64_t(coords[0].size()) : (v.at(0) != 0 ? 1 : 0);
  std::vector<int64_t> flat;
  for (const auto& row : coords) flat.insert(flat.end(), row.begin(), row.end());
  return {constant(flat, Shape{int64_t(s.rank()), nnz})};
}

TensorList import_unique(NodeContext& c) {
  Tensor x = c.constant_input(0);
  const bool sorted = c.attr_int("sorted", 1) != 0;
  int64_t axis = 0;
  if (c.has_attr("axis")) axis = onnx_axis(c, c.attr_int("axis", 0), x.rank());
  else x = reshape(x, {-1});
  // Slices along `axis`, as vectors of doubles (strings are not supported).
  const Shape& s = x.shape();
  const int64_t n = s[int(axis)];
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < int(axis); ++d) outer *= s[d];
  for (int d = int(axis) + 1; d < s.rank(); ++d) inner *= s[d];
  const std::vector<double> v = x.to_vector<double>();
  std::vector<std::vector<double>> slices(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < inner; ++k) slices[size_t(i)].push_back(v[size_t((o * n + i) * inner + k)]);
  std::vector<int64_t> first;  // index of the first occurrence of each unique slice
  std::vector<int64_t> inverse(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t found = -1;
    for (size_t u = 0; u < first.size(); ++u)
      if (slices[size_t(first[u])] == slices[size_t(i)]) found = int64_t(u);
    if (found < 0) {
      found = int64_t(first.size());
      first.push_back(i);
    }
    inverse[size_t(i)] = found;
  }
  std::vector<int64_t> order(first.size());
  for (size_t u = 0; u < order.size(); ++u) order[u] = int64_t(u);
  if (sorted)
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return slices[size_t(first[size_t(a)])] < slices[size_t(first[size_t(b)])]; });
  std::vector<int64_t> rank_of(order.size()), indices, counts(order.size(), 0);
  for (size_t r = 0; r < order.size(); ++r) {
    rank_of[size_t(order[r])] = int64_t(r);
    indices.push_back(first[size_t(order[r])]);
  }
  for (auto& i : inverse) {
    i = rank_of[size_t(i)];
    ++counts[size_t(i)];
  }
  const int64_t u = int64_t(indices.size());
  return {gather(x, constant(indices, Shape{u}), axis), constant(indices, Shape{u}),
          constant(inverse, Shape{n}), constant(counts, Shape{u})};
}

// NonMaxSuppression: greedy per batch and class, scores descending (ties keep the lower
// box index), a box survives when its score exceeds score_threshold and its IoU with
// every kept box does not exceed iou_threshold.
TensorList import_non_max_suppression(NodeContext& c) {
  const Tensor boxes = c.constant_input(0), scores = c.constant_input(1);
  DF_CHECK(boxes.rank() == 3 && boxes.shape()[2] == 4 && scores.rank() == 3 &&
               scores.shape()[0] == boxes.shape()[0] && scores.shape()[2] == boxes.shape()[1],
           kPrefix, c.describe(), ": boxes [B,N,4] and scores [B,C,N] expected, got ", boxes.shape().to_string(),
           " and ", scores.shape().to_string());
  int64_t max_out = 0;
  if (c.num_inputs() > 2 && c.has_input(2)) max_out = c.constant_input(2).to_vector<int64_t>().at(0);
  double iou_th = 0;
  if (c.num_inputs() > 3 && c.has_input(3)) iou_th = c.constant_input(3).to_vector<double>().at(0);
  bool has_score_th = c.num_inputs() > 4 && c.has_input(4);
  const double score_th = has_score_th ? c.constant_input(4).to_vector<double>().at(0) : 0.0;
  const bool center = c.attr_int("center_point_box", 0) != 0;
  const int64_t nb = boxes.shape()[0], n = boxes.shape()[1], nc = scores.shape()[1];
  const std::vector<double> bv = boxes.to_vector<double>(), sv = scores.to_vector<double>();
  // Corners as (y1, x1, y2, x2) with y1 <= y2, x1 <= x2.
  auto corners = [&](int64_t b, int64_t i) {
    const double* p = &bv[size_t((b * n + i) * 4)];
    std::array<double, 4> k{};
    if (center) k = {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
    else k = {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
    return k;
  };
  auto iou = [](const std::array<double, 4>& a, const std::array<double, 4>& b) {
    const double ih = std::min(a[2], b[2]) - std::max(a[0], b[0]), iw = std::min(a[3], b[3]) - std::max(a[1], b[1]);
    if (ih <= 0 || iw <= 0) return 0.0;
    const double inter = ih * iw;
    const double uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    return uni > 0 ? inter / uni : 0.0;
  };
  std::vector<int64_t> out;
  int64_t rows = 0;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t k = 0; k < nc; ++k) {
      std::vector<int64_t> order;
      for (int64_t i = 0; i < n; ++i)
        if (!has_score_th || sv[size_t((b * nc + k) * n + i)] > score_th) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return sv[size_t((b * nc + k) * n + x)] > sv[size_t((b * nc + k) * n + y)];
      });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (int64_t(kept.size()) >= max_out) break;
        bool ok = true;
        for (int64_t j : kept) ok = ok && !(iou(corners(b, i), corners(b, j)) > iou_th);
        if (!ok) continue;
        kept.push_back(i);
        out.insert(out.end(), {b, k, i});
        ++rows;
      }
    }
  return {constant(out, Shape{rows, 3})};
}

}  // namespace

DF_ONNX_OP("Einsum", 12, import_einsum)
DF_ONNX_OP("Det", 11, import_det)
DF_ONNX_OP("ReverseSequence", 10, import_reverse_sequence)
DF_ONNX_OP("MaxUnpool", 9, import_max_unpool)
DF_ONNX_OP("BitShift", 11, import_bit_shift)
DF_ONNX_OP("DFT", 17, import_dft)
DF_ONNX_OP("Compress", 9, import_compress)
DF_ONNX_OP("NonZero", 9, import_non_zero)
DF_ONNX_OP("Unique", 11, import_unique)
DF_ONNX_OP("NonMaxSuppression", 10, import_non_max_suppression)

}  // namespace deepflow::onnx
