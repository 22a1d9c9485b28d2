# SPDX-License-Identifier: Apache-2.0
"""tf.keras.callbacks: Python subclasses of Callback (their on_* hooks run from the C++
training loop, through the trampoline) and the built-in callbacks (C++ ones)."""
from .. import _deepflow


class Callback(_deepflow._Callback):
    """Subclass and override on_epoch_end(epoch, logs) and friends; self.model is the model."""

    def __init__(self):
        _deepflow._Callback.__init__(self)
        self.model = None
        self.params = {}
        self.validation_data = None

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    # Keras's hooks (no-ops by default).
    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): pass
    def on_train_batch_end(self, batch, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_batch_begin(self, batch, logs=None): pass
    def on_batch_end(self, batch, logs=None): pass

    # What C++ calls: the logs as a dict the hook may change (on_epoch_end's are kept).
    def _df_on_train_begin(self, logs): self.on_train_begin(dict(logs))
    def _df_on_train_end(self, logs): self.on_train_end(dict(logs))
    def _df_on_epoch_begin(self, epoch, logs): self.on_epoch_begin(epoch, dict(logs))

    def _df_on_epoch_end(self, epoch, logs):
        d = dict(logs)
        self.on_epoch_end(epoch, d)
        return d

    def _df_on_train_batch_begin(self, batch, logs):
        self.on_train_batch_begin(batch, dict(logs))
        self.on_batch_begin(batch, dict(logs))

    def _df_on_train_batch_end(self, batch, logs):
        self.on_train_batch_end(batch, dict(logs))
        self.on_batch_end(batch, dict(logs))

    def _df_on_test_begin(self, logs): self.on_test_begin(dict(logs))
    def _df_on_test_end(self, logs): self.on_test_end(dict(logs))
    def _df_on_predict_begin(self, logs): self.on_predict_begin(dict(logs))
    def _df_on_predict_end(self, logs): self.on_predict_end(dict(logs))


class _Builtin:
    """A built-in callback: the C++ callback object it holds goes to fit."""

    def set_model(self, model):
        self.model = model


class EarlyStopping(_Builtin):
    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        if baseline is not None:
            raise NotImplementedError("[EarlyStopping] baseline is not supported yet")
        self._impl = _deepflow._early_stopping(monitor, float(min_delta), int(patience), mode,
                                               bool(restore_best_weights), int(start_from_epoch), int(verbose))


class ModelCheckpoint(_Builtin):
    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None):
        if save_freq != "epoch":
            raise NotImplementedError("[ModelCheckpoint] only save_freq='epoch' is supported")
        path = str(filepath).replace("{epoch:02d}", "{epoch}")
        self._impl = _deepflow._model_checkpoint(path, monitor, bool(save_best_only), mode, int(verbose))


class ReduceLROnPlateau(_Builtin):
    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0, **kwargs):
        self._impl = _deepflow._reduce_lr_on_plateau(monitor, float(factor), int(patience), mode, float(min_delta),
                                                     int(cooldown), float(min_lr), int(verbose))


class CSVLogger(_Builtin):
    def __init__(self, filename, separator=",", append=False):
        self._impl = _deepflow._csv_logger(str(filename), separator, bool(append))


class TerminateOnNaN(_Builtin):
    def __init__(self, raise_error=False):
        if raise_error:
            raise NotImplementedError("[TerminateOnNaN] raise_error=True is not supported yet: training stops "
                                      "without raising")
        self._impl = _deepflow._terminate_on_nan()


class LearningRateScheduler(_Builtin):
    def __init__(self, schedule, verbose=0):
        import inspect
        takes_lr = len(inspect.signature(schedule).parameters) >= 2
        self._impl = _deepflow._lr_scheduler((lambda e, lr: schedule(e, lr)) if takes_lr else
                                             (lambda e, lr: schedule(e)), int(verbose))


class LambdaCallback(Callback):
    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        for name, fn in (("on_epoch_begin", on_epoch_begin), ("on_epoch_end", on_epoch_end),
                         ("on_train_begin", on_train_begin), ("on_train_end", on_train_end),
                         ("on_train_batch_begin", on_train_batch_begin), ("on_train_batch_end", on_train_batch_end)):
            if fn is not None:
                setattr(self, name, fn)


class History(Callback):
    """Kept for code that passes one explicitly; fit returns its own History object."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def _df_history(self, h):
        self.history, self.epoch = h.history, h.epoch


def _cpp_callbacks(callbacks):
    out = []
    for cb in callbacks:
        if isinstance(cb, _Builtin):
            out.append(cb._impl)
        elif isinstance(cb, _deepflow._Callback):
            out.append(cb)
        else:
            raise TypeError(f"[Model.fit] a callback must be a tf.keras.callbacks.Callback, got {cb!r}")
    return out
