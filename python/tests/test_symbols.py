# SPDX-License-Identifier: Apache-2.0
"""A row for every public symbol: each name deepflow exports under TensorFlow's module
paths exists in TensorFlow 2.21 at the same path, and a function's or class's parameters
are TensorFlow's (the same names, in the same order, for the ones TensorFlow takes
positionally; deepflow may take more). Behaviour is tested elsewhere (test_ops_vs_tf.py,
test_keras.py, ...); this table catches a symbol that drifted from TensorFlow's API.

KNOWN lists the symbols that differ on purpose, with the reason."""
import inspect

import pytest

import deepflow as tf

MODULES = ["", "math", "nn", "linalg", "random", "keras.layers", "keras.losses", "keras.metrics",
           "keras.optimizers", "keras.callbacks", "keras.initializers", "keras.regularizers",
           "keras.activations", "keras.models", "keras.utils", "data", "io", "train",
           "saved_model", "debugging", "autograph", "config", "experimental.dlpack", "keras.mixed_precision"]

# (module, name): why it differs from TensorFlow.
KNOWN = {
    ("", "DType"): "constructed from a dtype enum (TensorFlow's also takes handle data); users take tf.float32 &c.",
    ("", "Operation"): "graph operations are made by ops, not constructed by users",
    ("data", "Dataset"): "made by its factories (from_tensor_slices, range, ...); TensorFlow's takes a variant tensor",
    ("data", "Iterator"): "made by iter(dataset); TensorFlow's is an abstract class",
    ("Tensor", "numpy"): "TensorFlow's tf.Tensor is the symbolic base class; its eager tensors have numpy()",
    ("Variable", "numpy"): "TensorFlow's tf.Variable is the base class; its resource variables have numpy()",
}


def _module(path):
    m = tf
    for part in filter(None, path.split(".")):
        m = getattr(m, part)
    return m


def _params(obj):
    """[(name, kind, has default)] of a function, or of a class's __init__ (self left
    out); None if unknown."""
    try:
        target = obj.__init__ if inspect.isclass(obj) else obj
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    out = [(p.name, p.kind.name, p.default is not inspect.Parameter.empty) for p in sig.parameters.values()]
    if out and out[0][0] in ("self", "cls"):
        out = out[1:]
    return out


def _ours():
    rows = []
    for path in MODULES:
        mod = _module(path)
        for name in sorted(n for n in dir(mod) if not n.startswith("_")):
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            rows.append((path, name, _params(obj)))
    return rows


# Methods users call on TensorFlow's classes, a row each too.
CLASSES = ["Tensor", "Variable", "GradientTape", "Module", "TensorSpec", "data.Dataset", "keras.Model",
           "keras.Sequential", "keras.layers.Layer", "keras.optimizers.Optimizer", "keras.metrics.Metric",
           "keras.callbacks.Callback", "train.Checkpoint", "train.CheckpointManager"]


def _methods():
    rows = []
    for path in CLASSES:
        *mod, cls_name = path.split(".")
        cls = getattr(_module(".".join(mod)), cls_name)
        for name in sorted(n for n in dir(cls) if not n.startswith("_")):
            attr = getattr(cls, name, None)
            if callable(attr) and not isinstance(attr, type):
                rows.append((path, name, _params(attr)))
    return rows


ROWS = _ours() + _methods()

# TensorFlow's side runs the same _params (its source is sent along).
ORACLE = "import inspect\n" + inspect.getsource(_params) + """
result = {}
for path, name in rows:
    m = tf
    try:
        for part in filter(None, path.split('.')):
            m = getattr(m, part)
        obj = getattr(m, name)
    except AttributeError:
        result[(path, name)] = 'missing'
        continue
    result[(path, name)] = _params(obj)
"""


@pytest.fixture(scope="module")
def tf_symbols(tf_oracle):
    return tf_oracle.run(ORACLE, rows=[(p, n) for p, n, _ in ROWS])


def _positional(params):
    return [n for n, kind, _ in params if kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]


@pytest.mark.parametrize("path,name,ours", ROWS, ids=[f"{p or 'tf'}.{n}" for p, n, _ in ROWS])  # noqa: E501
def test_symbol_matches_tensorflow(tf_symbols, path, name, ours):
    if (path, name) in KNOWN:
        pytest.skip(KNOWN[(path, name)])
    theirs = tf_symbols[(path, name)]
    assert theirs != "missing", f"tf.{path + '.' if path else ''}{name} is not in TensorFlow 2.21"
    if theirs is None or ours is None:
        return  # a builtin without a signature on one side: its behaviour rows test it
    tf_pos = _positional(theirs)
    our_pos = _positional(ours)
    takes_kwargs = any(kind == "VAR_KEYWORD" for _, kind, _ in ours)
    # TensorFlow's positional parameters, in order, are ours (a trailing **kwargs of ours
    # takes the rest by keyword, as Keras's base-class arguments).
    common = our_pos[:len(tf_pos)]
    assert common == tf_pos[:len(common)], f"positional parameters: ours {our_pos}, TensorFlow's {tf_pos}"
    if not takes_kwargs:
        missing = [n for n in tf_pos if n not in our_pos]
        assert not missing, f"TensorFlow's parameters {missing} are not accepted (ours: {our_pos})"
    tf_required = [n for n, kind, default in theirs if kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
                   and not default]
    our_required = [n for n, kind, default in ours if kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
                    and not default]
    extra = [n for n in our_required if n not in tf_required]
    assert not extra, f"ours requires {extra}, which TensorFlow does not"
