# SPDX-License-Identifier: Apache-2.0
"""The Keras side of tests/io/keras_file_test.cpp.

  keras_files.py write OUT   Keras 3 writes .keras files and tf-keras legacy .h5 files of
                             small models (fixed seeds), with fixed inputs and Keras's
                             predictions: OUT/<case>.<keras|h5>, OUT/<case>.in<i>.npy,
                             OUT/<case>.out.npy, OUT/cases.json {case: {file, inputs}}.
  keras_files.py check DIR   Keras 3 loads every DIR/<case>.keras that deepflow wrote and
                             predicts on DIR/<case>.in<i>.npy: DIR/<case>.keras_out.npy.

  .venv-peers/bin/python tests/io/keras_files.py write OUT"""
import glob
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np  # noqa: E402


def keras3_models(keras):
    """name -> (model, inputs), each trained a step so that batch norm statistics move."""
    keras.utils.set_random_seed(7)
    rng = np.random.default_rng(7)
    out = {}

    mlp = keras.Sequential([keras.Input((5,)), keras.layers.Dense(8, activation="relu"),
                            keras.layers.Dense(3, activation="softmax")], name="mlp")
    out["mlp"] = (mlp, [rng.standard_normal((4, 5)).astype("float32")])

    img = keras.Input((8, 8, 3), name="image")
    x = keras.layers.Conv2D(6, 3, padding="same", activation="relu")(img)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Conv2D(4, 3, activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dense(5)(x)
    cnn = keras.Model(img, x, name="cnn")
    cnn.compile(optimizer="adam", loss="mse")
    cnn.fit(rng.standard_normal((8, 8, 8, 3)).astype("float32"), rng.standard_normal((8, 5)).astype("float32"),
            epochs=2, verbose=0)
    out["cnn"] = (cnn, [rng.standard_normal((3, 8, 8, 3)).astype("float32")])

    text = keras.Sequential([keras.Input((7,), dtype="int32"), keras.layers.Embedding(20, 6),
                             keras.layers.LSTM(5), keras.layers.Dense(2)], name="text_lstm")
    out["text_lstm"] = (text, [rng.integers(0, 20, (3, 7)).astype("int32")])

    gru = keras.Sequential([keras.Input((6,), dtype="int32"), keras.layers.Embedding(15, 4),
                            keras.layers.GRU(3, return_sequences=True), keras.layers.Flatten(),
                            keras.layers.Dense(2)], name="text_gru")
    out["text_gru"] = (gru, [rng.integers(0, 15, (2, 6)).astype("int32")])

    # Two branches of Dense layers of one shape: a wrong layer order would swap them.
    a = keras.Input((4,), name="a")
    b = keras.Input((4,), name="b")
    ha = keras.layers.Dense(4, activation="tanh")(a)
    hb = keras.layers.Dense(4, activation="tanh")(keras.layers.Dense(4)(b))
    y = keras.layers.Dense(3)(keras.layers.Concatenate()([ha, hb]))
    two = keras.Model([a, b], y, name="two_inputs")
    out["two_inputs"] = (two, [rng.standard_normal((3, 4)).astype("float32"),
                               rng.standard_normal((3, 4)).astype("float32")])
    return out


def tf_keras_models(keras):
    keras.utils.set_random_seed(8)
    rng = np.random.default_rng(8)
    out = {}
    img = keras.Input((8, 8, 3), name="image")
    x = keras.layers.Conv2D(4, 3, padding="same", activation="relu")(img)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(3, activation="softmax")(x)
    cnn = keras.Model(img, x)
    cnn.compile(optimizer="adam", loss="mse")
    cnn.fit(rng.standard_normal((8, 8, 8, 3)).astype("float32"), rng.standard_normal((8, 3)).astype("float32"),
            epochs=2, verbose=0)
    out["tfk_cnn"] = (cnn, [rng.standard_normal((3, 8, 8, 3)).astype("float32")])
    text = keras.Sequential([keras.Input((6,), dtype="int32"), keras.layers.Embedding(12, 4),
                             keras.layers.GRU(3), keras.layers.Dense(2)])
    out["tfk_text_gru"] = (text, [rng.integers(0, 12, (3, 6)).astype("int32")])
    a = keras.Input((4,), name="a")
    b = keras.Input((3,), name="b")
    y = keras.layers.Dense(2)(keras.layers.Concatenate()([keras.layers.Dense(4)(a), b]))
    out["tfk_two_inputs"] = (keras.Model([a, b], y), [rng.standard_normal((2, 4)).astype("float32"),
                                                     rng.standard_normal((2, 3)).astype("float32")])
    return out


def save_case(out_dir, cases, name, model, inputs, ext):
    path = os.path.join(out_dir, name + ext)
    model.save(path)
    for i, x in enumerate(inputs):
        np.save(os.path.join(out_dir, f"{name}.in{i}.npy"), x)
    y = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    np.save(os.path.join(out_dir, f"{name}.out.npy"), np.asarray(y, dtype="float32"))
    cases[name] = {"file": name + ext, "inputs": len(inputs)}


def write(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    cases = {}
    import keras
    for name, (model, inputs) in keras3_models(keras).items():
        save_case(out_dir, cases, name, model, inputs, ".keras")
    # A layer class deepflow does not have.
    unknown = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2),
                                keras.layers.UnitNormalization(name="unit_norm")])
    unknown.save(os.path.join(out_dir, "unknown_layer.keras"))
    import tf_keras
    for name, (model, inputs) in tf_keras_models(tf_keras).items():
        save_case(out_dir, cases, name, model, inputs, ".h5")
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


def check(dir_):
    import keras
    done = []
    for path in sorted(glob.glob(os.path.join(dir_, "*.keras"))):
        name = os.path.basename(path)[: -len(".keras")]
        inputs = [np.load(p) for p in sorted(glob.glob(os.path.join(dir_, name + ".in*.npy")))]
        model = keras.models.load_model(path)
        y = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
        np.save(os.path.join(dir_, name + ".keras_out.npy"), np.asarray(y, dtype="float32"))
        done.append(name)
    print(json.dumps({"checked": done}))


if __name__ == "__main__":
    {"write": write, "check": check}[sys.argv[1]](sys.argv[2])
