# SPDX-License-Identifier: Apache-2.0
"""tf.data.Options: pipeline-wide settings, given with Dataset.with_options.

Each option is None until set; merging (with_options on a dataset that has options)
takes the later value of every option that is set, as TensorFlow's options merge. The
core's Options (deepflow/data/dataset.h) has `deterministic` and the autotune budgets;
ThreadingOptions are kept for code that sets them but do not change the pools (the
core sizes its own threads from the autotune budget).
"""


class _OptionsBase:
    """Options with a fixed set of attributes: setting an unknown one is an error (TF's rule)."""

    _fields = ()
    _nested = {}

    def __init__(self, **kwargs):
        for f in self._fields:
            object.__setattr__(self, f, None)
        for f, cls in self._nested.items():
            object.__setattr__(self, f, cls())
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __setattr__(self, name, value):
        if name not in self._fields and name not in self._nested:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        if name in self._nested and not isinstance(value, self._nested[name]):
            raise TypeError(f"{type(self).__name__}.{name} must be a {self._nested[name].__name__}, got {value!r}")
        object.__setattr__(self, name, value)

    def _merge_into(self, other):
        """A copy of self with every option set in other taking other's value."""
        out = type(self)()
        for f in self._fields:
            v = getattr(other, f)
            object.__setattr__(out, f, v if v is not None else getattr(self, f))
        for f in self._nested:
            object.__setattr__(out, f, getattr(self, f)._merge_into(getattr(other, f)))
        return out

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, f) == getattr(other, f) for f in (*self._fields, *self._nested))

    def __repr__(self):
        items = ", ".join(f"{f}={getattr(self, f)!r}" for f in (*self._fields, *self._nested))
        return f"{type(self).__name__}({items})"


class AutotuneOptions(_OptionsBase):
    """tf.data.experimental.AutotuneOptions: enabled, cpu_budget, ram_budget (bytes)."""

    _fields = ("enabled", "cpu_budget", "ram_budget", "autotune_algorithm")


class ThreadingOptions(_OptionsBase):
    """tf.data.ThreadingOptions: accepted and kept, not applied (see the module doc)."""

    _fields = ("max_intra_op_parallelism", "private_threadpool_size")


class DistributeOptions(_OptionsBase):
    """tf.data.experimental.DistributeOptions: kept for tf.distribute code; one process
    reads the whole dataset, so auto-sharding does not apply."""

    _fields = ("auto_shard_policy", "num_devices")


class Options(_OptionsBase):
    """tf.data.Options."""

    _fields = ("deterministic", "experimental_deterministic", "experimental_slack",
               "experimental_external_state_policy", "experimental_symbolic_checkpoint",
               "experimental_warm_start")
    _nested = {"autotune": AutotuneOptions, "threading": ThreadingOptions,
               "experimental_distribute": DistributeOptions}

    def merge(self, options):
        """These options with every option set in `options` overriding (Options.merge)."""
        return self._merge_into(options)

    def _core(self):
        """(deterministic, autotune enabled, cpu_budget, ram_budget) for the C++ Options."""
        det = self.deterministic if self.deterministic is not None else self.experimental_deterministic
        a = self.autotune
        return (True if det is None else bool(det), True if a.enabled is None else bool(a.enabled),
                int(a.cpu_budget or 0), int(a.ram_budget or 0))
