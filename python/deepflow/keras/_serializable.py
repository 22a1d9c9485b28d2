# SPDX-License-Identifier: Apache-2.0
"""What initializers, regularizers and schedules share: a Keras class name and a config,
which is how the C++ side makes the matching object ({"class_name", "config"})."""
import json


class KerasObject:
    _keras_class = None

    def __init__(self, **config):
        self._config = dict(config)

    def get_config(self):
        return dict(self._config)

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def _df_keras_config(self):
        return {"class_name": self._keras_class, "config": self.get_config()}

    def _df_config_json(self):
        return json.dumps(self._df_keras_config())


def keras_class(base, cls_name, names, module):
    """A subclass of base named cls_name whose positional arguments are `names`."""
    def __init__(self, *args, **kwargs):
        for k, v in zip(names, args):
            kwargs[k] = v
        base.__init__(self, **kwargs)
    return type(cls_name, (base,), {"__init__": __init__, "_keras_class": cls_name, "__module__": module})
