# SPDX-License-Identifier: Apache-2.0
"""Writes a small ONNX MLP (Gemm, Relu, MatMul, Sigmoid; input x [n, 4], output y [n, 2]) for
tests/tf/export_keras_cli_test.cpp: `python make_onnx_mlp.py OUT.onnx`."""
import numpy as np, onnx, sys
from onnx import helper, TensorProto, numpy_helper
rng = np.random.default_rng(0)
w1 = rng.standard_normal((4, 6)).astype(np.float32); b1 = rng.standard_normal(6).astype(np.float32)
w2 = rng.standard_normal((6, 2)).astype(np.float32)
nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["m"]), helper.make_node("Sigmoid", ["m"], ["y"])]
g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])],
                      [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(w2, "w2")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
onnx.save(m, sys.argv[1])
