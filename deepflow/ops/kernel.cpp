// SPDX-License-Identifier: Apache-2.0
#include "deepflow/ops/kernel.h"

#include <algorithm>
#include <mutex>

namespace deepflow {
namespace {

struct KernelRegistry {
  std::mutex mu;
  std::vector<std::vector<KernelDef>> lists = std::vector<std::vector<KernelDef>>(kNumPrimitives);
};

KernelRegistry& kernel_registry() {
  static KernelRegistry* r = new KernelRegistry;
  return *r;
}

}  // namespace

void register_kernel(OpId op, KernelDef k) {
  KernelRegistry& r = kernel_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  size_t i = size_t(op);
  if (i >= r.lists.size()) r.lists.resize(i + 1);
  auto& list = r.lists[i];
  auto pos = std::find_if(list.begin(), list.end(), [&](const KernelDef& o) { return o.priority < k.priority; });
  list.insert(pos, k);
}

const std::vector<KernelDef>& kernels_for(OpId op) {
  static const std::vector<KernelDef> kEmpty;
  KernelRegistry& r = kernel_registry();
  size_t i = size_t(op);
  return i < r.lists.size() ? r.lists[i] : kEmpty;
}

const KernelDef& select_kernel(const OpCall& call, DeviceType device) {
  for (const KernelDef& k : kernels_for(call.def->id))
    if (k.device == device && (!k.supports || k.supports(call))) return k;
  std::string dtypes;
  for (const Tensor& t : call.inputs) dtypes += std::string(dtypes.empty() ? "" : ", ") + dtype_name(t.dtype());
  fail("[", call.def->name, "] no kernel supports inputs of dtype (", dtypes, ") on ",
       device == DeviceType::Cpu ? "cpu" : "gpu");
}

TensorList run_kernel(const KernelDef& k, OpId op, std::span<const Tensor> inputs, const Attrs& attrs) {
  const OpDef& def = op_def(op);
  TypeList types = infer_types(op, inputs, attrs);
  TensorList outputs;
  if (def.view_output) outputs.resize(types.size());
  else for (const TensorType& t : types) outputs.emplace_back(t.shape, t.dtype);
  k.run(OpCall{&def, inputs, &attrs, {}}, outputs);
  return outputs;
}

}  // namespace deepflow
