// SPDX-License-Identifier: Apache-2.0
// TensorFlow's Einsum (MultiHeadAttention, Keras 3's EinsumDense, tensordot) as transposes,
// reshapes and one batched matmul. Labels are split into batch (both operands and the
// output), contracted (both operands, not the output) and free ones; labels of one operand
// that the output lacks are summed first. Only the contracted and the right operand's free
// labels are merged into one dim each, so a dynamic batch or sequence dim stays its own dim
// (deepflow's reshape takes at most one unknown dim).
#include <algorithm>
#include <string>

#include "deepflow/core/error.h"
#include "deepflow/tf/op_importer.h"

namespace deepflow::tf {
namespace {

struct Equation {
  std::vector<std::string> inputs;
  std::string output;
};

Equation parse(NodeContext& c, const std::string& eq) {
  DF_CHECK(eq.find("...") == std::string::npos, "[tf::import] ", c.describe(), ": Einsum '", eq,
           "' uses an ellipsis, which is not supported");
  Equation e;
  const size_t arrow = eq.find("->");
  DF_CHECK(arrow != std::string::npos, "[tf::import] ", c.describe(), ": Einsum '", eq, "' has no '->'");
  std::string lhs = eq.substr(0, arrow);
  e.output = eq.substr(arrow + 2);
  size_t start = 0;
  for (size_t comma; (comma = lhs.find(',', start)) != std::string::npos; start = comma + 1)
    e.inputs.push_back(lhs.substr(start, comma - start));
  e.inputs.push_back(lhs.substr(start));
  auto strip = [](std::string& s) { s.erase(std::remove(s.begin(), s.end(), ' '), s.end()); };
  for (auto& s : e.inputs) strip(s);
  strip(e.output);
  return e;
}

bool has(const std::string& s, char l) { return s.find(l) != std::string::npos; }

Axes perm_for(const std::string& from, const std::string& to) {
  Axes p;
  for (char l : to) p.push_back(int64_t(from.find(l)));
  return p;
}

// Sums out labels of x that neither the other operand nor the output has.
Tensor sum_lone(Tensor x, std::string& labels, const std::string& other, const std::string& out) {
  Axes axes;
  std::string kept;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (!has(other, labels[i]) && !has(out, labels[i])) {
      axes.push_back(int64_t(i));
    } else {
      kept += labels[i];
    }
  }
  labels = kept;
  return axes.empty() ? x : reduce_sum(x, axes);
}

std::vector<int64_t> dims_of(const Tensor& x, const std::string& labels, const std::string& which) {
  std::vector<int64_t> d;
  for (char l : which) d.push_back(x.dim(int(labels.find(l))));
  return d;
}
int64_t product(const std::vector<int64_t>& d) {
  int64_t p = 1;
  for (int64_t v : d) p = (v < 0 || p < 0) ? -1 : p * v;
  return p;
}
using Sources = std::vector<std::pair<Tensor, int>>;
// Where each dim of `which` comes from: (x, its position in x's labels).
Sources sources_of(const Tensor& x, const std::string& labels, const std::string& which) {
  Sources s;
  for (char l : which) s.emplace_back(x, int(labels.find(l)));
  return s;
}
Tensor reshape_checked(NodeContext& c, const Tensor& x, const std::vector<int64_t>& dims, const Sources& src) {
  int unknown = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    unknown += dims[i] < 0;
    DF_CHECK(dims[i] >= 0 || (i < src.size() && src[i].first.defined()), "[tf::import] ", c.describe(), ": Einsum '",
             c.attr_string("equation"), "' would merge dims known only at run time (input ", x.shape(), ")");
  }
  return unknown <= 1 ? reshape(x, Shape(dims)) : dynamic_reshape(c, x, dims, src);
}

Values import_einsum(NodeContext& c) {
  Equation e = parse(c, c.attr_string("equation"));
  DF_CHECK(e.inputs.size() == c.num_inputs() && (e.inputs.size() == 1 || e.inputs.size() == 2), "[tf::import] ",
           c.describe(), ": Einsum with ", c.num_inputs(), " operands is not supported");
  std::string la = e.inputs[0];
  Tensor a = c.input(0);
  if (e.inputs.size() == 1) {
    a = sum_lone(a, la, "", e.output);
    return {transpose(a, perm_for(la, e.output))};
  }
  std::string lb = e.inputs[1];
  Tensor b = c.input(1);
  a = sum_lone(a, la, lb, e.output);
  b = sum_lone(b, lb, la, e.output);
  std::string batch, contract, free_a, free_b;
  for (char l : la) (has(lb, l) ? (has(e.output, l) ? batch : contract) : free_a) += l;
  for (char l : lb) {
    if (!has(la, l)) free_b += l;
  }
  a = transpose(a, perm_for(la, batch + free_a + contract));
  b = transpose(b, perm_for(lb, batch + contract + free_b));
  const std::string a_labels = batch + free_a + contract, b_labels = batch + contract + free_b;
  std::vector<int64_t> bd = dims_of(a, a_labels, batch), fa = dims_of(a, a_labels, free_a),
                       k = dims_of(a, a_labels, contract), fb = dims_of(b, b_labels, free_b);
  const int64_t K = product(k), N = product(fb);
  const Sources sa = sources_of(a, a_labels, batch + free_a), sb = sources_of(b, b_labels, batch);
  const Tensor a0 = a, b0 = b;
  // a: batch + free_a (at least one, as M) + [K]
  std::vector<int64_t> ad = bd;
  ad.insert(ad.end(), fa.begin(), fa.end());
  Sources asrc = sa;
  if (fa.empty()) ad.push_back(1);
  ad.push_back(K);
  asrc.resize(ad.size());
  if (contract.size() != 1 || fa.empty()) a = reshape_checked(c, a, ad, asrc);
  // b: batch + ones for the extra free_a dims + [K, N]
  std::vector<int64_t> bdims = bd;
  for (size_t i = 1; i < fa.size(); ++i) bdims.push_back(1);
  bdims.push_back(K);
  bdims.push_back(N);
  Sources bsrc = sb;
  bsrc.resize(bdims.size());
  if (contract.size() != 1 || free_b.size() != 1 || fa.size() > 1) b = reshape_checked(c, b, bdims, bsrc);
  Tensor y = matmul(a, b);  // batch + free_a (or [1]) + [N]
  std::vector<int64_t> yd = bd;
  yd.insert(yd.end(), fa.begin(), fa.end());
  yd.insert(yd.end(), fb.begin(), fb.end());
  Sources ysrc = sources_of(a0, a_labels, batch + free_a);
  for (char l : free_b) ysrc.emplace_back(b0, int(b_labels.find(l)));
  if (free_b.size() != 1 || fa.empty()) y = reshape_checked(c, y, yd, ysrc);
  return {transpose(y, perm_for(batch + free_a + free_b, e.output))};
}

}  // namespace

DF_TF_OP("Einsum", import_einsum)

}  // namespace deepflow::tf
