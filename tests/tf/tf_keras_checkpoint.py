# SPDX-License-Identifier: Apache-2.0
"""TensorFlow 2.21's side of tests/tf/keras_checkpoint_test.cpp: tf.train.Checkpoint of
Keras 3 and tf-keras models with their Adam optimizers, both ways.

    python tf_keras_checkpoint.py write OUT       # TF trains and writes checkpoints
    python tf_keras_checkpoint.py check_ours DIR  # TF restores the checkpoints we wrote

Cases: {keras3, tf_keras} x {mlp, cnn} (the same architectures the C++ test builds):
  mlp  Input(4) -> Dense(8, relu) -> Dense(3)
  cnn  Input(6, 6, 2) -> Conv2D(3, 3, relu) -> BatchNormalization -> Flatten -> Dense(2)
compiled with Adam(learning_rate=0.01) and mean squared error. tf-keras's batch norm is
built with fused=False: the fused kernel's moving variance is Bessel-corrected, Keras 3's
(and ours) is not.

`write` makes OUT/<arch>_{x_train,y_train,x_next,y_next,x_eval}.npy and per case
OUT/<case>/: ckpt (tf.train.Checkpoint(model=, optimizer=).write after two train_on_batch
steps on x_train), pred.npy (the model on x_eval right then) and next (the same after one
more step on x_next).

`check_ours DIR`: for every DIR/<case>/ holding ours/ (a checkpoint we wrote in TF's
format), ours_pred.npy (our predictions on x_eval for it) and ours_after/ (ours after one
more step on x_next), TF builds a fresh model and optimizer, restores ours with
assert_consumed, predicts (within 1e-5 of ours_pred.npy), takes the step, and compares
every model and optimizer variable with ours_after restored likewise (within 1e-4).
Prints "ok" or exits 1 naming the first mismatch.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

ARCHS = {"mlp": ((4,), 3), "cnn": ((6, 6, 2), 2)}
FLAVORS = ("keras3", "tf_keras")


def fail(msg):
    sys.exit("tf_keras_checkpoint.py: " + msg)


def keras_of(flavor):
    if flavor == "keras3":
        import keras
        return keras
    import tf_keras
    return tf_keras


def build(flavor, arch, seed):
    K = keras_of(flavor)
    K.utils.set_random_seed(seed)
    shape, out = ARCHS[arch]
    L = K.layers
    if arch == "mlp":
        layers = [L.Dense(8, activation="relu"), L.Dense(out)]
    else:
        bn = L.BatchNormalization(fused=False) if flavor == "tf_keras" else L.BatchNormalization()
        layers = [L.Conv2D(3, 3, activation="relu"), bn, L.Flatten(), L.Dense(out)]
    model = K.Sequential([K.Input(shape)] + layers)
    optimizer = K.optimizers.Adam(learning_rate=0.01)
    model.compile(optimizer=optimizer, loss="mse")
    optimizer.build(model.trainable_variables)
    return model, optimizer


def data(d, arch, name):
    return np.load(os.path.join(d, "%s_%s.npy" % (arch, name)))


def write(out):
    rng = np.random.default_rng(19)
    for arch, (shape, n_out) in ARCHS.items():
        for name, n in (("x_train", 8), ("x_next", 8), ("x_eval", 5)):
            np.save(os.path.join(out, "%s_%s.npy" % (arch, name)), rng.standard_normal((n,) + shape).astype(np.float32))
        for name in ("y_train", "y_next"):
            np.save(os.path.join(out, "%s_%s.npy" % (arch, name)), rng.standard_normal((8, n_out)).astype(np.float32))
    for flavor in FLAVORS:
        for arch in ARCHS:
            d = os.path.join(out, "%s_%s" % (flavor, arch))
            model, optimizer = build(flavor, arch, 19)
            for _ in range(2):
                model.train_on_batch(data(out, arch, "x_train"), data(out, arch, "y_train"))
            ckpt = tf.train.Checkpoint(model=model, optimizer=optimizer)
            ckpt.write(os.path.join(d, "ckpt"))
            np.save(os.path.join(d, "pred.npy"), np.asarray(model(data(out, arch, "x_eval"), training=False)))
            model.train_on_batch(data(out, arch, "x_next"), data(out, arch, "y_next"))
            ckpt.write(os.path.join(d, "next"))
    print("ok")


def restored(flavor, arch, prefix):
    model, optimizer = build(flavor, arch, 7)  # other initial values than the checkpoint's
    tf.train.Checkpoint(model=model, optimizer=optimizer).restore(prefix).assert_consumed()
    return model, optimizer


def check_ours(d):
    cases = 0
    for flavor in FLAVORS:
        for arch in ARCHS:
            case = os.path.join(d, "%s_%s" % (flavor, arch))
            if not os.path.isdir(os.path.join(case, "ours")):
                continue
            cases += 1
            try:
                model, optimizer = restored(flavor, arch, os.path.join(case, "ours", "ckpt"))
            except AssertionError as e:
                fail("%s_%s: restore: %s" % (flavor, arch, e))
            pred = np.asarray(model(data(d, arch, "x_eval"), training=False))
            want = np.load(os.path.join(case, "ours_pred.npy"))
            if pred.shape != want.shape or not np.allclose(pred, want, rtol=0, atol=1e-5):
                fail("%s_%s: predictions differ by %g" % (flavor, arch, np.max(np.abs(pred - want))))
            model.train_on_batch(data(d, arch, "x_next"), data(d, arch, "y_next"))
            after, after_opt = restored(flavor, arch, os.path.join(case, "ours_after", "ckpt"))
            pairs = list(zip(model.weights, after.weights)) + list(zip(optimizer.variables, after_opt.variables))
            if len(model.weights) != len(after.weights) or len(optimizer.variables) != len(after_opt.variables):
                fail("%s_%s: variable counts differ" % (flavor, arch))
            for got, want in pairs:
                g, w = np.asarray(got), np.asarray(want)
                if g.shape != w.shape or not np.allclose(g, w, rtol=0, atol=1e-4):
                    fail("%s_%s: %s after TF's step differs from ours by %g" %
                         (flavor, arch, got.path if hasattr(got, "path") else got.name, np.max(np.abs(g - w))))
    if cases == 0:
        fail("no checkpoints of ours under " + d)
    print("ok %d" % cases)


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    elif sys.argv[1] == "check_ours":
        check_ours(sys.argv[2])
    else:
        fail("unknown mode " + sys.argv[1])
