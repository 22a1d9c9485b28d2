// SPDX-License-Identifier: Apache-2.0
// What the oneDNN convolution kernels share (kernels/cpu/conv.cpp defines these): the
// HWIO filter descriptors, fused_conv2d's activation as an eltwise post-op, and the cache
// of reordered constant filters.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "deepflow/core/tensor.h"
#include "deepflow/ops/conv.h"
#include "deepflow/ops/op.h"

namespace deepflow::onednn {

/// Our [kh, kw, c_in / groups, c_out] filter buffer as oneDNN sees it (grouped: hwigo).
dnnl::memory::desc hwio_md(const detail::ConvGeometry& g, dnnl::memory::data_type dt);
/// The filter shape of g with format `any`, for oneDNN to pick its layout.
dnnl::memory::desc any_weights_md(const detail::ConvGeometry& g, dnnl::memory::data_type dt);
/// The eltwise post-op of a fused_conv2d call's activation attributes: {algorithm, alpha,
/// beta}; false when it has none.
bool activation_post_op(const OpCall& c, dnnl::algorithm& alg, float& alpha, float& beta);
/// The filters (whose bytes never change: constant_filter) in layout `want`, reordered from
/// `user` by `reorder` on the first call and kept in a byte-bounded LRU after that.
Tensor constant_filter(const Tensor& filters, const dnnl::memory::desc& want, const dnnl::reorder& reorder,
                       const dnnl::memory::desc& user);

}  // namespace deepflow::onednn
