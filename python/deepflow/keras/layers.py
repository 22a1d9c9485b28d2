# SPDX-License-Identifier: Apache-2.0
"""tf.keras.layers: the built-in layers with Keras 3's signatures and defaults.

A built-in layer is made by the C++ layer registry from its Keras config (what Keras's
get_config writes), and this Python class wraps it: it forwards call and build to the C++
layer (whose weights it tracks), answers Keras's attributes (layer.units, layer.kernel)
from that layer's config and weights, and serializes as the same Keras class. The layers
written here in Python (Lambda, Rescaling, ReLU, ...) are ordinary Layer subclasses.
"""
import inspect
import json

from .. import _deepflow
from .. import nest
from ._layer import Layer, _to_tensor
from ._model import Input  # noqa: F401  (tf.keras.layers.Input)

_UNSET = object()


def _activation_config(a):
    if a is None or isinstance(a, str):
        return a
    name = getattr(a, "__name__", None)
    if name is None:
        raise TypeError(f"[keras.layers] an activation must be a name or a function, got {a!r}")
    return name


def _object_config(v):
    """Initializers and regularizers: a name, or an object's Keras serialization."""
    if v is None or isinstance(v, (str, int, float, bool, dict)):
        return v  # a dict is a Keras serialization ({"class_name", "config"}), as Keras accepts
    if hasattr(v, "_df_keras_config"):
        return v._df_keras_config()
    raise TypeError(f"[keras.layers] cannot use {v!r} here: give a name or a tf.keras object")


def _tuple(v, n):
    if v is None:
        return None
    if isinstance(v, int):
        return [v] * n
    return [int(x) for x in v]


class _Builtin(Layer):
    """A built-in layer: the C++ layer of this Keras class, made from the config."""

    _keras_class = None
    _positional = ()
    _defaults = {}
    _tuples = {}  # arg -> rank of its tuple form (kernel_size=3 -> [3, 3])

    def __init__(self, *args, **kwargs):
        cls_name = self._keras_class or type(self).__name__
        order = list(self._positional) + list(self._defaults)  # Keras's arguments are positional too
        if len(args) > len(order):
            raise TypeError(f"{cls_name}() takes {len(order)} positional arguments, got {len(args)}")
        config = dict(self._defaults)
        for k, v in zip(order, args):
            config[k] = v
        base = {}
        for k in ("name", "trainable", "dtype", "input_shape", "batch_input_shape", "batch_size", "input_dim"):
            if k in kwargs and k not in self._defaults and k not in self._positional:
                base[k] = kwargs.pop(k)
        unknown = [k for k in kwargs if k not in self._defaults and k not in self._positional]
        if unknown:
            raise TypeError(f"Unrecognized keyword arguments passed to {cls_name}: {dict((k, kwargs[k]) for k in unknown)}")
        config.update(kwargs)
        for k, default in _NOT_YET.items():  # TensorFlow's arguments the C++ layers do not take
            if k in config and k not in _KNOWN_BY_CPP.get(cls_name, ()):
                value = config.pop(k)
                if k in _HINTS:
                    continue
                if value != default:
                    raise NotImplementedError(f"[{cls_name}] {k}={value!r} is not supported yet")
        missing = [k for k in self._positional if config.get(k, _UNSET) is _UNSET]
        if missing:
            raise TypeError(f"{cls_name}.__init__() missing required argument(s): {missing}")
        for k in [k for k, v in config.items() if k.endswith("_constraint") and v is not None]:
            raise NotImplementedError(f"[{cls_name}] {k} is not supported yet")
        cpp = {k: self._to_config(k, v) for k, v in config.items()}
        cpp["name"] = base.get("name")
        if cpp["name"] is None:
            cpp.pop("name")
        if base.get("dtype") is not None:
            cpp["dtype"] = base["dtype"] if isinstance(base["dtype"], str) else base["dtype"].name
        impl = _deepflow._layer_from_config(json.dumps({"class_name": cls_name, "config": cpp}))
        Layer.__init__(self, trainable=base.get("trainable", True), name=impl.name)
        object.__setattr__(self, "_df_impl", impl)
        object.__setattr__(self, "_df_args", config)
        self._track_layer(impl)
        shape = base.get("input_shape")
        if shape is None and base.get("batch_input_shape") is not None:
            shape = base["batch_input_shape"][1:]
        if shape is None and base.get("input_dim") is not None:
            shape = (base["input_dim"],)
        object.__setattr__(self, "_df_input_shape", tuple(shape) if shape is not None else None)

    def _to_config(self, k, v):
        if k in self._tuples:
            return _tuple(v, self._tuples[k])
        if k == "activation" or k == "recurrent_activation":
            return _activation_config(v)
        if k.endswith("_initializer") or k.endswith("_regularizer"):
            return _object_config(v)
        return v

    def build(self, input_shape):
        shapes = input_shape if isinstance(input_shape, list) and input_shape and not isinstance(
            input_shape[0], (int, type(None))) else [input_shape]
        self._df_impl._build_shapes([[-1 if d is None else int(d) for d in s] for s in shapes])

    def call(self, inputs, training=None, mask=None):
        masks = None if mask is None else [None if m is None else _to_tensor(m) for m in nest.flatten(mask)]
        out = self._df_impl._call([_to_tensor(x) for x in nest.flatten(inputs)], training, masks)
        return out[0] if len(out) == 1 else list(out)

    def compute_mask(self, inputs, previous_mask=None):
        mask = previous_mask
        masks = None if mask is None else [None if m is None else _to_tensor(m) for m in nest.flatten(mask)]
        out = self._df_impl._compute_mask([_to_tensor(x) for x in nest.flatten(inputs)], masks)
        if not out:
            return None
        return out[0] if len(out) == 1 else out

    def get_config(self):
        c = json.loads(self._df_impl._config_json())
        c.setdefault("name", self.name)
        c["trainable"] = self.trainable
        return c

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(**{k: v for k, v in config.items() if k in cls._defaults or k in cls._positional
                      or k in ("name", "trainable", "dtype")})

    def __getattr__(self, name):
        d = self.__dict__
        if "_df_impl" not in d:
            raise AttributeError(name)
        for v in self.weights:
            if v._name.split("/")[-1] == name:
                return v
        args = d["_df_args"]
        if name in args:
            return args[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


def _layer(cls_name, positional=(), tuples=None, **defaults):
    params = [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in positional]
    params += [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                 default=v) for k, v in defaults.items()]
    params.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    def __init__(self, *args, **kwargs):
        _Builtin.__init__(self, *args, **kwargs)

    # Each class its own __init__, so that inspect.signature shows its Keras arguments.
    __init__.__signature__ = inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
                                               + params)
    __init__.__qualname__ = f"{cls_name}.__init__"
    return type(cls_name, (_Builtin,), {"_keras_class": cls_name, "_positional": tuple(positional),
                                        "_defaults": dict(defaults), "_tuples": dict(tuples or {}),
                                        "__init__": __init__, "__module__": __name__,
                                        "__doc__": f"tf.keras.layers.{cls_name}"})


# Arguments of TensorFlow's layers that deepflow's do not implement: accepted at their
# default (anything else is a NotImplementedError); _HINTS are performance hints of
# TensorFlow's GPU kernels, accepted with any value.
_NOT_YET = {"output_padding": None, "renorm": False, "renorm_clipping": None, "renorm_momentum": 0.99,
            "seed": None, "use_cudnn": "auto", "sliding_window": None, "flash_attention": None, "use_gate": False}
_HINTS = {"use_cudnn", "flash_attention"}
_KNOWN_BY_CPP = {"Dropout": ("seed",)}

_DENSE_INIT = dict(kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                   bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None)

Dense = _layer("Dense", ["units"], activation=None, use_bias=True, **_DENSE_INIT)
Activation = _layer("Activation", ["activation"])
Flatten = _layer("Flatten", data_format=None)
Reshape = _layer("Reshape", ["target_shape"])
Dropout = _layer("Dropout", ["rate"], noise_shape=None, seed=None)
Conv1D = _layer("Conv1D", ["filters", "kernel_size"], {"kernel_size": 1, "strides": 1, "dilation_rate": 1},
                strides=1, padding="valid", data_format=None, dilation_rate=1, groups=1, activation=None,
                use_bias=True, **_DENSE_INIT)
Conv2D = _layer("Conv2D", ["filters", "kernel_size"], {"kernel_size": 2, "strides": 2, "dilation_rate": 2},
                strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1), groups=1, activation=None,
                use_bias=True, **_DENSE_INIT)
Conv2DTranspose = _layer("Conv2DTranspose", ["filters", "kernel_size"],
                         {"kernel_size": 2, "strides": 2, "dilation_rate": 2}, strides=(1, 1), padding="valid",
                         output_padding=None, data_format=None, dilation_rate=(1, 1), activation=None,
                         use_bias=True, **_DENSE_INIT)
DepthwiseConv2D = _layer("DepthwiseConv2D", ["kernel_size"], {"kernel_size": 2, "strides": 2, "dilation_rate": 2},
                         strides=(1, 1), padding="valid", depth_multiplier=1, data_format=None,
                         dilation_rate=(1, 1), activation=None, use_bias=True,
                         depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                         depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                         depthwise_constraint=None, bias_constraint=None)
SeparableConv2D = _layer("SeparableConv2D", ["filters", "kernel_size"],
                         {"kernel_size": 2, "strides": 2, "dilation_rate": 2}, strides=(1, 1), padding="valid",
                         data_format=None, dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                         depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                         bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                         bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                         pointwise_constraint=None, bias_constraint=None)
MaxPooling2D = _layer("MaxPooling2D", tuples={"pool_size": 2, "strides": 2}, pool_size=(2, 2), strides=None,
                      padding="valid", data_format=None)
AveragePooling2D = _layer("AveragePooling2D", tuples={"pool_size": 2, "strides": 2}, pool_size=(2, 2), strides=None,
                          padding="valid", data_format=None)
MaxPooling1D = _layer("MaxPooling1D", pool_size=2, strides=None, padding="valid", data_format=None)
AveragePooling1D = _layer("AveragePooling1D", pool_size=2, strides=None, padding="valid", data_format=None)
GlobalAveragePooling2D = _layer("GlobalAveragePooling2D", data_format=None, keepdims=False)
GlobalMaxPooling2D = _layer("GlobalMaxPooling2D", data_format=None, keepdims=False)
GlobalAveragePooling1D = _layer("GlobalAveragePooling1D", data_format=None, keepdims=False)
GlobalMaxPooling1D = _layer("GlobalMaxPooling1D", data_format=None, keepdims=False)
BatchNormalization = _layer("BatchNormalization", axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                            beta_initializer="zeros", gamma_initializer="ones", moving_mean_initializer="zeros",
                            moving_variance_initializer="ones", beta_regularizer=None, gamma_regularizer=None,
                            beta_constraint=None, gamma_constraint=None, renorm=False, renorm_clipping=None,
                            renorm_momentum=0.99, synchronized=False)
LayerNormalization = _layer("LayerNormalization", axis=-1, epsilon=0.001, center=True, scale=True,
                            beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                            gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, rms_scaling=False)
Embedding = _layer("Embedding", ["input_dim", "output_dim"], embeddings_initializer="uniform",
                   embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False)
Add = _layer("Add")
Subtract = _layer("Subtract")
Multiply = _layer("Multiply")
Average = _layer("Average")
Maximum = _layer("Maximum")
Minimum = _layer("Minimum")
Concatenate = _layer("Concatenate", axis=-1)
_RNN_INIT = dict(kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros")
_RNN_REST = dict(kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False)
SimpleRNN = _layer("SimpleRNN", ["units"], activation="tanh", use_bias=True, **_RNN_INIT,
                   **{k: v for k, v in _RNN_REST.items() if k != "seed"}, seed=None)
LSTM = _layer("LSTM", ["units"], activation="tanh", recurrent_activation="sigmoid", use_bias=True, **_RNN_INIT,
              unit_forget_bias=True, **_RNN_REST, use_cudnn="auto")
GRU = _layer("GRU", ["units"], activation="tanh", recurrent_activation="sigmoid", use_bias=True, **_RNN_INIT,
             **_RNN_REST, reset_after=True, use_cudnn="auto")
MultiHeadAttention = _layer("MultiHeadAttention", ["num_heads", "key_dim"], value_dim=None, dropout=0.0,
                            use_bias=True, output_shape=None, attention_axes=None, sliding_window=None,
                            flash_attention=None, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                            kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                            kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None)


class Bidirectional(_Builtin):
    """tf.keras.layers.Bidirectional(layer, merge_mode="concat")."""

    _keras_class = "Bidirectional"
    _positional = ("layer",)
    _defaults = {"merge_mode": "concat", "weights": None, "backward_layer": None}

    def _to_config(self, k, v):
        if k == "layer" or (k == "backward_layer" and v is not None):
            return {"class_name": v._keras_class, "config": v.get_config()}
        return v


def InputLayer(shape=None, batch_size=None, dtype=None, sparse=None, ragged=None, batch_shape=None, input_tensor=None,
               optional=False, name=None, **kwargs):
    """tf.keras.layers.InputLayer: fixes a Sequential's input shape (the C++ layer itself)."""
    shape = kwargs.pop("input_shape", shape)
    if batch_shape is None:
        batch_shape = [batch_size] + list(shape or [])
    cfg = {"batch_shape": list(batch_shape), "dtype": dtype if isinstance(dtype, (str, type(None))) else dtype.name}
    if cfg["dtype"] is None:
        cfg.pop("dtype")
    if name:
        cfg["name"] = name
    return _deepflow._layer_from_config(json.dumps({"class_name": "InputLayer", "config": cfg}))


# --- layers written in Python ---
class Lambda(Layer):
    """tf.keras.layers.Lambda(function): a layer that applies a Python function."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = arguments or {}

    def call(self, inputs, training=None):
        return self.function(inputs, **self.arguments)


class Rescaling(Layer):
    """tf.keras.layers.Rescaling(scale, offset=0.0): inputs * scale + offset."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def call(self, inputs):
        from .. import _ops
        x = _ops.cast(inputs, self.compute_dtype)
        return x * self.scale + self.offset

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class ReLU(Layer):
    """tf.keras.layers.ReLU(max_value=None, negative_slope=0.0, threshold=0.0)."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold

    def call(self, inputs):
        from .. import _ops
        x = inputs
        y = _ops.where(x >= self.threshold, x, (x - self.threshold) * self.negative_slope)
        if self.max_value is not None:
            y = _ops.minimum(y, float(self.max_value))
        return y


class LeakyReLU(Layer):
    """tf.keras.layers.LeakyReLU(negative_slope=0.3)."""

    def __init__(self, negative_slope=0.3, **kwargs):
        kwargs.pop("alpha", None)
        super().__init__(**kwargs)
        self.negative_slope = negative_slope

    def call(self, inputs):
        from .. import _nn
        return _nn.leaky_relu(inputs, self.negative_slope)


class Softmax(Layer):
    """tf.keras.layers.Softmax(axis=-1)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs, mask=None):
        from .. import _nn
        return _nn.softmax(inputs, self.axis)


class Identity(Layer):
    def call(self, inputs):
        return inputs


class ZeroPadding2D(Layer):
    """tf.keras.layers.ZeroPadding2D(padding=(1, 1)) on NHWC inputs."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, int):
            padding = ((padding, padding), (padding, padding))
        elif isinstance(padding[0], int):
            padding = ((padding[0], padding[0]), (padding[1], padding[1]))
        self.padding = tuple(tuple(p) for p in padding)

    def call(self, inputs):
        from .. import _array_ops
        (t, b), (l, r) = self.padding
        return _array_ops.pad(inputs, [[0, 0], [t, b], [l, r], [0, 0]])
