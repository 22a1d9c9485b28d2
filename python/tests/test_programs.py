# SPDX-License-Identifier: Apache-2.0
"""Whole TensorFlow programs (python/tests/programs/, as TensorFlow's docs and guides
write them) run on deepflow with the import changed. CHANGES lists every other edit a
program needed and why (the goal is none)."""
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
PYTHON_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# program -> [(old text, new text, why)]
CHANGES = {
    "quickstart_beginner.py": [("epochs=5", "epochs=1", "test time: one epoch of 60000 images")],
    "quickstart_advanced.py": [
        ("EPOCHS = 5", "EPOCHS = 1", "test time"),
        ("(x_train, y_train)).shuffle(10000)", "(x_train[:6400], y_train[:6400])).shuffle(10000)",
         "test time: 200 steps of the custom loop instead of 1875"),
    ],
    "custom_train_step.py": [],
    "custom_layer.py": [],
    "v1_graph_session.py": [],
    "checkpoint_guide.py": [],
    "training_loop_from_scratch.py": [],
    "data_pipeline.py": [],
    "tf_function_guide.py": [
        ("tf.TensorSpec(shape=None, dtype=tf.float32)", "tf.TensorSpec(shape=[], dtype=tf.float32)",
         "deepflow traces need a known rank (dims may be None): a TensorSpec of unknown rank is not supported"),
    ],
    "saved_model_guide.py": [
        ("tf.TensorSpec(None, tf.float32)", "tf.TensorSpec([None], tf.float32)",
         "deepflow traces need a known rank (dims may be None): a TensorSpec of unknown rank is not supported"),
    ],
}

EXPECT = {
    "quickstart_beginner.py": r"accuracy: 0\.9[0-9]",
    "quickstart_advanced.py": r"Epoch 1, Loss: [0-9.]+, Accuracy: [89][0-9]\.[0-9]+",
    "custom_train_step.py": r"mae: [0-9.]+",
    "custom_layer.py": r"trainable weights: 6",
    "v1_graph_session.py": r"rows sum to one: True",
    "training_loop_from_scratch.py": r"Validation acc: 0\.[6-9][0-9]{3}",
    "data_pipeline.py": r"Accuracy : 0\.[4-9][0-9]*",
    # Python's prints run at trace time only (tf.print, on every call, writes to stderr as in
    # TensorFlow); fizzbuzz(20) reuses the trace of fizzbuzz(5).
    "tf_function_guide.py": r"tf.Tensor\(2.2, shape=\(\), dtype=float32\)\n\ntf.Tensor\(2.2(.|\n)*Traced with 1\n"
                            r"Traced with 2\nPython side effect\nTracing for loop\n(.*branch\n){4}tf.Tensor\(499500"
                            r"(.|\n)*tf.Tensor\(45,",
    # The second run restores into a new, unbuilt model (deferred restoration): its loss
    # goes on from where the first run stopped instead of starting again near 30.
    "checkpoint_guide.py": r"Restored from \./tf_ckpts/ckpt-5\nSaved checkpoint for step 60: \./tf_ckpts/ckpt-6\n"
                           r"loss [0-9]\.[0-9]{2}\n(.|\n)*\['\./tf_ckpts/ckpt-8', '\./tf_ckpts/ckpt-9', "
                           r"'\./tf_ckpts/ckpt-10'\]",
    # Fine-tuning the loaded module through its restored function: TensorFlow's numbers.
    "saved_model_guide.py": r"loss=36\.00 v=3\.20(.|\n)*loss=0\.00 v=4\.98\n(.|\n)*\['array_input', "
                            r"'serving_default'\](.|\n)*custom_output_name.*numpy=array\(\[1\., 2\.\]",
}


def _with_deepflow(source):
    source = re.sub(r"^import tensorflow as tf$", "import deepflow as tf", source, flags=re.M)
    source = re.sub(r"^from tensorflow import ", "from deepflow import ", source, flags=re.M)
    return re.sub(r"^from tensorflow\.", "from deepflow.", source, flags=re.M)


@pytest.mark.parametrize("program", sorted(CHANGES))
def test_program_runs_with_the_import_changed(program, tmp_path):
    source = open(os.path.join(HERE, program)).read()
    for old, new, why in CHANGES[program]:
        assert old in source, f"{program}: the change for '{why}' no longer applies"
        source = source.replace(old, new)
    script = tmp_path / program
    script.write_text(_with_deepflow(source))
    env = dict(os.environ, PYTHONPATH=PYTHON_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600,
                         cwd=str(tmp_path))
    assert run.returncode == 0, f"{program} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert re.search(EXPECT[program], run.stdout), f"{program}: no '{EXPECT[program]}' in\n{run.stdout[-3000:]}"
