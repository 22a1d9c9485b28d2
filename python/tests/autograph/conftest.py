# SPDX-License-Identifier: Apache-2.0
"""Makes python/deepflow/autograph importable as the top-level package `autograph`.

The directory is appended, not prepended: python/deepflow holds modules such
as math.py that would otherwise shadow the standard library.
"""
import pathlib
import sys

_HERE = pathlib.Path(__file__).resolve().parent
_PACKAGE_PARENT = str(_HERE.parents[1] / 'deepflow')
if _PACKAGE_PARENT not in sys.path:
    sys.path.append(_PACKAGE_PARENT)
# fake_backend and the ag_*_helpers modules are imported by name.
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import pytest  # noqa: E402

import autograph  # noqa: E402
import fake_backend  # noqa: E402

# The fake "tf" helpers are library code, like deepflow's own modules.
autograph.register_allowlisted_module_prefix('fake_backend')


@pytest.fixture(autouse=True)
def backend():
    """A fresh FakeBackend installed for each test."""
    fake = fake_backend.FakeBackend()
    previous = autograph.set_backend(fake)
    yield fake
    autograph.set_backend(previous)
