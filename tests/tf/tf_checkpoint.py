# SPDX-License-Identifier: Apache-2.0
"""TensorFlow 2.21's side of tests/tf/tf_oracle_test.cpp.

    python tf_checkpoint.py write OUT           # TF writes checkpoints under OUT, and dumps them
    python tf_checkpoint.py check_ours DIR      # TF reads (and restores) the checkpoint we wrote
    python tf_checkpoint.py same_saved_model A B  # TF parses both saved_model.pb files: equal?

`write` makes OUT/vars/ckpt (tf.train.Checkpoint of variables of many dtypes and shapes),
OUT/keras/ckpt (a Keras 3 model and its Adam optimizer after one train step) and
OUT/saved_model (tf.saved_model.save of a tf.Module); each checkpoint prefix P gets a dump
P.dump/manifest.json (every key as tf.train.load_checkpoint reads it: dtype, shape, values
as .npy, strings in hex, bfloat16 as float32).

`check_ours` reads DIR/ckpt with tf.train.load_checkpoint and compares every key with
DIR/expect/manifest.json (same form, written by the C++ test), then restores it with
tf.train.Checkpoint.restore into new variables at the manifest's "path"s (and its own
save_counter) and compares again.
Prints "ok" or exits 1 naming the first mismatch.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def fail(msg):
    sys.exit("tf_checkpoint.py: " + msg)


def dump(prefix):
    out = prefix + ".dump"
    os.makedirs(out, exist_ok=True)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    manifest = []
    for i, key in enumerate(sorted(shapes)):
        value = reader.get_tensor(key)
        item = {"key": key, "dtype": dtypes[key].name, "shape": [int(d) for d in shapes[key]]}
        if dtypes[key] == tf.string:
            item["strings"] = [bytes(x).hex() for x in np.asarray(value, dtype=object).reshape(-1)]
        else:
            a = np.asarray(value)
            if dtypes[key] == tf.bfloat16:
                a = a.astype(np.float32)
            item["npy"] = "%d.npy" % i
            np.save(os.path.join(out, item["npy"]), a)
        manifest.append(item)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def write(out):
    rng = np.random.default_rng(19)
    nested = tf.Module()
    nested.w = tf.Variable(rng.standard_normal((2, 2)).astype(np.float32))
    variables = {
        "f32": tf.Variable(rng.standard_normal((3, 4)).astype(np.float32)),
        "f64": tf.Variable(rng.standard_normal((5,))),
        "i32": tf.Variable(np.arange(-3, 3, dtype=np.int32).reshape(2, 3)),
        "i64": tf.Variable(np.array([2**40, -7, 0], dtype=np.int64)),
        "flags": tf.Variable(np.array([True, False, True])),
        "words": tf.Variable(np.array([b"", b"hello", b"\x00\xffbytes", b"x" * 300], dtype=object)),
        "word": tf.Variable(b"scalar string"),
        "f16": tf.Variable(rng.standard_normal((7,)).astype(np.float16)),
        "bf16": tf.Variable(tf.constant(rng.standard_normal((4,)), dtype=tf.bfloat16)),
        "u8": tf.Variable(np.array([0, 7, 255], dtype=np.uint8)),
        "i8": tf.Variable(np.array([-128, 0, 127], dtype=np.int8)),
        "scalar": tf.Variable(3.5),
        "empty": tf.Variable(np.zeros((0, 3), np.float32)),
        "large": tf.Variable(rng.standard_normal((256, 1024)).astype(np.float32)),
        "with.dot/and slash": tf.Variable([1.0, 2.0]),
    }
    tf.train.Checkpoint(nested=nested, **variables).write(os.path.join(out, "vars", "ckpt"))
    dump(os.path.join(out, "vars", "ckpt"))

    import keras
    keras.utils.set_random_seed(19)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
    optimizer = keras.optimizers.Adam(1e-2)
    model.compile(optimizer=optimizer, loss="mse")
    model.train_on_batch(rng.standard_normal((8, 4)).astype(np.float32), np.zeros((8, 2), np.float32))
    tf.train.Checkpoint(model=model, optimizer=optimizer).write(os.path.join(out, "keras", "ckpt"))
    dump(os.path.join(out, "keras", "ckpt"))

    class Affine(tf.Module):
        def __init__(self):
            self.w = tf.Variable(rng.standard_normal((3, 2)).astype(np.float32))
            self.b = tf.Variable(np.zeros((2,), np.float32))
            self.step = tf.Variable(0, dtype=tf.int64)

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def __call__(self, x):
            return x @ self.w + self.b

    tf.saved_model.save(Affine(), os.path.join(out, "saved_model"))
    dump(os.path.join(out, "saved_model", "variables", "variables"))


def load_expected(d, item):
    if "strings" in item:
        return np.array([bytes.fromhex(s) for s in item["strings"]], dtype=object).reshape(item["shape"])
    return np.load(os.path.join(d, item["npy"]))


def equal(got, want, dtype):
    got = np.asarray(got, dtype=object if dtype == "string" else None)
    if dtype == "bfloat16":
        got = got.astype(np.float32)
    return got.shape == want.shape and (got.size == 0 or bool(np.all(got == want)))


def check_ours(d):
    prefix = os.path.join(d, "ckpt")
    with open(os.path.join(d, "expect", "manifest.json")) as f:
        manifest = json.load(f)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    want_keys = sorted(item["key"] for item in manifest) + ["_CHECKPOINTABLE_OBJECT_GRAPH"]
    if sorted(shapes) != sorted(want_keys):
        fail("keys: TF reads %s, we wrote %s" % (sorted(shapes), want_keys))
    for item in manifest:
        key = item["key"]
        if dtypes[key].name != item["dtype"] or [int(d) for d in shapes[key]] != item["shape"]:
            fail("%s: TF reads %s%s, we wrote %s%s" % (key, dtypes[key].name, shapes[key], item["dtype"], item["shape"]))
        if not equal(reader.get_tensor(key), load_expected(os.path.join(d, "expect"), item), item["dtype"]):
            fail("%s: values differ" % key)

    # Restore into fresh variables of the same structure (tf.Module attributes by path).
    # (A "save_counter" at the root is tf.train.Checkpoint's own, which restore() creates.)
    root = tf.Module()
    restored = []
    for item in manifest:
        if item["path"] == ["save_counter"]:
            continue
        owner = root
        for name in item["path"][:-1]:
            if not hasattr(owner, name):
                setattr(owner, name, tf.Module())
            owner = getattr(owner, name)
        dtype = tf.dtypes.as_dtype(item["dtype"])
        var = tf.Variable(tf.zeros(item["shape"], dtype=dtype))
        setattr(owner, item["path"][-1], var)
        restored.append((item, var))
    checkpoint = tf.train.Checkpoint(**{k: v for k, v in vars(root).items() if not k.startswith("_")})
    checkpoint.restore(prefix).assert_consumed()
    restored += [(item, checkpoint.save_counter) for item in manifest if item["path"] == ["save_counter"]]
    for item, var in restored:
        if not equal(var.numpy(), load_expected(os.path.join(d, "expect"), item), item["dtype"]):
            fail("%s: restored values differ" % item["key"])
    print("ok")


def same_saved_model(a, b):
    from tensorflow.core.protobuf import saved_model_pb2
    messages = []
    for path in (a, b):
        m = saved_model_pb2.SavedModel()
        with open(path, "rb") as f:
            m.ParseFromString(f.read())
        messages.append(m)
    if messages[0] != messages[1]:
        fail("%s and %s parse to different SavedModels" % (a, b))
    print("ok")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "write":
        write(sys.argv[2])
    elif mode == "check_ours":
        check_ours(sys.argv[2])
    elif mode == "same_saved_model":
        same_saved_model(sys.argv[2], sys.argv[3])
    else:
        fail("unknown mode " + mode)
