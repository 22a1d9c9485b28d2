# SPDX-License-Identifier: Apache-2.0
"""tf.keras.utils."""
import numpy as np


def to_categorical(x, num_classes=None):
    x = np.asarray(x, dtype="int64").reshape(-1) if np.ndim(x) else np.asarray([x])
    n = int(num_classes or x.max() + 1)
    out = np.zeros((x.shape[0], n), dtype="float32")
    out[np.arange(x.shape[0]), x] = 1.0
    return out


def plot_model(model, to_file="model.png", show_shapes=False, **kwargs):
    """Writes the model's graph as Graphviz DOT (to_file; a .png name gets a .dot beside
    it, since deepflow does not render: `dot -Tpng model.dot -o model.png` does)."""
    path = str(to_file)
    if not path.endswith(".dot"):
        path = path.rsplit(".", 1)[0] + ".dot"
    with open(path, "w") as f:
        f.write(model._to_dot(bool(show_shapes)))
    return path


def set_random_seed(seed):
    from .. import _random
    import random
    random.seed(seed)
    np.random.seed(seed)
    _random.set_seed(seed)


from ._saving import custom_object_scope, get_custom_objects, get_registered_name, register_keras_serializable  # noqa: E402,F401,E501
