# SPDX-License-Identifier: Apache-2.0
"""tf.keras.saving (Keras 3's names)."""
from ._saving import (custom_object_scope, get_custom_objects, get_registered_name, load_model,  # noqa: F401
                      register_keras_serializable, save_model)
