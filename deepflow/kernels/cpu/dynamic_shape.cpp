// SPDX-License-Identifier: Apache-2.0
// CPU kernels of the run-time shape ops: once the shapes are concrete, broadcast_like
// and sum_to_like are a broadcast_to and a reduce_sum, so they run those ops' fastest
// kernels (the same code, and the same rounding, as the static path eager mode takes).
#include "deepflow/ops/kernel.h"

namespace deepflow {

namespace {

// Runs the kernel dispatch() would pick for `op` on these inputs and attributes.
void run_best(OpId op, std::span<const Tensor> inputs, const Attrs& attrs, TensorList& out) {
  const OpCall call{&op_def(op), inputs, &attrs, {}};
  select_kernel(call).run(call, out);
}

void cpu_broadcast_like(const OpCall& c, TensorList& out) {
  const Attrs attrs{{"shape", c.in(1).shape().to_vector()}};
  run_best(OpId::BroadcastTo, c.inputs.subspan(0, 1), attrs, out);
}


// The dims to sum: g's leading dims, and those where like has 1 and g does not.
void cpu_sum_to_like(const OpCall& c, TensorList& out) {
  const Tensor& g = c.in(0);
  const Shape& target = c.in(1).shape();
  const int lead = g.rank() - target.rank();
  std::vector<int64_t> axes;
  Shape kept;
  for (int i = 0; i < g.rank(); ++i) {
    const bool sum = i < lead || (target[i - lead] == 1 && g.shape()[i] != 1);
    if (sum) axes.push_back(i);
    kept.push_back(sum ? 1 : g.shape()[i]);
  }
  if (axes.empty()) {
    out[0] = g.view(target);
    return;
  }
  const Attrs attrs{{"axes", axes}, {"keepdims", true}};
  TensorList summed{Tensor(kept, g.dtype())};
  run_best(OpId::ReduceSum, c.inputs.subspan(0, 1), attrs, summed);
  out[0] = summed[0].view(target);
}
}  // namespace

DF_REGISTER_KERNEL(SumToLike, {.name = "cpu:reduce_sum", .priority = kCpuPriority, .run = cpu_sum_to_like});
DF_REGISTER_KERNEL(BroadcastLike, {.name = "cpu:broadcast_to", .priority = kCpuPriority, .run = cpu_broadcast_like});

}  // namespace deepflow
