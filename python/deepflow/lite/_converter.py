# SPDX-License-Identifier: Apache-2.0
"""tf.lite.TFLiteConverter on deepflow_quantize: Keras models, concrete functions and
SavedModels to .tflite bytes, in TensorFlow's modes (float32, float16 weights, dynamic-range
int8 weights, full integer int8 calibrated on a representative dataset).

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: ([x[i:i + 1]] for i in range(100))
    converter.inference_input_type = tf.int8      # optional: an integer interface
    tflite_bytes = converter.convert()
    converter.quantization_report                 # the int8 error per op, for finding what costs accuracy

deepflow's additions: `calibration_method` ("min_max", TFLite's default; "moving_average",
"percentile" with `calibration_percentile`; "entropy") and `quantization_report`."""
import os

from .. import _deepflow, dtypes, nest

__all__ = ["Optimize", "OpsSet", "RepresentativeDataset", "TargetSpec", "TFLiteConverter"]


class Optimize:
    DEFAULT = "DEFAULT"
    OPTIMIZE_FOR_SIZE = "OPTIMIZE_FOR_SIZE"        # deprecated in TensorFlow: same as DEFAULT
    OPTIMIZE_FOR_LATENCY = "OPTIMIZE_FOR_LATENCY"  # deprecated in TensorFlow: same as DEFAULT
    EXPERIMENTAL_SPARSITY = "EXPERIMENTAL_SPARSITY"


class OpsSet:
    TFLITE_BUILTINS = "TFLITE_BUILTINS"
    TFLITE_BUILTINS_INT8 = "TFLITE_BUILTINS_INT8"
    SELECT_TF_OPS = "SELECT_TF_OPS"
    EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8 = \
        "EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8"


class RepresentativeDataset:
    """tf.lite.RepresentativeDataset: wraps a generator function of input samples."""

    def __init__(self, input_gen):
        self.input_gen = input_gen


class TargetSpec:
    def __init__(self, supported_ops=None, supported_types=None):
        self.supported_ops = set(supported_ops or {OpsSet.TFLITE_BUILTINS})
        self.supported_types = list(supported_types or [])


def _dtype_enum(t, what):
    if t is None:
        return dtypes.float32._enum
    d = dtypes.as_dtype(t)
    if d not in (dtypes.float32, dtypes.int8, dtypes.uint8):
        raise ValueError(f"[TFLiteConverter] {what} must be tf.float32, tf.int8 or tf.uint8, got {d.name}")
    return d._enum


def _samples(dataset, input_names):
    """The representative dataset as a callable returning one list of arrays per call."""
    gen = dataset.input_gen if isinstance(dataset, RepresentativeDataset) else dataset
    it = iter(gen())

    def next_sample():
        try:
            sample = next(it)
        except StopIteration:
            return None
        if isinstance(sample, tuple) and len(sample) == 2 and isinstance(sample[0], str):
            sample = sample[1]  # (signature_key, inputs)
        if isinstance(sample, dict):
            missing = [k for k in input_names if k not in sample]
            if missing:
                raise ValueError(f"[TFLiteConverter] representative dataset sample lacks inputs {missing}; "
                                 f"the model's inputs are {input_names}")
            sample = [sample[k] for k in input_names]
        return [x.numpy() if hasattr(x, "numpy") else x for x in nest.flatten(sample)]
    return next_sample


class TFLiteConverter:
    """Converts a concrete function or a SavedModel to a .tflite flatbuffer (bytes)."""

    def __init__(self, source, input_names=None, output_names=None, signature_key="serving_default"):
        self._source = source
        self._input_names = list(input_names or [])
        self._output_names = list(output_names or [])
        self._signature_key = signature_key
        self.optimizations = set()
        self.representative_dataset = None
        self.target_spec = TargetSpec()
        self.inference_input_type = dtypes.float32
        self.inference_output_type = dtypes.float32
        self.allow_custom_ops = False
        self.experimental_new_converter = True
        self.experimental_new_quantizer = True
        self.calibration_method = "min_max"
        self.calibration_percentile = 99.99
        self.quantization_report = None
        self.conversion_mode = None

    @classmethod
    def from_concrete_functions(cls, funcs, trackable_obj=None):
        if len(funcs) != 1:
            raise ValueError(f"[TFLiteConverter.from_concrete_functions] converts one function, got {len(funcs)}")
        f = funcs[0]
        names = [getattr(s, "name", None) for s in getattr(f, "inputs", [])]
        return cls(f._cfunc, input_names=[n for n in names if n] or None)

    @classmethod
    def from_keras_model(cls, model):
        from .._function import TensorSpec, function
        if getattr(model, "inputs", None):
            specs = [TensorSpec([None] + list(x.shape)[1:], x.dtype) for x in model.inputs]
            names = [getattr(x, "name", None) or f"input_{i}" for i, x in enumerate(model.inputs)]
        else:
            shapes = getattr(model, "_input_shapes", None)
            if not shapes:
                raise ValueError(f"[TFLiteConverter.from_keras_model] model '{model.name}' has never been called, "
                                 "so its input signature is unknown: call it once first")
            specs = [TensorSpec([None] + [None if d < 0 else d for d in s][1:], dtypes.float32) for s in shapes]
            names = [f"input_{i}" for i in range(len(specs))]
        one = len(specs) == 1
        fn = function(lambda *xs: model(xs[0] if one else list(xs), training=False))
        cf = fn.get_concrete_function(*specs)
        n_out = len(nest.flatten(cf.structured_outputs)) if cf.structured_outputs is not None else 1
        outputs = list(model.output_names) if len(getattr(model, "output_names", [])) == n_out else None
        return cls(cf._cfunc, input_names=names, output_names=outputs)

    @classmethod
    def from_saved_model(cls, saved_model_dir, signature_keys=None, tags=None):
        keys = list(signature_keys or ["serving_default"])
        if len(keys) != 1:
            raise ValueError(f"[TFLiteConverter.from_saved_model] converts one signature, got {keys}")
        return cls(os.fspath(saved_model_dir), signature_key=keys[0])

    def convert(self):
        ops = set(self.target_spec.supported_ops)
        unsupported = ops - {OpsSet.TFLITE_BUILTINS, OpsSet.TFLITE_BUILTINS_INT8}
        if unsupported:
            raise ValueError(f"[TFLiteConverter] supported_ops {sorted(unsupported)}: deepflow writes TFLite builtins "
                             "only (no Flex / select TF ops, no 16x8 mode)")
        opts = set(self.optimizations or [])
        if Optimize.EXPERIMENTAL_SPARSITY in opts:
            raise ValueError("[TFLiteConverter] Optimize.EXPERIMENTAL_SPARSITY is not supported")
        types = [dtypes.as_dtype(t)._enum for t in self.target_spec.supported_types]
        int8_only = ops == {OpsSet.TFLITE_BUILTINS_INT8} or dtypes.int8._enum in types
        dataset = None
        if self.representative_dataset is not None:
            dataset = _samples(self.representative_dataset, self._input_names)
        data, mode, report = _deepflow._lite_convert(
            self._source, self._signature_key, bool(opts), types, int8_only, dataset,
            _dtype_enum(self.inference_input_type, "inference_input_type"),
            _dtype_enum(self.inference_output_type, "inference_output_type"),
            self.calibration_method, float(self.calibration_percentile), self._input_names, self._output_names)
        self.conversion_mode = mode
        self.quantization_report = [
            dict(op=op, tensor=t, node=src, scale=s, rmse=e, max_abs_error=m, float_rms=r)
            for op, t, src, s, e, m, r in report] if mode == "int8" else None
        return data
