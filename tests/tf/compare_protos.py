# SPDX-License-Identifier: Apache-2.0
"""Compares proto/tensorflow/*.proto with TensorFlow's own compiled protos.

    python compare_protos.py DESCRIPTOR_SET

DESCRIPTOR_SET is `protoc --include_imports --descriptor_set_out` of our files. For every
message and enum we declare, TensorFlow's (same full name, from the tensorflow package's
*_pb2 modules) must have the same fields (name, number, type, label, message or enum
type) and values, both ways. Prints "ok" or each difference, and exits 1 on any.
"""
import importlib
import sys

from google.protobuf import descriptor_pb2, descriptor_pool

MODULES = [
    "tensorflow.core.framework." + m for m in (
        "types_pb2", "tensor_shape_pb2", "resource_handle_pb2", "tensor_pb2", "attr_value_pb2",
        "full_type_pb2", "node_def_pb2", "versions_pb2", "op_def_pb2", "function_pb2", "graph_pb2",
        "graph_debug_info_pb2", "variable_pb2", "tensor_slice_pb2")
] + [
    "tensorflow.core.protobuf." + m for m in (
        "saver_pb2", "struct_pb2", "trackable_object_graph_pb2", "saved_object_graph_pb2",
        "meta_graph_pb2", "saved_model_pb2", "tensor_bundle_pb2", "fingerprint_pb2")
]


def field_sig(f):
    type_name = f.message_type.full_name if f.message_type else (f.enum_type.full_name if f.enum_type else "")
    repeated = f.is_repeated if hasattr(f, "is_repeated") else f.label == f.LABEL_REPEATED
    return (f.number, f.type, repeated, type_name)


def compare_message(ours, theirs, problems):
    a = {f.name: field_sig(f) for f in ours.fields}
    b = {f.name: field_sig(f) for f in theirs.fields}
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            problems.append("%s.%s: ours %s, TensorFlow's %s" % (ours.full_name, name, a.get(name), b.get(name)))
    for nested in ours.nested_types:
        if nested.GetOptions().map_entry:
            continue
        compare_message(nested, theirs.nested_types_by_name.get(nested.name) or missing(nested, problems), problems)
    for e in ours.enum_types:
        compare_enum(e, theirs.enum_types_by_name.get(e.name), problems)


def missing(d, problems):
    problems.append("%s: TensorFlow has no such message" % d.full_name)
    return d


def compare_enum(ours, theirs, problems):
    if theirs is None:
        problems.append("%s: TensorFlow has no such enum" % ours.full_name)
        return
    a = {v.name: v.number for v in ours.values}
    b = {v.name: v.number for v in theirs.values}
    if a != b:
        problems.append("%s: values differ: only ours %s, only TensorFlow's %s" % (
            ours.full_name, sorted(set(a.items()) - set(b.items())), sorted(set(b.items()) - set(a.items()))))


def main():
    for m in MODULES:
        importlib.import_module(m)
    theirs = descriptor_pool.Default()
    files = descriptor_pb2.FileDescriptorSet()
    with open(sys.argv[1], "rb") as f:
        files.ParseFromString(f.read())
    ours = descriptor_pool.DescriptorPool()
    for fd in files.file:
        ours.Add(fd)
    problems = []
    count = 0
    for fd in files.file:
        if not fd.name.startswith("tensorflow/"):
            continue
        d = ours.FindFileByName(fd.name)
        for msg in d.message_types_by_name.values():
            count += 1
            try:
                other = theirs.FindMessageTypeByName(msg.full_name)
            except KeyError:
                problems.append("%s: TensorFlow has no such message" % msg.full_name)
                continue
            compare_message(msg, other, problems)
        for e in d.enum_types_by_name.values():
            count += 1
            try:
                other = theirs.FindEnumTypeByName(e.full_name)
            except KeyError:
                other = None
            compare_enum(e, other, problems)
    for p in problems:
        print(p)
    print("compared %d messages and enums: %s" % (count, "ok" if not problems else "%d differences" % len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
