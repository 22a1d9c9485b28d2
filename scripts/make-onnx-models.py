#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Exports torchvision models to ONNX with reference inputs and outputs for deepflow's tests.

    /usr/bin/python3 scripts/make-onnx-models.py build/onnx_models [model ...]

For each model (default: resnet18 mobilenet_v2 squeezenet1_0 efficientnet_b0
shufflenet_v2_x0_5; random weights, torch.manual_seed(0), eval mode) writes

    OUT/<model>/model.onnx                       dynamic batch, input "input", output "output"
    OUT/<model>/b1/test_data_set_0/input_0.pb    fixed-seed input, batch 1 (ONNX TensorProto)
    OUT/<model>/b1/test_data_set_0/output_0.pb   torch's output for it
    OUT/<model>/b8/test_data_set_0/...           the same at batch 8

Needs Debian's python3-torch and python3-torchvision; not the onnx python module (the
TensorProto files are encoded here). Idempotent: files already present are kept.
"""
import os
import struct
import sys
import time

# numpy, torch and torchvision are imported by main() only when something is missing:
# importing torch costs seconds, and `make` runs this on every build.
np = torch = torchvision = None

kModels = ["resnet18", "mobilenet_v2", "squeezenet1_0", "efficientnet_b0", "shufflenet_v2_x0_5"]
kBatches = [1, 8]
kOpsets = [17, 13]  # tried in order: the first torch manages to export
kImageSize = 224
kCalibrationBatches = 2

# onnx.proto TensorProto.DataType
kDataTypes = {"float32": 1, "int64": 7, "float64": 11}


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tensor_proto(array, name):
    """The TensorProto wire format: dims (1, packed int64), data_type (2), name (8), raw_data (9)."""
    array = np.ascontiguousarray(array)
    if array.dtype.name not in kDataTypes:
        raise ValueError(f"dtype {array.dtype} not supported")
    out = bytearray()
    if array.ndim:
        dims = b"".join(varint(int(d)) for d in array.shape)
        out += varint((1 << 3) | 2) + varint(len(dims)) + dims
    out += varint((2 << 3) | 0) + varint(kDataTypes[array.dtype.name])
    encoded_name = name.encode()
    out += varint((8 << 3) | 2) + varint(len(encoded_name)) + encoded_name
    raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    out += varint((9 << 3) | 2) + varint(len(raw)) + raw
    return bytes(out)


def write_file(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)  # never leave a half-written file that the next run would keep


def build_model(name):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    # Freshly initialized BatchNorms (mean 0, var 1, scale 1, shift 0) let activations decay
    # through the depth (mobilenet_v2's logits come out ~1e-9, which any tolerance accepts).
    # Randomize the affine parameters and calibrate the running statistics on random
    # images, as after training: every layer then sees unit-scale values and the
    # comparison means something.
    batch_norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        for bn in batch_norms:
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.normal_(0.0, 0.1)
            bn.reset_running_stats()
            bn.momentum = None  # a cumulative average over the calibration batches
        if batch_norms:
            model.train()
            for _ in range(kCalibrationBatches):
                model(torch.randn(8, 3, kImageSize, kImageSize))
    model.eval()
    return model


def export(model, path):
    dummy = torch.randn(1, 3, kImageSize, kImageSize)
    last_error = None
    for opset in kOpsets:
        try:
            torch.onnx.export(model, dummy, path + ".tmp", opset_version=opset,
                              input_names=["input"], output_names=["output"],
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                              do_constant_folding=True)
            os.replace(path + ".tmp", path)
            return opset
        except Exception as e:  # older torch builds lack some opsets: try the next
            last_error = e
            if os.path.exists(path + ".tmp"):
                os.remove(path + ".tmp")
    raise RuntimeError(f"export failed for every opset {kOpsets}: {last_error}")


def wanted_files(out_dir, name):
    model_dir = os.path.join(out_dir, name)
    return [os.path.join(model_dir, "model.onnx")] + [
        os.path.join(model_dir, f"b{b}", "test_data_set_0", f)
        for b in kBatches for f in ("input_0.pb", "output_0.pb")]


def present(out_dir, name):
    return all(os.path.exists(p) for p in wanted_files(out_dir, name))


def make(out_dir, name):
    model_dir = os.path.join(out_dir, name)
    model_path = os.path.join(model_dir, "model.onnx")
    if present(out_dir, name):
        print(f"{name}: present, skipped")
        return
    start = time.time()
    model = build_model(name)
    if not os.path.exists(model_path):
        os.makedirs(model_dir, exist_ok=True)
        opset = export(model, model_path)
        print(f"{name}: exported {model_path} (opset {opset}, "
              f"{os.path.getsize(model_path) / 1e6:.1f} MB)")
    for batch in kBatches:
        data_dir = os.path.join(model_dir, f"b{batch}", "test_data_set_0")
        in_path = os.path.join(data_dir, "input_0.pb")
        out_path = os.path.join(data_dir, "output_0.pb")
        if os.path.exists(in_path) and os.path.exists(out_path):
            continue
        os.makedirs(data_dir, exist_ok=True)
        # The seed depends on the batch only, so every model sees the same images.
        generator = torch.Generator().manual_seed(1000 + batch)
        x = torch.randn(batch, 3, kImageSize, kImageSize, generator=generator)
        with torch.no_grad():
            y = model(x)
        write_file(in_path, tensor_proto(x.numpy(), "input"))
        write_file(out_path, tensor_proto(y.numpy(), "output"))
        print(f"{name}: batch {batch}: wrote {in_path} {tuple(x.shape)} and {out_path} "
              f"{tuple(y.shape)}, max|y| {float(y.abs().max()):.4g}")
    print(f"{name}: done in {time.time() - start:.1f}s")


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    out_dir = argv[1]
    names = argv[2:] or kModels
    if all(present(out_dir, name) for name in names):
        for name in names:
            print(f"{name}: present, skipped")
        return 0
    global np, torch, torchvision
    import numpy as np
    import torch
    import torchvision
    for name in names:
        if not hasattr(torchvision.models, name):
            print(f"unknown torchvision model: {name}", file=sys.stderr)
            return 2
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        make(out_dir, name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
