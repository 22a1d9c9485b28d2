# SPDX-License-Identifier: Apache-2.0
"""tf.saved_model.save: an object's tf.functions and variables as a SavedModel.

What is written (deepflow/io/saved_model.h): each signature (`signatures=`, or the one
tf.function with an input_signature when there is exactly one) under its key; every
traced concrete function of the object's tf.functions as a signature keyed
"__df_function_<n>" (how `loaded.f(x)` runs again); the variables reachable through
attributes. object_metadata holds the object tree ({"format": "deepflow.module"}):
attribute names of variables (by saved name), sub-objects and functions, with each
function's input names and output structure.
"""
import inspect
import json
import os

from .. import _deepflow
from .. import nest
from .._function import ConcreteFunction, Function, TensorSpec
from .._module import trackable_children

FORMAT = "deepflow.module"
FUNCTION_KEY_PREFIX = "__df_function_"
Tensor = _deepflow.Tensor


def encode_structure(value):
    """A function's output structure as JSON: tensors become {"t": 0}; dict keys are sorted
    as nest.flatten orders them."""
    if isinstance(value, (Tensor, _deepflow.Variable)):
        return {"t": 0}
    if isinstance(value, dict):
        return {"dict": [[str(k), encode_structure(value[k])] for k in sorted(value)]}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [encode_structure(v) for v in value]}
    try:
        json.dumps(value)
        return {"value": value}
    except TypeError:
        return {"value": None}


def _functions_of(obj):
    """(attribute, Function bound to obj) for tf.functions on the class and the instance."""
    out, seen = [], set()
    for klass in type(obj).__mro__:
        for name, attr in vars(klass).items():
            if isinstance(attr, Function) and name not in seen:
                seen.add(name)
                out.append((name, getattr(obj, name)))
    for name, value in trackable_children(obj):
        if isinstance(value, Function) and name not in seen:
            seen.add(name)
            out.append((name, value))
    return out


def _input_names(cf, n_flat):
    """TensorFlow's signature input names: the Python parameter names (a TensorSpec's
    name first), "<name>_<i>" for the parts of a nested argument, keyword names as given."""
    fallback = [f"args_{i}" for i in range(n_flat)]
    if cf._arguments is None:
        return fallback
    args, kwargs = cf._arguments
    try:
        params = [p.name for p in inspect.signature(cf._owner.python_function).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for i, arg in enumerate(list(args) + [kwargs[k] for k in sorted(kwargs)]):
        base = params[i] if i < len(args) and i < len(params) else (
            sorted(kwargs)[i - len(args)] if i >= len(args) else f"args_{i}")
        leaves = [x for x in nest.flatten(arg) if isinstance(x, (TensorSpec, Tensor))]
        for j, leaf in enumerate(leaves):
            names.append(getattr(leaf, "name", None) or (base if j == 0 else f"{base}_{j}"))
    return names if len(names) == n_flat and len(set(names)) == n_flat else fallback


def _valid_signature(structured):
    """TensorFlow's rule for a default signature: it returns tensors (or a dict of them)."""
    flat = nest.flatten(structured)
    return bool(flat) and all(isinstance(x, (Tensor, _deepflow.Variable)) for x in flat)


def _output_names(structured):
    flat = nest.flatten(structured)
    if isinstance(structured, dict) and all(isinstance(v, (Tensor, _deepflow.Variable)) for v in structured.values()):
        return [str(k) for k in sorted(structured)]
    return [f"output_{i}" for i in range(sum(isinstance(x, (Tensor, _deepflow.Variable)) for x in flat))]


def _signature_specs(signatures, functions):
    """[(key, C++ concrete function, input names, output names)] for the signatures."""
    if signatures is None:
        candidates = [f.get_concrete_function() for _, f in functions if f.input_signature is not None]
        candidates = [cf for cf in candidates if _valid_signature(cf.structured_outputs[0])]
        if len(candidates) != 1:
            return []
        signatures = candidates[0]
    if not isinstance(signatures, dict):
        signatures = {"serving_default": signatures}
    out = []
    for key, fn in signatures.items():
        if isinstance(fn, Function):
            cf = fn.get_concrete_function()
        elif isinstance(fn, ConcreteFunction):
            cf = fn
        else:
            raise ValueError(f"[tf.saved_model.save] signature '{key}' must be a tf.function with an input_signature "
                             f"or a concrete function, got {fn!r}")
        out.append((str(key), cf._cfunc, _input_names(cf, len(cf.inputs)), _output_names(cf.structured_outputs[0])))
    return out


def _tree(obj, seen, extra, specs, counter):
    """The metadata node of obj; appends variables to `extra` and restorable functions to
    `specs`. Variables are named by their index in `extra` until the saver names them."""
    node = {"variables": {}, "children": {}, "functions": {},
            "kind": "list" if isinstance(obj, list) else "tuple" if isinstance(obj, tuple) else
            "dict" if isinstance(obj, dict) else "object"}
    for name, fn in (_functions_of(obj) if node["kind"] == "object" else []):
        entries = []
        for key, cfunc in fn._traced.items():
            structure = fn._out_struct.get(key)
            if structure is None:
                continue
            for concrete in cfunc.concrete_functions():
                sig_key = f"{FUNCTION_KEY_PREFIX}{counter[0]}"
                counter[0] += 1
                names = [f"args_{i}" for i in range(len(concrete._inputs))]
                outs = [f"output_{i}" for i in range(len(concrete._outputs))]
                specs.append((sig_key, concrete, names, outs))
                entries.append({"key": sig_key, "inputs": names, "outputs": encode_structure(structure[0])})
        if entries:
            node["functions"][name] = entries
    for name, value in trackable_children(obj):
        if isinstance(value, _deepflow.Variable):
            node["variables"][name] = len(extra)
            extra.append(value)
        elif isinstance(value, _deepflow._Layer):
            node["children"][name] = {"kind": "layer", "weights": [len(extra) + i for i in range(len(value.weights))],
                                      "variables": {}, "children": {}, "functions": {}}
            extra.extend(value.weights)
        elif not isinstance(value, (int, float, str, bytes, bool, type(None), Function)) and id(value) not in seen \
                and (isinstance(value, (list, tuple, dict)) or hasattr(value, "__dict__")) and not callable(value):
            seen.add(id(value))
            child = _tree(value, seen, extra, specs, counter)
            if child["variables"] or child["children"] or child["functions"]:
                node["children"][name] = child
    return node


def _name_variables(node, names):
    node["variables"] = {k: names[i] for k, i in node["variables"].items()}
    if "weights" in node:
        node["weights"] = [names[i] for i in node["weights"]]
    for child in node["children"].values():
        _name_variables(child, names)


def save(obj, export_dir, signatures=None, options=None):
    """tf.saved_model.save(obj, export_dir, signatures=None, options=None)."""
    from ..keras._model import ModelAPI
    path = os.fspath(export_dir)
    if isinstance(obj, ModelAPI) and signatures is None:
        from ..keras._saving import export
        export(obj, path, verbose=False)
        return
    functions = _functions_of(obj)
    specs = _signature_specs(signatures, functions)
    extra = []
    tree = _tree(obj, {id(obj)}, extra, specs, [0])

    def metadata(names):
        _name_variables(tree, names)
        return json.dumps({"format": FORMAT, "format_version": 1, "root": tree})
    _deepflow._save_saved_model(path, specs, extra, metadata, True)
