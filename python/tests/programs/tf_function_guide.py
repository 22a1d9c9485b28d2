# The "Better performance with tf.function" guide (tensorflow.org/guide/function): calling
# and composing functions, polymorphism and tracing, concrete functions, Python side
# effects, and AutoGraph's control flow. test_programs.py runs it with the import changed.
import tensorflow as tf


@tf.function  # The decorator converts `add` into a `PolymorphicFunction`.
def add(a, b):
  return a + b


print(add(tf.ones([2, 2]), tf.ones([2, 2])))  # [[2., 2.], [2., 2.]]

v = tf.Variable(1.0)
with tf.GradientTape() as tape:
  result = add(v, 1.0)
print(tape.gradient(result, v))


@tf.function
def dense_layer(x, w, b):
  return add(tf.matmul(x, w), b)


print(dense_layer(tf.ones([3, 2]), tf.ones([2, 2]), tf.ones([2])))


@tf.function
def double(a):
  print("Tracing with", a)
  return a + a


print(double(tf.constant(1)))
print()
print(double(tf.constant(1.1)))
print()
print(double(tf.constant(1.1)))  # no new trace
print(double.experimental_get_tracing_count())

print("Obtaining concrete trace")
double_strings = double.get_concrete_function(tf.TensorSpec(shape=None, dtype=tf.float32))
print("Executing traced function")
print(double_strings(tf.constant(2.0)))


@tf.function
def f(x):
  print("Traced with", x)
  tf.print("Executed with", x)


f(1)
f(1)
f(2)

external_list = []


@tf.function
def side_effect(x):
  print('Python side effect')
  external_list.append(x)


side_effect(1)
side_effect(1)
side_effect(1)
# The list append only happened once!
assert len(external_list) == 1


@tf.function
def fizzbuzz(n):
  for i in tf.range(1, n + 1):
    print('Tracing for loop')
    if i % 15 == 0:
      print('Tracing fizzbuzz branch')
      tf.print('fizzbuzz')
    elif i % 3 == 0:
      print('Tracing fizz branch')
      tf.print('fizz')
    elif i % 5 == 0:
      print('Tracing buzz branch')
      tf.print('buzz')
    else:
      print('Tracing default branch')
      tf.print(i)


fizzbuzz(tf.constant(5))
fizzbuzz(tf.constant(20))


def measure_graph_size(f, *args):
  g = f.get_concrete_function(*args).graph
  print("{}({}) contains {} nodes in its graph".format(
      f.__name__, ', '.join(map(str, args)), len(g.as_graph_def().node)))


@tf.function
def buggy_loop_sum():
  accumulator = tf.constant(0)
  for i in tf.range(1000):
    accumulator += i
  return accumulator


print(buggy_loop_sum())


@tf.function
def while_sum(n):
  total = tf.constant(0)
  i = tf.constant(0)
  while i < n:
    total += i
    i += 1
  return total


print(while_sum(tf.constant(10)))
