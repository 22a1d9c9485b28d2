# SPDX-License-Identifier: Apache-2.0
"""tf.autograph.experimental: do_not_convert, set_loop_options, Feature."""
import enum

from .api import do_not_convert
from .operators import set_loop_options


class Feature(enum.Enum):
    """Optional conversion features (TensorFlow's names).

    Accepted by to_graph(experimental_optional_features=...) for
    compatibility; none of them changes the conversion here.
    """
    ALL = 'ALL'
    AUTO_CONTROL_DEPS = 'AUTO_CONTROL_DEPS'
    ASSERT_STATEMENTS = 'ASSERT_STATEMENTS'
    BUILTIN_FUNCTIONS = 'BUILTIN_FUNCTIONS'
    EQUALITY_OPERATORS = 'EQUALITY_OPERATORS'
    LISTS = 'LISTS'
    NAME_SCOPES = 'NAME_SCOPES'


__all__ = ['do_not_convert', 'set_loop_options', 'Feature']
