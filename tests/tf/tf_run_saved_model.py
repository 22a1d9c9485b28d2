# SPDX-License-Identifier: Apache-2.0
"""Runs a SavedModel's signature in TensorFlow 2.21 (the oracle of tests/tf/export_test.cpp).

    python tf_run_saved_model.py MODEL_DIR SIGNATURE OUT_DIR key=in.npy [key=in.npy ...]

Writes OUT_DIR/<output key>.npy from tf.saved_model.load(MODEL_DIR).signatures[SIGNATURE],
and OUT_DIR/session_<output key>.npy from TF1's session loader
(tf.compat.v1.saved_model.loader.load: restore through saver_def, feed and fetch the
signature_def's tensor names), the way TF Serving runs a model; then saves the variables
through saver_def's save tensor and lists the checkpoint's keys in OUT_DIR/saved_keys.txt.
"""
import os
import sys

import numpy as np
import tensorflow as tf


def main():
    model_dir, key, out_dir = sys.argv[1:4]
    feeds = {}
    for item in sys.argv[4:]:
        name, path = item.split("=", 1)
        feeds[name] = np.load(path)
    os.makedirs(out_dir, exist_ok=True)

    loaded = tf.saved_model.load(model_dir)
    outputs = loaded.signatures[key](**{k: tf.constant(v) for k, v in feeds.items()})
    for name, value in outputs.items():
        np.save(os.path.join(out_dir, name + ".npy"), value.numpy())

    with tf.compat.v1.Session(graph=tf.Graph()) as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], model_dir)
        sig = meta.signature_def[key]
        feed = {sig.inputs[k].name: v for k, v in feeds.items()}
        names = sorted(sig.outputs.keys())
        values = sess.run([sig.outputs[k].name for k in names], feed_dict=feed)
        for name, value in zip(names, values):
            np.save(os.path.join(out_dir, "session_" + name + ".npy"), value)
        # saver_def's save tensor writes a TF checkpoint of the variables.
        prefix = os.path.join(out_dir, "session_ckpt", "ckpt")
        sess.run(meta.saver_def.save_tensor_name, {meta.saver_def.filename_tensor_name: prefix})
    keys = sorted(tf.train.load_checkpoint(prefix).get_variable_to_shape_map())
    with open(os.path.join(out_dir, "saved_keys.txt"), "w") as f:
        f.write("\n".join(keys) + "\n")


if __name__ == "__main__":
    main()
