# SPDX-License-Identifier: Apache-2.0
"""tf.experimental."""
from . import dlpack  # noqa: F401
from . import tensorrt  # noqa: F401
