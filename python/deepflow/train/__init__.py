# SPDX-License-Identifier: Apache-2.0
"""tf.train: object-based checkpoints (Checkpoint, CheckpointManager, latest_checkpoint)
over deepflow/io/checkpoint.h, with TensorFlow's object paths as keys
("model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE", "step/.ATTRIBUTES/...").

The Python objects given to Checkpoint are walked when it saves or restores: variables,
Keras layers and models, optimizers and dataset iterators are leaves; tf.Modules, dicts,
lists and other objects are nodes named by their attributes. Restoring into a Keras model that has no weights yet (never built or called) is
deferred as in TensorFlow: its values (and its optimizer slots) are assigned as its
layers are built, before they first compute.
"""
import os

from .. import _deepflow
from .._module import trackable_children as _trackable_children


class CheckpointOptions:
    """Accepted for TensorFlow's signature; deepflow writes one local bundle."""

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False, **kwargs):
        self.experimental_io_device = experimental_io_device
        self.enable_async = enable_async or experimental_enable_async_checkpoint


def _leaf(obj):
    """The C++ object a checkpoint saves for a Python leaf, or None for a node."""
    from ..data._iterator import OwnedIterator
    from ..keras.optimizers import Optimizer
    if isinstance(obj, _deepflow.Variable):
        return obj
    if isinstance(obj, Optimizer):
        return obj._impl
    if isinstance(obj, OwnedIterator):
        return obj._it
    return None


def _layer_tree(layer, seen):
    """A Keras layer as TensorFlow names its checkpoint keys: a built-in layer is its C++
    layer (weights by their own names, "kernel"); Sequential and functional models number
    their layers that have weights ("layer_with_weights-0"); a subclassed layer or model
    is named by its attributes ("l1"), with weights made by add_weight but not kept in an
    attribute under their own names."""
    from ..keras._layer import LayerAPI
    from ..keras._model import Sequential
    impl = layer.__dict__.get("_df_impl")
    if impl is not None:
        return impl
    if not isinstance(layer, LayerAPI):
        return layer
    if isinstance(layer, Sequential) or layer.__dict__.get("_df_io") is not None:
        out, i = {}, 0
        for sub in layer.layers:
            if sub.weights:
                out[f"layer_with_weights-{i}"] = _tree(sub, seen)
                i += 1
        return out
    out = _node(layer, seen)
    covered = set(v._id for _, v in _flat(out) if isinstance(v, _deepflow.Variable))
    below = set(v._id for sub in layer._sublayers() for v in sub._weights)
    prefix = layer.name + "/"
    for v in layer._weights:
        if v._id not in covered and v._id not in below:
            name = v._name
            out[name[len(prefix):] if name.startswith(prefix) else name] = v
    return out


def _flat(tree, path=""):
    if isinstance(tree, dict):
        return [x for k, v in tree.items() for x in _flat(v, f"{path}/{k}")]
    return [(path, tree)]


def _node(obj, seen):
    out = {}
    for name, value in _trackable_children(obj):
        t = _tree(value, seen)
        if t is not None and t != {}:
            out[name] = t
    return out


def _tree(obj, seen):
    """A Python object -> nested dicts of leaves (what _deepflow._Checkpoint takes); None
    for an object that holds nothing a checkpoint saves."""
    leaf = _leaf(obj)
    if leaf is not None:
        return leaf
    if isinstance(obj, (int, float, str, bytes, bool, type(None))) or callable(obj) and not hasattr(obj, "__dict__"):
        return None
    if id(obj) in seen:
        return None
    seen.add(id(obj))
    if isinstance(obj, _deepflow._Layer):
        return _layer_tree(obj, seen)
    return _node(obj, seen)


def _layers_and_optimizers(tree):
    """The part of a tree that deferred restoration assigns: layers and optimizers only
    (not counters or iterators, which the first restore already set)."""
    if isinstance(tree, dict):
        out = {k: _layers_and_optimizers(v) for k, v in tree.items()}
        return {k: v for k, v in out.items() if v is not None and v != {}}
    return tree if isinstance(tree, (_deepflow._Layer, _deepflow._Optimizer)) else None


def _unbuilt_layers(tree):
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _unbuilt_layers(v)]
    return [tree] if isinstance(tree, _deepflow._Layer) and not tree._weights else []


class _Deferred:
    """A restore waiting for layers to be built: runs after each layer build until every
    object of the layers' part of the checkpoint found its value."""

    def __init__(self, checkpoint, path):
        self._checkpoint, self._path = checkpoint, path

    def __call__(self):
        part = _layers_and_optimizers(self._checkpoint._tree())
        status = _deepflow._Checkpoint(part).restore(self._path)
        status.expect_partial()
        if not status.unmatched_objects and not _unbuilt_layers(part):
            self.cancel()

    def cancel(self):
        from ..keras._layer import AFTER_BUILD
        if self in AFTER_BUILD:
            AFTER_BUILD.remove(self)


def _leaves(tree, path=""):
    if isinstance(tree, dict):
        return tuple(x for k in sorted(tree) for x in _leaves(tree[k], f"{path}/{k}"))
    return ((path, tree._id if isinstance(tree, _deepflow.Variable) else id(tree)),)


def _with_parent(file_prefix):
    """The prefix as a string, its directory created (as TensorFlow's save does)."""
    path = os.fspath(file_prefix)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    return path


class _Status:
    """What restore() returns: assert_consumed(), assert_existing_objects_matched(),
    expect_partial(), as TensorFlow's status object."""

    def __init__(self, impl, path):
        self._impl, self._path = impl, path

    def _check(self, method):
        if self._impl is None:
            raise AssertionError(f"No checkpoint specified (save_path={self._path!r}); nothing is being restored.")
        try:
            getattr(self._impl, method)()
        except Exception as e:  # the core's message names every key at fault
            raise AssertionError(str(e)) from None
        return self

    def assert_consumed(self):
        return self._check("assert_consumed")

    def assert_existing_objects_matched(self):
        return self._check("assert_existing_objects_matched")

    def assert_nontrivial_match(self):
        return self._check("assert_existing_objects_matched")

    def expect_partial(self):
        if self._impl is not None:
            self._impl.expect_partial()
        return self

    def run_restore_ops(self, session=None):
        pass

    def initialize_or_restore(self, session=None):
        pass


class Checkpoint:
    """tf.train.Checkpoint(root=None, **kwargs): saves and restores the objects given."""

    def __init__(self, root=None, **kwargs):
        for name, value in kwargs.items():
            if _tree(value, set()) is None:
                raise ValueError(f"`Checkpoint` was expecting a trackable object (an object derived from "
                                 f"`Trackable`), got {value!r}. If you believe this object should be trackable "
                                 f"(i.e. it is part of the TensorFlow Python API and manages state), please open "
                                 f"an issue.")
        self._root = root
        self._objects = dict(kwargs)
        self._impl = None
        self._leaf_ids = None
        self._deferred = None

    def _tree(self):
        tree = {}
        if self._root is not None:
            tree.update(_tree(self._root, set()) or {})
        seen = set()
        for name, value in self._objects.items():
            t = _tree(value, seen)
            if t is not None:
                tree[name] = t
        return tree

    def _current(self):
        """The C++ checkpoint of the objects as they are now (a new one when variables or
        objects were added since the last call; the save counter carries over)."""
        tree = self._tree()
        ids = _leaves(tree)
        if self._impl is None or ids != self._leaf_ids:
            from .._variables import Variable
            counter = None if self._impl is None else Variable._share(self._impl.save_counter).numpy()
            self._impl = _deepflow._Checkpoint(tree)
            if counter is not None:
                Variable._share(self._impl.save_counter).assign(counter)
            self._leaf_ids = ids
        return self._impl

    @property
    def save_counter(self):
        from .._variables import Variable
        return Variable._share(self._current().save_counter)

    def save(self, file_prefix, options=None):
        """Writes "<file_prefix>-<n>" (n = save_counter + 1) and records it in the
        directory's `checkpoint` file; returns the path."""
        return self._current().save(_with_parent(file_prefix))

    def write(self, file_prefix, options=None):
        """Writes exactly `file_prefix` (no counter, no `checkpoint` file); returns it."""
        return self._current().write(_with_parent(file_prefix))

    def restore(self, save_path, options=None):
        """Restores from a path save() or write() returned (or a directory's latest)."""
        if save_path is None:
            return _Status(None, None)
        path = os.fspath(save_path)
        if self._deferred is not None:
            self._deferred.cancel()
            self._deferred = None
        status = _Status(self._current().restore(path), path)
        if _unbuilt_layers(self._tree()):
            # The values for layers without weights yet are used when they are built, not
            # unused: no warning about them (assert_consumed still reports them).
            status._impl.expect_partial()
            from ..keras._layer import AFTER_BUILD
            self._deferred = _Deferred(self, path)
            AFTER_BUILD.append(self._deferred)
        return status

    def read(self, save_path, options=None):
        return self.restore(save_path, options)

    def __getattr__(self, name):
        objects = self.__dict__.get("_objects", {})
        if name in objects:
            return objects[name]
        raise AttributeError(f"'Checkpoint' object has no attribute '{name}'")


class CheckpointManager:
    """tf.train.CheckpointManager(checkpoint, directory, max_to_keep, ...): numbered
    checkpoints in one directory, the oldest deleted beyond max_to_keep."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None, init_fn=None,
                 last_checkpoint_step=None):
        if checkpoint_interval is not None or step_counter is not None or last_checkpoint_step is not None:
            raise NotImplementedError("[CheckpointManager] step_counter, checkpoint_interval and last_checkpoint_step "
                                      "are not supported yet")
        self._checkpoint = checkpoint
        self._args = (os.fspath(directory), max_to_keep, keep_checkpoint_every_n_hours, checkpoint_name)
        self._init_fn = init_fn
        self._impl = None
        self._for = None
        self._manager()

    def _manager(self):
        # The C++ manager holds one C++ checkpoint; when the Python objects changed it is
        # made again, recovering the kept checkpoints from the directory's state file.
        ckpt = self._checkpoint._current()
        if self._impl is None or self._for is not ckpt:
            directory, keep, hours, name = self._args
            self._impl = _deepflow._CheckpointManager(ckpt, directory, keep, hours, name)
            self._for = ckpt
        return self._impl

    @property
    def directory(self):
        return self._args[0]

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def latest_checkpoint(self):
        return self._manager().latest_checkpoint

    @property
    def checkpoints(self):
        return list(self._manager().checkpoints)

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        n = None if checkpoint_number is None else int(checkpoint_number)
        return self._manager().save(n)

    def restore_or_initialize(self):
        path = self._manager().restore_or_initialize()
        if path is None and self._init_fn is not None:
            self._init_fn()
        return path


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The newest checkpoint's prefix recorded in `checkpoint_dir`, or None."""
    return _deepflow._latest_checkpoint(os.fspath(checkpoint_dir))
