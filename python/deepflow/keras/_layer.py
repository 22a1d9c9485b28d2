# SPDX-License-Identifier: Apache-2.0
"""tf.keras.layers.Layer: the Python API of deepflow::keras::Layer.

The C++ layer owns weights and sublayers and runs __call__ (build on first call, the
functional API's recording, mixed-precision casts); a Python subclass supplies build()
and call(), which C++ reaches through the _df_build / _df_call hooks of the trampoline
(python/src/keras.cpp). Nested inputs and outputs (lists, dicts) are flattened here,
since C++ sees flat tensor lists. Attributes that hold layers or variables (also inside
lists and dicts) are tracked, as Keras tracks them.
"""
import inspect
import json
import re

from .. import _deepflow
from .._traceback import filter_traceback
from .. import dtypes
from .. import nest
from .._op_util import convert_to_tensor
from ..tensor_shape import TensorShape

Tensor = _deepflow.Tensor


def _snake(name):
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def _to_tensor(x):
    if isinstance(x, _deepflow.Variable):
        return x.value()
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


# Called after any layer's build (tf.train.Checkpoint's deferred restoration: values
# restored before a model had weights are assigned as the weights are made).
AFTER_BUILD = []


def _shape_of_dims(dims):
    return TensorShape([None if d < 0 else d for d in dims])


class LayerAPI:
    """What Layer and Model share (a mixin over the C++ _Layer / _Model classes)."""

    def _df_init(self, trainable=True, dtype=None, name=None):
        object.__setattr__(self, "_df_frames", [])
        object.__setattr__(self, "_df_tracking", True)
        self._trainable = bool(trainable)
        if dtype is not None:
            policy = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
            if policy is None and isinstance(dtype, dtypes.DType):
                policy = dtype.name
            self._set_dtype_policy(policy)

    # --- calling ---
    @filter_traceback
    def __call__(self, inputs, *args, training=None, **kwargs):
        flat = [_to_tensor(x) for x in nest.flatten(inputs)]
        mask = kwargs.get("mask")
        masks = None
        if mask is not None:  # Keras's mask= (C++ layers take it here; Python call()s get it as a kwarg)
            masks = [None if m is None else _to_tensor(m) for m in nest.flatten(mask)]
        self._df_frames.append((inputs, args, kwargs, None))
        try:
            out = self._call(flat, training, masks)
            structure = self._df_frames[-1][3]
        finally:
            self._df_frames.pop()
        if structure is None:  # a C++ layer (no Python call ran)
            return out[0] if len(out) == 1 else list(out)
        return nest.pack_sequence_as(structure, list(out))

    def _df_call(self, flat_inputs, training, masks=None):
        if self._df_frames:
            structure, args, kwargs, _ = self._df_frames[-1]
        else:  # C++ replays the layer (a model's graph, a traced train step)
            structure, args, kwargs = self.__dict__.get("_df_last_struct"), (), {}
        if structure is not None and len(nest.flatten(structure)) == len(flat_inputs):
            inputs = nest.pack_sequence_as(structure, list(flat_inputs))
        else:
            inputs = flat_inputs[0] if len(flat_inputs) == 1 else list(flat_inputs)
        object.__setattr__(self, "_df_last_struct", structure)
        kw = dict(kwargs)
        if _accepts(self.call, "training"):
            kw["training"] = training
        if masks is not None and kw.get("mask") is None and _has_param(self.call, "mask"):
            kw["mask"] = masks[0] if len(masks) == 1 else list(masks)
        elif "mask" in kw and not _has_param(self.call, "mask"):
            kw.pop("mask")  # Keras passes mask= only to a call() that names it
        result = self.call(inputs, *args, **kw)
        if self._df_frames:
            frame = self._df_frames[-1]
            self._df_frames[-1] = frame[:3] + (result,)
        return [_to_tensor(x) for x in nest.flatten(result)]

    def _df_build(self, shapes):
        s = [_shape_of_dims(d) for d in shapes]
        if self._df_frames:
            structure = self._df_frames[-1][0]
            arg = nest.pack_sequence_as(structure, s) if nest.is_nested(structure) else s[0]
        else:
            arg = s[0] if len(s) == 1 else s
        self.build(arg)
        for hook in list(AFTER_BUILD):
            hook()

    def build(self, input_shape=None):
        """Makes the weights; called once, before the first call, with the input shape."""

    @property
    def supports_masking(self):
        return self.__dict__.get("_supports_masking", False)

    @supports_masking.setter
    def supports_masking(self, value):
        object.__setattr__(self, "_supports_masking", bool(value))

    def compute_mask(self, inputs, previous_mask=None):
        """The output's mask (Keras): the input's when supports_masking, else None."""
        return previous_mask if self.supports_masking else None

    def _df_compute_mask(self, flat_inputs, masks):
        inputs = flat_inputs[0] if len(flat_inputs) == 1 else list(flat_inputs)
        mask = None if masks is None else (masks[0] if len(masks) == 1 else list(masks))
        out = self.compute_mask(inputs, mask)
        return None if out is None else [out] if not isinstance(out, (list, tuple)) else list(out)

    def call(self, *args, **kwargs):
        return args[0] if args else None

    def compute_output_shape(self, input_shape=None):
        outs = self._output_shapes
        if outs:
            shapes = [_shape_of_dims(d) for d in outs]
            return shapes[0] if len(shapes) == 1 else shapes
        raise NotImplementedError(f"[{self.name}] compute_output_shape before the layer was called")

    # --- weights ---
    def add_weight(self, name=None, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, aggregation=None, synchronization=None, **kwargs):
        shape = [] if shape is None else [int(d) for d in shape]
        init = initializer
        if init is not None and not isinstance(init, str):
            from . import initializers
            init = initializers.get(init)
        reg = regularizer
        if reg is not None and not isinstance(reg, str):
            from . import regularizers
            reg = regularizers.get(reg)
        dt = None if dtype is None else dtypes.as_dtype(dtype)._enum
        v = self._add_weight(name or "weight", shape, init, True if trainable is None else bool(trainable), reg, dt)
        return self._df_variable(v)

    @property
    def weights(self):
        return [self._df_variable(v) for v in self._weights]

    @property
    def trainable_weights(self):
        return [self._df_variable(v) for v in self._trainable_weights]

    @property
    def non_trainable_weights(self):
        return [self._df_variable(v) for v in self._non_trainable_weights]

    def _df_variable(self, v):
        """One tf.Variable object per weight (the same object on every access)."""
        cache = self.__dict__.get("_df_vars")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_df_vars", cache)
        w = cache.get(v._id)
        if w is None:
            from .._variables import Variable
            w = cache[v._id] = v if isinstance(v, Variable) else Variable._share(v)
        return w

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)

    @property
    def variables(self):
        return self.weights

    @property
    def trainable_variables(self):
        return self.trainable_weights

    @property
    def non_trainable_variables(self):
        return self.non_trainable_weights

    @property
    def losses(self):
        return list(self._losses())

    def add_loss(self, loss):
        self._add_loss(_to_tensor(loss() if callable(loss) else loss))

    @property
    def dtype(self):
        return dtypes.from_enum(self._variable_dtype).name

    @property
    def compute_dtype(self):
        return dtypes.from_enum(self._compute_dtype).name

    @property
    def dtype_policy(self):
        from .mixed_precision import Policy
        return Policy(self._policy_name)

    @property
    def input_shape(self):
        s = [tuple(None if d < 0 else d for d in x) for x in self._input_shapes]
        if not s:
            raise AttributeError(f"The layer {self.name} has never been called and thus has no defined input shape.")
        return s[0] if len(s) == 1 else s

    @property
    def output_shape(self):
        s = [tuple(None if d < 0 else d for d in x) for x in self._output_shapes]
        if not s:
            raise AttributeError(f"The layer {self.name} has never been called and thus has no defined output shape.")
        return s[0] if len(s) == 1 else s

    @property
    def submodules(self):
        return list(self._sublayers())

    # --- config ---
    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "dtype": self._policy_name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)

    def _df_config_json(self):
        return json.dumps(self.get_config())

    # --- attribute tracking ---
    def __setattr__(self, name, value):
        if getattr(self, "_df_tracking", False) and not name.startswith("_df"):
            old = self.__dict__.get(name)
            for item in _trackables(old):
                if isinstance(item, _deepflow._Layer):
                    self._untrack_layer(item)
            for item in _trackables(value):
                if isinstance(item, _deepflow._Layer) and item is not self:
                    self._track_layer(item)
                elif isinstance(item, _deepflow.Variable):
                    self._track_variable(item)
        object.__setattr__(self, name, value)

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} name={self.name}, built={self.built}>"


def _trackables(value):
    if isinstance(value, (_deepflow._Layer, _deepflow.Variable)):
        return [value]
    if isinstance(value, (list, tuple, dict)):
        return [x for x in nest.flatten(value) if isinstance(x, (_deepflow._Layer, _deepflow.Variable))]
    return []


_accepts_cache = {}


def _has_param(fn, arg):
    try:
        return arg in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _accepts(fn, arg):
    key = (getattr(fn, "__func__", fn), arg)
    r = _accepts_cache.get(key)
    if r is None:
        try:
            params = inspect.signature(fn).parameters
            r = arg in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
        except (TypeError, ValueError):
            r = False
        _accepts_cache[key] = r
    return r


class Layer(LayerAPI, _deepflow._Layer):
    """tf.keras.layers.Layer(trainable=True, name=None, dtype=None, **kwargs)."""

    def __init__(self, trainable=True, name=None, dtype=None, dynamic=False, **kwargs):
        _deepflow._Layer.__init__(self, name or "")
        self._df_init(trainable, dtype, name)

