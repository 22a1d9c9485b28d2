# SPDX-License-Identifier: Apache-2.0
"""AutoGraph's exceptions, and the control status that picks their wording.

TensorFlow keeps a status saying whether the code running now was converted
by AutoGraph, so that errors raised by a symbolic tensor's __bool__ /
__iter__ can tell the user whether AutoGraph was on, off, or never asked;
converted_call also refuses to convert while the status is DISABLED (inside
a do_not_convert function).
"""
import enum
import threading


class AutoGraphError(Exception):
    """Base class of the errors AutoGraph itself raises."""


class ConversionError(AutoGraphError):
    """A function could not be converted (raised by to_code; to_graph warns instead)."""


class UnsupportedLanguageElementError(AutoGraphError, NotImplementedError):
    """The function uses Python that AutoGraph does not convert (generators, ...)."""


class InaccessibleSourceCodeError(AutoGraphError, ValueError):
    """inspect could not find the function's source (REPL, exec, C code)."""


class OperatorNotAllowedInGraphError(TypeError):
    """A Python operation (bool(), iteration) was applied to a symbolic tensor.

    tf.errors.OperatorNotAllowedInGraphError; a TypeError subclass as in TF, so
    code that catches TypeError around bool(tensor) keeps working.
    """


class AutoGraphWarning(UserWarning):
    """Category of the "could not transform ... will run it as-is" warning."""


class Status(enum.Enum):
    UNSPECIFIED = 0
    ENABLED = 1
    DISABLED = 2


_local = threading.local()


def _stack():
    stack = getattr(_local, 'stack', None)
    if stack is None:
        stack = _local.stack = []
    return stack


class ControlStatusCtx:
    """Context manager that sets the AutoGraph status for the current thread."""

    def __init__(self, status, options=None):
        self.status = status
        self.options = options

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, exc_type, exc_value, tb):
        stack = _stack()
        assert stack and stack[-1] is self, 'unbalanced ControlStatusCtx'
        stack.pop()
        return False

    def __repr__(self):
        return f'ControlStatusCtx(status={self.status.name})'


_NULL_CTX = ControlStatusCtx(Status.UNSPECIFIED)


def control_status_ctx():
    """The innermost active ControlStatusCtx (status UNSPECIFIED when none)."""
    stack = _stack()
    return stack[-1] if stack else _NULL_CTX


def operator_not_allowed(task):
    """The OperatorNotAllowedInGraphError a symbolic tensor should raise.

    `task` names the operation, e.g. "Using a symbolic `tf.Tensor` as a Python
    `bool`" or "Iterating over a symbolic `tf.Tensor`"; the rest of the text is
    TensorFlow's and depends on the current status.
    """
    status = control_status_ctx().status
    if status is Status.DISABLED:
        message = (f'{task} is not allowed: AutoGraph is disabled in this function.'
                   ' Try decorating it directly with @tf.function.')
    elif status is Status.ENABLED:
        message = (f'{task} is not allowed: AutoGraph did convert this function.'
                   ' This might indicate you are trying to use an unsupported'
                   ' feature.')
    else:
        message = (f'{task} is not allowed in Graph execution. Use Eager execution'
                   ' or decorate this function with @tf.function.')
    return OperatorNotAllowedInGraphError(message)
