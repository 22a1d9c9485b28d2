# SPDX-License-Identifier: Apache-2.0
"""Writes deepflow/tf/op_defs.pbtxt: TensorFlow's OpDefs (argument names and kinds, attr
types and defaults, statefulness) of every TF op deepflow's importer maps, as a text-format
tensorflow.OpList, read from TensorFlow 2.21's own op registry. The importer uses it to turn
FunctionDef inputs ("node:out_arg:i") into flat output indices and to fill the attrs that
SavedModels strip when they equal their defaults (tf_formats.md §2.4, §2.6).

  .venv-peers/bin/python scripts/make-tf-op-defs.py [OUT]

Descriptions, summaries and allowed values are left out: the importer checks types itself."""
import os
import sys

# The op set of TF2 SavedModels, Keras exports, frozen graphs and TF.js models
# (tf_formats.md §3-§4), plus the everyday math, array and nn ops they reach.
OPS = """
Placeholder PlaceholderWithDefault Const Identity IdentityN NoOp StopGradient EnsureShape
PreventGradient Snapshot
VarHandleOp ReadVariableOp AssignVariableOp AssignAddVariableOp AssignSubVariableOp
VarIsInitializedOp ResourceGather DestroyResourceOp DisableCopyOnRead VariableV2 Variable Assign
RestoreV2 SaveV2 MergeV2Checkpoints ShardedFilename StringJoin StringLength AsString StaticRegexFullMatch
PartitionedCall StatefulPartitionedCall If StatelessIf While StatelessWhile Case StatelessCase
Switch Merge Enter Exit NextIteration LoopCond
TensorListReserve TensorListFromTensor TensorListGetItem TensorListSetItem TensorListStack
TensorListLength TensorListElementShape TensorListPushBack TensorListPopBack
MatMul BatchMatMul BatchMatMulV2 BatchMatMulV3 Einsum BiasAdd BiasAddV1
Conv2D Conv2DBackpropInput Conv3D DepthwiseConv2dNative
_FusedConv2D _FusedMatMul _FusedDepthwiseConv2dNative _FusedBatchNormEx
FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3
MaxPool MaxPoolV2 AvgPool MaxPool3D AvgPool3D
Relu Relu6 Elu Selu Softplus Softsign LeakyRelu Sigmoid Tanh
Softmax LogSoftmax
Exp Expm1 Log Log1p Sqrt Rsqrt Square Neg Abs Reciprocal Inv Erf Erfc Sign Floor Ceil Round Rint
Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh IsNan IsInf IsFinite
AddV2 Add Sub Mul RealDiv Div Maximum Minimum Pow SquaredDifference FloorDiv FloorMod Mod
TruncateDiv DivNoNan MulNoNan Atan2 AddN
Equal NotEqual Less LessEqual Greater GreaterEqual LogicalAnd LogicalOr LogicalNot
Mean Sum Prod Max Min All Any ArgMax ArgMin Cumsum Cumprod
Reshape Shape ShapeN Size Rank ExpandDims Squeeze Transpose ConcatV2 Concat Pack Unpack
Split SplitV Slice StridedSlice Pad PadV2 MirrorPad Tile Fill Range BroadcastTo
BroadcastArgs Select SelectV2 Where GatherV2 Gather GatherNd ScatterNd OneHot TopKV2
Cast Bitcast ZerosLike OnesLike ReverseV2 ClipByValue LinSpace Cross
ResizeBilinear ResizeNearestNeighbor ResizeBicubic
ParseExampleV2 ParseExample ParseSingleExample Assert CheckNumerics Print PrintV2
HashTableV2 InitializeTableV2 InitializeTableFromTextFileV2 LookupTableFindV2 LookupTableSizeV2
StatelessRandomUniformV2 StatelessRandomNormalV2 StatelessRandomUniformFullIntV2
StatelessRandomGetKeyCounter RngReadAndSkip RandomUniform RandomStandardNormal
SparseToDense SegmentSum UnsortedSegmentSum MatrixBandPart DepthToSpace SpaceToDepth
LRN L2Loss Softmax SoftmaxCrossEntropyWithLogits SparseSoftmaxCrossEntropyWithLogits
"""


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "deepflow", "tf", "op_defs.pbtxt")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    from google.protobuf import text_format
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.framework import op_def_registry
    ops = op_def_pb2.OpList()
    missing = []
    for name in sorted(set(OPS.split())):
        d = op_def_registry.get(name)
        if d is None:
            missing.append(name)
            continue
        o = ops.op.add()
        o.CopyFrom(d)
        for f in ("summary", "description", "deprecation"):
            o.ClearField(f)
        for arg in list(o.input_arg) + list(o.output_arg):
            arg.ClearField("description")
            arg.ClearField("experimental_full_type")
            arg.ClearField("handle_data")
        for a in o.attr:
            for f in ("description", "allowed_values", "has_minimum", "minimum"):
                a.ClearField(f)
    text = (f"# TensorFlow {tf.__version__}'s OpDefs of the ops deepflow imports: written by "
            "scripts/make-tf-op-defs.py; do not edit.\n") + text_format.MessageToString(ops)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    print(f"{out}: {len(ops.op)} ops" + (f"; not in TensorFlow: {' '.join(missing)}" if missing else ""))


if __name__ == "__main__":
    main()
