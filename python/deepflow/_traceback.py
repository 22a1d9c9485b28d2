# SPDX-License-Identifier: Apache-2.0
"""Tracebacks that point at the user's code, as TensorFlow's do: frames inside the
deepflow package are left out of an exception's traceback where it leaves a public entry
point (tf.function calls, Keras's fit / evaluate / predict and layer calls), so the last
frame shown is the user's line (inside a tf.function's body while it is traced).
tf.debugging.disable_traceback_filtering() shows every frame again.

A tf.function that fails while it runs raises an error naming a node of its graph; while
it is traced, recording_origins remembers the user's line that built each node, so the
error can say where that node was defined, as TensorFlow's "Detected at node" does."""
import functools
import inspect
import linecache
import os
import re
import sys
import types

from . import _deepflow

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


class recording_origins:
    """While entered, `origins[node name]` gets (file, line, function) of the innermost
    frame outside deepflow for each graph node built on this thread (the first one wins:
    the same name in a nested branch graph is usually the same line)."""

    def __init__(self, origins):
        self._origins = origins
        self._prev = None

    def _record(self, node_name):
        if node_name in self._origins:
            return
        f = sys._getframe(1)
        while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
            f = f.f_back
        if f is not None:
            self._origins[node_name] = (f.f_code.co_filename, f.f_lineno, f.f_code.co_name)

    def __enter__(self):
        self._prev = _deepflow._set_node_observer(self._record)
        return self

    def __exit__(self, *exc):
        _deepflow._set_node_observer(self._prev)
        return False


def note_function(e, python_function, name, origins=None):
    """Adds where a tf.function that failed while running was defined: the line that built
    the failing node (the innermost node its message names that has a recorded origin),
    and the function's own definition."""
    for node in reversed(re.findall(r"node '([^']+)'", str(e))):
        where = (origins or {}).get(node)
        if where is not None:
            code = linecache.getline(where[0], where[1]).strip()
            e.add_note(f"Detected at node '{node}' defined at (most recent call last):\n"
                       f"  File \"{where[0]}\", line {where[1]}, in {where[2]}" + (f"\n    {code}" if code else ""))
            break
    try:
        file = inspect.getsourcefile(python_function) or "?"
        line = inspect.getsourcelines(python_function)[1]
    except (TypeError, OSError):
        file, line = "?", "?"
    e.add_note(f"  in tf.function '{name}', defined at File \"{file}\", line {line}")
