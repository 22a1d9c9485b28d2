# SPDX-License-Identifier: Apache-2.0
"""TensorFlow's side of tests/data/tfrecord_tf_test.cpp (run with .venv-peers/bin/python).

    tfrecord_tf.py write DIR N   TF writes N tf.train.Examples to DIR/{none,zlib,gzip}.tfrecord
                                 (one file per compression type), prints the dump once
    tfrecord_tf.py read DIR      TF reads and parses the three files, prints each one's dump
    tfrecord_tf.py bytes DIR P   TF reads DIR/P_{none,zlib,gzip}.tfrecord with TFRecordDataset,
                                 prints "file F", then each record as "<hex of its bytes> <dump>"

`write` also leaves DIR/records.hex, the hex of each serialized Example TF wrote. Examples
are serialized with deterministic=True (map entries sorted by name): protobuf leaves the
order of a map's entries unspecified otherwise, and ours are sorted. No feature name is a
prefix of another: Python's protobuf (upb) puts a longer key before its own prefix ("eb"
before "e") where C++'s protobuf and ours sort plainly.

One process for all three files: importing TensorFlow takes seconds. The dump is one line per record, features sorted by
name: `name=kind:v,v` with kind float (the 8 hex digits of each float32's bits), int64
(decimal) or bytes (hex of each value); the C++ test prints the same from our reader.
"""
import os
import struct
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def dump_feature(name, feature):
    kind = feature.WhichOneof("kind")
    if kind == "float_list":
        values = [struct.pack("<f", v)[::-1].hex() for v in feature.float_list.value]
        return f"{name}=float:" + ",".join(values)
    if kind == "int64_list":
        return f"{name}=int64:" + ",".join(str(v) for v in feature.int64_list.value)
    if kind == "bytes_list":
        return f"{name}=bytes:" + ",".join(v.hex() for v in feature.bytes_list.value)
    return f"{name}=none:"


def dump(serialized):
    example = tf.train.Example.FromString(serialized)
    features = example.features.feature
    return " ".join(dump_feature(k, features[k]) for k in sorted(features))


COMPRESSIONS = ("NONE", "ZLIB", "GZIP")


def write(directory, n):
    rng = np.random.default_rng(17)
    records = []
    for i in range(n):
        f = rng.standard_normal(3).astype(np.float32)
        if i == 0:
            f[1] = -0.0
        feature = {
            "f": tf.train.Feature(float_list=tf.train.FloatList(value=f)),
            "i": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, -(1 << 40) * i, 2**62 + i])),
            "s": tf.train.Feature(bytes_list=tf.train.BytesList(value=[f"name{i}".encode(), "ünï".encode()])),
            "b": tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes(range(i % 7 + 1)) * (i + 1)])),
        }
        if i % 3 == 0:  # empty lists of every kind
            feature["e"] = tf.train.Feature(float_list=tf.train.FloatList(value=[]))
            feature["zero_ints"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[]))
            feature["zero_bytes"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[]))
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        records.append(example.SerializeToString(deterministic=True))
    for compression in COMPRESSIONS:
        options = tf.io.TFRecordOptions(compression_type="" if compression == "NONE" else compression)
        with tf.io.TFRecordWriter(os.path.join(directory, compression.lower() + ".tfrecord"), options) as w:
            for r in records:
                w.write(r)
    with open(os.path.join(directory, "records.hex"), "w") as f:
        f.write("".join(r.hex() + "\n" for r in records))
    for r in records:
        print(dump(r))


def read_bytes(directory, prefix):
    for compression in COMPRESSIONS:
        name = "%s_%s.tfrecord" % (prefix, compression.lower())
        print("file " + name)
        ds = tf.data.TFRecordDataset([os.path.join(directory, name)],
                                     compression_type="" if compression == "NONE" else compression)
        for record in ds:
            serialized = record.numpy()
            print(serialized.hex() + " " + dump(serialized))


def read(directory):
    for compression in COMPRESSIONS:
        print(f"file {compression.lower()}.tfrecord")
        read_file(os.path.join(directory, compression.lower() + ".tfrecord"), compression)


def read_file(path, compression):
    ds = tf.data.TFRecordDataset([path], compression_type="" if compression == "NONE" else compression)
    count = 0
    for record in ds:
        serialized = record.numpy()
        # Parsed by TF's own parser as well, not only by protobuf: the feature types it sees.
        spec = {k: tf.io.VarLenFeature(dtype)
                for k, dtype in (("f", tf.float32), ("i", tf.int64), ("s", tf.string))}
        parsed = tf.io.parse_single_example(serialized, spec)
        assert parsed["i"].values.shape[0] == 3, parsed
        print(dump(serialized))
        count += 1
    print(f"count {count}")


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "bytes":
        read_bytes(sys.argv[2], sys.argv[3])
    else:
        read(sys.argv[2])
