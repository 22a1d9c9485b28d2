# SPDX-License-Identifier: Apache-2.0
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The package in place (make python builds the extension module into python/deepflow/).
sys.path.insert(0, os.path.dirname(HERE))

from tf_oracle import TensorFlowOracle  # noqa: E402


@pytest.fixture(scope="session")
def tf_oracle():
    o = TensorFlowOracle()
    yield o
    o.close()
