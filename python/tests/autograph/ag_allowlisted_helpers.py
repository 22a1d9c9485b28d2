# SPDX-License-Identifier: Apache-2.0
"""A "library" module test_api.py registers as allowlisted: never converted."""


def tensor_abs(x):
    if x > 0:   # bool() of a tensor: fails unless AutoGraph converted this
        return x
    return -x
