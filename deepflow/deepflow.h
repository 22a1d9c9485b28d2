// SPDX-License-Identifier: Apache-2.0
// deepflow: the umbrella header, the whole public C++ API.
//
//   #include "deepflow/deepflow.h"
//   using namespace deepflow;
//   Variable w(random_normal({3, 1}, 0, 1, DType::Float32, 7), "w");
//   Tensor x = random_normal({16, 3}), y = ones({16, 1});
//   for (int step = 0; step < 100; ++step) {
//     GradientTape tape;
//     Tensor loss = reduce_mean(square(matmul(x, w) - y));
//     w.assign_sub(tape.gradient(loss, w) * 0.1);
//   }
#pragma once

#include "deepflow/autodiff/gradcheck.h"
#include "deepflow/autodiff/gradients.h"
#include "deepflow/autodiff/tape.h"
#include "deepflow/core/allocator.h"
#include "deepflow/core/dtype.h"
#include "deepflow/core/error.h"
#include "deepflow/core/random.h"
#include "deepflow/core/shape.h"
#include "deepflow/core/tensor.h"
#include "deepflow/data/dataset.h"
#include "deepflow/function/control_flow.h"
#include "deepflow/function/function.h"
#include "deepflow/graph/profiler.h"
#include "deepflow/keras/keras.h"
#include "deepflow/ops/op.h"
#include "deepflow/ops/ops.h"
#include "deepflow/ops/variable.h"
