# SPDX-License-Identifier: Apache-2.0
"""Ordinary user code in another module: converted when called from converted code."""


def tensor_abs(x):
    if x > 0:
        return x
    return -x


def calls_tensor_abs(x):
    return tensor_abs(x) + 1
