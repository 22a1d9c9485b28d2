# SPDX-License-Identifier: Apache-2.0
"""Keras model files: model.save / tf.keras.models.load_model / model.export, configs
back to Python models (model_from_config, model_from_json, clone_model), and the
registry of custom classes (tf.keras.saving.register_keras_serializable).

A path ending in ".keras" (or a legacy ".h5" to load) is Keras's own file
(deepflow/io/keras_file.h). Otherwise a saved model is a SavedModel directory
(deepflow/io/keras_saving.h): the serving
signature, every weight, the optimizer's state, and the model and compile configs. The
configs are rebuilt here into Python objects (Sequential, functional Model, the built-in
layer classes, registered custom classes) so the loaded model is the same kind of object
the user saved; the weights and optimizer state are then restored by the C++ loader.
A subclassed model is saved with its class name and get_config(), and rebuilt with the
registered class's from_config(), as Keras 3 does.
"""
import json
import os

from .. import _deepflow
from .. import nest

_REGISTERED = {}       # "package>Name" and "Name" -> class
_CUSTOM_SCOPES = []    # dicts from custom_object_scope


def register_keras_serializable(package="Custom", name=None):
    """Registers a class so load_model and model_from_config find it by name."""
    def decorate(cls):
        registered = f"{package}>{name or cls.__name__}"
        _REGISTERED[registered] = cls
        _REGISTERED.setdefault(name or cls.__name__, cls)
        cls._df_registered_name = registered
        return cls
    return decorate


def get_registered_name(obj):
    cls = obj if isinstance(obj, type) else type(obj)
    return cls.__dict__.get("_df_registered_name", cls.__name__)


def get_custom_objects():
    return _REGISTERED


class custom_object_scope:  # noqa: N801 - Keras's name
    """with custom_object_scope({"MyLayer": MyLayer}): ... makes the classes findable."""

    def __init__(self, custom_objects):
        self._objects = dict(custom_objects or {})

    def __enter__(self):
        _CUSTOM_SCOPES.append(self._objects)
        return self

    def __exit__(self, *exc):
        _CUSTOM_SCOPES.remove(self._objects)
        return False


def _find_class(class_name, registered_name, custom_objects, *modules):
    for table in [custom_objects or {}] + _CUSTOM_SCOPES[::-1] + [_REGISTERED]:
        for key in (registered_name, class_name):
            if key and key in table:
                return table[key]
    for module in modules:
        cls = getattr(module, class_name, None)
        if isinstance(cls, type):
            return cls
    return None


def _not_found(config):
    return TypeError(
        f"Could not locate class '{config.get('class_name')}'. Make sure custom classes are decorated with "
        f"`@keras.saving.register_keras_serializable()` or passed in `custom_objects`. Full object config: {config}")


def deserialize_layer(config, custom_objects=None):
    """A Keras layer config ({"class_name", "config"}) -> a Python layer object."""
    from . import layers
    cfg = dict(config.get("config") or {})
    if config["class_name"] == "InputLayer":
        return layers.InputLayer(batch_shape=cfg.get("batch_shape") or cfg.get("batch_input_shape"),
                                 dtype=cfg.get("dtype"), name=cfg.get("name"))
    cls = _find_class(config["class_name"], config.get("registered_name"), custom_objects, layers)
    if cls is None:
        raise _not_found(config)
    return cls.from_config(cfg)


def _resolve(value, tensors):
    """Inbound-node arguments with each __keras_tensor__ replaced by the tensor made so far."""
    if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
        return tensors[tuple(value["config"]["keras_history"])]
    if isinstance(value, dict):
        return {k: _resolve(v, tensors) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, tensors) for v in value]
    return value


def _history_keys(value):
    if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
        return [tuple(value["config"]["keras_history"])]
    if isinstance(value, dict):
        return [k for v in value.values() for k in _history_keys(v)]
    if isinstance(value, list):
        return [k for v in value for k in _history_keys(v)]
    return []


def _functional_from_config(config, custom_objects):
    from ._model import Input, Model
    tensors = {}
    pending = []
    for lc in config["layers"]:
        if lc["class_name"] == "InputLayer":
            c = lc["config"]
            shape = c.get("batch_shape") or c.get("batch_input_shape")
            tensors[(lc["name"], 0, 0)] = Input(batch_shape=shape, dtype=c.get("dtype"), name=lc["name"])
        else:
            layer = deserialize_layer(lc, custom_objects)
            for i, node in enumerate(lc.get("inbound_nodes", [])):
                pending.append((layer, lc["name"], i, node))
    # Keras lists layers in order, but a shared layer's later nodes can wait on layers
    # listed after it: call each node once its inputs exist.
    while pending:
        progressed, rest = False, []
        for layer, name, i, node in pending:
            if all(k in tensors for k in _history_keys(node)):
                args = _resolve(node.get("args", []), tensors)
                kwargs = _resolve(node.get("kwargs", {}), tensors)
                out = layer(*args, **kwargs)
                for j, t in enumerate(nest.flatten(out)):
                    tensors[(name, i, j)] = t
                progressed = True
            else:
                rest.append((layer, name, i, node))
        if not progressed:
            missing = sorted({k for _, _, _, n in rest for k in _history_keys(n) if k not in tensors})
            raise ValueError(f"[keras.model_from_config] the config's layers never produce {missing}")
        pending = rest

    def pick(spec):
        if spec and isinstance(spec[0], str):
            return tensors[tuple(spec)]
        return [pick(s) for s in spec]
    return Model(inputs=pick(config["input_layers"]), outputs=pick(config["output_layers"]),
                 name=config.get("name"))


def model_from_config(config, custom_objects=None):
    """A model config ({"class_name", "config"}) -> a Python Sequential, functional Model
    or registered custom model."""
    from ._model import Sequential
    cls_name, cfg = config["class_name"], config.get("config") or {}
    if cls_name == "Sequential":
        return Sequential([deserialize_layer(lc, custom_objects) for lc in cfg.get("layers", [])],
                          name=cfg.get("name"))
    if cls_name in ("Functional", "Model") and "layers" in cfg:
        return _functional_from_config(cfg, custom_objects)
    cls = _find_class(cls_name, config.get("registered_name"), custom_objects)
    if cls is None:
        raise _not_found(config)
    return cls.from_config(cfg)


def model_from_json(json_string, custom_objects=None):
    return model_from_config(json.loads(json_string), custom_objects)


def clone_model(model, input_tensors=None, clone_function=None, call_function=None, recursive=False, **kwargs):
    """A new model of the same architecture with freshly initialized weights."""
    if input_tensors is not None or clone_function is not None or call_function is not None:
        raise NotImplementedError("[clone_model] input_tensors, clone_function and call_function are not supported yet")
    return model_from_json(model.to_json())


# --- model.save / load_model / export ---
def _is_config_model(model):
    from ._model import Sequential
    return isinstance(model, Sequential) or model.__dict__.get("_df_io") is not None


def _python_metadata(model):
    """What rebuilds a subclassed model: its class and get_config(), and the input shapes
    it was called with (to build it before the weights are assigned)."""
    if _is_config_model(model):
        return {}
    cls = type(model)
    config = None
    if any("get_config" in vars(k) for k in cls.__mro__ if not k.__module__.startswith("deepflow.")):
        config = model.get_config()  # the class's own; else it is rebuilt with cls()
    return {"python": {"class_name": cls.__name__, "module": cls.__module__,
                       "registered_name": get_registered_name(cls), "config": config,
                       "input_shapes": [list(s) for s in model._input_shapes]}}


def _is_keras_file(path):
    return path.endswith(".keras") or path.endswith(".h5") or path.endswith(".hdf5")


def _plain_file_config(value):
    """A Keras file's config in the form model_from_config reads: dtype policies as their
    names (Keras 3 writes {"class_name": "DTypePolicy", ...}), and tf-keras's inbound nodes
    ([[layer, node, tensor, kwargs], ...]) as Keras 3's {"args", "kwargs"}."""
    if isinstance(value, list):
        return [_plain_file_config(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        if k == "dtype" and isinstance(v, dict) and "DTypePolicy" in str(v.get("class_name")):
            v = (v.get("config") or {}).get("name", "float32")
        elif k == "inbound_nodes" and isinstance(v, list):
            v = [_keras3_node(n) for n in v]
        out[k] = _plain_file_config(v)
    return out


def _keras3_node(node):
    if isinstance(node, dict):  # Keras 3 records unset call arguments ("mask": None)
        kwargs = {k: v for k, v in (node.get("kwargs") or {}).items() if v is not None}
        return dict(node, kwargs=kwargs)
    tensors = [{"class_name": "__keras_tensor__", "config": {"keras_history": list(h[:3])}} for h in node]
    return {"args": tensors if len(tensors) == 1 else [tensors], "kwargs": {}}


def save_model(model, filepath, overwrite=True, include_optimizer=True, **kwargs):
    """model.save: a Keras 3 ".keras" file for a path ending so (Sequential and functional
    models: config and weights, which keras.models.load_model reads; no optimizer state),
    else a SavedModel directory at `filepath` (every kind of model, optimizer state included)."""
    path = os.fspath(filepath)
    if path.endswith(".h5") or path.endswith(".hdf5"):
        raise NotImplementedError(f"[Model.save] {path}: legacy HDF5 (.h5) files are read, not written; save to a "
                                  "'.keras' file or a directory")
    if path.endswith(".keras"):
        if not _is_config_model(model):
            raise ValueError(f"[Model.save] {path}: a .keras file holds Sequential and functional models; save a "
                             "subclassed model to a directory (a SavedModel with its class and get_config())")
        if not overwrite and os.path.exists(path):
            raise FileExistsError(f"[Model.save] {path} exists and overwrite=False")
        _deepflow._keras_save_model(model, path, False, True, "", None)
        return
    if not overwrite and os.path.exists(path) and os.listdir(path):
        raise FileExistsError(f"[Model.save] {path} exists and overwrite=False")
    extra = _python_metadata(model)
    _deepflow._keras_save_model(model, path, bool(include_optimizer), bool(overwrite),
                                json.dumps(extra) if extra else "", None)


def export(model, filepath, format="tf_saved_model", verbose=True, input_signature=None, **kwargs):
    """model.export: an inference-only SavedModel whose serving_default signature (and the
    `serve` endpoint of tf.saved_model.load) runs the model's forward pass."""
    if format != "tf_saved_model":
        raise NotImplementedError(f"[Model.export] format {format!r}: only 'tf_saved_model' is written")
    path = os.fspath(filepath)
    sig = None
    if input_signature is not None:
        sig = [s._sig() for s in nest.flatten(input_signature)]
    extra = dict(_python_metadata(model), endpoints={"serve": "serving_default"})
    _deepflow._keras_save_model(model, path, False, True, json.dumps(extra), sig)
    if verbose:
        print(f"Saved artifact at '{path}'. The following endpoints are available:\n\n* Endpoint 'serve'")


def _compile_args(cc):
    from . import losses as losses_mod, metrics as metrics_mod, optimizers as opt_mod

    def obj(module, c):
        if c is None or isinstance(c, str):
            return c
        cls = _find_class(c["class_name"], c.get("registered_name"), None, module)
        if cls is None:
            raise _not_found(c)
        return cls.from_config(c.get("config") or {}) if hasattr(cls, "from_config") else cls(**c["config"])
    loss = cc.get("loss")
    loss = [obj(losses_mod, x) for x in loss] if isinstance(loss, list) else obj(losses_mod, loss)
    return dict(optimizer=obj(opt_mod, cc.get("optimizer")) or "rmsprop", loss=loss,
                metrics=[obj(metrics_mod, m) for m in cc.get("metrics") or []] or None,
                loss_weights=cc.get("loss_weights"), run_eagerly=bool(cc.get("run_eagerly", False)))


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """A model saved by model.save: the same kind of object, its weights, and (with compile)
    its compile config and optimizer state, so fit() continues where it stopped. A ".keras"
    or legacy ".h5" file (Keras 3's or tf-keras's) gives its model and weights, uncompiled."""
    path = os.fspath(filepath)
    if _is_keras_file(path) and os.path.isfile(path):
        model = model_from_config(_plain_file_config(json.loads(_deepflow._keras_file_config(path))), custom_objects)
        _deepflow._keras_file_restore_weights(model, path)
        return model
    meta = json.loads(_deepflow._keras_read_metadata(path))
    if meta.get("model_config") is not None:
        model = model_from_config(meta["model_config"], custom_objects)
    else:
        py = meta.get("python")
        if py is None:
            raise ValueError(f"[load_model] {path}: the model was saved from C++ as a subclassed model; its class "
                             "is C++ code. tf.saved_model.load(path) runs its serving signature.")
        cls = _find_class(py["class_name"], py.get("registered_name"), custom_objects)
        if cls is None:
            raise _not_found({"class_name": py["class_name"], "registered_name": py.get("registered_name"),
                              "module": py.get("module"), "config": py.get("config")})
        model = cls.from_config(py["config"]) if py.get("config") is not None else cls()
        if py.get("input_shapes"):
            import numpy as np
            xs = [np.zeros([1 if d is None or d < 0 else d for d in s], "float32") for s in py["input_shapes"]]
            model(xs[0] if len(xs) == 1 else xs, training=False)
    compiled = bool(compile) and meta.get("compile_config") is not None
    if compiled:
        model.compile(**_compile_args(meta["compile_config"]))
    _deepflow._keras_restore_state(model, path, compiled)
    return model
