#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TensorFlow-written test corpus (issue 19): models saved by TensorFlow 2.21 and TF's outputs.

    .venv-peers/bin/python scripts/make-tf-models.py [OUT_DIR] [--apps] [--only a,b] [--list]
                                                     [--verify] [--force]

OUT_DIR defaults to data/tf_models. Run it with the peers interpreter (`make peers`:
TensorFlow 2.21, Keras 3, tf-keras, h5py). Without --only it makes the default tier (small
models and the TFRecord files, about a minute cold); --apps adds the keras.applications tier
(ResNet50, MobileNetV2, EfficientNetB0, DenseNet121, InceptionV3; minutes, ~1 GB).
--only picks models by name from either tier; --list prints them. --verify loads what is
present back in TensorFlow and checks every stored output (nothing is written); --force
remakes what is present.

For each model, as applicable (docs/tf_corpus.md has the full list):

    OUT/<name>/saved_model/            Keras 3 model.export(dir), or tf.saved_model.save of a tf.Module
                                       (the estimator-style model: TF1 SavedModelBuilder)
    OUT/<name>/tf_keras_saved_model/   the same model built with tf_keras (Keras 2), same weights,
                                       model.save(dir, save_format="tf")
    OUT/<name>/model.keras, model.h5   Keras 3 file; tf_keras legacy HDF5
    OUT/<name>/checkpoint/ckpt-1.*     tf.train.Checkpoint(model, optimizer) after one Adam step (Keras 3)
    OUT/<name>/tf_keras_checkpoint/    the same with tf_keras and its legacy Adam (.OPTIMIZER_SLOT keys)
    OUT/<name>/frozen.pb               convert_variables_to_constants_v2 of the serving function
    OUT/<name>/cases/<case>/...        inputs (.npy) and TF's outputs (.npy) per case and variant
    OUT/<name>/io.json                 signatures (names, dtypes, shapes, tensor names, method), op
                                       types, checkpoint keys, and the index of the cases
    OUT/<name>/done.json               written last: generator hash, versions, files, time
    OUT/tfrecord/                      TFRecord files (none, ZLIB, GZIP) of tf.train.Examples and
                                       io.json (each record's bytes in hex and its features)
    OUT/manifest.json                  every model present, its files, the versions

Cases are .npy files (deepflow's io::read_npy and `deepflow saved_model run --inputs` read
them; neither reads .npz). Strings are numpy 'S' arrays; the generator refuses a value
ending in a NUL byte, which numpy would drop, and io.json also holds each one in hex.

Idempotent and cached: a model whose done.json carries the same hash (this file's common
code, the model's own make_ function, the package versions) is skipped ("present, skipped")
without importing TensorFlow. Each model is written to OUT/.tmp-<name> and renamed, so an
interrupted run leaves nothing half-written. Seeded per model (Keras, TF and numpy), so a
rerun makes the same weights, inputs and outputs.
"""
import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import inspect
import json
import os
import shutil
import sys
import time
import zlib

GENERATOR_VERSION = 1
DEFAULT_OUT = "data/tf_models"
THREADS = 2
PACKAGES = ("tensorflow", "keras", "tf_keras", "h5py", "numpy", "protobuf")
VARIANT_DIRS = ("saved_model", "tf_keras_saved_model")

# TensorFlow, Keras and numpy are imported by load_tf() only when something is to be made:
# importing TensorFlow costs seconds, and `make` runs this on every build.
np = tf = keras = tf_keras = None

MODELS = {}  # name -> Model, in registration order


class Model:
    def __init__(self, name, tier, make, description):
        self.name, self.tier, self.make, self.description = name, tier, make, description


def model(name, tier="default", description=""):
    def register(make):
        MODELS[name] = Model(name, tier, make, description)
        return make
    return register


# ---------------------------------------------------------------------------------------
# Caching


def package_versions():
    out = {}
    for p in PACKAGES:
        try:
            out[p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            out[p] = None
    out["python"] = ".".join(map(str, sys.version_info[:3]))
    out["TF_ENABLE_ONEDNN_OPTS"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "0")
    return out


_sources = None


def model_hash(name, versions):
    """sha256 of the generator's common code, the model's own make_ function and the versions.

    Editing one model's function remakes that model only; editing anything else remakes all."""
    global _sources
    if _sources is None:
        with open(os.path.abspath(__file__), encoding="utf-8") as f:
            common = f.read()
        own = {}
        for m in MODELS.values():
            own[m.name] = inspect.getsource(m.make)
            common = common.replace(own[m.name], "")
        _sources = common, own
    common, own = _sources
    h = hashlib.sha256()
    for part in (str(GENERATOR_VERSION), json.dumps(versions, sort_keys=True), common, own[name]):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def read_done(out_dir, name):
    try:
        with open(os.path.join(out_dir, name, "done.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def present(out_dir, name, versions):
    done = read_done(out_dir, name)
    return bool(done) and done.get("generator") == GENERATOR_VERSION and \
        done.get("hash") == model_hash(name, versions)


def dir_files(root):
    out = []
    for base, _, files in os.walk(root):
        for f in files:
            path = os.path.join(base, f)
            out.append((os.path.relpath(path, root), os.path.getsize(path)))
    return sorted(out)


def to_json(value, indent=""):
    """JSON with one key per line, but lists of numbers and strings on one line."""
    inner = indent + " "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {to_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    flat = json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)) and value and (len(flat) > 100 or any(isinstance(v, dict) for v in value)):
        return "[\n" + ",\n".join(inner + to_json(v, inner) for v in value) + "\n" + indent + "]"
    return flat


def write_json(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(to_json(value) + "\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------
# TensorFlow side: shared helpers


def load_tf():
    global np, tf, keras, tf_keras
    if tf is not None:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # TensorFlow's own Eigen kernels, not oneDNN's: on this 2-core VM oneDNN's
    # Conv2DBackpropFilter now and then fails ("could not create a primitive descriptor for
    # the reorder primitive"), and the Eigen kernels give the same numbers run after run.
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "0")  # tf.keras stays Keras 3; tf_keras is asked for by name
    import warnings
    warnings.filterwarnings("ignore")
    import numpy
    import tensorflow
    np, tf = numpy, tensorflow
    tf.get_logger().setLevel("ERROR")
    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(THREADS)
    import keras as keras3
    import tf_keras as keras2
    keras, tf_keras = keras3, keras2
    assert keras.__version__.startswith("3."), keras.__version__


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def npy_safe(value):
    """A numpy array for np.save: strings as 'S' (bytes), refusing values numpy would change."""
    a = np.asarray(value)
    if a.dtype == object or a.dtype.kind in "SU":
        flat = [v if isinstance(v, bytes) else str(v).encode() for v in a.reshape(-1).tolist()]
        for v in flat:
            if v.endswith(b"\0"):
                raise ValueError(f"string value {v!r} ends in NUL, which .npy 'S' arrays drop")
        width = max([len(v) for v in flat] + [1])
        a = np.array(flat, dtype=f"S{width}").reshape(a.shape)
    return a


def describe(a, rel_file):
    d = {"file": rel_file, "dtype": "string" if a.dtype.kind == "S" else a.dtype.name,
         "shape": list(a.shape)}
    if a.dtype.kind == "S":
        d["hex"] = [v.hex() for v in a.reshape(-1).tolist()]
    return d


class Context:
    """One model being made in a temporary directory: its io.json, its cases and their outputs."""

    def __init__(self, name, directory):
        self.name, self.dir = name, directory
        self.seed = seed_of(name)
        self.rng = np.random.default_rng(self.seed)
        self.info = {"name": name, "description": MODELS[name].description, "variants": {},
                     "failed": {}, "notes": []}
        self.cases = []  # {"name", "signature", "inputs": {k: array}, "by_signature": {...}}
        self.phases = {}  # phase -> seconds
        self._clock = time.time()
        keras.backend.clear_session()
        tf_keras.backend.clear_session()
        keras.utils.set_random_seed(self.seed)
        tf_keras.utils.set_random_seed(self.seed)
        tf.random.set_seed(self.seed)

    def lap(self, phase):
        """Charges the time since the last lap to `phase` (done.json's "phases")."""
        now = time.time()
        self.phases[phase] = round(self.phases.get(phase, 0.0) + now - self._clock, 1)
        self._clock = now

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def add_case(self, name, inputs, signature="*"):
        """Inputs for every signature of every SavedModel ("*"), or for one signature."""
        self.cases.append({"name": name, "signature": signature,
                           "inputs": {k: npy_safe(v) for k, v in inputs.items()}})

    def cases_for(self, signature, input_names):
        for case in self.cases:
            if case["signature"] in ("*", signature):
                yield case, feeds_for(case["inputs"], input_names)

    def record(self, case, signature, variant, outputs, feeds=None):
        case.setdefault("by_signature", {}).setdefault(signature, {})[variant] = {
            "feeds": feeds, "outputs": {k: npy_safe(v) for k, v in outputs.items()}}

    def fail(self, variant, error):
        lines = str(error).strip().splitlines() or [""]
        message = f"{type(error).__name__}: {lines[0][:400]}"
        self.info["failed"][variant] = message
        log(f"{self.name}: {variant} not made: {message}")


def feeds_for(inputs, input_names):
    """Maps a signature's input names onto a case's inputs: by name, or the one onto the one."""
    names = sorted(input_names)
    if all(n in inputs for n in names):
        return {n: n for n in names}
    if len(names) == 1 and len(inputs) == 1:
        return {names[0]: next(iter(inputs))}
    raise ValueError(f"case inputs {sorted(inputs)} do not match signature inputs {names}")


def log(message):
    print(message, flush=True)


def to_numpy(outputs):
    if isinstance(outputs, dict):
        return {k: v.numpy() for k, v in outputs.items()}
    if isinstance(outputs, (list, tuple)):
        return {f"output_{i}": v.numpy() for i, v in enumerate(outputs)}
    return {"output_0": outputs.numpy()}


def dtype_name(enum):
    from tensorflow.core.framework import types_pb2
    return types_pb2.DataType.Name(enum)


def tensor_info(info):
    shape = None if info.tensor_shape.unknown_rank else [d.size for d in info.tensor_shape.dim]
    out = {"dtype": dtype_name(info.dtype), "shape": shape}
    if info.name:
        out["name"] = info.name
    else:
        out["encoding"] = info.WhichOneof("encoding")
    return out


def read_saved_model_proto(directory):
    from tensorflow.core.protobuf import saved_model_pb2
    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(directory, "saved_model.pb"), "rb") as f:
        sm.ParseFromString(f.read())
    return sm


def graph_ops(graph_def):
    ops = {n.op for n in graph_def.node}
    for fn in graph_def.library.function:
        ops.update(n.op for n in fn.node_def)
    return sorted(ops)


def saved_model_info(directory):
    """Signatures as stored (method, inputs, outputs with TF's dtype enums, shapes and tensor
    names), tags, the op types of the graph and its function library, object-graph use."""
    sm = read_saved_model_proto(directory)
    if len(sm.meta_graphs) != 1:
        raise ValueError(f"{directory}: {len(sm.meta_graphs)} MetaGraphDefs")
    mg = sm.meta_graphs[0]
    signatures = {}
    for key in sorted(mg.signature_def):
        if key.startswith("__"):
            continue
        sig = mg.signature_def[key]
        signatures[key] = {
            "method_name": sig.method_name,
            "inputs": {k: tensor_info(sig.inputs[k]) for k in sorted(sig.inputs)},
            "outputs": {k: tensor_info(sig.outputs[k]) for k in sorted(sig.outputs)}}
    return {"tags": list(mg.meta_info_def.tags), "signatures": signatures,
            "has_object_graph": mg.HasField("object_graph_def"),
            "functions": len(mg.graph_def.library.function),
            "ops": graph_ops(mg.graph_def)}


def run_saved_model(ctx, variant):
    """TF's outputs of tf.saved_model.load(dir).signatures[key](**inputs) for every case."""
    directory = ctx.path(variant)
    info = saved_model_info(directory)
    ctx.info["variants"][variant] = dict(ctx.info["variants"].get(variant, {}), **info)
    loaded = tf.saved_model.load(directory)
    for key, sig in info["signatures"].items():
        fn = loaded.signatures[key]
        for case, feeds in ctx.cases_for(key, sig["inputs"]):
            kwargs = {n: tf.constant(case["inputs"][src]) for n, src in feeds.items()}
            ctx.record(case, key, variant, to_numpy(fn(**kwargs)), feeds)
    return loaded


def keras_outputs(model, x):
    """A Keras model's own call, model(x), in inference mode."""
    return to_numpy(model(x, training=False))


def calibrate_batch_norms(model, x):
    """Random BatchNorm scales and shifts and moving statistics from one batch, as after
    training: a fresh BN (mean 0, variance 1) lets activations decay through a deep model
    (make-onnx-models.py does the same to its torchvision models)."""
    rng = np.random.default_rng(12345)
    bns = [l for l in model._flatten_layers() if isinstance(l, keras.layers.BatchNormalization)]
    if not bns:
        return 0
    momenta = []
    for bn in bns:
        if bn.gamma is not None:
            bn.gamma.assign(rng.uniform(0.5, 1.5, bn.gamma.shape).astype("float32"))
        if bn.beta is not None:
            bn.beta.assign(rng.normal(0.0, 0.1, bn.beta.shape).astype("float32"))
        momenta.append(bn.momentum)
        bn.momentum = 0.0  # the moving statistics become this batch's
    model(x, training=True)
    for bn, momentum in zip(bns, momenta):
        bn.momentum = momentum
    return len(bns)


def copy_weights(source, target):
    """Keras 3 weights into the tf_keras twin: as one list, else layer by layer by name."""
    try:
        target.set_weights(source.get_weights())
        return "model.set_weights"
    except Exception:  # noqa: BLE001 (different weight order: try by layer)
        pass
    by_name = {l.name: l for l in target.layers}
    for layer in source.layers:
        if layer.weights:
            by_name[layer.name].set_weights(layer.get_weights())
    return "layer.set_weights by name"


def one_training_step(model, optimizer, x):
    """One Adam step on mean(square(model(x))) so the optimizer's slots exist."""
    variables = model.trainable_weights
    with tf.GradientTape() as tape:
        y = model(x, training=True)
        loss = tf.reduce_mean(tf.square(y))
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))


def write_checkpoint(ctx, model, optimizer, subdir, x, variant):
    one_training_step(model, optimizer, x)
    ckpt = tf.train.Checkpoint(model=model, optimizer=optimizer)
    prefix = ckpt.save(ctx.path(subdir, "ckpt"))
    with open(ctx.path(subdir, "checkpoint"), encoding="utf-8") as f:
        state = f.read()
    if ctx.dir in state:
        raise ValueError(f"{subdir}/checkpoint names the temporary directory: {state!r}")
    ctx.info[subdir] = {
        "prefix": f"{subdir}/{os.path.basename(prefix)}",
        "writer": "tf.train.Checkpoint(model=..., optimizer=...).save",
        "optimizer": f"{type(optimizer).__module__}.{type(optimizer).__name__}",
        "variables": [[k, list(s)] for k, s in tf.train.list_variables(prefix)]}
    # The model's outputs after the step: what a restored model gives on the first case.
    first = ctx.cases[0]
    ctx.record(first, "serving_default", variant, keras_outputs(model, x_of(first)))


def x_of(case):
    inputs = case["inputs"]
    return next(iter(inputs.values())) if len(inputs) == 1 else dict(inputs)


def freeze(ctx, loaded, signature="serving_default", lower_control_flow=True):
    """frozen.pb: convert_variables_to_constants_v2 of the loaded SavedModel's signature
    function, and TF's outputs of that GraphDef run in a TF1 Session."""
    from tensorflow.python.framework import convert_to_constants
    fn = loaded.signatures[signature]
    frozen = convert_to_constants.convert_variables_to_constants_v2(
        fn, lower_control_flow=lower_control_flow)
    graph_def = frozen.graph.as_graph_def()
    with open(ctx.path("frozen.pb"), "wb") as f:
        f.write(graph_def.SerializeToString())
    input_keys = sorted(fn.structured_input_signature[1])
    inputs = {t.name.split(":")[0]: t.name for t in frozen.inputs}
    if sorted(inputs) != input_keys:
        raise ValueError(f"frozen inputs {sorted(inputs)} are not the signature's {input_keys}")
    # The frozen function's outputs are the flattened structured outputs (dict: sorted keys).
    output_keys = sorted(fn.structured_outputs)
    outputs = {k: t.name for k, t in zip(output_keys, frozen.outputs)}
    ctx.info["frozen"] = {"file": "frozen.pb", "from": f"saved_model signature {signature}",
                          "lower_control_flow": lower_control_flow, "inputs": inputs,
                          "outputs": outputs, "ops": graph_ops(graph_def)}
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=THREADS,
                                      inter_op_parallelism_threads=THREADS)
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        for case, feeds in ctx.cases_for(signature, input_keys):
            values = session.run([outputs[k] for k in output_keys],
                                 {inputs[n]: case["inputs"][src] for n, src in feeds.items()})
            ctx.record(case, signature, "frozen", dict(zip(output_keys, values)),
                       {inputs[n]: src for n, src in feeds.items()})


def write_cases(ctx):
    """cases/<case>/in/<input>.npy and cases/<case>/<variant>/<signature>/<output>.npy."""
    index = []
    for case in ctx.cases:
        base = os.path.join("cases", case["name"])
        os.makedirs(ctx.path(base, "in"), exist_ok=True)
        entry = {"name": case["name"], "inputs": {}, "signatures": {}}
        for k, a in case["inputs"].items():
            rel = os.path.join(base, "in", k + ".npy")
            np.save(ctx.path(rel), a)
            entry["inputs"][k] = describe(a, rel)
        for signature, runs in case.get("by_signature", {}).items():
            sig_entry = entry["signatures"][signature] = {}
            for variant, run in runs.items():
                d = os.path.join(base, variant, signature)
                os.makedirs(ctx.path(d), exist_ok=True)
                outs = {}
                for k, a in run["outputs"].items():
                    rel = os.path.join(d, k + ".npy")
                    np.save(ctx.path(rel), a)
                    outs[k] = describe(a, rel)
                sig_entry[variant] = {"outputs": outs}
                if run["feeds"] is not None:
                    sig_entry[variant]["feeds"] = run["feeds"]
        index.append(entry)
    ctx.info["cases"] = index
    ctx.info["case_layout"] = (
        "cases/<case>/in/<input>.npy are the inputs; cases/<case>/<variant>/<signature>/<output>.npy "
        "TF's outputs. variant saved_model and tf_keras_saved_model: tf.saved_model.load(dir)."
        "signatures[signature](**feeds) where feeds maps the signature's input names to the "
        "case's inputs; keras: the Keras 3 model's model(x, training=False); tf_keras: the "
        "tf_keras twin's; frozen: frozen.pb run in a TF1 Session, feeds by tensor name; "
        "checkpoint / tf_keras_checkpoint: the model after the checkpointed training step")


def check_agreement(ctx, reference="keras", tolerance=1e-4):
    """Every variant's outputs against the reference run's (output keys may differ between
    variants, "output_0" against "probs": they pair up in sorted order). Floats: max |diff|
    over max |reference|, at most `tolerance`; the rest equal."""
    worst_all = {}
    for case in ctx.cases:
        for signature, runs in case.get("by_signature", {}).items():
            ref = runs.get(reference) or next(iter(runs.values()))
            for variant, run in runs.items():
                if variant.endswith("checkpoint") or run is ref:
                    continue
                a = [run["outputs"][k] for k in sorted(run["outputs"])]
                b = [ref["outputs"][k] for k in sorted(ref["outputs"])]
                where = f"{case['name']} {signature} {variant}"
                if len(a) != len(b):
                    raise ValueError(f"{where}: {len(a)} outputs, {len(b)} in the reference")
                worst, scale = 0.0, 0.0
                for x, y in zip(a, b):
                    if x.shape != y.shape or x.dtype != y.dtype:
                        raise ValueError(f"{where}: output {x.dtype}{list(x.shape)}, "
                                         f"{y.dtype}{list(y.shape)} in the reference")
                    if x.dtype.kind != "f":
                        if not np.array_equal(x, y):
                            raise ValueError(f"{where}: outputs differ from the reference")
                        continue
                    worst = max(worst, float(np.max(np.abs(x.astype("float64") - y), initial=0.0)))
                    scale = max(scale, float(np.max(np.abs(y), initial=0.0)))
                rel = worst / scale if scale else worst
                worst_all[variant] = max(worst_all.get(variant, 0.0), rel)
                if rel > tolerance:
                    raise ValueError(f"{where}: max |diff| {worst:.3g} against max |y| {scale:.3g} "
                                     f"({rel:.3g} > {tolerance})")
    ctx.info["agreement"] = {
        "reference": reference, "tolerance": tolerance,
        "max_abs_diff_over_max_abs": {k: float(f"{v:.3g}") for k, v in sorted(worst_all.items())}}


# ---------------------------------------------------------------------------------------
# Keras models: one builder for both Keras 3 and tf_keras


def keras_flow(ctx, build, cases, *, tf_keras_twin=True, keras_files=True, checkpoint=False,
               frozen=False, calibrate=None):
    """The Keras recipe. build(K) builds the model with K = keras (Keras 3) or tf_keras;
    cases(rng) gives [(case name, {input: array})]."""
    m = build(keras)
    for name, inputs in cases(ctx.rng):
        if len(inputs) == 1 and len(m.inputs) == 1:  # the case's input takes the model's input name
            inputs = {m.inputs[0].name: next(iter(inputs.values()))}
        ctx.add_case(name, inputs)
    if calibrate is not None:
        n = calibrate_batch_norms(m, calibrate(ctx.rng))
        ctx.info["notes"].append(f"{n} BatchNormalization layers: random gamma/beta, moving "
                                 f"statistics from one calibration batch")
    ctx.info["keras"] = {"class": type(m).__name__, "layers": len(m.layers),
                         "params": int(m.count_params()),
                         "inputs": [{"name": t.name, "shape": list(t.shape), "dtype": str(t.dtype)}
                                    for t in m.inputs]}
    for case in ctx.cases:
        ctx.record(case, "serving_default", "keras", keras_outputs(m, x_of(case)))
    ctx.lap("keras build")
    m.export(ctx.path("saved_model"), verbose=False)
    ctx.info["variants"]["saved_model"] = {"writer": f"keras {keras.__version__} Model.export"}
    ctx.lap("saved_model write")
    if keras_files:
        m.save(ctx.path("model.keras"))
        ctx.lap("model.keras write")
    km = None
    if tf_keras_twin:
        try:
            km = build(tf_keras)
            ctx.info["tf_keras_weights"] = copy_weights(m, km)
            for case in ctx.cases:
                ctx.record(case, "serving_default", "tf_keras", keras_outputs(km, x_of(case)))
            ctx.lap("tf_keras build")
            km.save(ctx.path("tf_keras_saved_model"), save_format="tf", include_optimizer=False)
            ctx.info["variants"]["tf_keras_saved_model"] = {
                "writer": f"tf_keras {tf_keras.__version__} Model.save(dir, save_format='tf')"}
            ctx.lap("tf_keras_saved_model write")
        except Exception as e:  # noqa: BLE001 (a tf_keras limitation: recorded, the rest goes on)
            ctx.fail("tf_keras_saved_model", e)
            shutil.rmtree(ctx.path("tf_keras_saved_model"), ignore_errors=True)
            km = None
        if km is not None and keras_files:
            try:
                km.save(ctx.path("model.h5"), save_format="h5")
            except Exception as e:  # noqa: BLE001
                ctx.fail("model.h5", e)
                with contextlib.suppress(OSError):
                    os.remove(ctx.path("model.h5"))
            ctx.lap("model.h5 write")
    loaded = run_saved_model(ctx, "saved_model")
    ctx.lap("saved_model load and run")
    if km is not None:
        run_saved_model(ctx, "tf_keras_saved_model")
        ctx.lap("tf_keras_saved_model load and run")
    if frozen:
        freeze(ctx, loaded)
        ctx.lap("frozen.pb")
    if checkpoint:
        x = x_of(ctx.cases[-1])
        write_checkpoint(ctx, m, keras.optimizers.Adam(1e-3), "checkpoint", x, "checkpoint")
        if km is not None:
            write_checkpoint(ctx, km, tf_keras.optimizers.legacy.Adam(1e-3), "tf_keras_checkpoint", x,
                             "tf_keras_checkpoint")
        ctx.lap("checkpoints")
    check_agreement(ctx)


def images(shape, batches=(1, 3), low=None, high=None):
    def cases(rng):
        out = []
        for b in batches:
            if low is None:
                x = rng.standard_normal((b,) + tuple(shape)).astype("float32")
            else:
                x = rng.uniform(low, high, (b,) + tuple(shape)).astype("float32")
            out.append((f"b{b}", {"x": x}))
        return out
    return cases


@model("mlp", description="Dense(16, relu), Dense(4, softmax) on 8 features")
def make_mlp(ctx):
    def build(K):
        x = K.Input((8,), name="features")
        h = K.layers.Dense(16, activation="relu", name="hidden")(x)
        y = K.layers.Dense(4, activation="softmax", name="probs")(h)
        return K.Model(x, y, name="mlp")
    keras_flow(ctx, build, images((8,)), checkpoint=True, frozen=True)


@model("cnn", description="Conv2D, BatchNormalization, ReLU, MaxPool, DepthwiseConv2D, "
                          "GlobalAveragePooling, Dropout, Dense on 28x28x1")
def make_cnn(ctx):
    def build(K):
        x = K.Input((28, 28, 1), name="image")
        h = K.layers.Conv2D(8, 3, padding="same", name="conv1")(x)
        h = K.layers.BatchNormalization(name="bn1")(h)
        h = K.layers.ReLU(name="relu1")(h)
        h = K.layers.MaxPooling2D(2, name="pool1")(h)
        h = K.layers.DepthwiseConv2D(3, padding="valid", activation="relu6", name="dw2")(h)
        h = K.layers.Conv2D(16, 1, strides=2, activation="relu", name="conv3")(h)
        h = K.layers.GlobalAveragePooling2D(name="gap")(h)
        h = K.layers.Dropout(0.25, name="dropout")(h)
        y = K.layers.Dense(10, activation="softmax", name="probs")(h)
        return K.Model(x, y, name="cnn")
    keras_flow(ctx, build, images((28, 28, 1)), checkpoint=True, frozen=True,
               calibrate=lambda rng: rng.standard_normal((16, 28, 28, 1)).astype("float32"))


def tokens(vocab, lengths=((1, 8), (3, 13)), pad_rows=False):
    def cases(rng):
        out = []
        for b, t in lengths:
            x = rng.integers(1, vocab, (b, t)).astype("int32")
            if pad_rows and b > 1:
                x[1, t // 2:] = 0  # a padded row: the mask matters
                x[2, t - 2:] = 0
            out.append((f"b{b}_t{t}", {"tokens": x}))
        return out
    return cases


@model("text_lstm", description="Embedding(1000, 16), LSTM(16), Dense(3, softmax); int32 tokens "
                                "of any length")
def make_text_lstm(ctx):
    def build(K):
        x = K.Input((None,), dtype="int32", name="tokens")
        # Unit-scale embeddings (the default uniform(-0.05, 0.05) leaves the outputs at 1/3 each).
        h = K.layers.Embedding(1000, 16, embeddings_initializer=K.initializers.RandomNormal(stddev=1.0),
                               name="embedding")(x)
        h = K.layers.LSTM(16, name="lstm")(h)
        y = K.layers.Dense(3, activation="softmax", name="probs")(h)
        return K.Model(x, y, name="text_lstm")
    keras_flow(ctx, build, tokens(1000))


@model("text_gru", description="Embedding(1000, 16, mask_zero=True), GRU(16), Dense(3, softmax); "
                               "padded rows (token 0) in the batch-3 case")
def make_text_gru(ctx):
    def build(K):
        x = K.Input((None,), dtype="int32", name="tokens")
        h = K.layers.Embedding(1000, 16, mask_zero=True, name="embedding",
                               embeddings_initializer=K.initializers.RandomNormal(stddev=1.0))(x)
        h = K.layers.GRU(16, name="gru")(h)
        y = K.layers.Dense(3, activation="softmax", name="probs")(h)
        return K.Model(x, y, name="text_gru")
    keras_flow(ctx, build, tokens(1000, pad_rows=True))


@model("transformer", description="Transformer encoder block: MultiHeadAttention(4 heads), "
                                  "residuals, LayerNormalization, feed-forward; (batch, seq, 32)")
def make_transformer(ctx):
    def build(K):
        x = K.Input((None, 32), name="embeddings")
        a = K.layers.MultiHeadAttention(num_heads=4, key_dim=8, name="attention")(x, x)
        h = K.layers.LayerNormalization(epsilon=1e-6, name="norm1")(K.layers.Add(name="residual1")([x, a]))
        f = K.layers.Dense(64, activation="relu", name="ffn1")(h)
        f = K.layers.Dense(32, name="ffn2")(f)
        y = K.layers.LayerNormalization(epsilon=1e-6, name="norm2")(K.layers.Add(name="residual2")([h, f]))
        return K.Model(x, y, name="transformer")

    def cases(rng):
        return [(f"b{b}_t{t}", {"embeddings": rng.standard_normal((b, t, 32)).astype("float32")})
                for b, t in ((1, 6), (3, 11))]
    keras_flow(ctx, build, cases)


@model("preprocessing", description="Rescaling(1/255), Normalization adapted on data, Conv2D, "
                                    "GlobalAveragePooling, Dense on 16x16x3 pixels in [0, 255]")
def make_preprocessing(ctx):
    data = np.random.default_rng(7).uniform(0, 255, (64, 16, 16, 3)).astype("float32")
    data *= np.array([1.0, 0.6, 0.3], "float32")  # channels with different means and spreads

    def build(K):
        norm = K.layers.Normalization(axis=-1, name="normalize")
        norm.adapt(data / 255.0)
        x = K.Input((16, 16, 3), name="pixels")
        h = K.layers.Rescaling(1.0 / 255, name="rescale")(x)
        h = norm(h)
        h = K.layers.Conv2D(4, 3, activation="relu", name="conv")(h)
        h = K.layers.GlobalAveragePooling2D(name="gap")(h)
        y = K.layers.Dense(2, name="logits")(h)
        return K.Model(x, y, name="preprocessing")
    keras_flow(ctx, build, images((16, 16, 3), low=0.0, high=255.0))


def make_application(ctx, name, keras_files=False):
    """keras.applications `name` with weights=None, its BatchNorms calibrated."""
    def build(K):
        return getattr(K.applications, name)(weights=None)
    size = 299 if name == "InceptionV3" else 224
    keras_flow(ctx, build, images((size, size, 3)), keras_files=keras_files,
               calibrate=lambda rng: rng.standard_normal((4, size, size, 3)).astype("float32"))


@model("resnet50", tier="apps", description="keras.applications.ResNet50(weights=None), 224x224x3")
def make_resnet50(ctx):
    make_application(ctx, "ResNet50")


@model("mobilenet_v2", tier="apps",
       description="keras.applications.MobileNetV2(weights=None), 224x224x3; also .keras and .h5")
def make_mobilenet_v2(ctx):
    make_application(ctx, "MobileNetV2", keras_files=True)


@model("efficientnet_b0", tier="apps",
       description="keras.applications.EfficientNetB0(weights=None), 224x224x3 (its own Rescaling "
                   "and Normalization inside)")
def make_efficientnet_b0(ctx):
    make_application(ctx, "EfficientNetB0")


@model("densenet121", tier="apps", description="keras.applications.DenseNet121(weights=None), 224x224x3")
def make_densenet121(ctx):
    make_application(ctx, "DenseNet121")


@model("inception_v3", tier="apps", description="keras.applications.InceptionV3(weights=None), 299x299x3")
def make_inception_v3(ctx):
    make_application(ctx, "InceptionV3")


# ---------------------------------------------------------------------------------------
# tf.Modules and a TF1 SavedModel


def module_flow(ctx, module, signatures, frozen=None):
    tf.saved_model.save(module, ctx.path("saved_model"), signatures=signatures)
    ctx.info["variants"]["saved_model"] = {"writer": f"tensorflow {tf.__version__} tf.saved_model.save"}
    loaded = run_saved_model(ctx, "saved_model")
    if frozen:
        freeze(ctx, loaded, signature=frozen)
    return loaded


@model("control_flow", description="tf.Module whose tf.function has a data-dependent tf.cond "
                                   "and tf.while_loop over captured variables; frozen.pb lowers "
                                   "them to TF1 Switch/Merge/Enter/Exit")
def make_control_flow(ctx):
    rng = ctx.rng

    class ControlFlow(tf.Module):
        def __init__(self):
            super().__init__(name="control_flow")
            self.w = tf.Variable(rng.standard_normal((4, 4)).astype("float32") * 0.5, name="w")
            self.b = tf.Variable(rng.standard_normal(4).astype("float32") * 0.1, name="b")
            self.scale = tf.Variable(1.5, name="scale")
            self.decay = tf.Variable(0.5, name="decay")

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def __call__(self, x):
            y = tf.matmul(x, self.w) + self.b
            positive = tf.reduce_sum(y) > 0.0
            y = tf.cond(positive, lambda: y * self.scale, lambda: tf.abs(y) - self.scale)

            def keep_going(i, y):
                return tf.logical_and(i < 20, tf.reduce_max(tf.abs(y)) > 0.05)

            def body(i, y):
                return i + 1, tf.tanh(tf.matmul(y, self.w)) * self.decay + y * 0.1

            steps, y = tf.while_loop(keep_going, body, (tf.constant(0), y))
            return {"y": y, "steps": steps, "positive": positive}

    module = ControlFlow()
    # Two cases that take different branches and loop a different number of times: inputs
    # along the direction that raises sum(x @ w) (b1) or lowers it (b3), their scales picked
    # by a numpy run of the same function.
    w, b = module.w.numpy(), module.b.numpy()

    def path(x):
        y = x @ w + b
        positive = y.sum() > 0
        y = y * 1.5 if positive else np.abs(y) - 1.5
        steps = 0
        while steps < 20 and np.abs(y).max() > 0.05:
            steps, y = steps + 1, np.tanh(y @ w) * 0.5 + y * 0.1
        return positive, steps

    u = w.sum(axis=1) / np.linalg.norm(w.sum(axis=1))
    noise = rng.standard_normal((3, 4)).astype("float32") * 0.1
    x1 = (4.0 * u[None, :]).astype("float32")
    p1 = path(x1)
    for scale in (0.5, 1.0, 2.0, 3.0, 6.0, 10.0):
        x3 = (-scale * u[None, :] + noise).astype("float32")
        p3 = path(x3)
        if not p3[0] and p3[1] != p1[1]:
            break
    ctx.add_case("b1", {"x": x1})
    ctx.add_case("b3", {"x": x3})
    module_flow(ctx, module, {"serving_default": module.__call__}, frozen="serving_default")
    outs = [c["by_signature"]["serving_default"]["saved_model"]["outputs"] for c in ctx.cases]
    if bool(outs[0]["positive"]) == bool(outs[1]["positive"]) or int(outs[0]["steps"]) == int(outs[1]["steps"]):
        raise ValueError(f"the two cases do not take different paths: {outs}")
    ctx.info["notes"].append(
        f"case b1 takes the true branch and loops {int(outs[0]['steps'])} times; b3 the false "
        f"branch, {int(outs[1]['steps'])} times")
    check_agreement(ctx, reference="saved_model")


@model("multi_signature", description="tf.Module with three signatures, several named inputs and "
                                      "outputs each: float32, int64, bool and string inputs; int32, "
                                      "int64, float32 and string outputs")
def make_multi_signature(ctx):
    rng = ctx.rng

    class MultiSignature(tf.Module):
        def __init__(self):
            super().__init__(name="multi_signature")
            self.w = tf.Variable(rng.standard_normal((3, 2)).astype("float32"), name="w")
            self.offset = tf.Variable(0.25, name="offset")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="a"),
                                      tf.TensorSpec([None, 3], tf.float32, name="b")])
        def combine(self, a, b):
            return {"sum": a + b, "projected": tf.matmul(a * b, self.w) + self.offset}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                      tf.TensorSpec([], tf.float32, name="scale")])
        def text(self, text, scale):
            length = tf.strings.length(text)
            return {"length": length,
                    "scaled": tf.cast(length, tf.float32) * scale + self.offset,
                    "tagged": tf.strings.join(["<", text, ">"]),
                    "is_hello": tf.equal(text, "hello")}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int64, name="ids"),
                                      tf.TensorSpec([None], tf.bool, name="mask")])
        def select(self, ids, mask):
            return {"picked": tf.where(mask, ids * 2, -ids),
                    "count": tf.reduce_sum(tf.cast(mask, tf.int32))}

    module = MultiSignature()
    for b in (1, 3):
        ctx.add_case(f"b{b}", {"a": rng.standard_normal((b, 3)).astype("float32"),
                               "b": rng.standard_normal((b, 3)).astype("float32")}, "serving_default")
        words = [b"hello", "wörld".encode(), b"a longer sentence, with punctuation."][:b]
        ctx.add_case(f"text_b{b}", {"text": np.array(words, dtype=object),
                                    "scale": np.array(0.5 * b, "float32")}, "text")
        ctx.add_case(f"select_b{b}", {"ids": rng.integers(-(1 << 40), 1 << 40, b).astype("int64"),
                                      "mask": np.array([True, False, True][:b])}, "select")
    module_flow(ctx, module, {"serving_default": module.combine, "text": module.text,
                              "select": module.select})
    check_agreement(ctx, reference="saved_model")


@model("vocab_lookup", description="tf.Module with a StaticHashTable initialized from an asset "
                                   "file (assets/vocab.txt, __saved_model_init_op)")
def make_vocab_lookup(ctx):
    source = ctx.path("vocab_source")
    os.makedirs(source)
    vocab = ["<unk>", "the", "cat", "sat", "on", "mat", "ünïcode"]
    with open(os.path.join(source, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")

    class VocabLookup(tf.Module):
        def __init__(self):
            super().__init__(name="vocab_lookup")
            self.vocab = tf.saved_model.Asset(os.path.join(source, "vocab.txt"))
            self.table = tf.lookup.StaticHashTable(
                tf.lookup.TextFileInitializer(self.vocab, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
                                              tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER), -1)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words")])
        def __call__(self, words):
            ids = self.table.lookup(words)
            return {"ids": ids, "known": ids >= 0}

    module = VocabLookup()
    ctx.add_case("b1", {"words": np.array([b"cat"], dtype=object)})
    ctx.add_case("b3", {"words": np.array([b"the", b"dog", "ünïcode".encode()], dtype=object)})
    module_flow(ctx, module, {"serving_default": module.__call__})
    shutil.rmtree(source)
    check_agreement(ctx, reference="saved_model")


def example_bytes(features):
    """A tf.train.Example's bytes (deterministic: map keys sorted)."""
    feature = {}
    for k, v in features.items():
        if isinstance(v[0], bytes):
            feature[k] = tf.train.Feature(bytes_list=tf.train.BytesList(value=v))
        elif isinstance(v[0], (int, np.integer)):
            feature[k] = tf.train.Feature(int64_list=tf.train.Int64List(value=v))
        else:
            feature[k] = tf.train.Feature(float_list=tf.train.FloatList(value=v))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
        deterministic=True)


@model("estimator", description="estimator-style binary classifier on serialized tf.Example "
                                "(TF1 SavedModelBuilder, as tf.estimator exported): signatures "
                                "serving_default and classification (tensorflow/serving/classify), "
                                "regression (tensorflow/serving/regress), predict")
def make_estimator(ctx):
    rng = ctx.rng
    w1 = rng.standard_normal((10, 8)).astype("float32") * 0.5
    b1 = rng.standard_normal(8).astype("float32") * 0.1
    w2 = rng.standard_normal((8, 1)).astype("float32") * 0.5
    b2 = np.array([0.1], "float32")
    graph = tf.Graph()
    with graph.as_default():
        serialized = tf.compat.v1.placeholder(tf.string, [None], name="input_example_tensor")
        spec = {"x": tf.io.FixedLenFeature([4], tf.float32),
                "bucket": tf.io.FixedLenFeature([], tf.int64, default_value=0),
                "color": tf.io.FixedLenFeature([], tf.string, default_value="red")}
        features = tf.io.parse_example(serialized, spec)
        color = tf.stack([tf.cast(tf.equal(features["color"], c), tf.float32)
                          for c in ("red", "green", "blue")], axis=1)
        inputs = tf.concat([features["x"], tf.one_hot(features["bucket"], 3), color], axis=1)
        with tf.compat.v1.variable_scope("dnn"):
            v_w1 = tf.compat.v1.get_variable("hiddenlayer_0/kernel", initializer=w1)
            v_b1 = tf.compat.v1.get_variable("hiddenlayer_0/bias", initializer=b1)
            v_w2 = tf.compat.v1.get_variable("logits/kernel", initializer=w2)
            v_b2 = tf.compat.v1.get_variable("logits/bias", initializer=b2)
        hidden = tf.nn.relu(tf.matmul(inputs, v_w1) + v_b1)
        logits = tf.matmul(hidden, v_w2) + v_b2
        logistic = tf.sigmoid(logits)
        probabilities = tf.concat([1.0 - logistic, logistic], axis=1)
        class_ids = tf.cast(logistic > 0.5, tf.int64)
        batch = tf.shape(logits)[0]
        all_classes = tf.tile(tf.constant([["0", "1"]]), [batch, 1])
        classes = tf.strings.as_string(class_ids)
        sig = tf.compat.v1.saved_model
        signature_def_map = {
            "serving_default": sig.classification_signature_def(serialized, all_classes, probabilities),
            "classification": sig.classification_signature_def(serialized, all_classes, probabilities),
            "regression": sig.regression_signature_def(serialized, logistic),
            "predict": sig.predict_signature_def(
                {"examples": serialized},
                {"logits": logits, "logistic": logistic, "probabilities": probabilities,
                 "class_ids": class_ids, "classes": classes, "all_classes": all_classes}),
        }
        config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=THREADS,
                                          inter_op_parallelism_threads=THREADS)
        with tf.compat.v1.Session(graph=graph, config=config) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            builder = tf.compat.v1.saved_model.Builder(ctx.path("saved_model"))
            builder.add_meta_graph_and_variables(
                session, [tf.saved_model.SERVING], signature_def_map=signature_def_map,
                strip_default_attrs=True)
            builder.save()
    ctx.info["variants"]["saved_model"] = {
        "writer": f"tensorflow {tf.__version__} tf.compat.v1.saved_model.Builder (TF1 graph, "
                  "resource variables, saver_def; no object graph)"}
    examples = [
        {"x": [0.5, -1.0, 2.0, 0.25], "bucket": [2], "color": [b"green"]},
        {"x": [-0.3, 0.8, -1.5, 1.25], "color": [b"blue"]},                      # bucket: default
        {"x": [1.5, 0.5, -0.5, -2.5], "bucket": [1]},                            # color: default
        {"x": [-2.0, -1.0, 0.75, 0.5], "bucket": [0], "color": [b"red"]},
    ]
    serial = [example_bytes(e) for e in examples]
    ctx.info["examples"] = [{"features": {k: [v.decode() if isinstance(v, bytes) else v for v in vs]
                                          for k, vs in e.items()}, "hex": s.hex()}
                            for e, s in zip(examples, serial)]
    for name, chosen in (("b1", serial[:1]), ("b3", serial[1:])):
        # Every signature takes the one string input ("inputs"; predict calls it "examples").
        ctx.add_case(name, {"inputs": np.array(chosen, dtype=object)})
    run_saved_model(ctx, "saved_model")
    check_agreement(ctx, reference="saved_model")


# ---------------------------------------------------------------------------------------
# TFRecord files


def float_bits(v):
    return np.array([v], "<f4").tobytes()[::-1].hex()  # big-endian hex of the float32 bits


def describe_example(example):
    """An Example's features for io.json: None when the features field is absent; floats as
    their float32 bits (8 hex digits, big-endian) and repr, int64 as decimal, bytes as hex."""
    if not example.HasField("features"):
        return None
    out = {}
    for key in sorted(example.features.feature):
        f = example.features.feature[key]
        kind = f.WhichOneof("kind")
        if kind == "float_list":
            out[key] = {"kind": "float", "bits": [float_bits(v) for v in f.float_list.value],
                        "values": [repr(float(np.float32(v))) for v in f.float_list.value]}
        elif kind == "int64_list":
            out[key] = {"kind": "int64", "values": [str(v) for v in f.int64_list.value]}
        elif kind == "bytes_list":
            out[key] = {"kind": "bytes", "hex": [v.hex() for v in f.bytes_list.value]}
        else:
            out[key] = {"kind": None}
    return out


@model("tfrecord", description="TFRecord files written by tf.io.TFRecordWriter (none, ZLIB, GZIP) "
                               "of tf.train.Examples, and io.json: each record's bytes in hex "
                               "and its features")
def make_tfrecord(ctx):
    rng = ctx.rng
    examples = [
        {"f": [1.0, -0.0, 3.5], "i": [0, -1, (1 << 62) + 5], "s": [b"name0", "ünï".encode()]},
        None,  # tf.train.Example() with no features field: a zero-length record
        {},  # an empty features map: the two bytes 0a 00
        {"empty_float": [], "empty_int": [], "empty_bytes": []},
        {"f": [float("inf"), float("-inf"), float("nan"), 1e-45, 3.4028235e38],
         "i": [-(1 << 63), (1 << 63) - 1], "b": [bytes(range(256)), b"", b"\x00tail"]},
    ]
    for k in range(4):
        examples.append({"f": rng.standard_normal(5).astype("float32").tolist(),
                         "i": rng.integers(-(1 << 40), 1 << 40, 3).tolist(),
                         "s": [f"record{k + 4}".encode() * (k + 1)]})
    serial, described = [], []
    for e in examples:
        if e is None:
            example = tf.train.Example()
        else:
            feature = {}
            for key, values in e.items():
                if key in ("s", "b", "empty_bytes"):
                    feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
                elif key in ("i", "empty_int"):
                    feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
                else:
                    feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
            example = tf.train.Example(features=tf.train.Features(feature=feature))
        serial.append(example.SerializeToString(deterministic=True))
        described.append({"features": describe_example(example)})
    files = {}
    for compression, file in (("", "none.tfrecord"), ("ZLIB", "zlib.tfrecord"), ("GZIP", "gzip.tfrecord")):
        with tf.io.TFRecordWriter(ctx.path(file), tf.io.TFRecordOptions(compression_type=compression)) as w:
            for s in serial:
                w.write(s)
        with open(ctx.path(file), "rb") as f:
            data = f.read()
        files[file] = {"compression": compression or "NONE", "bytes": len(data),
                       "sha256": hashlib.sha256(data).hexdigest()}
        # TF reads back what it wrote.
        back = [r.numpy() for r in tf.data.TFRecordDataset(ctx.path(file), compression_type=compression)]
        if back != serial:
            raise ValueError(f"{file}: TF does not read back its records")
    for d, s in zip(described, serial):
        d["hex"] = s.hex()
    ctx.info["tfrecord"] = {
        "files": files,
        "format": "each record: u64 LE length, u32 LE masked crc32c of the length, the bytes, "
                  "u32 LE masked crc32c of the bytes; ZLIB and GZIP compress the whole stream",
        "feature_encoding": "float: bits = the float32's 8 hex digits (big-endian), values = "
                            "Python repr; int64: decimal strings; bytes: hex",
        "records": described}


# ---------------------------------------------------------------------------------------
# Driver


def make_one(out_dir, name, versions):
    tmp = os.path.join(out_dir, f".tmp-{name}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    start = time.time()
    ctx = Context(name, tmp)
    try:
        MODELS[name].make(ctx)
        if ctx.cases:
            write_cases(ctx)
        info = ctx.info
        if not info["failed"]:
            del info["failed"]
        if not info["notes"]:
            del info["notes"]
        write_json(os.path.join(tmp, "io.json"), info)
        seconds = time.time() - start
        files = dir_files(tmp)
        done = {"name": name, "tier": MODELS[name].tier, "generator": GENERATOR_VERSION,
                "hash": model_hash(name, versions), "versions": versions,
                "seconds": round(seconds, 1), "bytes": sum(s for _, s in files),
                "failed": ctx.info.get("failed", {}), "phases": ctx.phases,
                "files": [f for f, _ in files]}
        write_json(os.path.join(tmp, "done.json"), done)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    final = os.path.join(out_dir, name)
    old = os.path.join(out_dir, f".old-{name}")
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(final):
        os.rename(final, old)
    os.rename(tmp, final)
    shutil.rmtree(old, ignore_errors=True)
    made = [v for v in ("saved_model", "tf_keras_saved_model", "model.keras", "model.h5", "checkpoint",
                        "tf_keras_checkpoint", "frozen.pb") if os.path.exists(os.path.join(final, v))]
    failed = f"; not made: {', '.join(sorted(done['failed']))}" if done["failed"] else ""
    log(f"{name}: made in {seconds:.1f} s, {done['bytes'] / 1e6:.1f} MB"
        f" ({', '.join(made) or 'files'}){failed}")


def write_manifest(out_dir, versions):
    models = {}
    for name in sorted(os.listdir(out_dir)):
        done = read_done(out_dir, name)
        if not done:
            continue
        root = os.path.join(out_dir, name)
        files = dir_files(root)
        models[name] = {"tier": done.get("tier"), "description": MODELS[name].description if name in MODELS else "",
                        "current": present(out_dir, name, versions) if name in MODELS else False,
                        "seconds": done.get("seconds"), "bytes": sum(s for _, s in files),
                        "failed": done.get("failed", {}),
                        "files": {f: s for f, s in files}}
    write_json(os.path.join(out_dir, "manifest.json"), {
        "generator": "scripts/make-tf-models.py", "generator_version": GENERATOR_VERSION,
        "versions": versions, "models": models})


# ---------------------------------------------------------------------------------------
# --verify: everything present, loaded back in TensorFlow, against the stored outputs


def load_case_inputs(root, entry):
    out = {}
    for k, d in entry["inputs"].items():
        out[k] = np.load(os.path.join(root, d["file"]))
    return out


def compare(stored, got, where, problems, rtol=1e-5, atol=1e-6):
    got = npy_safe(got)
    if stored.shape != got.shape or (stored.dtype != got.dtype and stored.dtype.kind != "S"):
        problems.append(f"{where}: {got.dtype}{got.shape}, stored {stored.dtype}{stored.shape}")
        return 0.0
    if stored.dtype.kind != "f":
        if not np.array_equal(stored, got):
            problems.append(f"{where}: differs")
        return 0.0
    if not np.allclose(got, stored, rtol=rtol, atol=atol, equal_nan=True):
        problems.append(f"{where}: max |diff| {np.max(np.abs(got - stored)):.3g}")
    return float(np.max(np.abs(got.astype("float64") - stored))) if got.size else 0.0


def verify_one(out_dir, name):
    root = os.path.join(out_dir, name)
    with open(os.path.join(root, "io.json"), encoding="utf-8") as f:
        info = json.load(f)
    problems, checked, worst = [], 0, 0.0
    if name == "tfrecord":
        for file, d in info["tfrecord"]["files"].items():
            comp = "" if d["compression"] == "NONE" else d["compression"]
            back = [r.numpy().hex() for r in tf.data.TFRecordDataset(os.path.join(root, file), compression_type=comp)]
            if back != [r["hex"] for r in info["tfrecord"]["records"]]:
                problems.append(f"{file}: records differ")
            checked += 1
        for n, r in enumerate(info["tfrecord"]["records"]):
            ex = tf.train.Example.FromString(bytes.fromhex(r["hex"]))
            if describe_example(ex) != r["features"]:
                problems.append(f"record {n}: TF parses {describe_example(ex)}, stored {r['features']}")
            checked += 1
        return problems, checked, worst
    cases = info.get("cases", [])

    def outputs_of(variant):
        for entry in cases:
            for signature, runs in entry["signatures"].items():
                if variant in runs:
                    yield entry, signature, runs[variant]

    def check(entry, signature, variant, run, got):
        nonlocal checked, worst
        for k, d in run["outputs"].items():
            if k not in got:
                problems.append(f"{entry['name']} {signature} {variant}: no output {k}")
                continue
            worst = max(worst, compare(np.load(os.path.join(root, d["file"])), got[k],
                                       f"{entry['name']} {variant}/{signature}/{k}", problems))
            checked += 1

    for variant in VARIANT_DIRS:
        if not os.path.isdir(os.path.join(root, variant)):
            continue
        loaded = tf.saved_model.load(os.path.join(root, variant))
        for entry, signature, run in outputs_of(variant):
            inputs = load_case_inputs(root, entry)
            kwargs = {n: tf.constant(inputs[src]) for n, src in run["feeds"].items()}
            check(entry, signature, variant, run, to_numpy(loaded.signatures[signature](**kwargs)))
        del loaded
    if os.path.exists(os.path.join(root, "frozen.pb")):
        graph_def = tf.compat.v1.GraphDef()
        with open(os.path.join(root, "frozen.pb"), "rb") as f:
            graph_def.ParseFromString(f.read())
        graph = tf.Graph()
        with graph.as_default():
            tf.compat.v1.import_graph_def(graph_def, name="")
        outs = info["frozen"]["outputs"]
        with tf.compat.v1.Session(graph=graph) as session:
            for entry, signature, run in outputs_of("frozen"):
                inputs = load_case_inputs(root, entry)
                values = session.run({k: outs[k] for k in run["outputs"]},
                                     {t: inputs[src] for t, src in run["feeds"].items()})
                check(entry, signature, "frozen", run, values)
    if os.path.exists(os.path.join(root, "model.keras")):
        m = keras.saving.load_model(os.path.join(root, "model.keras"))
        for entry, signature, run in outputs_of("keras"):
            check(entry, signature, "keras", run, keras_outputs(m, x_of({"inputs": load_case_inputs(root, entry)})))
    if os.path.exists(os.path.join(root, "model.h5")):
        m = tf_keras.models.load_model(os.path.join(root, "model.h5"), compile=False)
        for entry, signature, run in outputs_of("tf_keras"):
            check(entry, signature, "tf_keras", run,
                  keras_outputs(m, x_of({"inputs": load_case_inputs(root, entry)})))
    for subdir, lib in (("checkpoint", keras), ("tf_keras_checkpoint", tf_keras)):
        if subdir not in info:
            continue
        # Restore into the model as saved (model.keras / model.h5 hold the same structure).
        if lib is keras:
            m = keras.saving.load_model(os.path.join(root, "model.keras"))
            opt = keras.optimizers.Adam(1e-3)
        else:
            m = tf_keras.models.load_model(os.path.join(root, "model.h5"), compile=False)
            opt = tf_keras.optimizers.legacy.Adam(1e-3)
        # Slot variables are created by the first apply; build them before restoring.
        opt.build(m.trainable_weights) if lib is keras else \
            opt._create_all_weights(m.trainable_weights)  # noqa: SLF001
        status = tf.train.Checkpoint(model=m, optimizer=opt).restore(
            os.path.join(root, info[subdir]["prefix"]))
        status.assert_existing_objects_matched()
        for entry, signature, run in outputs_of(subdir):
            check(entry, signature, subdir, run, keras_outputs(m, x_of({"inputs": load_case_inputs(root, entry)})))
    return problems, checked, worst


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", nargs="?", default=DEFAULT_OUT)
    parser.add_argument("--apps", action="store_true", help="also the keras.applications tier")
    parser.add_argument("--only", default="", help="comma-separated model names (either tier)")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    parser.add_argument("--verify", action="store_true",
                        help="load what is present in TensorFlow and check the stored outputs")
    parser.add_argument("--force", action="store_true", help="remake models that are present")
    args = parser.parse_args(argv[1:])
    versions = package_versions()
    if args.only:
        names = [n for n in args.only.split(",") if n]
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            print(f"make-tf-models: unknown model(s) {', '.join(unknown)}; --list lists them", file=sys.stderr)
            return 2
    else:
        names = [n for n, m in MODELS.items() if m.tier == "default"]
        if args.apps:
            names += [n for n, m in MODELS.items() if m.tier == "apps"]
    if args.list:
        for n, m in MODELS.items():
            state = "present" if present(args.out_dir, n, versions) else "missing"
            print(f"{n:16} {m.tier:8} {state:8} {m.description}")
        return 0
    if versions["tensorflow"] is None:
        print("make-tf-models: TensorFlow is not installed for this interpreter "
              f"({sys.executable}); run it with .venv-peers/bin/python (make peers)", file=sys.stderr)
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, ".lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one writer at a time (make -j, two checkouts' scripts)
        if args.verify:
            return verify(args.out_dir, names, versions)
        return make(args.out_dir, names, versions, args.force)


def make(out_dir, names, versions, force):
    start = time.time()
    for stale in os.listdir(out_dir):
        if stale.startswith((".tmp-", ".old-")):
            shutil.rmtree(os.path.join(out_dir, stale), ignore_errors=True)
    todo = [n for n in names if force or not present(out_dir, n, versions)]
    for n in names:
        if n not in todo:
            log(f"{n}: present, skipped")
    failures = []
    if todo:
        load_tf()
        log(f"make-tf-models: tensorflow {tf.__version__}, keras {keras.__version__}, "
            f"tf_keras {tf_keras.__version__}; making {', '.join(todo)} into {out_dir}")
        for n in todo:
            try:
                make_one(out_dir, n, versions)
            except Exception as e:  # noqa: BLE001 (the others still get made; the exit status says it)
                import traceback
                traceback.print_exc()
                log(f"{n}: FAILED: {type(e).__name__}: {e}")
                failures.append(n)
        log(f"make-tf-models: {len(todo) - len(failures)} made, {len(names) - len(todo)} present, "
            f"{len(failures)} failed, in {time.time() - start:.1f} s")
    write_manifest(out_dir, versions)
    return 1 if failures else 0


def verify(out_dir, names, versions):
    load_tf()
    bad = 0
    for n in names:
        if not read_done(out_dir, n):
            log(f"{n}: not present: not verified")
            bad += 1
            continue
        stale = "" if present(out_dir, n, versions) else " (stale: made by another generator or versions)"
        start = time.time()
        try:
            problems, checked, worst = verify_one(out_dir, n)
        except Exception as e:  # noqa: BLE001
            problems, checked, worst = [f"{type(e).__name__}: {e}"], 0, 0.0
        if problems:
            bad += 1
            log(f"{n}: VERIFY FAILED ({len(problems)} problems): " + "; ".join(problems[:5]))
        else:
            log(f"{n}: verified {checked} stored outputs, max |diff| {worst:.3g}, in "
                f"{time.time() - start:.1f} s{stale}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
