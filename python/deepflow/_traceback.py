# SPDX-License-Identifier: Apache-2.0
"""Tracebacks that point at the user's code, as TensorFlow's do: frames inside the
deepflow package are left out of an exception's traceback where it leaves a public entry
point (tf.function calls, Keras's fit / evaluate / predict and layer calls), so the last
frame shown is the user's line (inside a tf.function's body while it is traced).
tf.debugging.disable_traceback_filtering() shows every frame again."""
import functools
import inspect
import os
import types

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_enabled = os.environ.get("DEEPFLOW_TRACEBACK_FILTERING", "1") != "0"


def enable_traceback_filtering():
    global _enabled
    _enabled = True


def disable_traceback_filtering():
    global _enabled
    _enabled = False


def is_traceback_filtering_enabled():
    return _enabled


def _filtered(tb):
    frames = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
            frames.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(frames):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def filter_traceback(fn):
    """Decorates a public entry point: exceptions leave it without deepflow's frames."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _enabled:
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise e.with_traceback(_filtered(e.__traceback__))  # noqa: B904 - the same exception
    return wrapper


def note_function(e, python_function, name):
    """Adds where a tf.function that failed while running is defined (a graph's error
    names the node; this names the user's function and line)."""
    try:
        file = inspect.getsourcefile(python_function) or "?"
        line = inspect.getsourcelines(python_function)[1]
    except (TypeError, OSError):
        file, line = "?", "?"
    e.add_note(f"  in tf.function '{name}', defined at File \"{file}\", line {line}")
