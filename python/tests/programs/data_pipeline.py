# The tf.data guide's pipelines (tensorflow.org/guide/data), its basic mechanics,
# reading input data and batching sections: from_tensor_slices over numpy arrays and
# dicts, from_generator with an output_signature, TFRecord files, map (with a
# py_function), filter, shuffle, batch, padded_batch, repeat, cache, prefetch, and a
# Keras fit on a dataset. test_programs.py runs it with the import changed.
import os
import tempfile

import numpy as np
import tensorflow as tf

dataset = tf.data.Dataset.from_tensor_slices([8, 3, 0, 8, 2, 1])
for elem in dataset:
    print(elem.numpy())
print(dataset.reduce(0, lambda state, value: state + value).numpy())

dataset1 = tf.data.Dataset.from_tensor_slices(tf.random.uniform([4, 10]))
dataset2 = tf.data.Dataset.from_tensor_slices(
    (tf.random.uniform([4]), tf.random.uniform([4, 100], maxval=100, dtype=tf.int32)))
dataset3 = tf.data.Dataset.zip((dataset1, dataset2))
print(dataset3.element_spec)

train, test = tf.keras.datasets.fashion_mnist.load_data()
images, labels = train
images = images / 255
dataset = tf.data.Dataset.from_tensor_slices((images, labels))
print(dataset)


def count(stop):
    i = 0
    while i < stop:
        yield i
        i += 1


ds_counter = tf.data.Dataset.from_generator(count, args=[25], output_types=tf.int32, output_shapes=(), )
for count_batch in ds_counter.repeat().batch(10).take(10):
    print(count_batch.numpy())


def gen_series():
    i = 0
    while True:
        size = np.random.randint(0, 10)
        yield i, np.random.normal(size=(size,))
        i += 1


ds_series = tf.data.Dataset.from_generator(
    gen_series,
    output_signature=(
        tf.TensorSpec(shape=(), dtype=tf.int32),
        tf.TensorSpec(shape=(None,), dtype=tf.float32)))
ds_series_batch = ds_series.shuffle(20).padded_batch(10)
ids, sequence_batch = next(iter(ds_series_batch))
print(ids.numpy())
print(sequence_batch.shape[0])

# TFRecord files: write records, read them back.
path = os.path.join(tempfile.mkdtemp(), "data.tfrecord")
with tf.io.TFRecordWriter(path) as writer:
    for i in range(5):
        writer.write(("record %d" % i).encode())
raw = tf.data.TFRecordDataset([path])
print([r.numpy() for r in raw.take(2)])

# Preprocessing: map with a traced function and with tf.py_function, filter, cache.
def normalize(image, label):
    return tf.cast(image, tf.float32), label


def py_label(label):
    return np.int64(label.numpy() % 3)


ds = (tf.data.Dataset.from_tensor_slices((images[:1000], labels[:1000]))
      .map(normalize, num_parallel_calls=tf.data.AUTOTUNE)
      .map(lambda x, y: (x, tf.py_function(py_label, [y], tf.TensorSpec([], tf.int64))))
      .filter(lambda x, y: y < 2)
      .cache())
print(sum(1 for _ in ds))

# Batching, repeating and shuffling, then training a Keras model on the pipeline.
train_ds = (tf.data.Dataset.from_tensor_slices((images[:2048].astype("float32"), labels[:2048]))
            .shuffle(1024).batch(64).repeat(2).prefetch(tf.data.AUTOTUNE))
model = tf.keras.Sequential([
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(10)
])
model.compile(optimizer='adam',
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=['accuracy'])
model.fit(train_ds, epochs=1)
loss, accuracy = model.evaluate(tf.data.Dataset.from_tensor_slices(
    (images[2048:3072].astype("float32"), labels[2048:3072])).batch(64))
print("Loss :", loss)
print("Accuracy :", accuracy)
