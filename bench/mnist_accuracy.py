# SPDX-License-Identifier: Apache-2.0
"""PyTorch half of the MNIST accuracy comparison (scripts/compare-mnist.sh runs both).

The same LeNet-style CNN as examples/lenet_mnist.cpp, trained the same way: the 60k
training images (shuffled each epoch, no validation split, no augmentation, no dropout),
batch 64 (the last batch smaller, as Keras's fit), Adam lr 1e-3 with Keras's epsilon
1e-7, cross-entropy from logits; then the accuracy on the 10k test images. Weights start
as Keras's do (Glorot uniform kernels, zero biases) rather than torch's defaults. The
IDX files are read with numpy. The last line is `test_accuracy <fraction>`.

    /usr/bin/python3 bench/mnist_accuracy.py --epochs 2 --threads 2
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_idx(path):
    """An IDX file (uint8 payload, as MNIST's) as a numpy array of its dims."""
    with open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[:4], "big")
    if magic >> 8 != 0x08:
        raise ValueError(f"{path}: not a uint8 IDX file (magic {magic:#010x})")
    rank = magic & 0xFF
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    offset = 4 + 4 * rank
    if len(data) != offset + int(np.prod(dims)):
        raise ValueError(f"{path}: dims {dims} need {offset + int(np.prod(dims))} bytes, the file has {len(data)}")
    return np.frombuffer(data, np.uint8, offset=offset).reshape(dims)


def load(data_dir, prefix):
    x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte"))
    y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte"))
    # NCHW: torch's layout (deepflow's example is NHWC [n, 28, 28, 1]).
    return torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1), torch.from_numpy(y.astype(np.int64))


def lenet():
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    for m in model:
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            # Same fans as Keras's GlorotUniform: conv fan_in = kh*kw*c_in, fan_out = kh*kw*c_out.
            torch.nn.init.xavier_uniform_(m.weight)
            torch.nn.init.zeros_(m.bias)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=42)
    default_dir = os.path.join(os.environ["DEEPFLOW_DATA"], "mnist") if os.environ.get("DEEPFLOW_DATA") \
        else os.path.join(ROOT, "data", "mnist")
    parser.add_argument("--data", default=default_dir, help="directory of the four MNIST IDX files")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    x_train, y_train = load(args.data, "train")
    x_test, y_test = load(args.data, "t10k")

    model = lenet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    n = x_train.shape[0]
    for epoch in range(args.epochs):
        model.train()
        epoch_start = time.perf_counter()
        order = torch.randperm(n)
        total, correct, loss_sum = 0, 0, 0.0
        for begin in range(0, n, args.batch_size):
            index = order[begin:begin + args.batch_size]
            xb, yb = x_train[index], y_train[index]
            opt.zero_grad()
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(index)
            correct += (logits.argmax(1) == yb).sum().item()
            total += len(index)
        print(f"Epoch {epoch + 1}/{args.epochs} - {time.perf_counter() - epoch_start:.0f}s - "
              f"loss: {loss_sum / total:.4f} - accuracy: {correct / total:.4f}", flush=True)

    model.eval()
    correct, loss_sum = 0, 0.0
    with torch.no_grad():
        for begin in range(0, x_test.shape[0], 1000):
            logits = model(x_test[begin:begin + 1000])
            yb = y_test[begin:begin + 1000]
            loss_sum += F.cross_entropy(logits, yb, reduction="sum").item()
            correct += (logits.argmax(1) == yb).sum().item()
    accuracy = correct / x_test.shape[0]
    print(f"torch {torch.__version__}: {args.epochs} epochs in {time.perf_counter() - start:.1f} s, "
          f"test loss {loss_sum / x_test.shape[0]:.4f}")
    print(f"test_accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()
