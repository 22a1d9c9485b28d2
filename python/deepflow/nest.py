# SPDX-License-Identifier: Apache-2.0
"""tf.nest: nested structures of lists, tuples, namedtuples and dicts (dict leaves in
sorted key order, as TensorFlow flattens them); None is a leaf."""
import collections

__all__ = ["flatten", "pack_sequence_as", "map_structure", "is_nested", "assert_same_structure"]


def is_nested(structure):
    return isinstance(structure, (list, tuple, dict, collections.abc.Mapping)) and not isinstance(structure, str)


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _children(structure):
    if isinstance(structure, collections.abc.Mapping):
        return [structure[k] for k in sorted(structure)]
    return list(structure)


def flatten(structure, expand_composites=False):
    if not is_nested(structure):
        return [structure]
    out = []
    for c in _children(structure):
        out.extend(flatten(c))
    return out


def _rebuild(structure, children):
    if isinstance(structure, collections.abc.Mapping):
        keys = sorted(structure)
        d = dict(zip(keys, children))
        return type(structure)((k, d[k]) for k in structure)
    if _is_namedtuple(structure):
        return type(structure)(*children)
    if isinstance(structure, tuple):
        return tuple(children)
    return list(children)


def _pack(structure, flat, i):
    if not is_nested(structure):
        return flat[i], i + 1
    children = []
    for c in _children(structure):
        v, i = _pack(c, flat, i)
        children.append(v)
    return _rebuild(structure, children), i


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    flat_sequence = list(flat_sequence)
    n = len(flatten(structure))
    if n != len(flat_sequence):
        raise ValueError(f"The target structure is of type {type(structure)}\n  {structure}\nHowever the "
                         f"input has {len(flat_sequence)} items, while the structure has {n}.")
    v, _ = _pack(structure, flat_sequence, 0)
    return v


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    if is_nested(nest1) != is_nested(nest2):
        raise ValueError(f"The two structures don't have the same nested structure.\n\nFirst structure: "
                         f"{nest1}\n\nSecond structure: {nest2}")
    if not is_nested(nest1):
        return
    if check_types and type(nest1) is not type(nest2) and not (
            isinstance(nest1, (list, tuple)) and isinstance(nest2, (list, tuple)) and not check_types):
        raise TypeError(f"The two structures don't have the same sequence type. First structure has type "
                        f"{type(nest1)}, while second structure has type {type(nest2)}.")
    c1, c2 = _children(nest1), _children(nest2)
    if len(c1) != len(c2):
        raise ValueError(f"The two structures don't have the same number of elements.\n\nFirst structure: "
                         f"{nest1}\n\nSecond structure: {nest2}")
    if isinstance(nest1, collections.abc.Mapping) and sorted(nest1) != sorted(nest2):
        raise ValueError("The two dictionaries don't have the same set of keys.")
    for a, b in zip(c1, c2):
        assert_same_structure(a, b, check_types)


def map_structure(func, *structure, **kwargs):
    if not structure:
        raise ValueError("Must provide at least one structure")
    for s in structure[1:]:
        assert_same_structure(structure[0], s, check_types=kwargs.get("check_types", True))
    flats = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*xs) for xs in zip(*flats)])
