# SPDX-License-Identifier: Apache-2.0
"""tf.keras.models."""
from ._model import Model, Sequential  # noqa: F401


def model_from_json(json_string, custom_objects=None):
    from .. import _deepflow
    return _deepflow._model_from_json(json_string)


def clone_model(model, input_tensors=None, clone_function=None):
    return model_from_json(model.to_json())
