# SPDX-License-Identifier: Apache-2.0
"""tf.saved_model: save / load in the SavedModel directory layout (deepflow's graphs
inside; issue 19 makes them TensorFlow's). See _save.py and _load.py."""
import os

from .. import _deepflow
from ._load import load  # noqa: F401
from ._save import save  # noqa: F401

DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
SERVING = "serve"
TRAINING = "train"
PREDICT_METHOD_NAME = "tensorflow/serving/predict"


class SaveOptions:
    """Accepted for TensorFlow's signature (namespace_whitelist, save_debug_info, ...)."""

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_debug_stripper=False, experimental_io_device=None, experimental_variable_policy=None,
                 experimental_custom_gradients=True, experimental_image_format=False, experimental_skip_saver=False,
                 experimental_sharding_callback=None, extra_tags=None):
        self.function_aliases = function_aliases
        self.save_debug_info = save_debug_info


class LoadOptions:
    def __init__(self, allow_partial_checkpoint=False, experimental_io_device=None,
                 experimental_skip_checkpoint=False, **kwargs):
        self.allow_partial_checkpoint = allow_partial_checkpoint


def contains_saved_model(export_dir):
    return _deepflow._is_saved_model_dir(os.fspath(export_dir))
