# SPDX-License-Identifier: Apache-2.0
"""tf.data: each pipeline is evaluated with deepflow and with TensorFlow 2.21 (the
oracle) and the elements (as_numpy_iterator) must agree in structure, dtype, shape and
value; where TensorFlow raises, deepflow raises the same kind of error. Then what the
oracle cannot show: map traced once, parallel map at scale, generators, iterators,
options, errors of the C++ core."""
import builtins
import threading

import numpy as np
import pytest

import deepflow as tf
from tf_oracle import OracleError, assert_same, to_oracle_form

pytestmark = pytest.mark.filterwarnings("ignore:AutoGraph could not transform")

rng = np.random.default_rng(0)
V = dict(
    x=rng.standard_normal((6, 3)).astype(np.float32),
    labels=np.array([0, 1, 2, 1, 0, 2], dtype=np.int64),
    words=np.array([b"a", b"bb", b"ccc", b"", b"e", b"ff"], dtype=object),
)


def np_form(v):
    """A structure of numpy values (as_numpy_iterator's) in the oracle's tensor form."""
    if isinstance(v, (np.ndarray, np.generic)):
        a = np.asarray(v)
        return ("tensor", a.dtype.name, a)
    if isinstance(v, (list, tuple)):
        return type(v)(np_form(x) for x in v)
    if isinstance(v, dict):
        return {k: np_form(x) for k, x in v.items()}
    return v


def run_local(code, **variables):
    env = {"tf": tf, "np": np}
    env.update(V)
    env.update(variables)
    if "\n" in code:
        exec(code, env)
        return env["result"]
    return eval(code, env)


def expected_error(cls):
    """The exception class deepflow must raise where TensorFlow raises `cls`."""
    return getattr(tf.errors, cls, None) or getattr(builtins, cls)


def compare(tf_oracle, code, **variables):
    """Runs code in both; returns deepflow's value after checking it against TensorFlow's."""
    try:
        theirs = tf_oracle.run(code, **{**V, **variables})
    except OracleError as e:
        with pytest.raises(expected_error(e.cls)):
            run_local(code, **variables)
        return None
    ours = run_local(code, **variables)
    assert_same(np_form(ours), np_form(theirs))
    return ours


PIPELINES = [
    # sources
    "tf.data.Dataset.from_tensor_slices(x)",
    "tf.data.Dataset.from_tensor_slices((x, labels))",
    "tf.data.Dataset.from_tensor_slices({'a': x, 'b': labels})",
    "tf.data.Dataset.from_tensor_slices(words)",
    "tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4]])",
    "tf.data.Dataset.from_tensor_slices((x, (labels, words)))",
    "tf.data.Dataset.from_tensors((x, 1))",
    "tf.data.Dataset.range(5)",
    "tf.data.Dataset.range(2, 10, 3)",
    "tf.data.Dataset.range(5, 0, -2, output_type=tf.int32)",
    "tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.from_tensor_slices(labels)))",
    "tf.data.Dataset.zip({'i': tf.data.Dataset.range(9), 'w': tf.data.Dataset.from_tensor_slices(words)})",
    "tf.data.Dataset.zip(tf.data.Dataset.range(2), tf.data.Dataset.range(3, 6))",
    # map and filter (traced)
    "tf.data.Dataset.from_tensor_slices((x, labels)).map(lambda a, b: (a * 2.0, b + 1))",
    "tf.data.Dataset.from_tensor_slices({'a': x, 'b': labels}).map(lambda d: d['a'] + tf.cast(d['b'], tf.float32))",
    "tf.data.Dataset.range(4).map(lambda i: [i, i * 2])",
    "tf.data.Dataset.range(4).map(lambda i: (i, 1.5, 'const'))",
    "tf.data.Dataset.range(4).map(lambda i: {'sq': i * i, 'neg': -i})",
    "tf.data.Dataset.from_tensor_slices(x).map(lambda r: tf.reduce_sum(r), num_parallel_calls=3)",
    "tf.data.Dataset.range(10).filter(lambda i: tf.equal(i % 3, 0))",
    "tf.data.Dataset.from_tensor_slices((x, labels)).filter(lambda a, b: tf.greater(b, 0))",
    # batching
    "tf.data.Dataset.range(10).batch(4)",
    "tf.data.Dataset.range(10).batch(4, drop_remainder=True)",
    "tf.data.Dataset.from_tensor_slices({'a': x, 'b': labels}).batch(4)",
    "tf.data.Dataset.from_tensor_slices(words).batch(4)",
    "tf.data.Dataset.range(10).map(lambda i: (i, -i)).batch(3, num_parallel_calls=2, deterministic=True)",
    "tf.data.Dataset.range(8).batch(3).unbatch()",
    "tf.data.Dataset.from_tensor_slices((x, labels)).batch(4).unbatch()",
    "tf.data.Dataset.range(6).batch(4).padded_batch(2)",
    "tf.data.Dataset.range(7).batch(3).padded_batch(2, padded_shapes=[5], padding_values=np.int64(-1))",
    "tf.data.Dataset.from_tensor_slices(words).batch(4).padded_batch(2)",
    # order and count
    "tf.data.Dataset.range(5).repeat(3)",
    "tf.data.Dataset.range(10).take(3)",
    "tf.data.Dataset.range(10).take(-1)",
    "tf.data.Dataset.range(10).skip(7)",
    "tf.data.Dataset.range(10).skip(-1)",
    "tf.data.Dataset.range(3).concatenate(tf.data.Dataset.range(10, 12))",
    "tf.data.Dataset.from_tensor_slices(words).enumerate(start=5)",
    "tf.data.Dataset.range(10).shard(3, 1)",
    "tf.data.Dataset.range(5).cache().repeat(2)",
    "tf.data.Dataset.range(5).prefetch(2)",
    "tf.data.Dataset.range(50).map(lambda i: i * 3, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)",
    "tf.data.Dataset.range(10).apply(lambda ds: ds.skip(2).take(3))",
    # datasets of datasets
    "tf.data.Dataset.range(1, 4).flat_map(lambda i: tf.data.Dataset.from_tensors(i).repeat(i))",
    "tf.data.Dataset.range(1, 5).interleave(lambda i: tf.data.Dataset.from_tensors(i).repeat(3), cycle_length=2, "
    "block_length=2)",
    "tf.data.Dataset.range(1, 5).interleave(lambda i: tf.data.Dataset.range(i), cycle_length=3, num_parallel_calls=2, "
    "deterministic=True)",
    "tf.data.Dataset.from_tensor_slices((x, labels)).flat_map(lambda a, b: tf.data.Dataset.from_tensor_slices(a))",
]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_pipeline_matches_tensorflow(pipeline, tf_oracle):
    compare(tf_oracle, f"list(({pipeline}).as_numpy_iterator())")


SPECS = [
    "tf.data.Dataset.from_tensor_slices({'a': x, 'b': labels}).batch(2)",
    "tf.data.Dataset.from_tensor_slices((x, words)).batch(4, drop_remainder=True)",
    "tf.data.Dataset.range(3).map(lambda i: (i, [i, i], {'f': tf.cast(i, tf.float32)}))",
    "tf.data.Dataset.range(7).batch(3).padded_batch(2, padded_shapes=[5])",
    "tf.data.Dataset.range(3).enumerate()",
    "tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.from_tensor_slices(x)))",
    "tf.data.Dataset.range(10).batch(3).concatenate(tf.data.Dataset.range(2).batch(2, drop_remainder=True))",
    "tf.data.Dataset.range(3).flat_map(lambda i: tf.data.Dataset.from_tensor_slices(x))",
    "tf.data.Dataset.from_generator(lambda: iter([]), output_types=(tf.int32, tf.string), "
    "output_shapes=((None, 2), ()))",
]


@pytest.mark.parametrize("pipeline", SPECS)
def test_element_spec_matches_tensorflow(pipeline, tf_oracle):
    compare(tf_oracle, f"repr(({pipeline}).element_spec)")


CARDINALITIES = [
    "tf.data.Dataset.range(10)", "tf.data.Dataset.range(10).repeat()", "tf.data.Dataset.range(10).repeat(3)",
    "tf.data.Dataset.range(10).filter(lambda i: tf.equal(i, 1))", "tf.data.Dataset.range(10).batch(3)",
    "tf.data.Dataset.range(10).batch(3, drop_remainder=True)", "tf.data.Dataset.range(10).take(20)",
    "tf.data.Dataset.range(10).skip(4)", "tf.data.Dataset.range(10).shard(4, 3)",
    "tf.data.Dataset.range(10).map(lambda i: i).shuffle(3).prefetch(1)",
    "tf.data.Dataset.zip((tf.data.Dataset.range(10), tf.data.Dataset.range(4).repeat()))",
    "tf.data.Dataset.range(3).concatenate(tf.data.Dataset.range(5))",
    "tf.data.Dataset.range(3).flat_map(lambda i: tf.data.Dataset.range(i))",
    "tf.data.Dataset.range(8).batch(3).unbatch()",
    "tf.data.Dataset.from_generator(lambda: iter([1]), output_signature=tf.TensorSpec([], tf.int32))",
]


@pytest.mark.parametrize("pipeline", CARDINALITIES)
def test_cardinality_and_len_match_tensorflow(pipeline, tf_oracle):
    compare(tf_oracle, f"int(({pipeline}).cardinality())")
    compare(tf_oracle, f"len({pipeline})")


ERRORS = [
    "tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(2)))",
    "tf.data.Dataset.from_tensor_slices(1)",
    "tf.data.Dataset.range(3).unbatch()",
    "tf.data.Dataset.range(3).filter(lambda i: i)",
    "tf.data.Dataset.range(3).concatenate(tf.data.Dataset.from_tensors(1.0))",
    "tf.data.Dataset.from_tensor_slices(np.zeros((3, 2))).padded_batch(2, padded_shapes=[1])",
    "tf.data.Dataset.zip([tf.data.Dataset.range(2), tf.data.Dataset.range(2)])",
    "list(tf.data.Dataset.from_generator(lambda: iter([[1, 2], [3]]), "
    "output_signature=tf.TensorSpec([2], tf.int32)).as_numpy_iterator())",
    "list(tf.data.Dataset.from_generator(lambda: iter(['a']), output_signature=tf.TensorSpec([], tf.int32)))",
    "tf.data.Dataset.from_generator(lambda: iter([1]))",
]


@pytest.mark.parametrize("code", ERRORS)
def test_errors_match_tensorflow(code, tf_oracle):
    with pytest.raises(OracleError):
        tf_oracle.run(code, **V)  # the row is an error in TensorFlow too
    compare(tf_oracle, code)


def test_shuffle_is_a_permutation_and_reshuffles(tf_oracle):
    code = "sorted(tf.data.Dataset.range(40).shuffle(16, seed=3).as_numpy_iterator())"
    compare(tf_oracle, code)
    ds = tf.data.Dataset.range(40).shuffle(40, seed=7)
    first, second = list(ds.as_numpy_iterator()), list(ds.as_numpy_iterator())
    assert first != list(range(40)) and first != second  # each epoch a new order
    fixed = tf.data.Dataset.range(40).shuffle(40, seed=7, reshuffle_each_iteration=False)
    assert list(fixed.as_numpy_iterator()) == list(fixed.as_numpy_iterator())
    compare(tf_oracle, "sorted(tf.data.Dataset.range(30).shuffle(8).repeat(2).as_numpy_iterator())")


def test_sources_copy_numpy_arrays():
    a = np.arange(4)
    ds = tf.data.Dataset.from_tensor_slices(a)
    one = tf.data.Dataset.from_tensors({"a": a})
    a[0] = 100  # as in TensorFlow, the dataset holds the values it was made with
    assert list(ds.as_numpy_iterator()) == [0, 1, 2, 3]
    assert list(one.as_numpy_iterator())[0]["a"].tolist() == [0, 1, 2, 3]


def test_map_is_traced_once():
    calls = []

    def f(a, b):
        calls.append(1)  # a Python side effect: happens while tracing only
        return a * 2.0, b

    ds = tf.data.Dataset.from_tensor_slices((V["x"], V["labels"])).map(f, num_parallel_calls=2)
    assert len(calls) == 1
    for _ in range(2):
        out = list(ds.as_numpy_iterator())
    assert len(calls) == 1 and len(out) == 6
    np.testing.assert_allclose(np.stack([a for a, _ in out]), V["x"] * 2.0)
    # The function sees symbolic tensors of the element spec, as in TensorFlow.
    seen = []
    tf.data.Dataset.range(3).batch(2).map(lambda b: seen.append((b.shape.as_list(), b.dtype)) or b)
    assert seen == [([None], tf.int64)]


def test_parallel_map_10k_elements():
    n = 10_000
    ds = tf.data.Dataset.range(n).map(lambda i: (i * 3 + 1, tf.cast(i, tf.float32) * 0.5),
                                      num_parallel_calls=tf.data.AUTOTUNE)
    got = list(ds.as_numpy_iterator())
    assert [a for a, _ in got] == [3 * i + 1 for i in range(n)]  # deterministic by default: in order
    np.testing.assert_allclose([b for _, b in got], np.arange(n, dtype=np.float32) * 0.5)
    loose = tf.data.Dataset.range(n).map(lambda i: i + 1, num_parallel_calls=8, deterministic=False)
    assert sorted(loose.as_numpy_iterator()) == list(range(1, n + 1))


def test_from_generator():
    epochs = []

    def gen():
        epochs.append(1)
        for i in range(4):
            yield {"id": i, "vec": [float(i)] * (i + 1)}

    sig = {"id": tf.TensorSpec([], tf.int64), "vec": tf.TensorSpec([None], tf.float32)}
    ds = tf.data.Dataset.from_generator(gen, output_signature=sig)
    assert ds.element_spec == sig
    got = list(ds.repeat(2).prefetch(2).as_numpy_iterator())
    assert len(epochs) == 2  # the generator starts again for every pass
    assert [e["id"] for e in got] == [0, 1, 2, 3] * 2
    assert got[3]["vec"].tolist() == [3.0] * 4 and got[3]["vec"].dtype == np.float32
    padded = list(ds.padded_batch(2).as_numpy_iterator())
    assert padded[1]["vec"].tolist() == [[2.0, 2.0, 2.0, 0.0], [3.0, 3.0, 3.0, 3.0]]
    # output_types / output_shapes and args (passed as numpy values).
    old = tf.data.Dataset.from_generator(lambda n: ((i, b"s%d" % i) for i in range(n)),
                                         output_types=(tf.int32, tf.string), output_shapes=((), ()), args=(3,))
    assert list(old.as_numpy_iterator()) == [(0, b"s0"), (1, b"s1"), (2, b"s2")]
    # A generator's own error reaches the consumer, naming the element.
    def bad():
        yield 1
        raise KeyError("boom")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^\[Dataset.from_generator\] element 1: KeyError"):
        list(tf.data.Dataset.from_generator(bad, output_signature=tf.TensorSpec([], tf.int32)))


def test_generator_runs_while_other_python_threads_run():
    # The iterator waits without the GIL and the generator takes it only while it runs,
    # so two threads iterating generator pipelines both make progress.
    def gen():
        for i in range(200):
            yield i

    results = {}

    def consume(k):
        ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int32))
        results[k] = sum(int(v) for v in ds.map(lambda v: v * 2).prefetch(4).as_numpy_iterator())

    threads = [threading.Thread(target=consume, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == {k: 2 * sum(range(200)) for k in range(3)}


def test_guide_pipeline(tf_oracle):
    images = rng.integers(0, 256, size=(100, 8, 8), dtype=np.uint8)
    labels = rng.integers(0, 10, size=(100,)).astype(np.int64)

    def normalize(x, y):
        return tf.cast(x, tf.float32) / 255.0, y

    ds = (tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(100).batch(32).map(normalize)
          .prefetch(tf.data.AUTOTUNE))
    batches = [(x, y) for x, y in ds]
    assert [b[0].shape.as_list() for b in batches] == [[32, 8, 8]] * 3 + [[4, 8, 8]]
    assert isinstance(batches[0][0], tf.Tensor) and batches[0][0].dtype == tf.float32
    xs = np.concatenate([x.numpy() for x, _ in batches])
    ys = np.concatenate([y.numpy() for _, y in batches])
    order = np.lexsort((ys, xs.reshape(100, -1).sum(1)))
    ref = np.lexsort((labels, (images.astype(np.float32) / 255.0).reshape(100, -1).sum(1)))
    np.testing.assert_allclose(xs[order], images[ref].astype(np.float32) / 255.0, rtol=1e-6)
    code = ("list(tf.data.Dataset.from_tensor_slices((images, labels)).batch(32)"
            ".map(lambda x, y: (tf.cast(x, tf.float32) / 255.0, y)).prefetch(tf.data.AUTOTUNE).as_numpy_iterator())")
    compare(tf_oracle, code, images=images, labels=labels)


def test_iterator_protocol():
    it = iter(tf.data.Dataset.from_tensor_slices({"a": [1, 2]}))
    assert it.element_spec == {"a": tf.TensorSpec([], tf.int32)}
    assert to_oracle_form(it.get_next()) == {"a": ("tensor", "int32", np.array(1, np.int32))}
    assert int(next(it)["a"]) == 2
    opt = it.get_next_as_optional()
    assert not bool(opt.has_value())
    with pytest.raises(tf.errors.OutOfRangeError):
        it.get_next()
    with pytest.raises(StopIteration):
        next(it)
    # Saving and restoring a position.
    it = iter(tf.data.Dataset.range(10).batch(2))
    next(it)
    state = it._save()
    a = next(it).numpy().tolist()
    it._restore(state)
    assert next(it).numpy().tolist() == a == [2, 3]
    assert bool(tf.data.Dataset.range(3).filter(lambda i: tf.equal(i, 0)))  # truth needs no length
    with pytest.raises(TypeError, match="length is unknown"):
        len(tf.data.Dataset.range(3).filter(lambda i: tf.equal(i, 0)))


def test_reduce_and_get_single_element(tf_oracle):
    code = "tf.data.Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)"
    assert_same(to_oracle_form(run_local(code)), tf_oracle.run(code))
    code = "tf.data.Dataset.range(1, 5).reduce((np.int64(0), np.int64(1)), lambda s, x: (s[0] + x, s[1] * x))"
    assert_same(to_oracle_form(run_local(code)), tf_oracle.run(code))
    assert int(tf.data.Dataset.range(7, 8).get_single_element()) == 7
    with pytest.raises(tf.errors.InvalidArgumentError, match="more than one"):
        tf.data.Dataset.range(2).get_single_element()

    @tf.function
    def f():
        return tf.data.Dataset.range(3).reduce(np.int64(0), lambda s, x: s + x)
    assert int(f()) == 3  # a loop in the graph (test_data_graph.py)

    @tf.function
    def g():
        return next(iter(tf.data.Dataset.range(3)))
    with pytest.raises(NotImplementedError, match=r"iter\(dataset\) inside a traced function"):
        g()


def test_options():
    assert tf.data.AUTOTUNE == tf.data.experimental.AUTOTUNE == -1
    assert (tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY) == (-1, -2)
    o = tf.data.Options()
    o.deterministic = False
    o.autotune.cpu_budget = 2
    ds = tf.data.Dataset.range(100).map(lambda i: i + 1, num_parallel_calls=4).with_options(o)
    assert ds.options().deterministic is False and ds.options().autotune.cpu_budget == 2
    o2 = tf.data.Options()
    o2.autotune.enabled = False
    merged = ds.with_options(o2).options()
    assert (merged.deterministic, merged.autotune.enabled, merged.autotune.cpu_budget) == (False, False, 2)
    assert sorted(ds.as_numpy_iterator()) == list(range(1, 101))
    with pytest.raises(AttributeError):
        o.not_an_option = 1


def test_text_files_and_list_files(tmp_path, tf_oracle):
    for i in range(3):
        (tmp_path / f"f{i}.txt").write_bytes(b"line %d a\nline %d b\n\nlast %d" % (i, i, i))
    pattern = str(tmp_path / "*.txt")
    compare(tf_oracle, "list(tf.data.Dataset.list_files(p, shuffle=False).as_numpy_iterator())", p=pattern)
    compare(tf_oracle, "sorted(tf.data.Dataset.list_files(p).as_numpy_iterator())", p=pattern)
    files = sorted(str(f) for f in tmp_path.glob("*.txt"))
    compare(tf_oracle, "list(tf.data.TextLineDataset(f).as_numpy_iterator())", f=files)
    compare(tf_oracle, "list(tf.data.TextLineDataset(f, num_parallel_reads=2).as_numpy_iterator())", f=files)
    compare(tf_oracle, "list(tf.data.Dataset.list_files(p, shuffle=False).interleave(tf.data.TextLineDataset, "
                       "cycle_length=3).as_numpy_iterator())", p=pattern)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^\[Dataset.list_files\] no files match"):
        tf.data.Dataset.list_files(str(tmp_path / "*.none"))
    with pytest.raises(tf.errors.NotFoundError, match="missing.txt"):
        list(tf.data.TextLineDataset(str(tmp_path / "missing.txt")))


def test_csv_dataset(tmp_path, tf_oracle):
    p = tmp_path / "a.csv"
    p.write_text("a,b,c\n1,2.5,x\n3,,y\n")
    compare(tf_oracle, "list(tf.data.experimental.CsvDataset(p, [tf.int32, [0.0], ['']], header=True)"
                       ".as_numpy_iterator())", p=str(p))


def test_cache_to_file(tmp_path):
    prefix = str(tmp_path / "cache")
    calls = []

    def gen():
        calls.append(1)
        yield from range(5)

    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64)).cache(prefix)
    assert list(ds.as_numpy_iterator()) == list(range(5))
    assert list(ds.as_numpy_iterator()) == list(range(5)) and len(calls) == 1  # the second pass reads the files


def test_iterating_inside_a_traced_function_is_a_clear_error():
    ds = tf.data.Dataset.range(3)

    @tf.function(autograph=False)
    def f():
        return [x for x in ds]
    with pytest.raises(NotImplementedError, match="inside a traced function"):
        f()
