# SPDX-License-Identifier: Apache-2.0
"""tf.errors: TensorFlow's exception classes, raised for errors of the C++ core.

The core throws one exception type whose message starts with the op or function in
brackets ("[matmul] inner dimensions differ: ..."); the class is chosen from what the
message says (a missing file is NotFoundError, a checksum mismatch DataLossError, the end
of a dataset OutOfRangeError, ...), InvalidArgumentError otherwise. InvalidArgumentError
is also a ValueError, because TensorFlow raises ValueError for the same mistakes when
they are caught while a graph is built (shapes that do not match), and code catches both.
"""
import re

from . import _deepflow

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """The base of the errors an op raises (tf.errors.OpError)."""

    def __init__(self, node_def, op, message, *args):
        super().__init__(message, *args)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = getattr(type(self), "_code", UNKNOWN)

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    def __str__(self):
        return self._message

    def __reduce__(self):
        return type(self), (self._node_def, self._op, self._message)


def _error(name, code, *bases):
    cls = type(name, (OpError,) + bases, {"_code": code, "__module__": __name__})
    cls.__doc__ = f"tf.errors.{name}"
    return cls


CancelledError = _error("CancelledError", CANCELLED)
UnknownError = _error("UnknownError", UNKNOWN)
InvalidArgumentError = _error("InvalidArgumentError", INVALID_ARGUMENT, ValueError)
DeadlineExceededError = _error("DeadlineExceededError", DEADLINE_EXCEEDED)
NotFoundError = _error("NotFoundError", NOT_FOUND)
AlreadyExistsError = _error("AlreadyExistsError", ALREADY_EXISTS)
PermissionDeniedError = _error("PermissionDeniedError", PERMISSION_DENIED)
UnauthenticatedError = _error("UnauthenticatedError", UNAUTHENTICATED)
ResourceExhaustedError = _error("ResourceExhaustedError", RESOURCE_EXHAUSTED)
FailedPreconditionError = _error("FailedPreconditionError", FAILED_PRECONDITION)
AbortedError = _error("AbortedError", ABORTED)
OutOfRangeError = _error("OutOfRangeError", OUT_OF_RANGE)
UnimplementedError = _error("UnimplementedError", UNIMPLEMENTED)
InternalError = _error("InternalError", INTERNAL)
UnavailableError = _error("UnavailableError", UNAVAILABLE)
DataLossError = _error("DataLossError", DATA_LOSS)

# What a core message says -> its class; the first match wins.
_RULES = [
    (re.compile(r"no such file|not found|does not exist|cannot open|could not open", re.I), NotFoundError),
    (re.compile(r"already exists", re.I), AlreadyExistsError),
    (re.compile(r"permission denied", re.I), PermissionDeniedError),
    (re.compile(r"out of memory|cannot allocate|resource exhausted", re.I), ResourceExhaustedError),
    (re.compile(r"checksum|crc mismatch|corrupt|truncated", re.I), DataLossError),
    (re.compile(r"end of sequence|end of (the )?(dataset|iterator)", re.I), OutOfRangeError),
    (re.compile(r"not implemented|unimplemented", re.I), UnimplementedError),
    (re.compile(r"cancelled", re.I), CancelledError),
]
_OP = re.compile(r"^\[([^\]]+)\]")


def _from_core(message):
    """The exception for a message of the C++ core (called by the extension module)."""
    cls = InvalidArgumentError
    for pattern, c in _RULES:
        if pattern.search(message):
            cls = c
            break
    m = _OP.match(message)
    return cls(None, m.group(1) if m else None, message)


_deepflow._set_error_factory(_from_core)
