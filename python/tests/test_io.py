# SPDX-License-Identifier: Apache-2.0
"""tf.io: TFRecord files and tf.train.Example parsing against TensorFlow 2.21 (the
oracle): files TensorFlow writes read here and ours read there, byte for byte, plain and
compressed; parse_single_example / parse_example give TensorFlow's tensors, eagerly and
inside a traced Dataset.map; errors are TensorFlow's classes with messages naming the
feature and the example."""
import gc
import os

import numpy as np
import pytest

import deepflow as tf
from tf_oracle import OracleError, assert_same, to_oracle_form

pytestmark = pytest.mark.filterwarnings("ignore:AutoGraph could not transform")

RECORDS = [b"", b"hello", bytes(range(256)) * 3, b"\x00" * 70000, b"last"]

WRITE_EXAMPLES = """
def example(i):
    f = {'x': tf.train.Feature(float_list=tf.train.FloatList(value=[i, i + 0.5, -i])),
         'label': tf.train.Feature(int64_list=tf.train.Int64List(value=[i * 7])),
         'name': tf.train.Feature(bytes_list=tf.train.BytesList(value=[b'n%d' % i])),
         'tags': tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(i)))),
         'words': tf.train.Feature(bytes_list=tf.train.BytesList(value=[b'w%d' % k for k in range(i % 3)]))}
    if i % 2:
        f['opt'] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(i)]))
    return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()
with tf.io.TFRecordWriter(path) as w:
    for i in range(5):
        w.write(example(i))
result = [example(i) for i in range(5)]
"""

# The same code in both: the feature spec, and SparseTensors as (indices, values, dense_shape).
PARSE = """
F = {'x': tf.io.FixedLenFeature([3], tf.float32), 'label': tf.io.FixedLenFeature([], tf.int64),
     'name': tf.io.FixedLenFeature([], tf.string), 'opt': tf.io.FixedLenFeature([1], tf.float32, default_value=[-1.0]),
     'tags': tf.io.VarLenFeature(tf.int64), 'words': tf.io.VarLenFeature(tf.string)}
def sp(d):
    return {k: (v.indices, v.values, v.dense_shape) if hasattr(v, 'dense_shape') else v for k, v in d.items()}
"""


def run_local(code, **variables):
    env = {"tf": tf, "np": np}
    env.update(variables)
    exec(code, env)
    return env["result"]


def compare(tf_oracle, code, **variables):
    code += "\n"  # the worker runs code with a newline as statements and takes `result`
    try:
        theirs = tf_oracle.run(code, **variables)
    except OracleError as e:
        expected = getattr(tf.errors, e.cls, None) or __builtins__[e.cls]
        with pytest.raises(expected):
            run_local(code, **variables)
        return None
    ours = run_local(code, **variables)
    assert_same(to_oracle_form(ours), theirs)
    return ours


@pytest.fixture
def examples(tmp_path, tf_oracle):
    path = str(tmp_path / "examples.tfrecord")
    return path, tf_oracle.run(WRITE_EXAMPLES, path=path)


@pytest.mark.parametrize("compression", ["", "ZLIB", "GZIP"])
def test_tfrecords_written_by_tensorflow(tmp_path, tf_oracle, compression):
    paths = [str(tmp_path / f"tf{i}.tfrecord") for i in range(2)]
    tf_oracle.run("for k, p in enumerate(paths):\n"
                  "    with tf.io.TFRecordWriter(p, options=c) as w:\n"
                  "        for r in records: w.write(r + b'%d' % k)\nresult = 1",
                  paths=paths, records=RECORDS, c=compression)
    ours = list(tf.data.TFRecordDataset(paths, compression_type=compression or None).as_numpy_iterator())
    assert ours == [r + b"%d" % k for k in range(2) for r in RECORDS]
    code = "list(tf.data.TFRecordDataset(paths, compression_type=c, num_parallel_reads=2).as_numpy_iterator())"
    assert list(run_local("result = " + code, paths=paths, c=compression)) == tf_oracle.run(code, paths=paths,
                                                                                               c=compression)


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_tfrecords_written_by_deepflow_read_by_tensorflow(tmp_path, tf_oracle, compression):
    path = str(tmp_path / "ours.tfrecord")
    with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type=compression)) as w:
        for r in RECORDS:
            w.write(r)
    theirs = tf_oracle.run("list(tf.data.TFRecordDataset(p, compression_type=c).as_numpy_iterator())",
                           p=path, c=compression)
    assert theirs == RECORDS


def test_missing_and_corrupt_tfrecord_files(tmp_path, tf_oracle):
    missing = str(tmp_path / "missing.tfrecord")
    with pytest.raises(OracleError) as info:
        tf_oracle.run("list(tf.data.TFRecordDataset(p).as_numpy_iterator())", p=missing)
    assert info.value.cls == "NotFoundError"
    ds = tf.data.TFRecordDataset(missing)  # opened when iterated, as in TensorFlow
    with pytest.raises(tf.errors.NotFoundError, match=r"^\[TFRecordDataset\] cannot open .*missing.tfrecord"):
        next(iter(ds))
    bad = tmp_path / "bad.tfrecord"
    with tf.io.TFRecordWriter(str(bad)) as w:
        w.write(b"payload")
    data = bytearray(bad.read_bytes())
    data[14] ^= 0xFF  # a payload byte: the data checksum no longer matches
    bad.write_bytes(bytes(data))
    with pytest.raises(OracleError) as info:
        tf_oracle.run("list(tf.data.TFRecordDataset(p).as_numpy_iterator())", p=str(bad))
    assert info.value.cls == "DataLossError"
    with pytest.raises(tf.errors.DataLossError, match="corrupted record at byte 0"):
        list(tf.data.TFRecordDataset(str(bad)))


def test_tfrecord_writer_commits_at_close(tmp_path):
    path = str(tmp_path / "w.tfrecord")
    with pytest.raises(RuntimeError):
        with tf.io.TFRecordWriter(path) as w:
            w.write(b"partial")
            raise RuntimeError("stop")
    assert not os.path.exists(path)  # an error path publishes nothing
    w = tf.io.TFRecordWriter(path)
    w.write("text")
    assert not os.path.exists(path)
    del w
    gc.collect()  # a forgotten close() still finishes the file, as in TensorFlow
    assert list(tf.data.TFRecordDataset(path).as_numpy_iterator()) == [b"text"]


def test_parse_single_example_matches_tensorflow(examples, tf_oracle):
    _, records = examples
    compare(tf_oracle, PARSE + "result = [sp(tf.io.parse_single_example(r, F)) for r in records]", records=records)
    compare(tf_oracle, PARSE + "result = sp(tf.io.parse_single_example(records[3], {'words': F['words']}))",
            records=records)


def test_parse_example_batch_matches_tensorflow(examples, tf_oracle):
    _, records = examples
    compare(tf_oracle, PARSE + "result = sp(tf.io.parse_example(records, F))", records=records)
    compare(tf_oracle, PARSE + "result = sp(tf.io.parse_example(tf.constant(records[1:3]), {'tags': F['tags']}))",
            records=records)


def test_parse_inside_dataset_map(examples, tf_oracle):
    path, _ = examples
    code = PARSE + ("ds = tf.data.TFRecordDataset(path).map(lambda r: tf.io.parse_single_example(r, F), "
                    "num_parallel_calls=tf.data.AUTOTUNE)\nresult = [sp(e) for e in ds]")
    compare(tf_oracle, code, path=path)
    dense = ("{'x': tf.io.FixedLenFeature([3], tf.float32), 'label': tf.io.FixedLenFeature([], tf.int64)}")
    code = f"result = list(tf.data.TFRecordDataset(path).batch(2).map(lambda b: tf.io.parse_example(b, {dense})))"
    compare(tf_oracle, code, path=path)
    spec = tf.data.TFRecordDataset(path).map(lambda r: tf.io.parse_single_example(r, {
        "x": tf.io.FixedLenFeature([3], tf.float32), "t": tf.io.VarLenFeature(tf.int64)})).element_spec
    assert spec["x"] == tf.TensorSpec([3], tf.float32) and spec["t"] == tf.SparseTensorSpec([None], tf.int64)


PARSE_ERRORS = [
    "tf.io.parse_single_example(records[0], {'missing': tf.io.FixedLenFeature([], tf.int64)})",
    "tf.io.parse_single_example(records[0], {'x': tf.io.FixedLenFeature([2], tf.float32)})",
    "tf.io.parse_single_example(records[0], {'label': tf.io.FixedLenFeature([], tf.float32)})",
    "tf.io.parse_example(records, {'opt': tf.io.FixedLenFeature([1], tf.float32)})",
    "tf.io.parse_single_example(b'not an example', {'x': tf.io.FixedLenFeature([3], tf.float32)})",
    "tf.io.parse_single_example(records[0], {'x': tf.io.FixedLenFeature([None], tf.float32)})",
]


@pytest.mark.parametrize("expr", PARSE_ERRORS)
def test_parse_errors_match_tensorflow(examples, tf_oracle, expr):
    _, records = examples
    with pytest.raises(OracleError):
        tf_oracle.run(expr, records=records)
    compare(tf_oracle, "result = " + expr, records=records)


def test_parse_error_messages(examples):
    _, records = examples
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"^\[parse_example\] example 0 has no feature 'opt' and its FixedLenFeature"):
        tf.io.parse_example(records, {"opt": tf.io.FixedLenFeature([1], tf.float32)})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"feature 'x' of example 0: expected 2 float32 values"):
        tf.io.parse_single_example(records[0], {"x": tf.io.FixedLenFeature([2], tf.float32)})
    with pytest.raises(ValueError, match="FixedLenSequenceFeature"):
        tf.io.parse_single_example(records[0], {"x": tf.io.FixedLenFeature([None], tf.float32)})
    with pytest.raises(ValueError, match="float32, int64 or string"):
        tf.io.parse_single_example(records[0], {"x": tf.io.FixedLenFeature([3], tf.int32)})
    ds = tf.data.Dataset.from_tensor_slices(records).map(
        lambda r: tf.io.parse_single_example(r, {"label": tf.io.FixedLenFeature([], tf.string)}))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^\[Dataset.map\] element 0: .*'label'"):
        list(ds)


def test_read_and_write_file(tmp_path, tf_oracle):
    path = str(tmp_path / "sub" / "dir" / "f.bin")
    data = bytes(range(256)) * 10
    tf.io.write_file(path, data)  # creates the directories, as TensorFlow's
    assert tf.io.read_file(path).numpy() == data
    assert tf_oracle.run("tf.io.read_file(p)", p=path) == ("tensor", "string", data)
    other = str(tmp_path / "tf.txt")
    tf_oracle.run("tf.io.write_file(p, b'from tensorflow')", p=other)
    assert tf.io.read_file(other).numpy() == b"from tensorflow"
    # An op: it runs at every call of a traced function, and inside Dataset.map.
    f = tf.function(lambda p: tf.io.read_file(p))
    assert f(tf.constant(path)).numpy() == data
    tf.io.write_file(path, b"changed")
    assert f(tf.constant(path)).numpy() == b"changed"
    assert list(tf.data.Dataset.from_tensor_slices([path, other]).map(tf.io.read_file).as_numpy_iterator()) == [
        b"changed", b"from tensorflow"]
    with pytest.raises(tf.errors.NotFoundError, match=r"^\[read_file\] cannot open .*nope"):
        tf.io.read_file(str(tmp_path / "nope"))
    with pytest.raises(OracleError) as info:
        tf_oracle.run("tf.io.read_file(p)", p=str(tmp_path / "nope"))
    assert info.value.cls == "NotFoundError"


def test_gfile(tmp_path):
    d = str(tmp_path / "a" / "b")
    tf.io.gfile.makedirs(d)
    with tf.io.gfile.GFile(os.path.join(d, "x.txt"), "w") as f:
        f.write("hi")
    assert tf.io.gfile.exists(d) and tf.io.gfile.isdir(d)
    assert tf.io.gfile.glob(os.path.join(d, "*.txt")) == [os.path.join(d, "x.txt")]
    assert tf.io.gfile.listdir(d) == ["x.txt"]
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.listdir(str(tmp_path / "none"))
