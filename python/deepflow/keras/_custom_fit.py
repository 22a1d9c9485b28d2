# SPDX-License-Identifier: Apache-2.0
"""fit / evaluate / predict in Python, for what the C++ loop does not take: a model that
overrides train_step or test_step (Keras's "customize what happens in fit" contract), and
tf.data datasets. train_step runs as a tf.function (unless run_eagerly), once per batch;
Python callbacks are called here; the progress is one line per epoch."""
import sys
import time

import numpy as np

from .. import nest
from ..backprop import GradientTape
from .._function import function


def is_dataset(x):
    return hasattr(x, "_df_dataset") or type(x).__name__ in ("Dataset", "DatasetV2", "_Dataset")


def _unpack(data):
    if isinstance(data, tuple):
        if len(data) == 1:
            return data[0], None, None
        if len(data) == 2:
            return data[0], data[1], None
        return data[0], data[1], data[2]
    return data, None, None


def compute_loss(model, y, y_pred, sample_weight):
    from .. import _ops
    loss_fn = model.__dict__.get("_df_loss_object")
    total = None
    if loss_fn is not None:
        total = loss_fn(y, y_pred, sample_weight)
    for extra in model.losses:
        total = extra if total is None else _ops.add(total, extra)
    if total is None:
        raise ValueError("[Model.compute_loss] no loss: compile the model with a loss or override train_step")
    tracker = _compiled(model)[0]
    if tracker is not None:
        tracker.update_state(total)
    return total


def _compiled(model):
    """The loss tracker and the compiled metrics: the C++ model's metric objects."""
    from .metrics import _wrap_cpp_metric
    ms = [_wrap_cpp_metric(m) for m in model._metrics]
    if ms and ms[0].name == "loss":
        return ms[0], ms[1:]
    return None, ms


def compute_metrics(model, y, y_pred, sample_weight):
    for m in _compiled(model)[1]:
        m.update_state(y, y_pred, sample_weight)
    return {m.name: m.result() for m in model.metrics}


def default_train_step(model, data):
    x, y, sw = _unpack(data)
    with GradientTape() as tape:
        y_pred = model(x, training=True)
        loss = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sw)
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    model.optimizer.apply_gradients(zip(grads, variables))
    return model.compute_metrics(x, y, y_pred, sw)


def default_test_step(model, data):
    x, y, sw = _unpack(data)
    y_pred = model(x, training=False)
    model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sw)
    return model.compute_metrics(x, y, y_pred, sw)


def _batches(x, y, sample_weight, batch_size, shuffle, rng):
    if is_dataset(x):
        yield from iter(x)
        return
    xs = nest.flatten(x)
    n = len(xs[0])
    order = rng.permutation(n) if shuffle else np.arange(n)
    for start in range(0, n, batch_size):
        idx = order[start:start + batch_size]
        take = (lambda a: np.asarray(a)[idx])
        bx = nest.pack_sequence_as(x, [take(a) for a in xs])
        if y is None:
            yield (bx,)
        elif sample_weight is None:
            yield bx, nest.map_structure(take, y)
        else:
            yield bx, nest.map_structure(take, y), take(sample_weight)


def _logs(values):
    return {k: float(np.asarray(v.numpy() if hasattr(v, "numpy") else v)) for k, v in values.items()}


def _print_epoch(steps, seconds, logs):
    text = " - ".join(f"{k}: {v:.4f}" for k, v in logs.items())
    sys.stdout.write(f"{steps}/{steps} - {seconds:.0f}s {seconds / max(steps, 1) * 1000:.0f}ms/step - {text}\n")
    sys.stdout.flush()


def _step_fn(model, name):
    cache = model.__dict__.setdefault("_df_step_fns", {})
    fn = cache.get(name)
    if fn is None:
        step = getattr(model, name)
        fn = step if model.run_eagerly else function(step)
        cache[name] = fn
    return fn


def _check_callbacks(callbacks):
    from .callbacks import Callback
    for cb in callbacks:
        if not isinstance(cb, Callback):
            raise NotImplementedError(f"[Model.fit] {type(cb).__name__} is a C++ callback, which this loop "
                                      "(a custom train_step or a Dataset) does not run yet")


def fit_python(model, x, y, batch_size, epochs, verbose, callbacks, validation_split, validation_data, shuffle,
               sample_weight, initial_epoch, steps_per_epoch):
    from ._model import History
    _check_callbacks(callbacks)
    if validation_split and not is_dataset(x):
        n = len(nest.flatten(x)[0])
        cut = int(n * (1 - validation_split))
        split = lambda a: (np.asarray(a)[:cut], np.asarray(a)[cut:])  # noqa: E731
        xs = [split(a) for a in nest.flatten(x)]
        x, vx = nest.pack_sequence_as(x, [a for a, _ in xs]), nest.pack_sequence_as(x, [b for _, b in xs])
        ys = [split(a) for a in nest.flatten(y)]
        y, vy = nest.pack_sequence_as(y, [a for a, _ in ys]), nest.pack_sequence_as(y, [b for _, b in ys])
        validation_data = (vx, vy)
    history = History(model=model, params={"epochs": epochs, "verbose": verbose})
    train = _step_fn(model, "train_step")
    rng = np.random.default_rng()
    for cb in callbacks:
        cb.set_model(model)
        cb.on_train_begin({})
    model.stop_training = False
    for epoch in range(initial_epoch, epochs):
        for m in model.metrics:
            m.reset_state()
        for cb in callbacks:
            cb.on_epoch_begin(epoch, {})
        if verbose:
            print(f"Epoch {epoch + 1}/{epochs}")
        start = time.time()
        logs = {}
        steps = 0
        for step, batch in enumerate(_batches(x, y, sample_weight, int(batch_size or 32), shuffle, rng)):
            if steps_per_epoch is not None and step >= steps_per_epoch:
                break
            for cb in callbacks:
                cb.on_train_batch_begin(step, logs)
            logs = _logs(train(batch if isinstance(batch, tuple) else (batch,)))
            steps += 1
            for cb in callbacks:
                cb.on_train_batch_end(step, logs)
            if model.stop_training:
                break
        if validation_data is not None:
            val = evaluate_python(model, validation_data[0] if not is_dataset(validation_data) else validation_data,
                                  None if is_dataset(validation_data) else validation_data[1], batch_size, 0, None)
            logs.update({f"val_{k}": v for k, v in val.items()})
        for k, v in logs.items():
            history.history.setdefault(k, []).append(v)
        history.epoch.append(epoch)
        for cb in callbacks:
            cb.on_epoch_end(epoch, logs)
        if verbose:
            _print_epoch(steps, time.time() - start, logs)
        if model.stop_training:
            break
    for cb in callbacks:
        cb.on_train_end(logs)
    model.history = history
    return history


def evaluate_python(model, x, y, batch_size, verbose, steps):
    test = _step_fn(model, "test_step")
    for m in model.metrics:
        m.reset_state()
    logs = {}
    for i, batch in enumerate(_batches(x, y, None, int(batch_size or 32), False, None)):
        if steps is not None and i >= steps:
            break
        logs = _logs(test(batch if isinstance(batch, tuple) else (batch,)))
    return logs


def predict_python(model, x, steps):
    outs = []
    for i, batch in enumerate(iter(x)):
        if steps is not None and i >= steps:
            break
        bx = batch[0] if isinstance(batch, tuple) else batch
        outs.append(nest.flatten(model(bx, training=False)))
    return [np.concatenate([o[j].numpy() for o in outs]) for j in range(len(outs[0]))] if outs else []
