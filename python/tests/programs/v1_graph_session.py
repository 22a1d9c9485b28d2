# A TensorFlow 1.x-style program (graph, placeholders, Session.run with feed_dict), as it
# runs under TF 2 through tf.compat.v1. test_programs.py runs it with the import changed.
import numpy as np
import tensorflow as tf

g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, shape=[None, 3], name="x")
    w = tf.Variable(tf.random.normal([3, 2], seed=1), name="w")
    b = tf.Variable(tf.zeros([2]), name="b")
    logits = tf.matmul(x, w) + b
    probs = tf.nn.softmax(logits)
    grads = tf.compat.v1.gradients(tf.reduce_sum(probs[:, 0]), [x])
    init = tf.compat.v1.global_variables_initializer()

with tf.compat.v1.Session(graph=g) as sess:
    sess.run(init)
    feed = {x: np.arange(6, dtype=np.float32).reshape(2, 3)}
    p, dx = sess.run([probs, grads[0]], feed_dict=feed)
    print("probs", p.round(4).tolist())
    print("rows sum to one:", np.allclose(p.sum(axis=1), 1.0))
    print("d/dx", dx.shape)
