// SPDX-License-Identifier: Apache-2.0
// Op-table rows of cond and while (function/control_flow.cpp). Their attributes are
// graphs, so each row traces its branches or loop on the row's input types inside the
// lambda and dispatches the op itself: eagerly the kernel runs the sub-graphs, and the
// gradient check goes through the ops' vjps.
#include "deepflow/function/control_flow.h"
#include "op_cases.h"

namespace deepflow::testing {
namespace {

using Fn = std::function<TensorList(const TensorList&)>;

TypeList types_of(const TensorList& xs) {
  TypeList t;
  for (const Tensor& x : xs) t.push_back({x.dtype(), x.shape()});
  return t;
}

Tensor boolean(bool b) { return scalar(b ? 1 : 0, DType::Bool); }

TensorList cond_op(bool pred, const TensorList& xs, const Fn& then_fn, const Fn& else_fn) {
  TensorList ins{boolean(pred)};
  ins.insert(ins.end(), xs.begin(), xs.end());
  return dispatch(OpId::Cond, ins,
                  {{"then_branch", trace_graph(types_of(xs), then_fn)},
                   {"else_branch", trace_graph(types_of(xs), else_fn)}});
}

// A loop over (i: int64 counter, vars...) with captures: cond gets i, vars, captures.
TensorList while_op(const TensorList& vars, const TensorList& caps, int64_t max_iter, const Fn& cond_fn,
                    const Fn& body_fn) {
  TensorList ins = vars;
  ins.insert(ins.end(), caps.begin(), caps.end());
  TypeList types = types_of(ins);
  return dispatch(OpId::While, ins,
                  {{"cond", trace_graph(types, cond_fn)},
                   {"body", trace_graph(types, body_fn)},
                   {"maximum_iterations", max_iter},
                   {"keep_history", true}});
}

Tensor counter() { return scalar(0, DType::Int64); }

const Fn kBelow3 = [](const TensorList& a) { return TensorList{less(a[0], scalar(3, DType::Int64))}; };
const Fn kAlways = [](const TensorList&) { return TensorList{boolean(true)}; };
// x <- 0.5 x c + sin(x), c captured.
const Fn kStep = [](const TensorList& a) { return TensorList{a[0] + 1.0, a[1] * a[2] * 0.5 + sin(a[1])}; };

}  // namespace

DF_OP_CASES(control_flow) {
  const Fn mul_sin = [](const TensorList& a) { return TensorList{a[0] * a[1], sin(a[0])}; };
  const Fn add_exp = [](const TensorList& a) { return TensorList{a[0] + a[1], exp(a[1]) * a[0]}; };
  return {
      {.name = "cond/then", .op = "cond", .inputs = {in({2, 3}), in({3})},
       .fn = [=](const TensorList& x) { return cond_op(true, x, mul_sin, add_exp); }},
      {.name = "cond/else", .op = "cond", .inputs = {in({2, 3}), in({3})},
       .fn = [=](const TensorList& x) { return cond_op(false, x, mul_sin, add_exp); }},
      {.name = "cond/pass-through", .op = "cond", .inputs = {in({4}), in({4})},
       .fn = [](const TensorList& x) {
         return cond_op(true, x, [](const TensorList& a) { return TensorList{a[0], a[0]}; },
                        [](const TensorList& a) { return TensorList{a[1], a[0] * 2.0}; });
       }},
      {.name = "cond/pred-not-bool", .op = "cond", .inputs = {in({2})},
       .fn = [](const TensorList& x) { return TensorList{cond(x[0], [&] { return x[0]; }, [&] { return x[0]; })}; },
       .error = "[cond] pred must be a bool scalar, got float32[2]"},
      {.name = "cond/branch-types", .op = "cond", .inputs = {in({2}), in({3})},
       .fn = [](const TensorList& x) {
         return cond_op(true, x, [](const TensorList& a) { return TensorList{a[0]}; },
                        [](const TensorList& a) { return TensorList{a[1]}; });
       },
       .error = "[cond] true_fn returns float32[2], false_fn returns float32[3]"},
      {.name = "while/three-steps", .op = "while", .inputs = {in({3}, 0.5, 1), in({3}, 0.5, 1.5)},
       .fn = [](const TensorList& x) { return while_op({counter(), x[0]}, {x[1]}, -1, kBelow3, kStep); }},
      {.name = "while/maximum-iterations", .op = "while", .inputs = {in({2, 2}, 0.5, 1), in({2, 2}, 0.5, 1.5)},
       .fn = [](const TensorList& x) { return while_op({counter(), x[0]}, {x[1]}, 2, kAlways, kStep); }},
      {.name = "while/no-iteration", .op = "while", .inputs = {in({3}), in({3})},
       .fn = [](const TensorList& x) { return while_op({counter(), x[0]}, {x[1]}, 0, kAlways, kStep); }},
      {.name = "while/shape-changes", .op = "while", .inputs = {in({2})},
       .fn = [](const TensorList& x) {
         return while_op({x[0]}, {}, 1, kAlways,
                         [](const TensorList& a) { return TensorList{concat({a[0], a[0]}, 0)}; });
       },
       .error = "[while] loop variable 0 has shape [2] before the loop and [4] after one iteration"},
      {.name = "while/cond-not-bool", .op = "while", .inputs = {in({2})},
       .fn = [](const TensorList& x) {
         return while_loop([](const TensorList& v) { return v[0]; }, [](const TensorList& v) { return v; }, x);
       },
       .error = "[while_loop] cond must return a bool scalar, got float32[2]"},
  };
}

}  // namespace deepflow::testing
