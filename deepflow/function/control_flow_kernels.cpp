// SPDX-License-Identifier: Apache-2.0
// Reference kernels of cond and while: they run their function-valued attributes with
// the graph executor, which is why they live here and not in deepflow/kernels/.
#include <algorithm>
#include <cstring>

#include "deepflow/graph/executor.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

// The op itself is recorded on the tapes (its vjp differentiates the sub-graphs), so
// the ops its sub-graphs run must not be recorded as well.
class PauseTapes {
 public:
  PauseTapes() : prev_(detail::g_active_tapes) { detail::g_active_tapes = 0; }
  ~PauseTapes() { detail::g_active_tapes = prev_; }

 private:
  int prev_;
};

// A sub-graph prepared once per kernel call: feeds its inputs, fetches its outputs, and
// runs its stateful nodes (assignments) even when no output needs them.
Executor prepare(const GraphRef& g) {
  std::vector<ValueRef> feeds;
  for (int id : g->inputs) feeds.push_back({id, 0});
  std::vector<int> targets;
  for (int id = 0; id < g->num_nodes(); ++id)
    if (g->node(id).def().stateful && g->node(id).op != OpId::Placeholder &&
        g->node(id).op != OpId::ReadVariable) targets.push_back(id);
  return Executor(g, feeds, g->outputs, targets);
}

// A fresh handle (new id, same storage): an output may be an input passed through, and
// tapes must see the op's outputs as values of their own.
Tensor fresh(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->id = TensorImpl::next_id();
  impl->flags = 0;
  return Tensor(std::move(impl));
}

// --- cond --- runs then_branch or else_branch on the captured inputs.
void cond_ref(const OpCall& c, TensorList& out) {
  const bool pred = c.in(0).item<bool>();
  const GraphRef& g = c.attr_func(pred ? "then_branch" : "else_branch");
  TensorList args(c.inputs.begin() + 1, c.inputs.end());
  TensorList r;
  {
    PauseTapes pause;
    r = prepare(g).run(args);
  }
  for (size_t i = 0; i < r.size(); ++i) out[i] = fresh(r[i]);
}

// Stacks equally shaped tensors along a new leading axis.
Tensor stack_history(const TensorList& xs, const Tensor& first) {
  Shape s{int64_t(xs.size())};
  for (int64_t d : first.shape()) s.push_back(d);
  Tensor h(s, first.dtype());
  if (first.dtype() == DType::String) {  // std::string elements are copied, never memcpy'd
    std::string* out = h.data<std::string>();
    for (const Tensor& x : xs) out = std::copy_n(x.data<std::string>(), x.size(), out);
    return h;
  }
  char* dst = static_cast<char*>(h.raw_data());
  for (const Tensor& x : xs) {
    std::memcpy(dst, x.raw_data(), x.nbytes());
    dst += x.nbytes();
  }
  return h;
}

// --- while --- loop vars, captures -> final vars (+ history per var and n_iter).
void while_ref(const OpCall& c, TensorList& out) {
  const GraphRef& body_g = c.attr_func("body");
  const size_t n = body_g->outputs.size();
  const int64_t max_iter = c.attr_int("maximum_iterations");
  const bool keep = c.attr_bool("keep_history");
  TensorList args(c.inputs.begin(), c.inputs.end());
  std::vector<TensorList> history(keep ? n : 0);
  int64_t it = 0;
  {
    PauseTapes pause;
    Executor cond_ex = prepare(c.attr_func("cond")), body_ex = prepare(body_g);
    for (; max_iter < 0 || it < max_iter; ++it) {
      if (!cond_ex.run(args)[0].item<bool>()) break;
      TensorList next = body_ex.run(args);
      for (size_t i = 0; i < n; ++i) {
        if (keep) {
          DF_CHECK(next[i].shape() == args[i].shape(), "[while] keep_history needs loop variable ", i,
                   " to keep its shape, got ", args[i].shape(), " then ", next[i].shape());
          history[i].push_back(args[i]);
        }
        args[i] = std::move(next[i]);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) out[i] = fresh(args[i]);
  if (keep) {
    for (size_t i = 0; i < n; ++i) out[n + i] = stack_history(history[i], c.in(int(i)));
    out[2 * n] = scalar(double(it), DType::Int64);
  }
}

}  // namespace

DF_REGISTER_KERNEL(Cond, {.run = cond_ref});
DF_REGISTER_KERNEL(While, {.run = while_ref});

}  // namespace deepflow
