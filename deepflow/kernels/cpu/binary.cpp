// SPDX-License-Identifier: Apache-2.0
// Optimized CPU kernels of the binary primitives: broadcast rows coalesced into
// flat inner loops (which the compiler vectorizes), split across OpenMP threads.
#include <immintrin.h>

#include "deepflow/kernels/binary_functors.h"
#include "deepflow/kernels/broadcast.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

// Float32 outputs beyond this many elements do not fit the caches anyway: write them
// with streaming stores, which skip the read-for-ownership of each output line and
// cut the memory traffic of a flat add from 4 to 3 passes.
constexpr int64_t kStreamElements = int64_t(1) << 21;

// po[i] = op(pa[i], pb[i]) in L1-sized blocks, each streamed out to memory.
template <class Op>
void flat_streaming_f32(const float* pa, const float* pb, float* po, int64_t n) {
  constexpr int64_t kBlock = 1024;
  alignas(64) float buf[kBlock];
  int64_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(po + i) & 31); ++i) po[i] = Op::f(pa[i], pb[i]);
  for (; i + kBlock <= n; i += kBlock) {
#pragma omp simd
    for (int64_t j = 0; j < kBlock; ++j) buf[j] = Op::f(pa[i + j], pb[i + j]);
    for (int64_t j = 0; j < kBlock; j += 8) _mm256_stream_ps(po + i + j, _mm256_load_ps(buf + j));
  }
  for (; i < n; ++i) po[i] = Op::f(pa[i], pb[i]);
  _mm_sfence();
}

template <class Op, class T, class R>
void binary_rows(const BroadcastPlan& plan, const T* a, const T* b, R* o) {
  using CT = compute_t<T>;
  const bool stream = std::is_same_v<T, float> && std::is_same_v<R, float> && plan.is_flat() &&
                      plan.inner() >= kStreamElements;
  plan.for_each_row([&](int64_t oo, const int64_t* in, const int64_t* st, int64_t n) {
    const T* pa = a + in[0];
    const T* pb = b + in[1];
    R* po = o + oo;
    if constexpr (std::is_same_v<T, float> && std::is_same_v<R, float>) {
      if (stream) return flat_streaming_f32<Op>(pa, pb, po, n);
    }
    if (st[0] == 1 && st[1] == 1) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) po[i] = R(Op::f(CT(pa[i]), CT(pb[i])));
    } else if (st[0] == 1) {
      const CT y = CT(pb[0]);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) po[i] = R(Op::f(CT(pa[i]), y));
    } else if (st[1] == 1) {
      const CT x = CT(pa[0]);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) po[i] = R(Op::f(x, CT(pb[i])));
    } else {
      const R v = R(Op::f(CT(pa[0]), CT(pb[0])));
      for (int64_t i = 0; i < n; ++i) po[i] = v;
    }
  });
}

// Up to this many elements a same-shape binary op is one plain loop (see cpu_binary).
constexpr int64_t kSmallElements = 4096;

template <class Op, bool kCompare>
void cpu_binary(const OpCall& c, TensorList& out) {
  const Tensor &a = c.in(0), &b = c.in(1);
  Tensor& o = out[0];
  // Small operands of one shape (eager code on a few elements): one loop, no broadcast
  // plan, whose set-up cost more than the arithmetic (a quarter of an 8-float add).
  if (a.shape() == b.shape() && a.size() <= kSmallElements) {
    const int64_t n = a.size();
    DF_DISPATCH_ALL(a.dtype(), c.name(), [&] {
      using CT = compute_t<scalar_t>;
      const scalar_t* pa = a.data<scalar_t>();
      const scalar_t* pb = b.data<scalar_t>();
      if constexpr (kCompare) {
        bool* po = o.data<bool>();
        for (int64_t i = 0; i < n; ++i) po[i] = Op::f(CT(pa[i]), CT(pb[i]));
      } else if constexpr (!std::is_same_v<scalar_t, bool>) {
        scalar_t* po = o.data<scalar_t>();
        for (int64_t i = 0; i < n; ++i) po[i] = scalar_t(Op::f(CT(pa[i]), CT(pb[i])));
      }
    });
    return;
  }
  BroadcastPlan plan(o.shape(), {&a.shape(), &b.shape()});
  DF_DISPATCH_ALL(a.dtype(), c.name(), [&] {
    if constexpr (kCompare) {
      binary_rows<Op>(plan, a.data<scalar_t>(), b.data<scalar_t>(), o.data<bool>());
    } else if constexpr (!std::is_same_v<scalar_t, bool>) {
      binary_rows<Op>(plan, a.data<scalar_t>(), b.data<scalar_t>(), o.data<scalar_t>());
    }
  });
}

// Integer div and pow can throw per element, which must not happen inside an
// OpenMP region; the reference kernel (single-threaded) takes those.
// Strings (equal / not_equal) also go to the reference kernel.
bool cannot_throw(const OpCall& c) {
  if (c.in(0).dtype() == DType::String) return false;
  return !is_integer(c.in(0).dtype()) || (c.def->id != OpId::Div && c.def->id != OpId::Pow);
}

void cpu_where(const OpCall& c, TensorList& out) {
  const Tensor &cond = c.in(0), &x = c.in(1), &y = c.in(2);
  Tensor& o = out[0];
  BroadcastPlan plan(o.shape(), {&cond.shape(), &x.shape(), &y.shape()});
  DF_DISPATCH_ALL(x.dtype(), "where", [&] {
    const bool* pc = cond.data<bool>();
    const scalar_t* px = x.data<scalar_t>();
    const scalar_t* py = y.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    plan.for_each_row([&](int64_t oo, const int64_t* in, const int64_t* st, int64_t n) {
      const bool* rc = pc + in[0];
      const scalar_t* rx = px + in[1];
      const scalar_t* ry = py + in[2];
      scalar_t* ro = po + oo;
      // Rows whose operands are contiguous or a broadcast scalar (relu's gradient:
      // where(x > 0, g, 0)) take a vectorized loop; it reads the condition as bytes and
      // loads both sides unconditionally, which GCC needs to vectorize a select.
      const uint8_t* c8 = reinterpret_cast<const uint8_t*>(rc);
      if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
        const scalar_t yv = ry[0];
        _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {
          const scalar_t xv = rx[i];
          ro[i] = c8[i] ? xv : yv;
        }
      } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
        const scalar_t xv = rx[0];
        _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {
          const scalar_t yv = ry[i];
          ro[i] = c8[i] ? xv : yv;
        }
      } else if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {
          const scalar_t xv = rx[i], yv = ry[i];
          ro[i] = c8[i] ? xv : yv;
        }
      } else {
        for (int64_t i = 0; i < n; ++i) ro[i] = rc[i * st[0]] ? rx[i * st[1]] : ry[i * st[2]];
      }
    });
  });
}

}  // namespace

#define DF_CPU_BINARY_(Name, Cmp) \
  DF_REGISTER_KERNEL(Name, {.name = "cpu:omp", .priority = kCpuPriority, .supports = cannot_throw, \
                            .run = cpu_binary<fn::Name, Cmp>})
DF_CPU_BINARY_(Add, false);
DF_CPU_BINARY_(Sub, false);
DF_CPU_BINARY_(Mul, false);
DF_CPU_BINARY_(Div, false);
DF_CPU_BINARY_(Pow, false);
DF_CPU_BINARY_(Maximum, false);
DF_CPU_BINARY_(Minimum, false);
DF_CPU_BINARY_(Equal, true);
DF_CPU_BINARY_(NotEqual, true);
DF_CPU_BINARY_(Less, true);
DF_CPU_BINARY_(LessEqual, true);
DF_CPU_BINARY_(Greater, true);
DF_CPU_BINARY_(GreaterEqual, true);
DF_CPU_BINARY_(LogicalAnd, true);
DF_CPU_BINARY_(LogicalOr, true);
#undef DF_CPU_BINARY_
DF_REGISTER_KERNEL(Where, {.name = "cpu:omp", .priority = kCpuPriority,
                           .supports = [](const OpCall& c) { return c.in(1).dtype() != DType::String; },
                           .run = cpu_where});

}  // namespace deepflow
