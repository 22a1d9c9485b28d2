# SPDX-License-Identifier: Apache-2.0
"""tf.random."""
from ._random import Generator, categorical, normal, set_seed, shuffle, truncated_normal, uniform  # noqa: F401
