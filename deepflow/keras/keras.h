// SPDX-License-Identifier: Apache-2.0
// The Keras-style API (tf.keras): layers, models, losses, metrics, optimizers,
// schedules, initializers, regularizers, callbacks, mixed precision and datasets.
// deepflow/deepflow.h includes it; see the README's "Keras-style API" section.
#pragma once

#include "deepflow/keras/activations.h"
#include "deepflow/keras/callbacks.h"
#include "deepflow/keras/config.h"
#include "deepflow/keras/datasets/mnist.h"
#include "deepflow/keras/initializers.h"
#include "deepflow/keras/layer.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/losses.h"
#include "deepflow/keras/metrics.h"
#include "deepflow/keras/model.h"
#include "deepflow/keras/optimizers.h"
#include "deepflow/keras/regularizers.h"
#include "deepflow/keras/schedules.h"
