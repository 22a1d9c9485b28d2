# SPDX-License-Identifier: Apache-2.0
"""tf.keras.models."""
from ._model import Model, Sequential  # noqa: F401
from ._saving import clone_model, load_model, model_from_config, model_from_json, save_model  # noqa: F401
