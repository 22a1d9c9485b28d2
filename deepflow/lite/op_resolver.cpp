// SPDX-License-Identifier: Apache-2.0
#include "deepflow/lite/kernel.h"

namespace deepflow::lite {

OpResolver OpResolver::builtins() {
  OpResolver r;
  register_conv_kernels(r);
  register_fully_connected_kernels(r);
  register_pooling_kernels(r);
  register_elementwise_kernels(r);
  register_shape_kernels(r);
  register_reduce_kernels(r);
  register_quant_kernels(r);
  register_control_kernels(r);
  register_int8_kernels(r);
  register_hybrid_kernels(r);
  return r;
}

void OpResolver::add_builtin(fb::BuiltinOperator code, KernelFactory factory, int min_version, int max_version) {
  builtins_[static_cast<int>(code)].push_back({min_version, max_version, std::move(factory)});
}

void OpResolver::add_custom(const std::string& name, KernelFactory factory) { custom_[name] = std::move(factory); }

const KernelFactory* OpResolver::find_builtin(fb::BuiltinOperator code, int version) const {
  const auto it = builtins_.find(static_cast<int>(code));
  if (it == builtins_.end()) return nullptr;
  // The last registration wins, so a user's add_builtin replaces ours.
  for (auto e = it->second.rbegin(); e != it->second.rend(); ++e)
    if (version >= e->min_version && version <= e->max_version) return &e->factory;
  return nullptr;
}

const KernelFactory* OpResolver::find_custom(const std::string& name) const {
  const auto it = custom_.find(name);
  return it == custom_.end() ? nullptr : &it->second;
}

std::pair<int, int> OpResolver::version_range(fb::BuiltinOperator code) const {
  const auto it = builtins_.find(static_cast<int>(code));
  if (it == builtins_.end() || it->second.empty()) return {0, 0};
  std::pair<int, int> r{it->second.front().min_version, it->second.front().max_version};
  for (const auto& e : it->second) r = {std::min(r.first, e.min_version), std::max(r.second, e.max_version)};
  return r;
}

}  // namespace deepflow::lite
