# SPDX-License-Identifier: Apache-2.0
"""tf.nn."""
from ._nn import (avg_pool, avg_pool2d, batch_normalization, bias_add, compute_average_loss,  # noqa: F401
                  conv2d, conv2d_transpose, convolution, depthwise_conv2d, dropout, elu, embedding_lookup,
                  gelu, l2_loss, l2_normalize, leaky_relu, log_softmax, max_pool, max_pool2d,
                  moments, relu, relu6, selu, sigmoid, sigmoid_cross_entropy_with_logits, silu, softmax,
                  softmax_cross_entropy_with_logits, softplus, softsign, sparse_softmax_cross_entropy_with_logits,
                  swish, tanh, top_k, zero_fraction)
