# SPDX-License-Identifier: Apache-2.0
"""tf.keras.Model and Sequential over deepflow::keras::Model: compile / fit / evaluate /
predict run the C++ training loop (a traced train step, the progress bar, callbacks),
with the GIL released. A subclass that overrides train_step or test_step gets the Python
loop of _custom_fit.py instead, as Keras runs a custom train_step."""
from .. import _deepflow
from .._traceback import filter_traceback
from .. import nest
from ._layer import LayerAPI, _to_tensor


class History:
    """What fit returns: history[metric] is one value per epoch."""

    def __init__(self, history=None, epoch=None, params=None, model=None):
        self.history = dict(history or {})
        self.epoch = list(epoch or [])
        self.params = params or {}
        self.model = model

    def __repr__(self):
        return f"<History epochs={len(self.epoch)} keys={sorted(self.history)}>"


def _xs(x):
    """Model inputs or targets as a flat list of tensors (numpy arrays without a copy)."""
    if x is None:
        return None
    if isinstance(x, dict):
        return [_to_tensor(x[k]) for k in sorted(x)]
    return [_to_tensor(v) for v in nest.flatten(x)]


def _flat_elements(ds):
    """True when a dataset's elements are flat (a tensor or a tuple of tensors), as the C++
    loop reads them: the model's inputs first, then the targets."""
    spec = ds.element_spec
    return not isinstance(spec, dict) and all(not nest.is_nested(s) for s in (
        spec if isinstance(spec, tuple) else (spec,)))


def _flat_xy(ds):
    spec = ds.element_spec
    return isinstance(spec, tuple) and len(spec) >= 2 and _flat_elements(ds)


def _verbose(v):
    return 1 if v == "auto" else int(v)


class ModelAPI:
    """compile / fit / evaluate / predict and the rest of tf.keras.Model's API."""

    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly=False, steps_per_execution=1, jit_compile="auto", auto_scale_loss=True, **kwargs):
        from . import losses as losses_mod, metrics as metrics_mod, optimizers as opt_mod
        opt = opt_mod.get(optimizer)
        object.__setattr__(self, "_df_optimizer", opt)
        loss_list = loss if isinstance(loss, (list, tuple)) else ([] if loss is None else [loss])
        if isinstance(loss, dict):
            loss_list = [loss[n] for n in self.output_names]
        cpp_losses = [losses_mod._cpp_loss(l) for l in loss_list]
        metric_list = []
        for m in nest.flatten(metrics) if metrics is not None else []:
            metric_list.append(metrics_mod._cpp_metric(m))
        lw = []
        if isinstance(loss_weights, dict):
            lw = [float(loss_weights[n]) for n in self.output_names]
        elif loss_weights is not None:
            lw = [float(w) for w in loss_weights]
        object.__setattr__(self, "_df_compile_args", dict(optimizer=opt, loss=loss, metrics=metrics))
        # What a Python train_step's compute_loss uses (the C++ loop has its own copy).
        object.__setattr__(self, "_df_loss_object", losses_mod._python_loss(loss_list[0]) if len(loss_list) == 1
                           else None)
        object.__setattr__(self, "_df_run_eagerly", bool(run_eagerly))
        self._compile(opt._impl, cpp_losses, metric_list, lw, bool(run_eagerly))

    @property
    def optimizer(self):
        return self.__dict__.get("_df_optimizer")

    @property
    def run_eagerly(self):
        return self.__dict__.get("_df_run_eagerly", False)

    @property
    def metrics_names(self):
        return [m.name for m in self._metrics]

    def _custom_steps(self):
        cls = type(self)
        return any(getattr(cls, n) is not getattr(ModelAPI, n) for n in ("train_step", "test_step"))

    @filter_traceback
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None, validation_freq=1, **kwargs):
        if class_weight is not None:
            raise NotImplementedError("[Model.fit] class_weight is not supported yet; pass sample_weight")
        from ._custom_fit import fit_python, is_dataset
        from .callbacks import _cpp_callbacks
        cbs = list(callbacks or [])
        if is_dataset(x) and not self._custom_steps() and _flat_xy(x):
            for cb in cbs:
                cb.set_model(self)
            val = validation_data if is_dataset(validation_data) and _flat_xy(validation_data) else None
            if validation_data is not None and val is None:
                from ._custom_fit import fit_python as _fp
                return _fp(self, x, y, batch_size, epochs, _verbose(verbose), cbs, validation_split,
                           validation_data, shuffle, sample_weight, initial_epoch, steps_per_epoch)
            h = self._fit_dataset(x._ds, int(epochs), _verbose(verbose), _cpp_callbacks(cbs), int(initial_epoch),
                                  -1 if steps_per_epoch is None else int(steps_per_epoch),
                                  None if val is None else val._ds)
            hist = History(h["history"], h["epoch"], {"epochs": epochs, "verbose": _verbose(verbose)}, self)
            object.__setattr__(self, "history", hist)
            return hist
        if self._custom_steps() or is_dataset(x):
            return fit_python(self, x, y, batch_size, epochs, _verbose(verbose), cbs, validation_split,
                              validation_data, shuffle, sample_weight, initial_epoch, steps_per_epoch)
        vx = vy = None
        if validation_data is not None:
            vx, vy = validation_data[0], validation_data[1]
        hist = History(model=self, params={"epochs": epochs, "verbose": _verbose(verbose)})
        for cb in cbs:
            cb.set_model(self)
        h = self._fit(_xs(x), _xs(y), int(batch_size or 32), int(epochs), _verbose(verbose), _cpp_callbacks(cbs),
                      float(validation_split), _xs(vx), _xs(vy), bool(shuffle), int(initial_epoch),
                      None if sample_weight is None else _to_tensor(sample_weight), None)
        hist.history, hist.epoch = h["history"], h["epoch"]
        object.__setattr__(self, "history", hist)
        for cb in cbs:
            if hasattr(cb, "_df_history"):
                cb._df_history(hist)
        return hist

    @filter_traceback
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False, **kwargs):
        from ._custom_fit import evaluate_python, is_dataset
        from .callbacks import _cpp_callbacks
        if is_dataset(x) and not self._custom_steps() and _flat_xy(x) and steps is None:
            logs = self._evaluate_dataset(x._ds, _verbose(verbose), _cpp_callbacks(list(callbacks or [])))
        elif self._custom_steps() or is_dataset(x):
            logs = evaluate_python(self, x, y, batch_size, _verbose(verbose), steps)
        else:
            logs = self._evaluate(_xs(x), _xs(y), int(batch_size or 32), _verbose(verbose),
                                  _cpp_callbacks(list(callbacks or [])))
        if return_dict:
            return dict(logs)
        names = self.metrics_names
        values = [logs[n] for n in names if n in logs] or list(logs.values())
        return values[0] if len(values) == 1 else values

    @filter_traceback
    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None, **kwargs):
        from ._custom_fit import is_dataset, predict_python
        if is_dataset(x) and steps is None and _flat_elements(x):
            outs = [t.numpy() for t in self._predict_dataset(x._ds, _verbose(verbose))]
        elif is_dataset(x):
            outs = predict_python(self, x, steps)
        else:
            outs = [t.numpy() for t in self._predict(_xs(x), int(batch_size or 32), _verbose(verbose))]
        return outs[0] if len(outs) == 1 else outs

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        logs = self._train_on_batch(_xs(x), _xs(y), None if sample_weight is None else _to_tensor(sample_weight))
        return dict(logs) if return_dict else (list(logs.values())[0] if len(logs) == 1 else list(logs.values()))

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        logs = self._test_on_batch(_xs(x), _xs(y))
        return dict(logs) if return_dict else (list(logs.values())[0] if len(logs) == 1 else list(logs.values()))

    def predict_on_batch(self, x):
        outs = [t.numpy() for t in self._predict(_xs(x), 1 << 30, 0)]
        return outs[0] if len(outs) == 1 else outs

    # --- the hooks a subclass may override (Keras's custom train_step contract) ---
    def train_step(self, data):
        from ._custom_fit import default_train_step
        return default_train_step(self, data)

    def test_step(self, data):
        from ._custom_fit import default_test_step
        return default_test_step(self, data)

    def predict_step(self, data):
        x = data[0] if isinstance(data, tuple) else data
        return self(x, training=False)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        from ._custom_fit import compute_loss
        return compute_loss(self, y, y_pred, sample_weight)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        from ._custom_fit import compute_metrics
        return compute_metrics(self, y, y_pred, sample_weight)

    @property
    def metrics(self):
        from .metrics import _wrap_cpp_metric
        return [_wrap_cpp_metric(m) for m in self._metrics]

    # --- the rest ---
    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
                layer_range=None):
        text = self._summary()
        (print_fn or print)(text)

    @property
    def layers(self):
        return list(self._model_layers())

    def get_layer(self, name=None, index=None):
        layers = self.layers
        if index is not None:
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: {[l.name for l in layers]}.")

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        """model.save: a SavedModel directory (zipped is not used; include_optimizer=False
        leaves the optimizer state out, as tf-keras did)."""
        from ._saving import save_model
        save_model(self, filepath, overwrite=overwrite, **kwargs)

    def export(self, filepath, format="tf_saved_model", verbose=True, input_signature=None, **kwargs):
        from ._saving import export
        export(self, filepath, format=format, verbose=verbose, input_signature=input_signature, **kwargs)

    def save_weights(self, filepath, overwrite=True, **kwargs):
        self._save_weights(str(filepath))

    def load_weights(self, filepath, skip_mismatch=False, **kwargs):
        self._load_weights(str(filepath))

    @property
    def inputs(self):
        return list(self._inputs)

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def output_names(self):
        return [f"output_{i}" for i in range(max(1, len(self._outputs)))]

    def to_json(self, **kwargs):
        return self._to_json()

    def _df_class_name(self):
        return type(self).__name__ if type(self).__name__ not in ("Model",) else (
            "Functional" if self._inputs else "Model")


class Model(ModelAPI, LayerAPI, _deepflow._Model):
    """tf.keras.Model: functional (Model(inputs, outputs)) or subclassed (override call)."""

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", args[0] if len(args) > 0 else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        name = kwargs.pop("name", None)
        trainable = kwargs.pop("trainable", True)
        dtype = kwargs.pop("dtype", None)
        if inputs is not None and outputs is not None:
            in_flat, out_flat = nest.flatten(inputs), nest.flatten(outputs)
            _deepflow._Model.__init__(self, in_flat, out_flat, name or "")
            object.__setattr__(self, "_df_io", (inputs, outputs))
        else:
            _deepflow._Model.__init__(self, name or "")
            object.__setattr__(self, "_df_io", None)
        self._df_init(trainable, dtype, name)

    def _df_call(self, flat_inputs, training):
        if self.__dict__.get("_df_io") is not None:
            out = self._functional_call(list(flat_inputs), bool(training))
            if self._df_frames:
                frame = self._df_frames[-1]
                self._df_frames[-1] = frame[:3] + (nest.pack_sequence_as(self._df_io[1], list(out)),)
            return out
        return LayerAPI._df_call(self, flat_inputs, training)

    def call(self, *args, **kwargs):
        raise NotImplementedError(f"[{type(self).__name__}] a subclassed Model must define call()")


class Sequential(ModelAPI, LayerAPI, _deepflow._Sequential):
    """tf.keras.Sequential(layers=None, name=None)."""

    def __init__(self, layers=None, trainable=True, name=None):
        _deepflow._Sequential.__init__(self, [], name or "")
        self._df_init(trainable, None, name)
        for layer in layers or []:
            self.add(layer)

    def add(self, layer, rebuild=True):
        if _deepflow._is_keras_tensor(layer) if isinstance(layer, _deepflow.Tensor) else False:
            from .layers import InputLayer
            layer = InputLayer(shape=layer.shape.as_list()[1:], dtype=layer.dtype.name)
        elif not self._model_layers() and getattr(layer, "_df_input_shape", None) is not None:
            from .layers import InputLayer  # Keras 2's Dense(..., input_shape=(784,)) on the first layer
            _deepflow._Sequential.add(self, InputLayer(shape=layer._df_input_shape))
        _deepflow._Sequential.add(self, layer)

    def build(self, input_shape=None):
        if input_shape is not None:
            self._build_shape([-1 if d is None else int(d) for d in input_shape])

    def _df_class_name(self):
        return "Sequential"


def Input(shape=None, batch_size=None, dtype=None, sparse=None, ragged=None, batch_shape=None, name=None, tensor=None,
          optional=False, **kwargs):
    """tf.keras.Input: a symbolic Keras tensor [batch, *shape] to build functional models."""
    from .. import dtypes
    if batch_shape is not None:
        batch_size, shape = batch_shape[0], batch_shape[1:]
    dims = [-1 if d is None else int(d) for d in (shape or [])]
    dt = dtypes.as_dtype(dtype or "float32")
    return _deepflow._keras_input(dims, name or "", dt._enum, batch_size)

