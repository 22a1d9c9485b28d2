# SPDX-License-Identifier: Apache-2.0
"""tf.debugging: traceback filtering switches (see _traceback.py)."""
from ._traceback import (disable_traceback_filtering, enable_traceback_filtering,  # noqa: F401
                         is_traceback_filtering_enabled)
