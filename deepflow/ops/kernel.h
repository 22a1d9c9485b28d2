// SPDX-License-Identifier: Apache-2.0
// Kernels: how an op runs on a device, chosen per call from an ordered list.
//
// Each op has a list of kernels ordered by priority (highest first). dispatch()
// runs the first one whose device matches and whose `supports` accepts the call
// (dtype, shapes, attributes). The reference kernel ("ref", priority 0) supports
// everything the OpDef allows and is always last: it is the oracle the op-table
// tests compare every other kernel against.
//
//   static bool f32_only(const OpCall& c) { return c.in(0).dtype() == DType::Float32; }
//   static void matmul_onednn(const OpCall& c, TensorList& out) { ... }
//   DF_REGISTER_KERNEL(MatMul, {.name = "cpu:onednn", .priority = 100,
//                               .supports = f32_only, .run = matmul_onednn});
#pragma once

#include <vector>

#include "deepflow/ops/op.h"

namespace deepflow {

/// Runs the op: `out` holds outputs already allocated with the inferred types,
/// except for view_output ops, where the kernel may replace out[0] with a view.
using KernelFn = void (*)(const OpCall& call, TensorList& out);
using SupportsFn = bool (*)(const OpCall& call);

struct KernelDef {
  const char* name = "ref";            ///< "ref", "cpu:onednn", "cpu:omp"
  int priority = 0;                    ///< higher is tried first; ref is 0
  SupportsFn supports = nullptr;       ///< nullptr: supports every call
  KernelFn run = nullptr;
  DeviceType device = DeviceType::Cpu;
};

inline constexpr int kRefPriority = 0;
inline constexpr int kCpuPriority = 100;

/// Adds a kernel to an op's list, keeping the list ordered by priority.
void register_kernel(OpId op, KernelDef k);
/// The kernels of an op, highest priority first.
const std::vector<KernelDef>& kernels_for(OpId op);
/// The kernel dispatch() would pick for this call; throws when none supports it.
const KernelDef& select_kernel(const OpCall& call, DeviceType device = DeviceType::Cpu);
/// Runs one given kernel on a call: allocates outputs from `infer`, runs, returns them.
/// (The op-table tests use it to compare each kernel with the reference.)
TensorList run_kernel(const KernelDef& k, OpId op, std::span<const Tensor> inputs, const Attrs& attrs);

namespace detail {
struct KernelRegistrar {
  KernelRegistrar(OpId op, KernelDef k) { register_kernel(op, k); }
};
}  // namespace detail

}  // namespace deepflow

#define DF_KERNEL_CAT2_(a, b) a##b
#define DF_KERNEL_CAT_(a, b) DF_KERNEL_CAT2_(a, b)
/// Registers a kernel for primitive `Name` with the given KernelDef fields.
#define DF_REGISTER_KERNEL(Name, ...)                                                          \
  static ::deepflow::detail::KernelRegistrar DF_KERNEL_CAT_(df_kernel_registrar_##Name##_, __LINE__)( \
      ::deepflow::OpId::Name, ::deepflow::KernelDef __VA_ARGS__)
