// SPDX-License-Identifier: Apache-2.0
// THE list of primitive ops. Everything else is a composite of these.
//
// Each entry is X(EnumName, "serialized_name"). The registry test fails when a
// primitive here lacks an OpDef with `infer`, a `vjp` (or non_differentiable),
// a reference kernel, or a row in the op table (tests/ops/op_cases_*.cpp).
// Serialized names are stable: graph text and SavedModels store them.
#pragma once

#define DEEPFLOW_PRIMITIVES(X)                                                          \
  /* unary elementwise: ops/unary.cpp */                                                \
  X(Neg, "neg") X(Abs, "abs") X(Sign, "sign") X(Exp, "exp") X(Log, "log")               \
  X(Log1p, "log1p") X(Expm1, "expm1") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt")                 \
  X(Square, "square") X(Sin, "sin") X(Cos, "cos") X(Tanh, "tanh")                       \
  X(Sigmoid, "sigmoid") X(Relu, "relu") X(Erf, "erf") X(Floor, "floor")                 \
  X(Ceil, "ceil") X(Round, "round") X(LogicalNot, "logical_not")                        \
  X(ReluGrad, "relu_grad")                                                              \
  /* binary elementwise with broadcasting, and select: ops/binary.cpp */                \
  X(Add, "add") X(Sub, "sub") X(Mul, "mul") X(Div, "div") X(Pow, "pow")                 \
  X(Maximum, "maximum") X(Minimum, "minimum") X(Equal, "equal")                         \
  X(NotEqual, "not_equal") X(Less, "less") X(LessEqual, "less_equal")                   \
  X(Greater, "greater") X(GreaterEqual, "greater_equal") X(LogicalAnd, "logical_and")   \
  X(LogicalOr, "logical_or") X(Where, "where")                                          \
  /* dtype conversion and identities: ops/cast.cpp */                                   \
  X(Cast, "cast") X(Identity, "identity") X(StopGradient, "stop_gradient")              \
  /* reductions and scans: ops/reduce.cpp */                                            \
  X(ReduceSum, "reduce_sum") X(ReduceMax, "reduce_max") X(ReduceMin, "reduce_min")      \
  X(ReduceProd, "reduce_prod") X(ArgMax, "argmax") X(ArgMin, "argmin")                  \
  X(Cumsum, "cumsum") X(TopK, "top_k")                                                  \
  /* matrix products: ops/matmul.cpp */                                                 \
  X(MatMul, "matmul")                                                                   \
  /* shape and layout: ops/shape.cpp */                                                 \
  X(Reshape, "reshape") X(Transpose, "transpose") X(Concat, "concat")                   \
  X(Slice, "slice") X(StridedSlice, "strided_slice")                                    \
  X(StridedSliceGrad, "strided_slice_grad") X(Pad, "pad") X(Tile, "tile")               \
  X(BroadcastTo, "broadcast_to") X(Reverse, "reverse")                                  \
  /* indexing: ops/index.cpp */                                                         \
  X(Gather, "gather") X(GatherNd, "gather_nd") X(ScatterNd, "scatter_nd")               \
  X(UnsortedSegmentSum, "unsorted_segment_sum")                                         \
  /* convolution and pooling (NHWC): ops/conv.cpp */                                    \
  X(Conv2D, "conv2d") X(Conv2DBackpropInput, "conv2d_backprop_input")                   \
  X(Conv2DBackpropFilter, "conv2d_backprop_filter") X(MaxPool, "max_pool")              \
  X(MaxPoolGrad, "max_pool_grad") X(AvgPool, "avg_pool") X(AvgPoolGrad, "avg_pool_grad") \
  /* fused normalization (oneDNN): ops/norm.cpp */                                      \
  X(FusedBatchNorm, "fused_batch_norm") X(FusedBatchNormGrad, "fused_batch_norm_grad")  \
  X(LayerNorm, "layer_norm") X(LayerNormGrad, "layer_norm_grad")                        \
  /* graph building blocks: ops/graph_ops.cpp */                                        \
  X(Const, "const") X(Placeholder, "placeholder") X(ReadVariable, "read_variable")       \
  X(AssignVariable, "assign_variable") X(ZerosLike, "zeros_like") X(OnesLike, "ones_like") \
  X(NoOp, "no_op")                                                                       \
  /* run-time shapes, for graphs with unknown dims: ops/dynamic_shape.cpp */             \
  X(BroadcastLike, "broadcast_like") X(ReshapeLike, "reshape_like") X(Size, "size")      \
  X(SumToLike, "sum_to_like")                                                            \
  /* control flow with function-valued attributes: function/control_flow.cpp */          \
  X(Cond, "cond") X(While, "while")                                                      \
  /* cross-device edges of partitioned graphs: graph/partition.cpp */                    \
  X(Send, "send") X(Recv, "recv")                                                        \
  /* fused kernels made by graph passes: ops/fused.cpp */                                \
  X(FusedMatMul, "fused_matmul") X(FusedElementwise, "fused_elementwise")                \
  X(FusedConv2D, "fused_conv2d") X(FusedConvChain, "fused_conv_chain")                 \
  /* random number generation: ops/random.cpp */                                        \
  X(RandomUniform, "random_uniform") X(RandomNormal, "random_normal")                   \
  X(TruncatedNormal, "truncated_normal")                                                \
  /* optimizer updates in one pass (tf.raw_ops.ApplyAdam): ops/training_ops.cpp */     \
  X(ApplyAdam, "apply_adam")
