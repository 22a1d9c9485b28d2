# SPDX-License-Identifier: Apache-2.0
"""tf.keras (Keras 3's API) over deepflow::keras."""
from . import (activations, callbacks, datasets, initializers, layers, losses, metrics,  # noqa: F401
               mixed_precision, optimizers, regularizers, utils)
from ._layer import Layer  # noqa: F401
from ._model import History, Input, Model, Sequential  # noqa: F401
from . import models  # noqa: F401,E402

backend = None  # set below (a small subset)


class _Backend:
    @staticmethod
    def clear_session():
        pass

    @staticmethod
    def floatx():
        return "float32"

    @staticmethod
    def epsilon():
        return 1e-7


backend = _Backend()
