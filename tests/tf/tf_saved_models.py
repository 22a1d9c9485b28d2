# SPDX-License-Identifier: Apache-2.0
"""Writes small SavedModels with TensorFlow 2.21 for tests/tf/saved_model_import_test.cpp
(tf.Modules, Keras 3 exports with dense, convolutional, recurrent and attention layers, a
tf-keras model), with inputs and TensorFlow's outputs of each signature for two batch sizes:

  OUT/<model>/saved_model/...                     what TensorFlow wrote
  OUT/<model>/case<k>.<in|out>.<key>.npy          signature inputs and TF's outputs
  OUT/cases.json                                  {model: {signature, inputs, outputs, cases}}

  .venv-peers/bin/python tests/tf/tf_saved_models.py OUT"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402


class MathModule(tf.Module):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(1)
        self.w = tf.Variable(rng.standard_normal((3, 4)).astype("float32"), name="w")
        self.b = tf.Variable(rng.standard_normal((4,)).astype("float32"), name="b")
        self.scale = tf.Variable(2.5, name="scale")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def predict(self, x):
        h = tf.nn.relu(tf.matmul(x, self.w) + self.b)
        z = h * self.scale - tf.reduce_mean(h, axis=1, keepdims=True)
        return {"scores": tf.nn.softmax(z), "top": tf.argmax(z, axis=1, output_type=tf.int32)}

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="a"),
                                  tf.TensorSpec([None, 3], tf.float32, name="b")])
    def combine(self, a, b):
        s = tf.concat([a, b], axis=1)
        flat = tf.reshape(s, [-1, 2, 3])
        return {"sum": tf.reduce_sum(flat, axis=2), "first": flat[:, 0, 1:], "sq": tf.square(a - b)}


class FlowModule(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable([1.0, -2.0, 3.0], name="v")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def __call__(self, x):
        if tf.reduce_sum(x) > 0:
            y = x * self.v
        else:
            y = x - self.v
        i = tf.constant(0)
        acc = tf.zeros_like(y)
        while i < 4:
            acc = acc + y * tf.cast(i, tf.float32)
            i += 1
        return {"out": acc}


def keras_mlp():
    keras.utils.set_random_seed(3)
    m = keras.Sequential([keras.Input((6,), name="features"), keras.layers.Dense(8, activation="relu"),
                          keras.layers.Dense(3, activation="softmax")])
    return m


def keras_cnn():
    keras.utils.set_random_seed(4)
    m = keras.Sequential([keras.Input((8, 8, 3), name="image"), keras.layers.Conv2D(4, 3, padding="same"),
                          keras.layers.BatchNormalization(), keras.layers.ReLU(),
                          keras.layers.MaxPooling2D(), keras.layers.DepthwiseConv2D(3, padding="same"),
                          keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(5)])
    # Moving statistics other than 0 and 1, so inference-mode batch norm is checked.
    bn = m.layers[1]
    bn.moving_mean.assign(np.linspace(-1, 1, 4).astype("float32"))
    bn.moving_variance.assign(np.linspace(0.5, 2, 4).astype("float32"))
    return m


def keras_text(rnn):
    keras.utils.set_random_seed(5)
    return keras.Sequential([keras.Input((7,), dtype="int32", name="tokens"), keras.layers.Embedding(20, 6),
                             rnn(5), keras.layers.Dense(2)])


def keras_attention():
    keras.utils.set_random_seed(6)
    x = keras.Input((5, 8), name="seq")
    h = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(x, x)
    h = keras.layers.LayerNormalization()(x + h)
    return keras.Model(x, keras.layers.Dense(3)(h))


def tf_keras_cnn():
    import tf_keras
    tf_keras.utils.set_random_seed(7)
    m = tf_keras.Sequential([tf_keras.Input((8, 8, 3), name="image"), tf_keras.layers.Conv2D(4, 3, activation="relu"),
                             tf_keras.layers.BatchNormalization(), tf_keras.layers.MaxPooling2D(),
                             tf_keras.layers.Flatten(), tf_keras.layers.Dense(4, activation="softmax")])
    bn = m.layers[1]
    bn.moving_mean.assign(np.linspace(-1, 1, 4).astype("float32"))
    bn.moving_variance.assign(np.linspace(0.5, 2, 4).astype("float32"))
    return m


def token_inputs(spec, batch, rng):
    return {n: rng.integers(0, 20, [batch if d is None else d for d in s.shape]).astype("int32")
            for n, s in spec.items()}


def write_estimator_style(d):
    """A TF1-style SavedModel (tf.compat.v1 builder, as estimators export): classify and
    regress signatures on serialized tf.Examples, restored through saver_def's NoOp."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        serialized = v1.placeholder(tf.string, [None], name="input_example_tensor")
        f = tf.io.parse_example(serialized, {"x": tf.io.FixedLenFeature([3], tf.float32),
                                             "k": tf.io.FixedLenFeature([], tf.int64, default_value=2)})
        w = v1.get_variable("w", initializer=tf.constant([[0.5, -1.0], [1.5, 0.25], [-2.0, 1.0]]))
        logits = tf.matmul(f["x"], w) * tf.cast(f["k"], tf.float32)[:, None]
        scores = tf.nn.softmax(logits)
        value = tf.reduce_sum(logits, axis=1, keepdims=True)
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            b = v1.saved_model.Builder(d)
            u = v1.saved_model.utils.build_tensor_info
            classify = v1.saved_model.signature_def_utils.build_signature_def(
                {"inputs": u(serialized)}, {"scores": u(scores)}, "tensorflow/serving/classify")
            regress = v1.saved_model.signature_def_utils.build_signature_def(
                {"inputs": u(serialized)}, {"outputs": u(value)}, "tensorflow/serving/regress")
            b.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={
                "serving_default": classify, "regress": regress})
            b.save()


def example_inputs(spec, batch, rng):
    out = []
    for i in range(batch):
        feats = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=rng.standard_normal(3).tolist()))}
        if i % 2 == 0:
            feats["k"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[3]))
        out.append(tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString())
    return {"inputs": np.array(out, dtype=object)}


def write_cases(out, name, loaded, key, make_inputs):
    fn = loaded.signatures[key]
    spec = fn.structured_input_signature[1]
    cases = []
    for k, batch in enumerate((1, 3)):
        rng = np.random.default_rng(10 + k)
        inputs = make_inputs(spec, batch, rng)
        outputs = fn(**{n: tf.constant(v) for n, v in inputs.items()})
        for n, v in inputs.items():
            # Strings as fixed-width bytes ("S"), which .npy stores without pickling.
            np.save(os.path.join(out, name, f"case{k}.in.{n}.npy"), v.astype(bytes) if v.dtype == object else v)
        for n, v in outputs.items():
            np.save(os.path.join(out, name, f"case{k}.out.{n}.npy"), v.numpy())
        cases.append(k)
    return {"signature": key, "inputs": sorted(spec), "outputs": sorted(fn.structured_outputs), "cases": cases}


def normal_inputs(spec, batch, rng):
    return {n: rng.standard_normal([batch if d is None else d for d in s.shape]).astype(s.dtype.as_numpy_dtype)
            for n, s in spec.items()}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tf.random.set_seed(0)
    index = {}

    def saved(name, save):
        d = os.path.join(out, name, "saved_model")
        os.makedirs(os.path.dirname(d), exist_ok=True)
        save(d)
        return tf.saved_model.load(d)

    m = MathModule()
    loaded = saved("module_math", lambda d: tf.saved_model.save(
        m, d, signatures={"serving_default": m.predict, "combine": m.combine}))
    index["module_math"] = write_cases(out, "module_math", loaded, "serving_default", normal_inputs)
    index["module_math_combine"] = dict(write_cases(out, "module_math", loaded, "combine", normal_inputs),
                                        dir="module_math")
    # The same function frozen (variables to constants), as a bare GraphDef.
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    frozen = convert_variables_to_constants_v2(m.predict.get_concrete_function())
    os.makedirs(os.path.join(out, "frozen_math"), exist_ok=True)
    tf.io.write_graph(frozen.graph.as_graph_def(), os.path.join(out, "frozen_math"), "frozen.pb", as_text=False)
    spec = {"x": np.random.default_rng(20).standard_normal((3, 3)).astype("float32")}
    result = frozen(tf.constant(spec["x"]))
    np.save(os.path.join(out, "frozen_math", "case0.in.x.npy"), spec["x"])
    names = [t.name for t in frozen.outputs]
    for name, value in zip(names, result):
        np.save(os.path.join(out, "frozen_math", f"case0.out.{name.replace(':', '_')}.npy"), value.numpy())
    index["frozen_math"] = {"inputs": [t.name for t in frozen.inputs], "outputs": names}
    f = FlowModule()
    loaded = saved("module_flow", lambda d: tf.saved_model.save(f, d))
    index["module_flow"] = write_cases(out, "module_flow", loaded, "serving_default", normal_inputs)
    for name, build in (("keras_mlp", keras_mlp), ("keras_cnn", keras_cnn)):
        model = build()
        loaded = saved(name, lambda d: model.export(d, verbose=False))
        index[name] = write_cases(out, name, loaded, "serving_default", normal_inputs)
    for name, build in (("keras_lstm", lambda: keras_text(keras.layers.LSTM)),
                        ("keras_gru", lambda: keras_text(keras.layers.GRU))):
        model = build()
        loaded = saved(name, lambda d: model.export(d, verbose=False))
        index[name] = write_cases(out, name, loaded, "serving_default", token_inputs)
    model = keras_attention()
    loaded = saved("keras_attention", lambda d: model.export(d, verbose=False))
    index["keras_attention"] = write_cases(out, "keras_attention", loaded, "serving_default", normal_inputs)
    model = tf_keras_cnn()
    loaded = saved("tf_keras_cnn", lambda d: tf.saved_model.save(model, d))
    index["tf_keras_cnn"] = write_cases(out, "tf_keras_cnn", loaded, "serving_default", normal_inputs)
    loaded = saved("estimator_style", write_estimator_style)
    index["estimator_style"] = write_cases(out, "estimator_style", loaded, "serving_default", example_inputs)
    index["estimator_style_regress"] = dict(write_cases(out, "estimator_style", loaded, "regress", example_inputs),
                                            dir="estimator_style")
    with open(os.path.join(out, "cases.json"), "w") as fp:
        json.dump(index, fp, indent=1)


if __name__ == "__main__":
    main()
