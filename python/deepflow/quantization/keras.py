# SPDX-License-Identifier: Apache-2.0
"""Quantization-aware training for Keras models (tfmot's quantize_model, Default8Bit scheme):

    qat = tf.quantization.keras.quantize_model(model)
    qat.compile(...); qat.fit(...)                       # fine-tunes with fake quantization
    converter = tf.lite.TFLiteConverter.from_keras_model(qat)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    int8 = converter.convert()                           # int8 with the learned ranges

What gets fake-quantized:
- The model input.
- The kernels of Conv2D, DepthwiseConv2D and Dense: symmetric, narrow range, from their
  current min/max (LastValueQuantizer). Conv2D is per output channel; Dense and
  DepthwiseConv2D are per tensor.
- The outputs of the other layers: asymmetric 8-bit, with ranges kept as exponential moving
  averages (decay 0.999) of each training batch's min and max. Three exceptions:
  - MaxPooling, Flatten, Reshape and Dropout get no output quantizer, as in tfmot: they
    keep their input's range.
  - A layer without an activation of its own, followed by BatchNormalization or an
    Activation, gets none either: the range is taken after the batch norm or the activation. Batch norm is folded into the
    convolution when converting.
  - An activation that does not fuse into its layer (softmax, sigmoid, tanh, ...) gets a
    quantizer on its input too (tfmot's QuantizeAwareActivation).
  - tfmot starts the averages at -6 and 6. Here the first training batch sets them, so short
    fine-tunings get usable ranges.
The converter reads the quantizers' ranges; no representative dataset is needed.

The quantized model is a Sequential chain that shares the given model's layers and weights:
it fine-tunes that model. Models whose layers do not form a chain (branches, several inputs)
are refused."""
import numpy as np

__all__ = ["quantize_model"]

_NO_OUTPUT_QUANTIZER = ("MaxPooling1D", "MaxPooling2D", "Flatten", "Reshape", "Dropout", "InputLayer",
                        "GlobalMaxPooling2D")
_EMA = 0.999


def _fake_quant(x, lo, hi, narrow_range=False):
    from . import fake_quant_with_min_max_vars
    return fake_quant_with_min_max_vars(x, lo, hi, num_bits=8, narrow_range=narrow_range)


def _make_wrapper_class():
    import deepflow as tf
    keras = tf.keras

    class QuantizeWrapper(keras.layers.Layer):
        """A layer with fake-quantized kernel and output (see the module docstring)."""

        def __init__(self, layer, quantize_output=True, quantize_input=False, **kwargs):
            super().__init__(name=f"quant_{layer.name}", **kwargs)
            self.layer = layer
            self.kind = type(layer).__name__
            self.quantize_output = quantize_output
            self.quantize_input = quantize_input
            self.config = layer.get_config() if self.kind in ("Conv2D", "DepthwiseConv2D", "Dense") else {}

        def build(self, input_shape=None):
            def ranges(prefix):
                lo = self.add_weight(f"{prefix}_min", [], initializer=keras.initializers.Constant(-6.0), trainable=False)
                hi = self.add_weight(f"{prefix}_max", [], initializer=keras.initializers.Constant(6.0), trainable=False)
                seen = self.add_weight(f"{prefix}_seen", [], initializer="zeros", trainable=False)
                return lo, hi, seen
            if self.quantize_output:
                self.out_range = ranges("output")
            if self.quantize_input:
                self.in_range = ranges("input")
            # An activation no kernel fuses (softmax, sigmoid, tanh, ...) runs as its own op,
            # whose input needs a range too (tfmot's QuantizeAwareActivation).
            self.pre_activation = (self.config.get("activation") or "linear") not in ("linear", "relu", "relu6")
            if self.pre_activation:
                self.pre_range = ranges("pre_activation")

        def _activation_fq(self, y, rng, training):
            lo, hi, seen = rng
            if training:
                bmin, bmax = tf.reduce_min(y), tf.reduce_max(y)
                new_lo = tf.where(seen > 0, _EMA * lo + (1 - _EMA) * bmin, bmin)
                new_hi = tf.where(seen > 0, _EMA * hi + (1 - _EMA) * bmax, bmax)
                lo.assign(new_lo)
                hi.assign(new_hi)
                seen.assign(1.0)
                a, b = new_lo, new_hi
            else:
                a, b = lo, hi
            return _fake_quant(y, tf.minimum(a, 0.0), tf.maximum(b, 0.0))

        def _weight_fq(self, w, per_channel):
            axes = list(range(len(w.shape) - 1)) if per_channel else None
            m = tf.stop_gradient(tf.reduce_max(tf.abs(w), axis=axes))
            m = tf.maximum(m, 1e-8)
            return _fake_quant(w, -m, m, narrow_range=True)

        def call(self, x, training=None):
            training = bool(training)
            if self.quantize_input:
                x = self._activation_fq(x, self.in_range, training)
            c = self.config
            if self.kind == "Dense":
                y = tf.matmul(x, self._weight_fq(self.layer.kernel, False)) if len(x.shape) == 2 else \
                    tf.tensordot(x, self._weight_fq(self.layer.kernel, False), 1)
            elif self.kind == "Conv2D":
                y = tf.nn.conv2d(x, self._weight_fq(self.layer.kernel, True), c["strides"], c["padding"].upper(),
                                 dilations=c["dilation_rate"])
            elif self.kind == "DepthwiseConv2D":
                y = tf.nn.depthwise_conv2d(x, self._weight_fq(self.layer.depthwise_kernel, False),
                                           [1] + list(c["strides"]) + [1], c["padding"].upper(),
                                           dilations=c["dilation_rate"])
            else:
                y = self.layer(x, training=training)
            if c:
                if c.get("use_bias", True):
                    y = y + self.layer.bias
                if self.pre_activation:
                    y = self._activation_fq(y, self.pre_range, training)
                y = keras.activations.get(c.get("activation") or "linear")(y)
            if self.quantize_output:
                y = self._activation_fq(y, self.out_range, training)
            return y

    return QuantizeWrapper


_WRAPPER = []


def quantize_model(model):
    """A quantization-aware copy of a Sequential (or chain-shaped functional) Keras model."""
    import deepflow as tf
    keras = tf.keras
    if not _WRAPPER:
        _WRAPPER.append(_make_wrapper_class())
    wrapper = _WRAPPER[0]
    layers = [l for l in model.layers if type(l).__name__ != "InputLayer"]
    inputs = getattr(model, "inputs", None) or []
    if len(inputs) > 1:
        raise ValueError(f"[quantize_model] model '{model.name}' has {len(inputs)} inputs; only single-input "
                         "layer chains are supported")
    if not inputs:
        shapes = getattr(model, "_input_shapes", None)
        if not shapes:
            raise ValueError(f"[quantize_model] model '{model.name}' has never been called; call it once first")
        shape = [None if d < 0 else d for d in shapes[0]][1:]
    else:
        shape = list(inputs[0].shape)[1:]
    supported = ("Conv2D", "DepthwiseConv2D", "Dense")
    for l in layers:
        if l.get_config().get("groups", 1) != 1:
            raise ValueError(f"[quantize_model] layer '{l.name}': grouped convolutions are not supported")
    wrapped = []
    for i, l in enumerate(layers):
        nxt = type(layers[i + 1]).__name__ if i + 1 < len(layers) else None
        kind = type(l).__name__
        linear = (l.get_config().get("activation") or "linear") == "linear"
        quantize_output = kind not in _NO_OUTPUT_QUANTIZER and not (
            linear and nxt in ("BatchNormalization", "Activation", "ReLU"))
        if kind in supported or quantize_output or i == 0:
            wrapped.append(wrapper(l, quantize_output=quantize_output, quantize_input=i == 0))
        else:
            wrapped.append(l)
    inp = keras.Input(shape)
    y = inp
    for l in wrapped:
        y = l(y)
    qat = keras.Model(inp, y, name=f"quant_{model.name}")
    # Refuse models that are not the chain their layer list suggests: the same forward pass
    # (up to the fake quantization) on a probe.
    probe = np.random.default_rng(0).uniform(0, 1, [2] + [d or 4 for d in shape]).astype(np.float32)
    want = np.asarray(model(probe, training=False))
    chain = probe
    for l in layers:
        chain = l(chain, training=False)
    if np.asarray(chain).shape != want.shape or not np.allclose(np.asarray(chain), want, rtol=1e-4, atol=1e-5):
        raise ValueError(f"[quantize_model] model '{model.name}' is not a chain of its layers (branches or shared "
                         "inputs); only Sequential-shaped models are supported")
    return qat
