// SPDX-License-Identifier: Apache-2.0
// ONNX recurrent layers: RNN, GRU, LSTM (opsets 7 and 14: forward, reverse and
// bidirectional, activations with alpha/beta, clip, linear_before_reset, input_forget,
// peepholes, initial states, sequence_lens, layout).
//
// The sequence length is known at import, so the recurrence is unrolled: the input
// projections of all steps are one matmul, and each step is a matmul with R plus the
// gate arithmetic. sequence_lens masks finished batch rows (their state stops changing
// and their outputs are zero), as ONNX specifies.
#include <algorithm>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "deepflow/core/error.h"
#include "deepflow/onnx/op_importer.h"
#include "deepflow/ops/op.h"

namespace deepflow::onnx {
namespace {

constexpr const char* kPrefix = "[onnx::import] ";

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

Tensor apply_activation(NodeContext& c, const Activation& a, const Tensor& x) {
  const std::string& n = a.name;
  if (n == "Tanh") return tanh(x);
  if (n == "Sigmoid") return sigmoid(x);
  if (n == "Relu") return relu(x);
  if (n == "Affine") return x * a.alpha + a.beta;
  if (n == "LeakyRelu") return leaky_relu(x, a.alpha);
  if (n == "ThresholdedRelu") return where(greater(x, scalar_like(x, a.alpha)), x, zeros_like(x));
  if (n == "ScaledTanh") return tanh(x * a.beta) * a.alpha;
  if (n == "HardSigmoid") return clip_by_value(x * a.alpha + a.beta, 0.0, 1.0);
  if (n == "Elu") return elu(x, a.alpha);
  if (n == "Softsign") return x / (abs(x) + 1.0);
  if (n == "Softplus") return softplus(x);
  DF_CHECK(false, kPrefix, c.describe(), ": unsupported activation '", n, "'");
  return x;
}

// The activations of each direction (ONNX lists them direction after direction), with
// alpha/beta taken in order by those that use them, defaults otherwise.
std::vector<std::vector<Activation>> read_activations(NodeContext& c, const std::vector<std::string>& defaults,
                                                     int64_t num_dir) {
  std::vector<std::string> names;
  if (const auto* a = c.attr("activations"))
    for (const auto& s : a->strings()) names.push_back(s);
  if (names.empty())
    for (int64_t d = 0; d < num_dir; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() == defaults.size() && num_dir == 2) names.insert(names.end(), names.begin(), names.end());
  DF_CHECK(names.size() == defaults.size() * size_t(num_dir), kPrefix, c.describe(), ": ", names.size(),
           " activations for ", num_dir, " direction(s) of ", defaults.size());
  const std::vector<float> alphas = c.attr_floats("activation_alpha"), betas = c.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<std::vector<Activation>> out(static_cast<size_t>(num_dir));
  for (size_t i = 0; i < names.size(); ++i) {
    Activation act{names[i]};
    const std::string& n = act.name;
    const bool uses_alpha = n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" ||
                            n == "HardSigmoid" || n == "Elu";
    const bool uses_beta = n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid";
    const double def_alpha = n == "LeakyRelu" ? 0.01 : n == "HardSigmoid" ? 0.2 : 1.0;
    const double def_beta = n == "HardSigmoid" ? 0.5 : 0.0;
    act.alpha = uses_alpha ? (ai < alphas.size() ? alphas[ai++] : def_alpha) : 0;
    act.beta = uses_beta ? (bi < betas.size() ? betas[bi++] : def_beta) : 0;
    out[i / defaults.size()].push_back(act);
  }
  return out;
}

enum class Cell { kRnn, kGru, kLstm };

Tensor maybe_clip(const Tensor& x, double clip) { return clip > 0 ? clip_by_value(x, -clip, clip) : x; }

// Row d of a [num_dir, ...] tensor.
Tensor dir_slice(const Tensor& t, int64_t d) { return squeeze(gather(t, constant(std::vector<int64_t>{d}), 0), {0}); }

TensorList import_recurrent(NodeContext& c, Cell cell) {
  const int64_t gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  const std::string direction = c.attr_string("direction", "forward");
  DF_CHECK(direction == "forward" || direction == "reverse" || direction == "bidirectional", kPrefix, c.describe(),
           ": unknown direction '", direction, "'");
  const int64_t num_dir = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = c.attr_int("layout", 0);
  const double clip = c.has_attr("clip") ? double(c.attr_float("clip", 0.f)) : 0.0;
  const bool lbr = c.attr_int("linear_before_reset", 0) != 0;
  const bool input_forget = c.attr_int("input_forget", 0) != 0;
  std::vector<std::string> defaults = cell == Cell::kRnn   ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                           : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const auto acts = read_activations(c, defaults, num_dir);

  Tensor x = c.input(0);
  DF_CHECK(x.rank() == 3, kPrefix, c.describe(), ": X must be rank 3, got ", x.shape().to_string());
  if (layout != 0) x = transpose(x, {1, 0, 2});
  const int64_t seq = x.shape()[0], batch = x.shape()[1], in = x.shape()[2];
  DF_CHECK(seq >= 0, kPrefix, c.describe(), ": the sequence length must be known, X is ", x.shape().to_string());
  const Tensor w = c.input(1), r = c.input(2);
  DF_CHECK(w.rank() == 3 && r.rank() == 3, kPrefix, c.describe(), ": W and R must be rank 3, got ",
           w.shape().to_string(), " and ", r.shape().to_string());
  int64_t hidden = c.attr_int("hidden_size", -1);
  if (hidden < 0) hidden = r.shape()[2];
  DF_CHECK(hidden > 0, kPrefix, c.describe(), ": hidden_size is unknown");
  const Tensor b = c.input(3);
  const Tensor seq_lens = c.num_inputs() > 4 ? c.input(4) : Tensor();
  Tensor h0 = c.num_inputs() > 5 ? c.input(5) : Tensor();
  Tensor c0 = cell == Cell::kLstm && c.num_inputs() > 6 ? c.input(6) : Tensor();
  const Tensor peep = cell == Cell::kLstm && c.num_inputs() > 7 ? c.input(7) : Tensor();
  if (layout != 0) {
    if (h0.defined()) h0 = transpose(h0, {1, 0, 2});
    if (c0.defined()) c0 = transpose(c0, {1, 0, 2});
  }
  // Reversed directions with per-row lengths would need per-row reversal of X.
  Tensor lens_known;
  if (seq_lens.defined()) {
    if (auto k = c.known_input(4)) {
      bool full = true;
      for (int64_t v : k->to_vector<int64_t>()) full = full && v == seq;
      if (full) lens_known = *k;
    }
    DF_CHECK(direction == "forward" || lens_known.defined(), kPrefix, c.describe(),
             ": sequence_lens with a ", direction, " direction is not supported");
  }
  const bool masked = seq_lens.defined() && !lens_known.defined();

  const Tensor x2 = reshape(x, {-1, in});
  std::vector<Tensor> ys(static_cast<size_t>(num_dir)), hs(ys), cs(ys);
  for (int64_t d = 0; d < num_dir; ++d) {
    const bool rev = direction == "reverse" || d == 1;
    const Tensor wd = dir_slice(w, d), rd = dir_slice(r, d);
    Tensor xw = reshape(matmul(x2, wd, false, true), {seq, batch, gates * hidden});
    Tensor rb_h;  // GRU's Rbh stays inside the reset gate product with linear_before_reset
    if (b.defined()) {
      const std::vector<Tensor> wb_rb = split(dir_slice(b, d), 2, 0);
      if (cell == Cell::kGru) {
        const std::vector<Tensor> rbs = split(wb_rb[1], std::vector<int64_t>{2 * hidden, hidden}, 0);
        xw = xw + wb_rb[0] + concat({rbs[0], lbr ? zeros_like(rbs[1]) : rbs[1]}, 0);
        rb_h = rbs[1];
      } else {
        xw = xw + (wb_rb[0] + wb_rb[1]);
      }
    }
    const std::vector<Tensor> steps = split(xw, seq, 0);
    Tensor h = h0.defined() ? dir_slice(h0, d) : Tensor();
    if (!h.defined()) {
      const Tensor like = squeeze(slice(steps.empty() ? xw : steps[0], {0, 0, 0}, {1, -1, hidden}), {0});
      h = zeros_like(like);
    }
    Tensor cst;
    if (cell == Cell::kLstm) cst = c0.defined() ? dir_slice(c0, d) : zeros_like(h);
    std::vector<Tensor> p_iof;
    if (peep.defined()) p_iof = split(dir_slice(peep, d), 3, 0);
    const auto& a = acts[size_t(d)];
    std::vector<Tensor> outs(static_cast<size_t>(seq));
    std::vector<Tensor> rgates;
    if (cell == Cell::kGru) rgates = split(rd, 3, 0);
    for (int64_t i = 0; i < seq; ++i) {
      const int64_t t = rev ? seq - 1 - i : i;
      const Tensor xt = squeeze(steps[size_t(t)], {0});
      Tensor h_new, c_new;
      if (cell == Cell::kRnn) {
        h_new = apply_activation(c, a[0], maybe_clip(xt + matmul(h, rd, false, true), clip));
      } else if (cell == Cell::kGru) {
        const std::vector<Tensor> xg = split(xt, 3, 1);
        const Tensor z = apply_activation(c, a[0], maybe_clip(xg[0] + matmul(h, rgates[0], false, true), clip));
        const Tensor rr = apply_activation(c, a[0], maybe_clip(xg[1] + matmul(h, rgates[1], false, true), clip));
        Tensor hh_in;
        if (lbr) {
          Tensor hr = matmul(h, rgates[2], false, true);
          if (rb_h.defined()) hr = hr + rb_h;
          hh_in = xg[2] + rr * hr;
        } else {
          hh_in = xg[2] + matmul(rr * h, rgates[2], false, true);
        }
        const Tensor hh = apply_activation(c, a[1], maybe_clip(hh_in, clip));
        h_new = (1.0 - z) * hh + z * h;
      } else {
        const std::vector<Tensor> g = split(xt + matmul(h, rd, false, true), 4, 1);  // i, o, f, c
        Tensor gi = g[0], go = g[1], gf = g[2];
        if (peep.defined()) {
          gi = gi + p_iof[0] * cst;
          gf = gf + p_iof[2] * cst;
        }
        const Tensor it = apply_activation(c, a[0], maybe_clip(gi, clip));
        const Tensor ft = input_forget ? 1.0 - it : apply_activation(c, a[0], maybe_clip(gf, clip));
        const Tensor ct = apply_activation(c, a[1], maybe_clip(g[3], clip));
        c_new = ft * cst + it * ct;
        if (peep.defined()) go = go + p_iof[1] * c_new;
        const Tensor ot = apply_activation(c, a[0], maybe_clip(go, clip));
        h_new = ot * apply_activation(c, a[2], c_new);
      }
      if (masked) {
        const Tensor live =
            reshape(less(fill({}, double(t), seq_lens.dtype()), seq_lens), {-1, 1});  // [batch, 1]
        outs[size_t(t)] = where(live, h_new, zeros_like(h_new));
        h = where(live, h_new, h);
        if (cell == Cell::kLstm) cst = where(live, c_new, cst);
      } else {
        outs[size_t(t)] = h_new;
        h = h_new;
        if (cell == Cell::kLstm) cst = c_new;
      }
    }
    ys[size_t(d)] = seq > 0 ? stack(outs, 0) : Tensor();  // [seq, batch, hidden]
    hs[size_t(d)] = h;
    cs[size_t(d)] = cst;
  }
  Tensor y = stack(ys, 1);  // [seq, num_dir, batch, hidden]
  Tensor yh = stack(hs, 0);
  Tensor yc = cell == Cell::kLstm ? stack(cs, 0) : Tensor();
  if (layout != 0) {
    y = transpose(y, {2, 0, 1, 3});
    yh = transpose(yh, {1, 0, 2});
    if (yc.defined()) yc = transpose(yc, {1, 0, 2});
  }
  if (cell == Cell::kLstm) return {y, yh, yc};
  return {y, yh};
}

TensorList import_rnn(NodeContext& c) { return import_recurrent(c, Cell::kRnn); }
TensorList import_gru(NodeContext& c) { return import_recurrent(c, Cell::kGru); }
TensorList import_lstm(NodeContext& c) { return import_recurrent(c, Cell::kLstm); }

}  // namespace

DF_ONNX_OP("RNN", 7, import_rnn)
DF_ONNX_OP("GRU", 7, import_gru)
DF_ONNX_OP("LSTM", 7, import_lstm)

}  // namespace deepflow::onnx
