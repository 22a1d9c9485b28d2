// SPDX-License-Identifier: Apache-2.0
// Known answers (mostly TensorFlow's documented examples) and error messages of
// the shape, layout and indexing ops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "deepflow/deepflow.h"
#include "test_util.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

using testing::error_of;

using ::testing::HasSubstr;
using F = std::vector<float>;
using I64 = std::vector<int64_t>;

Tensor i64(I64 v, Shape s) { return constant(v, s); }
Tensor iota(Shape s) { return reshape(arange(0, double(s.num_elements())), s); }

// t = [[[1,1,1],[2,2,2]], [[3,3,3],[4,4,4]], [[5,5,5],[6,6,6]]] from the tf.strided_slice docs.
Tensor tf_doc_t() { return constant({1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6}, {3, 2, 3}); }

TEST(Reshape, IsZeroCopy) {
  Tensor x = iota({2, 3});
  Tensor y = reshape(x, {3, -1});
  EXPECT_EQ(y.shape(), Shape({3, 2}));
  EXPECT_EQ(y.raw_data(), x.raw_data());
  EXPECT_EQ(y.to_vector<float>(), F({0, 1, 2, 3, 4, 5}));
}

TEST(Reshape, ErrorShowsBothShapes) {
  EXPECT_EQ(error_of([] {
              reshape(iota({2, 3}), {4, 2});
            }),
            "[reshape] cannot reshape [2,3] (6 elements) to [4,2] (8 elements)");
}

TEST(StridedSlice, TfDocExamples) {
  Tensor t = tf_doc_t();
  Tensor a = strided_slice(t, {1, 0, 0}, {2, 1, 3}, {1, 1, 1});
  EXPECT_EQ(a.shape(), Shape({1, 1, 3}));
  EXPECT_EQ(a.to_vector<float>(), F({3, 3, 3}));
  Tensor b = strided_slice(t, {1, 0, 0}, {2, 2, 3}, {1, 1, 1});
  EXPECT_EQ(b.shape(), Shape({1, 2, 3}));
  EXPECT_EQ(b.to_vector<float>(), F({3, 3, 3, 4, 4, 4}));
  Tensor c = strided_slice(t, {1, -1, 0}, {2, -3, 3}, {1, -1, 1});
  EXPECT_EQ(c.shape(), Shape({1, 2, 3}));
  EXPECT_EQ(c.to_vector<float>(), F({4, 4, 4, 3, 3, 3}));
}

TEST(StridedSlice, PythonIndexingForms) {
  Tensor x = iota({4, 3});
  // x[-1]: shrink the first axis, negative index.
  Tensor last = strided_slice(x, {-1}, {0}, {1}, 0, 0, 0, 0, /*shrink=*/1);
  EXPECT_EQ(last.shape(), Shape({3}));
  EXPECT_EQ(last.to_vector<float>(), F({9, 10, 11}));
  // x[::-1]: both ends masked with a negative stride.
  Tensor rev = strided_slice(x, {0}, {0}, {-1}, 1, 1);
  EXPECT_EQ(rev.to_vector<float>(), F({9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2}));
  // x[5:0:-2]: the begin clamps to the last row.
  Tensor clamped = strided_slice(x, {5}, {0}, {-2});
  EXPECT_EQ(clamped.shape(), Shape({2, 3}));
  EXPECT_EQ(clamped.to_vector<float>(), F({9, 10, 11, 3, 4, 5}));
  // x[..., 1]: ellipsis then a shrunk index.
  Tensor col = strided_slice(x, {0, 1}, {0, 2}, {1, 1}, 0, 0, /*ellipsis=*/1, 0, /*shrink=*/2);
  EXPECT_EQ(col.shape(), Shape({4}));
  EXPECT_EQ(col.to_vector<float>(), F({1, 4, 7, 10}));
  // x[1:, tf.newaxis, ::2]
  Tensor nx = strided_slice(x, {1, 0, 0}, {0, 0, 0}, {1, 1, 2}, /*begin=*/4, /*end=*/5, 0, /*new_axis=*/2);
  EXPECT_EQ(nx.shape(), Shape({3, 1, 2}));
  EXPECT_EQ(nx.to_vector<float>(), F({3, 5, 6, 8, 9, 11}));
  // x[tf.newaxis, ..., tf.newaxis]
  Tensor both = strided_slice(x, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 0, 0, /*ellipsis=*/2, /*new_axis=*/5);
  EXPECT_EQ(both.shape(), Shape({1, 4, 3, 1}));
  // x[3:1]: an empty range.
  EXPECT_EQ(strided_slice(x, {3}, {1}).shape(), Shape({0, 3}));
}

TEST(StridedSlice, GradientScattersOnes) {
  Tensor x = iota({4, 3});
  GradientTape tape;
  tape.watch(x);
  Tensor y = reduce_sum(strided_slice(x, {-1, 2}, {0, 0}, {-2, -2}, 0, /*end=*/3));
  Tensor g = tape.gradient(y, x);
  EXPECT_EQ(g.to_vector<float>(), F({0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1}));
}

TEST(Pad, TfDocModes) {
  Tensor t = constant({1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<std::pair<int64_t, int64_t>> p = {{1, 1}, {2, 2}};
  EXPECT_EQ(pad(t, p).to_vector<float>(),
            F({0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(pad(t, p, "REFLECT").to_vector<float>(),
            F({6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(pad(t, p, "SYMMETRIC").to_vector<float>(),
            F({2, 1, 1, 2, 3, 3, 2, 2, 1, 1, 2, 3, 3, 2, 5, 4, 4, 5, 6, 6, 5, 5, 4, 4, 5, 6, 6, 5}));
  EXPECT_THAT(error_of([&] { pad(t, {{2, 0}, {0, 0}}, "REFLECT"); }), HasSubstr("[pad] REFLECT paddings [2,0]"));
  EXPECT_THAT(error_of([&] { pad(t, p, "WRAP"); }), HasSubstr("[pad] mode must be"));
}

TEST(Tile, TfDocExample) {
  Tensor t = constant({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(tile(t, {1, 2}).to_vector<float>(), F({1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  EXPECT_EQ(tile(t, {2, 1}).to_vector<float>(), F({1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}));
}

TEST(Layout, TransposeReverseConcatSplitStack) {
  Tensor x = iota({2, 3});
  EXPECT_EQ(transpose(x).to_vector<float>(), F({0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(reverse(x, {1}).to_vector<float>(), F({2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(concat({x, x}, 1).to_vector<float>(), F({0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  std::vector<Tensor> parts = split(x, I64{1, -1}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].to_vector<float>(), F({0, 3}));
  EXPECT_EQ(parts[1].to_vector<float>(), F({1, 2, 4, 5}));
  Tensor s = stack({x, x}, 1);
  EXPECT_EQ(s.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(s.to_vector<float>(), F({0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(expand_dims(x, 0).shape(), Shape({1, 2, 3}));
  EXPECT_EQ(squeeze(iota({1, 2, 1})).shape(), Shape({2}));
  EXPECT_EQ(broadcast_to(constant({1, 2}), {2, 2}).to_vector<float>(), F({1, 2, 1, 2}));
}

TEST(Errors, SqueezeAndConcat) {
  EXPECT_EQ(error_of([] {
              squeeze(iota({1, 3}), {1});
            }),
            "[squeeze] cannot squeeze dim 1 of shape [1,3]: its size is 3, not 1");
  Tensor ints = i64({1, 2}, {1, 2});
  EXPECT_EQ(error_of([&] {
              concat({iota({1, 2}), ints}, 0);
            }),
            "[concat] input 1 is int64[1,2] but input 0 is float32[1,2]");
  EXPECT_THAT(error_of([] { concat({iota({1, 2}), iota({1, 3})}, 0); }), HasSubstr("[concat] input 1 has shape [1,3]"));
}

TEST(Gather, ValuesAxisAndBatchDims) {
  Tensor p = iota({3, 4});
  EXPECT_EQ(gather(p, i64({2, 0}, {2})).to_vector<float>(), F({8, 9, 10, 11, 0, 1, 2, 3}));
  Tensor cols = gather(p, i64({3, 3, 1}, {3}), 1);
  EXPECT_EQ(cols.shape(), Shape({3, 3}));
  EXPECT_EQ(cols.to_vector<float>(), F({3, 3, 1, 7, 7, 5, 11, 11, 9}));
  // batch_dims = 1: one row of indices per row of params.
  Tensor b = gather(p, i64({0, 1, 3, 2, 2, 0}, {3, 2}), 1, 1);
  EXPECT_EQ(b.shape(), Shape({3, 2}));
  EXPECT_EQ(b.to_vector<float>(), F({0, 1, 7, 6, 10, 8}));
}

TEST(Gather, OutOfRangeNamesIndexAndRange) {
  EXPECT_EQ(error_of([] { gather(iota({3, 4}), i64({0, 3}, {2})); }), "[gather] indices[1] = 3 is not in [0, 3)");
  EXPECT_EQ(error_of([] {
              gather(iota({3, 4}), i64({0, 9}, {1, 2}), 1);
            }),
            "[gather] indices[0,1] = 9 is not in [0, 4)");
}

TEST(Gather, GradientAddsDuplicates) {
  Tensor p = iota({3, 2});
  GradientTape tape;
  tape.watch(p);
  Tensor y = reduce_sum(gather(p, i64({2, 0, 2}, {3})));
  EXPECT_EQ(tape.gradient(y, p).to_vector<float>(), F({1, 1, 0, 0, 2, 2}));
}

TEST(Indexing, TfDocExamples) {
  // tf.gather_nd: indices [[0, 0], [1, 1]] of [[a, b], [c, d]] -> [a, d].
  EXPECT_EQ(gather_nd(constant({1, 2, 3, 4}, {2, 2}), i64({0, 0, 1, 1}, {2, 2})).to_vector<float>(), F({1, 4}));
  // tf.scatter_nd: indices [[4], [3], [1], [7]], updates [9, 10, 11, 12], shape [8].
  Tensor s = scatter_nd(i64({4, 3, 1, 7}, {4, 1}), constant({9, 10, 11, 12}), {8});
  EXPECT_EQ(s.to_vector<float>(), F({0, 11, 0, 10, 9, 0, 0, 12}));
  // tf.math.unsorted_segment_sum: c = [[1,2,3,4],[5,6,7,8],[4,3,2,1]], ids [0, 1, 0].
  Tensor c = constant({1, 2, 3, 4, 5, 6, 7, 8, 4, 3, 2, 1}, {3, 4});
  EXPECT_EQ(unsorted_segment_sum(c, i64({0, 1, 0}, {3}), 2).to_vector<float>(), F({5, 5, 5, 5, 5, 6, 7, 8}));
  // Ids outside [0, num_segments) are dropped.
  EXPECT_EQ(unsorted_segment_sum(c, i64({-1, 1, 2}, {3}), 2).to_vector<float>(), F({0, 0, 0, 0, 5, 6, 7, 8}));
}

TEST(OneHot, TfDocExamples) {
  Tensor a = one_hot(i64({0, 1, 2}, {3}), 3);
  EXPECT_EQ(a.dtype(), DType::Float32);
  EXPECT_EQ(a.to_vector<float>(), F({1, 0, 0, 0, 1, 0, 0, 0, 1}));
  Tensor b = one_hot(i64({0, 2, -1, 1}, {4}), 3, 5.0, 0.0, -1);
  EXPECT_EQ(b.to_vector<float>(), F({5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0}));
  Tensor c = one_hot(i64({0, 2, 1, -1}, {2, 2}), 3, 1.0, 0.0, 0, DType::Int32);
  EXPECT_EQ(c.shape(), Shape({3, 2, 2}));
  EXPECT_EQ(c.to_vector<int32_t>(), std::vector<int32_t>({1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0}));
}

// Every kernel of `op` gives the reference kernel's bytes.
void expect_kernels_agree(OpId op, const Tensor& x, const Attrs& attrs, const std::string& what) {
  const std::vector<KernelDef>& ks = kernels_for(op);
  const Tensor want = run_kernel(ks.back(), op, {&x, 1}, attrs)[0];
  for (const KernelDef& k : ks) {
    Tensor got = run_kernel(k, op, {&x, 1}, attrs)[0];
    ASSERT_EQ(got.shape(), want.shape()) << what << " " << k.name;
    EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>()) << what << " " << k.name;
  }
}

TEST(Transpose, KernelsAgreeOnEveryPermWithUnitDims) {
  for (Shape s : {Shape{2, 1, 3, 4}, Shape{1, 5, 1, 3}, Shape{3, 2, 4, 1}, Shape{37, 1, 33, 2}}) {
    Tensor x = iota(s);
    Axes perm = {0, 1, 2, 3};
    do {
      expect_kernels_agree(OpId::Transpose, x, {{"perm", perm}}, s.to_string());
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(Slice, KernelsAgreeOnPartialDims) {
  Tensor x = iota({4, 5, 6});
  for (Axes size : {Axes{2, -1, -1}, Axes{3, 5, 3}, Axes{1, 2, -1}, Axes{-1, -1, -1}, Axes{3, 0, 2}})
    expect_kernels_agree(OpId::Slice, x, {{"begin", Axes{1, 0, 0}}, {"size", size}}, "slice");
}

// Gradients of gradients: each vjp is itself differentiable (gradcheck of x -> d sum(op(x)^3) / dx).
TEST(Gradients, SecondOrderThroughEveryVjp) {
  using Op = std::function<Tensor(const Tensor&)>;
  const Tensor idx = i64({2, 0, 2, 1}, {4});
  const std::vector<std::pair<std::string, Op>> ops = {
      {"reshape",
       [](const Tensor& x) {
         return reshape(x, {3, 4});
       }},
      {"transpose", [](const Tensor& x) { return transpose(x); }},
      {"concat",
       [](const Tensor& x) {
         return concat({x, x}, 1);
       }},
      {"slice",
       [](const Tensor& x) {
         return slice(x, {1, 0}, {2, -1});
       }},
      {"strided_slice",
       [](const Tensor& x) {
         return strided_slice(x, {-1, 0}, {0, 3}, {-2, 2});
       }},
      {"pad",
       [](const Tensor& x) {
         return pad(x, {{1, 0}, {0, 2}}, "CONSTANT", 1);
       }},
      {"pad/reflect",
       [](const Tensor& x) {
         return pad(x, {{2, 1}, {1, 1}}, "REFLECT");
       }},
      {"tile",
       [](const Tensor& x) {
         return tile(x, {2, 1});
       }},
      {"broadcast_to",
       [](const Tensor& x) {
         return broadcast_to(x, {2, 4, 3});
       }},
      {"reverse",
       [](const Tensor& x) {
         return reverse(x, {0, 1});
       }},
      {"gather", [idx](const Tensor& x) { return gather(x, idx); }},
      {"gather/axis1", [idx](const Tensor& x) { return gather(x, idx, 1); }},
      {"gather_nd",
       [](const Tensor& x) {
         return gather_nd(x, i64({1, 2, 3, 0, 1, 2}, {3, 2}));
       }},
      {"scatter_nd",
       [](const Tensor& x) {
         return scatter_nd(i64({1, 0, 1, 4}, {4, 1}), x, {5, 3});
       }},
      {"unsorted_segment_sum", [idx](const Tensor& x) { return unsorted_segment_sum(x, idx, 3); }},
  };
  const Tensor x = random_normal({4, 3}, 0, 1, DType::Float64, 7);
  for (const auto& [name, op] : ops) {
    Op f = op;
    GradcheckResult r = gradcheck(
        [f](const TensorList& xs) {
          GradientTape tape;
          tape.watch(xs[0]);
          Tensor y = f(xs[0]);
          return TensorList{tape.gradient(reduce_sum(mul(mul(y, y), y)), xs[0])};
        },
        {x});
    EXPECT_LE(r.max_error, 1e-6) << name << ": " << r.worst;
  }
}

}  // namespace
}  // namespace deepflow
