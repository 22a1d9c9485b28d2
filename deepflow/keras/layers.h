// SPDX-License-Identifier: Apache-2.0
// Every built-in layer (tf.keras.layers). Each is a class `<Name>Impl` with holder
// `<Name>` (layer.h), e.g. keras::layers::Dense(64, "relu").
#pragma once

#include "deepflow/keras/layers/attention.h"
#include "deepflow/keras/layers/conv.h"
#include "deepflow/keras/layers/core.h"
#include "deepflow/keras/layers/embedding.h"
#include "deepflow/keras/layers/keras_ops.h"
#include "deepflow/keras/layers/merge.h"
#include "deepflow/keras/layers/normalization.h"
#include "deepflow/keras/layers/pooling.h"
#include "deepflow/keras/layers/preprocessing.h"
#include "deepflow/keras/layers/rnn.h"
