# SPDX-License-Identifier: Apache-2.0
"""tf.lite: deepflow's TF Lite interpreter (deepflow_lite, its own kernels) behind
TensorFlow Lite's Python API.

    interpreter = tf.lite.Interpreter(model_path="model.tflite", num_threads=2)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    y = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])

tf.lite.TFLiteConverter (python/deepflow/lite/_converter.py) writes .tflite files from Keras
models, concrete functions and SavedModels, float or quantized."""
import numpy as np

from .. import _deepflow
from ._converter import Optimize, OpsSet, RepresentativeDataset, TargetSpec, TFLiteConverter  # noqa: F401

__all__ = ["Interpreter", "OpResolverType", "Optimize", "OpsSet", "RepresentativeDataset", "SignatureRunner",
           "TargetSpec", "TFLiteConverter"]


class OpResolverType:
    """LiteRT's resolver choices; deepflow has one set of kernels, so all mean the same."""
    AUTO = 0
    BUILTIN = 1
    BUILTIN_REF = 2
    BUILTIN_WITHOUT_DEFAULT_DELEGATES = 3


def _details(raw):
    scales = np.array(raw["scales"], dtype=np.float32)
    zero_points = np.array(raw["zero_points"], dtype=np.int32)
    per_tensor = (float(scales[0]), int(zero_points[0])) if len(scales) == 1 else (0.0, 0)
    return {
        "name": raw["name"],
        "index": raw["index"],
        "shape": np.array(raw["shape"], dtype=np.int32),
        "shape_signature": np.array(raw["shape_signature"], dtype=np.int32),
        "dtype": np.dtype(raw["dtype"]).type if raw["dtype"] else None,
        "quantization": per_tensor,
        "quantization_parameters": {"scales": scales, "zero_points": zero_points,
                                    "quantized_dimension": raw["quantized_dimension"]},
        "sparsity_parameters": {},
    }


class Interpreter:
    """tf.lite.Interpreter (TensorFlow Lite's and LiteRT's Python API) on deepflow_lite.

    model_path or model_content (bytes); num_threads >= 1 (None: 1);
    experimental_preserve_all_tensors keeps intermediate tensors readable after invoke().
    experimental_fast_int8 (deepflow's): int8 convolutions and FULLY_CONNECTED requantize in
    float, as LiteRT's default (XNNPACK) kernels do; faster, within a quantization step of
    LiteRT's reference kernels per op instead of equal to them (the default).
    Delegates and the other experimental_* options are accepted and ignored: deepflow has one
    set of kernels."""

    def __init__(self, model_path=None, model_content=None, experimental_delegates=None, num_threads=None,
                 experimental_op_resolver_type=OpResolverType.AUTO, experimental_preserve_all_tensors=False,
                 experimental_fast_int8=False, **kwargs):
        if (model_path is None) == (model_content is None):
            raise ValueError("[tf.lite.Interpreter] pass exactly one of model_path and model_content")
        threads = 1 if num_threads is None else int(num_threads)
        if threads < 1:
            raise ValueError(f"[tf.lite.Interpreter] num_threads must be at least 1, not {num_threads}")
        content = None if model_content is None else bytes(model_content)
        self._impl = _deepflow._LiteInterpreter(model_path, content, threads, bool(experimental_preserve_all_tensors),
                                                bool(experimental_fast_int8))
        self._allocated = set()

    # Tensors.
    def get_input_details(self):
        return [_details(self._impl.details(i)) for i in self._impl.inputs()]

    def get_output_details(self):
        return [_details(self._impl.details(i)) for i in self._impl.outputs()]

    def get_tensor_details(self):
        return [_details(self._impl.details(i)) for i in range(self._impl.num_tensors())]

    def _view(self, index, subgraph=0):
        if subgraph not in self._allocated or self._impl.needs_allocation(subgraph):
            raise ValueError(f"[tf.lite.Interpreter] tensor {index}: call allocate_tensors() first")
        return self._impl.view(index, subgraph)

    def set_tensor(self, tensor_index, value):
        """Copies value into input tensor_index (its shape must match: resize first)."""
        view = self._view(tensor_index)
        value = np.asarray(value)
        if value.dtype != view.dtype:
            raise ValueError(f"[tf.lite.Interpreter.set_tensor] tensor {tensor_index} is {view.dtype}, "
                             f"got {value.dtype}")
        if tuple(value.shape) != tuple(view.shape):
            raise ValueError(f"[tf.lite.Interpreter.set_tensor] tensor {tensor_index} has shape "
                             f"{list(view.shape)}, got {list(value.shape)} (resize_tensor_input first)")
        view[...] = value

    def get_tensor(self, tensor_index, subgraph_index=0):
        """A copy of the tensor's value."""
        return np.array(self._view(tensor_index, subgraph_index), copy=True)

    def tensor(self, tensor_index):
        """A function returning a zero-copy numpy view of the tensor; do not hold the view
        across invoke() or allocate_tensors()."""
        return lambda: self._view(tensor_index)

    def resize_tensor_input(self, input_index, tensor_size, strict=False):
        self._impl.resize(int(input_index), [int(d) for d in tensor_size], bool(strict))

    def allocate_tensors(self):
        self._impl.allocate()
        self._allocated.add(0)

    def invoke(self):
        if 0 not in self._allocated:
            raise RuntimeError("[tf.lite.Interpreter.invoke] call allocate_tensors() first")
        self._impl.invoke()

    def reset_all_variables(self):
        pass  # no variable ops yet

    def num_subgraphs(self):
        return self._impl.num_subgraphs()

    # Signatures.
    def get_signature_list(self):
        return {key: {"inputs": [n for n, _ in ins], "outputs": [n for n, _ in outs]}
                for key, (_, ins, outs) in self._impl.signatures().items()}

    def get_signature_runner(self, signature_key=None):
        sigs = self._impl.signatures()
        if signature_key is None:
            if len(sigs) != 1:
                raise ValueError(f"[tf.lite.Interpreter.get_signature_runner] the model has {len(sigs)} "
                                 "signatures: name one")
            signature_key = next(iter(sigs))
        if signature_key not in sigs:
            raise ValueError(f"[tf.lite.Interpreter.get_signature_runner] no signature '{signature_key}'; "
                             f"the model has {sorted(sigs)}")
        return SignatureRunner(self, signature_key, *sigs[signature_key])


class SignatureRunner:
    """runner(**inputs) -> {output name: array}: resizes, allocates, copies and invokes."""

    def __init__(self, interpreter, key, subgraph, inputs, outputs):
        self._interpreter = interpreter
        self._impl = interpreter._impl
        self._key = key
        self._subgraph = subgraph
        self._inputs = dict(inputs)
        self._outputs = dict(outputs)

    def get_input_details(self):
        return {n: _details(self._impl.details(i, self._subgraph)) for n, i in self._inputs.items()}

    def get_output_details(self):
        return {n: _details(self._impl.details(i, self._subgraph)) for n, i in self._outputs.items()}

    def __call__(self, **kwargs):
        missing = set(self._inputs) - set(kwargs)
        extra = set(kwargs) - set(self._inputs)
        if missing or extra:
            raise ValueError(f"[tf.lite.SignatureRunner] signature '{self._key}' takes {sorted(self._inputs)}; "
                             f"missing {sorted(missing)}, unknown {sorted(extra)}")
        arrays = {}
        for name, value in kwargs.items():
            index = self._inputs[name]
            dtype = self._impl.details(index, self._subgraph)["dtype"]
            arrays[name] = np.ascontiguousarray(value, dtype=dtype)
            self._impl.resize(index, list(arrays[name].shape), False, self._subgraph)
        if self._impl.needs_allocation(self._subgraph) or self._subgraph not in self._interpreter._allocated:
            self._impl.allocate(self._subgraph)
            self._interpreter._allocated.add(self._subgraph)
        for name, a in arrays.items():
            self._impl.view(self._inputs[name], self._subgraph)[...] = a
        self._impl.invoke(self._subgraph)
        return {n: np.array(self._impl.view(i, self._subgraph), copy=True) for n, i in self._outputs.items()}
