# SPDX-License-Identifier: Apache-2.0
"""tf.experimental.tensorrt, on deepflow's serving optimizer.

TF-TRT's converter API (``TrtGraphConverterV2``, ``tf.experimental.tensorrt.Converter``)
rewrites a SavedModel for serving. Here it runs deepflow's serving optimizer
(deepflow/quantize/serving_optimizer.h): the graph is frozen, fused for oneDNN, and in
INT8 mode its convolution chains run as int8 oneDNN (VNNI) convolutions with ranges
calibrated on ``calibration_input_fn``. The result is a deepflow SavedModel that
``deepflow serve`` and ``tf.saved_model.load`` run; TensorFlow itself cannot load it (as a
TF-TRT model needs TensorRT). docs/quantization.md maps each option.

    converter = tf.experimental.tensorrt.Converter(
        input_saved_model_dir="resnet/1",
        conversion_params=tf.experimental.tensorrt.ConversionParams(precision_mode="INT8"))
    def calibration_input_fn():
        for batch in batches:
            yield (batch,)
    converter.convert(calibration_input_fn=calibration_input_fn)
    converter.save("resnet_int8/1")
"""
import collections

import numpy as np

from .. import _deepflow

__all__ = ["TrtPrecisionMode", "TrtConversionParams", "ConversionParams", "DEFAULT_TRT_CONVERSION_PARAMS",
           "TrtGraphConverterV2", "Converter"]


class TrtPrecisionMode:
    FP32 = "FP32"
    FP16 = "FP16"
    INT8 = "INT8"

    @staticmethod
    def supported_precision_modes():
        return [TrtPrecisionMode.FP32, TrtPrecisionMode.FP16, TrtPrecisionMode.INT8]


# TF-TRT's fields; the TensorRT-only ones (workspace size, cached engines, building at run
# time) are accepted and have no effect here: plans are made per input shape on first use.
TrtConversionParams = collections.namedtuple(
    "TrtConversionParams",
    ["max_workspace_size_bytes", "precision_mode", "minimum_segment_size", "maximum_cached_engines",
     "use_calibration", "allow_build_at_runtime"])
TrtConversionParams.__new__.__defaults__ = (1 << 30, TrtPrecisionMode.FP32, 3, 1, True, True)
ConversionParams = TrtConversionParams
DEFAULT_TRT_CONVERSION_PARAMS = TrtConversionParams()


def _as_inputs(item, keys):
    """One calibration / build item (a tuple or list in key order, one array, or a dict by
    input key) as a list of float32 arrays in key order."""
    if isinstance(item, dict):
        missing = [k for k in keys if k not in item]
        if missing:
            raise ValueError(f"[TrtGraphConverterV2] input item lacks {missing}; the signature takes {keys}")
        item = [item[k] for k in keys]
    elif not isinstance(item, (tuple, list)):
        item = [item]
    out = []
    for x in item:
        if hasattr(x, "numpy"):
            x = x.numpy()
        out.append(np.ascontiguousarray(x, dtype=np.float32))
    return out


def _pull(input_fn, keys):
    """A callable that returns the next item of the generator input_fn() (or None)."""
    it = iter(input_fn())

    def next_item():
        try:
            return _as_inputs(next(it), keys)
        except StopIteration:
            return None

    return next_item


class TrtGraphConverterV2:
    """TF-TRT's converter for TF2 SavedModels, on deepflow's serving optimizer."""

    def __init__(self, input_saved_model_dir=None, input_saved_model_tags=None, input_saved_model_signature_key=None,
                 use_dynamic_shape=None, dynamic_shape_profile_strategy=None, max_workspace_size_bytes=1 << 30,
                 precision_mode=TrtPrecisionMode.FP32, minimum_segment_size=3, maximum_cached_engines=1,
                 use_calibration=True, allow_build_at_runtime=True, conversion_params=None, max_batch_size=None,
                 calibration_method="min_max"):
        if input_saved_model_dir is None:
            raise ValueError("[TrtGraphConverterV2] input_saved_model_dir is required")
        if conversion_params is not None:
            precision_mode = conversion_params.precision_mode
            minimum_segment_size = conversion_params.minimum_segment_size
            use_calibration = conversion_params.use_calibration
        precision_mode = str(precision_mode).upper()
        if precision_mode == TrtPrecisionMode.INT8 and not use_calibration:
            raise ValueError("[TrtGraphConverterV2] INT8 without calibration needs ranges from quantization-aware "
                             "training in the graph, which this converter does not read; use use_calibration=True")
        self._key = input_saved_model_signature_key or "serving_default"
        self._dir = str(input_saved_model_dir)
        self._precision = precision_mode
        self._impl = _deepflow._ServingOptimizer(
            self._dir, list(input_saved_model_tags or ["serve"]), [self._key], precision_mode,
            int(minimum_segment_size), int(max_batch_size or 0), calibration_method, 99.99)
        self._converted = False
        self._keys = None

    def _input_keys(self):
        if self._keys is None:
            from .. import saved_model
            sig = saved_model.load(self._dir).signatures[self._key]
            self._keys = sorted(sig.structured_input_signature[1].keys())
        return self._keys

    def convert(self, calibration_input_fn=None):
        """Rewrites the signature. INT8 calibrates on calibration_input_fn, a generator
        function yielding each batch as a tuple of inputs (key order), one array or a dict."""
        if self._precision == TrtPrecisionMode.INT8 and calibration_input_fn is None:
            raise ValueError("[TrtGraphConverterV2] INT8 needs calibration_input_fn")
        fn = None
        if calibration_input_fn is not None and self._precision == TrtPrecisionMode.INT8:
            fn = _pull(calibration_input_fn, self._input_keys())
        self._impl.convert(fn)
        self._converted = True

    def build(self, input_fn):
        """Runs the converted signature on each input of input_fn (a generator function),
        so every input shape's plans are made and checked (TF-TRT builds engines here)."""
        if not self._converted:
            raise RuntimeError("[TrtGraphConverterV2] build() before convert()")
        self._impl.build(_pull(input_fn, self._input_keys()), self._key)

    def save(self, output_saved_model_dir, save_gpu_specific_engines=True, options=None):
        """Writes the converted model as a deepflow SavedModel."""
        if not self._converted:
            raise RuntimeError("[TrtGraphConverterV2] save() before convert()")
        self._impl.save(str(output_saved_model_dir), False)

    def summary(self, line_length=160, detailed=True):
        for line in self._impl.summary():
            print(line)


Converter = TrtGraphConverterV2
