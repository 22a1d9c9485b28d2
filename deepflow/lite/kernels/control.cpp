// SPDX-License-Identifier: Apache-2.0
// IF and WHILE: run other subgraphs of the model. IF: input 0 is a bool condition, the rest
// go to then_subgraph or else_subgraph, whose outputs become the op's outputs. WHILE: the
// inputs are the loop state; cond_subgraph maps the state to a bool, body_subgraph to the
// next state. Values are copied across subgraph boundaries; outputs take the shapes the
// subgraphs produce, so they are dynamic.
#include <cstring>

#include "deepflow/lite/interpreter.h"
#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

// Copies tensors `from` into subgraph `to`'s inputs, resizing them as needed.
void feed(const OpContext& ctx, const std::vector<const Tensor*>& from, Subgraph& to) {
  DF_LITE_OP_CHECK(ctx, from.size() == to.inputs().size(), "passes ", from.size(), " values to subgraph ", to.index(),
                   ", which takes ", to.inputs().size());
  for (size_t i = 0; i < from.size(); ++i) {
    const Tensor& src = *from[i];
    Tensor& dst = to.tensor(to.inputs()[i]);
    DF_LITE_OP_CHECK(ctx, src.type == dst.type, "passes a ", dtype_name(src.type), " to subgraph ", to.index(),
                     "'s input '", dst.name, "' of type ", dtype_name(dst.type));
    to.resize_input(to.inputs()[i], src.shape);
  }
  if (to.needs_allocation()) to.allocate_tensors();
  for (size_t i = 0; i < from.size(); ++i) {
    Tensor& dst = to.tensor(to.inputs()[i]);
    if (!from[i]->bytes) continue;
    DF_LITE_OP_CHECK(ctx, dst.data_ptr && from[i]->data_ptr && dst.bytes >= from[i]->bytes, "passes '", from[i]->name,
                     "' (", from[i]->bytes, " bytes) to subgraph ", to.index(), "'s input '", dst.name,
                     "', which has ", dst.data_ptr ? dst.bytes : 0, " bytes of memory");
    std::memcpy(dst.data_ptr, from[i]->data_ptr, from[i]->bytes);
  }
}

std::vector<const Tensor*> outputs_of(Subgraph& g) {
  std::vector<const Tensor*> out;
  for (int i : g.outputs()) out.push_back(&g.tensor(i));
  return out;
}

void copy_out(const OpContext& ctx, const std::vector<const Tensor*>& from) {
  DF_LITE_OP_CHECK(ctx, static_cast<int>(from.size()) == ctx.num_outputs(), "gets ", from.size(),
                   " values for ", ctx.num_outputs(), " outputs");
  for (size_t i = 0; i < from.size(); ++i) {
    ctx.resize_output(static_cast<int>(i), from[i]->shape);
    if (!from[i]->bytes) continue;
    const Tensor& out = ctx.output(static_cast<int>(i));
    DF_LITE_OP_CHECK(ctx, out.data_ptr && from[i]->data_ptr && out.bytes >= from[i]->bytes, "output ", i, " '", out.name,
                     "' has ", out.data_ptr ? out.bytes : 0, " bytes of memory for '", from[i]->name, "' (",
                     from[i]->data_ptr ? from[i]->bytes : 0, " bytes)");
    std::memcpy(out.data_ptr, from[i]->data_ptr, from[i]->bytes);
  }
}

class If final : public Kernel {
 public:
  explicit If(const OpContext& ctx) {
    const auto* o = ctx.options<fb::IfOptions>();
    DF_LITE_OP_CHECK(ctx, o, "has no IfOptions");
    then_ = o->then_subgraph_index();
    else_ = o->else_subgraph_index();
  }
  void prepare(OpContext& ctx) override {
    check_type(ctx, ctx.input(0), DType::kBool, "condition");
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.mark_dynamic(i);
  }
  void eval(OpContext& ctx) override {
    DF_LITE_OP_CHECK(ctx, ctx.input(0).num_elements() >= 1, "condition '", ctx.input(0).name, "' ",
                     shape_string(ctx.input(0).shape), " has no value");
    const bool cond = ctx.input(0).data<bool>()[0];
    Subgraph& g = ctx.subgraph().interpreter().subgraph(cond ? then_ : else_);
    std::vector<const Tensor*> in;
    for (int i = 1; i < ctx.num_inputs(); ++i) in.push_back(&ctx.input(i));
    feed(ctx, in, g);
    g.invoke();
    copy_out(ctx, outputs_of(g));
  }
  bool foldable() const override { return false; }

 private:
  int then_ = 0, else_ = 0;
};

class While final : public Kernel {
 public:
  explicit While(const OpContext& ctx) {
    const auto* o = ctx.options<fb::WhileOptions>();
    DF_LITE_OP_CHECK(ctx, o, "has no WhileOptions");
    cond_ = o->cond_subgraph_index();
    body_ = o->body_subgraph_index();
  }
  void prepare(OpContext& ctx) override {
    DF_LITE_OP_CHECK(ctx, ctx.num_inputs() == ctx.num_outputs(), "has ", ctx.num_inputs(), " inputs and ",
                     ctx.num_outputs(), " outputs");
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.mark_dynamic(i);
  }
  void eval(OpContext& ctx) override {
    Interpreter& interp = ctx.subgraph().interpreter();
    Subgraph& cond = interp.subgraph(cond_);
    Subgraph& body = interp.subgraph(body_);
    // The state lives in the op's outputs between iterations.
    std::vector<const Tensor*> state;
    for (int i = 0; i < ctx.num_inputs(); ++i) state.push_back(&ctx.input(i));
    copy_out(ctx, state);
    std::vector<const Tensor*> current;
    for (int i = 0; i < ctx.num_outputs(); ++i) current.push_back(&ctx.output(i));
    const int64_t limit = interp.while_iteration_limit();
    for (int64_t iteration = 0;; ++iteration) {
      DF_LITE_OP_CHECK(ctx, limit <= 0 || iteration < limit, "ran ", iteration,
                       " iterations: the interpreter's while_iteration_limit");
      feed(ctx, current, cond);
      cond.invoke();
      DF_LITE_OP_CHECK(ctx, !cond.outputs().empty(), "condition subgraph ", cond_, " has no output");
      const Tensor& c = cond.tensor(cond.outputs()[0]);
      check_type(ctx, c, DType::kBool, "loop condition");
      DF_LITE_OP_CHECK(ctx, c.num_elements() >= 1 && c.data_ptr, "loop condition '", c.name, "' ",
                       shape_string(c.shape), " has no value");
      if (!c.data<bool>()[0]) break;
      feed(ctx, current, body);
      body.invoke();
      copy_out(ctx, outputs_of(body));
    }
  }
  bool foldable() const override { return false; }

 private:
  int cond_ = 0, body_ = 0;
};

}  // namespace

void register_control_kernels(OpResolver& r) {
  r.add_builtin(fb::BuiltinOperator::IF, make_factory<If>(), 1, 1);
  r.add_builtin(fb::BuiltinOperator::WHILE, make_factory<While>(), 1, 1);
}

}  // namespace deepflow::lite
