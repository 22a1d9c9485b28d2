# SPDX-License-Identifier: Apache-2.0
"""tf.keras.mixed_precision: dtype policies (deepflow/keras/config.h)."""
from .. import _deepflow


class Policy:
    """A dtype policy: "float32", "mixed_float16", "mixed_bfloat16", ..."""

    def __init__(self, name=None):
        name = "float32" if name is None else name  # Keras's floatx
        self.name = name if isinstance(name, str) else name.name
        compute = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
        self.compute_dtype = compute.get(self.name, self.name)
        self.variable_dtype = "float32" if self.name.startswith("mixed_") else self.name

    def __repr__(self):
        return f'<DTypePolicy "{self.name}">'


_global = ["float32"]


def set_global_policy(policy):
    name = policy.name if isinstance(policy, Policy) else str(policy)
    _deepflow._set_global_policy(name)
    _global[0] = name


def global_policy():
    return Policy(_global[0])


class LossScaleOptimizer:
    """Keras's loss-scaling wrapper: fit under "mixed_float16" scales the loss itself."""

    def __new__(cls, inner_optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000, **kwargs):
        return inner_optimizer
