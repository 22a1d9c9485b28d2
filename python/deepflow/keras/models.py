# SPDX-License-Identifier: Apache-2.0
"""tf.keras.models."""
from ._model import Model, Sequential  # noqa: F401
from ._saving import clone_model, load_model, model_from_json  # noqa: F401


def save_model(model, filepath, overwrite=True, zipped=None, **kwargs):
    """tf.keras.models.save_model: model.save (a SavedModel directory; zipped is not used)."""
    from ._saving import save_model as save
    save(model, filepath, overwrite=overwrite, **kwargs)
