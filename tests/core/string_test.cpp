// SPDX-License-Identifier: Apache-2.0
// DType::String (tf.string): string tensors, their printing, the ops that move strings,
// the ops that refuse them, and strings in graphs, traced functions and tapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/session.h"
#include "deepflow/graph/text.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using Strings = std::vector<std::string>;

// Longer than any small-string buffer, so copies allocate and leaks would show under ASan.
std::string big(const std::string& tag) { return tag + std::string(40, '.') + tag; }

Strings strs(const Tensor& t) { return t.to_vector<std::string>(); }

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// --- the dtype ---

TEST(StringDType, NamesSizeAndTraits) {
  EXPECT_EQ(kNumDTypes, 10);
  EXPECT_EQ(int(DType::String), 9);  // appended last: serialized numbers of the others stay
  EXPECT_STREQ(dtype_name(DType::String), "string");
  EXPECT_STREQ(dtype_short_name(DType::String), "str");
  EXPECT_EQ(dtype_from_name("string"), DType::String);
  EXPECT_EQ(dtype_from_name("str"), DType::String);
  EXPECT_EQ(dtype_size(DType::String), sizeof(std::string));
  EXPECT_FALSE(is_floating(DType::String));
  EXPECT_FALSE(is_integer(DType::String));
  EXPECT_EQ(dtype_v<std::string>, DType::String);
  // The other dtypes keep their numbers.
  EXPECT_EQ(int(DType::Bool), 8);
  EXPECT_STREQ(dtype_name(DType::Bool), "bool");
}

// --- tensors ---

TEST(StringTensor, NewTensorHoldsEmptyStrings) {
  Tensor t(Shape{2, 3}, DType::String);
  EXPECT_EQ(t.dtype(), DType::String);
  EXPECT_EQ(t.nbytes(), 6 * sizeof(std::string));
  for (const std::string& s : strs(t)) EXPECT_EQ(s, "");
  std::string* p = t.data<std::string>();
  p[4] = big("x");
  EXPECT_EQ(strs(t)[4], big("x"));
  EXPECT_THAT(error_of([&] { t.data<float>(); }), HasSubstr("data<float32> on a tensor of dtype string"));
}

TEST(StringTensor, ConstantScalarItemAndToVector) {
  Tensor t = constant(Strings{"a", big("b"), ""}, {3});
  EXPECT_EQ(t.shape(), Shape({3}));
  EXPECT_EQ(strs(t), (Strings{"a", big("b"), ""}));
  Tensor u = constant(Strings{"x", "y"});
  EXPECT_EQ(u.shape(), Shape({2}));
  Tensor s = string_scalar("hello");
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.item<std::string>(), "hello");
  EXPECT_THAT(error_of([] { constant(Strings{"a"}, {2}); }), HasSubstr("[constant] 1 values do not fill shape [2]"));
}

TEST(StringTensor, NumericAccessIsAClearError) {
  Tensor s = string_scalar("1.5");
  EXPECT_THAT(error_of([&] { s.item<float>(); }), HasSubstr("[item] a string tensor has no numeric value"));
  EXPECT_THAT(error_of([&] { s.to_vector<double>(); }), HasSubstr("[to_vector] a string tensor has no numeric value"));
  EXPECT_THAT(error_of([&] { s.flat(0); }), HasSubstr("[flat] a string tensor has no numeric value"));
  EXPECT_THAT(error_of([] { scalar(1.0).item<std::string>(); }), HasSubstr("[item] item<string> on a tensor of dtype float32"));
  EXPECT_THAT(error_of([] { scalar(1.0).to_vector<std::string>(); }), HasSubstr("to_vector<string> on a tensor of dtype"));
}

TEST(StringTensor, ViewsShareAndCloneCopies) {
  Tensor t = constant(Strings{big("a"), "b", "c", "d"}, {2, 2});
  Tensor v = t.view({4});
  Tensor row = t.slice0(1, 2);
  EXPECT_EQ(strs(v), (Strings{big("a"), "b", "c", "d"}));
  EXPECT_EQ(strs(row), (Strings{"c", "d"}));
  Tensor c = t.clone();
  t.data<std::string>()[0] = "changed";
  EXPECT_EQ(strs(v)[0], "changed");   // a view sees the write
  EXPECT_EQ(strs(c)[0], big("a"));    // the clone does not
  t = Tensor();                       // the views keep the storage (and its strings) alive
  EXPECT_EQ(strs(row), (Strings{"c", "d"}));
}

TEST(StringTensor, ZerosIsEmptyStringsAndFillRefuses) {
  EXPECT_EQ(strs(zeros({2}, DType::String)), (Strings{"", ""}));
  EXPECT_EQ(strs(zeros_like(constant(Strings{"a", big("b")}))), (Strings{"", ""}));  // tf.zeros_like: b
  EXPECT_THAT(error_of([] { ones({2}, DType::String); }), HasSubstr("[fill] unsupported dtype string"));
  EXPECT_THAT(error_of([] { constant(std::vector<double>{1.0}, {1}, DType::String); }),
              HasSubstr("[constant] unsupported dtype string"));
}

// --- printing, as TensorFlow / numpy print bytes ---

TEST(StringTensor, PrintsLikeTensorFlow) {
  EXPECT_EQ(string_scalar("abc").to_string(), "tf.Tensor(b'abc', shape=(), dtype=string)");
  EXPECT_EQ(constant(Strings{"a", "bc"}).to_string(), "tf.Tensor([b'a' b'bc'], shape=(2,), dtype=string)");
  EXPECT_EQ(constant(Strings{"a", "bc", "d", ""}, {2, 2}).to_string(),
            "tf.Tensor(\n[[b'a' b'bc']\n [b'd' b'']], shape=(2, 2), dtype=string)");
  EXPECT_EQ(array_string(constant(Strings{})), "[]");
}

TEST(StringTensor, PrintEscapesBytesAsPython) {
  auto repr = [](const std::string& s) { return array_string(string_scalar(s)); };
  EXPECT_EQ(repr(std::string("a\0b", 3)), "b'a\\x00b'");
  EXPECT_EQ(repr("tab\tnl\ncr\r"), "b'tab\\tnl\\ncr\\r'");
  EXPECT_EQ(repr("back\\slash"), "b'back\\\\slash'");
  EXPECT_EQ(repr("\x7f\xff\x80"), "b'\\x7f\\xff\\x80'");
  EXPECT_EQ(repr("it's"), "b\"it's\"");         // Python switches quotes
  EXPECT_EQ(repr("'\""), "b'\\'\"'");           // both: single quotes, ' escaped
  EXPECT_EQ(repr("say \"hi\""), "b'say \"hi\"'");
}

// --- ops that move strings ---

TEST(StringOps, IdentityReshapeExpandSqueeze) {
  Tensor t = constant(Strings{"a", "b", big("c"), "d", "e", "f"}, {2, 3});
  EXPECT_EQ(strs(identity(t)), strs(t));
  EXPECT_EQ(strs(stop_gradient(t)), strs(t));
  Tensor r = reshape(t, {3, 2});
  EXPECT_EQ(r.shape(), Shape({3, 2}));
  EXPECT_EQ(strs(r), strs(t));
  EXPECT_EQ(reshape(t, {-1}).shape(), Shape({6}));
  Tensor e = expand_dims(t, 0);
  EXPECT_EQ(e.shape(), Shape({1, 2, 3}));
  EXPECT_EQ(squeeze(e).shape(), Shape({2, 3}));
  EXPECT_EQ(strs(squeeze(e)), strs(t));
  EXPECT_EQ(size(t).item<int64_t>(), 6);
}

TEST(StringOps, ConcatAndStack) {
  Tensor a = constant(Strings{"a0", "a1", "a2", "a3"}, {2, 2});
  Tensor b = constant(Strings{big("b0"), "b1"}, {2, 1});
  EXPECT_EQ(strs(concat({a, b}, 1)), (Strings{"a0", "a1", big("b0"), "a2", "a3", "b1"}));
  EXPECT_EQ(strs(concat({a, a}, 0)), (Strings{"a0", "a1", "a2", "a3", "a0", "a1", "a2", "a3"}));
  Tensor s = stack({string_scalar("x"), string_scalar(big("y")), string_scalar("")});
  EXPECT_EQ(s.shape(), Shape({3}));
  EXPECT_EQ(strs(s), (Strings{"x", big("y"), ""}));
  Tensor s1 = stack({constant(Strings{"p", "q"}), constant(Strings{"r", "s"})}, 1);
  EXPECT_EQ(s1.shape(), Shape({2, 2}));
  EXPECT_EQ(strs(s1), (Strings{"p", "r", "q", "s"}));
  EXPECT_THAT(error_of([&] { concat({a, ones({2, 1})}, 1); }), HasSubstr("[concat]"));
}

TEST(StringOps, GatherAndGatherNd) {
  Tensor p = constant(Strings{"r0c0", "r0c1", big("r1c0"), "r1c1", "r2c0", "r2c1"}, {3, 2});
  Tensor g0 = gather(p, constant(std::vector<int32_t>{2, 0, 2}));
  EXPECT_EQ(g0.shape(), Shape({3, 2}));
  EXPECT_EQ(strs(g0), (Strings{"r2c0", "r2c1", "r0c0", "r0c1", "r2c0", "r2c1"}));
  Tensor g1 = gather(p, constant(std::vector<int64_t>{1}), 1);
  EXPECT_EQ(strs(g1), (Strings{"r0c1", "r1c1", "r2c1"}));
  Tensor nd = gather_nd(p, constant(std::vector<int32_t>{1, 0, 0, 1}, {2, 2}));
  EXPECT_EQ(strs(nd), (Strings{big("r1c0"), "r0c1"}));
  EXPECT_THAT(error_of([&] { gather(p, constant(std::vector<int32_t>{3})); }), HasSubstr("is not in [0, 3)"));
}

TEST(StringOps, SliceStridedSliceTileTransposeReverseBroadcast) {
  Tensor t = constant(Strings{"a", "b", "c", "d", "e", big("f")}, {2, 3});
  EXPECT_EQ(strs(slice(t, {0, 1}, {2, 2})), (Strings{"b", "c", "e", big("f")}));
  EXPECT_EQ(strs(slice(t, {1, 0}, {1, 3})), (Strings{"d", "e", big("f")}));
  EXPECT_EQ(strs(strided_slice(t, {0, 0}, {2, 3}, {1, 2})), (Strings{"a", "c", "d", big("f")}));
  EXPECT_EQ(strs(tile(t, {1, 2})), (Strings{"a", "b", "c", "a", "b", "c", "d", "e", big("f"), "d", "e", big("f")}));
  EXPECT_EQ(strs(tile(string_scalar("z"), {})), (Strings{"z"}));
  Tensor tr = transpose(t);
  EXPECT_EQ(tr.shape(), Shape({3, 2}));
  EXPECT_EQ(strs(tr), (Strings{"a", "d", "b", "e", "c", big("f")}));
  EXPECT_EQ(strs(reverse(t, {1})), (Strings{"c", "b", "a", big("f"), "e", "d"}));
  EXPECT_EQ(strs(broadcast_to(constant(Strings{"u", "v"}), {2, 2})), (Strings{"u", "v", "u", "v"}));
}

TEST(StringOps, EqualNotEqualAndWhere) {
  Tensor a = constant(Strings{"x", big("y"), ""});
  Tensor b = constant(Strings{"x", big("y"), "z"});
  EXPECT_EQ(equal(a, b).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(not_equal(a, b).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(equal(a, string_scalar("x")).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  Tensor w = where(constant(std::vector<bool>{true, false, true}), a, string_scalar("no"));
  EXPECT_EQ(strs(w), (Strings{"x", "no", ""}));
  EXPECT_THAT(error_of([&] { equal(a, constant({1.f, 2.f, 3.f})); }), HasSubstr("[equal] dtypes differ"));
}

// --- ops that refuse strings, before any kernel touches the buffer ---

TEST(StringOps, NumericOpsRefuseStrings) {
  Tensor s = constant(Strings{"1", "2"});
  EXPECT_THAT(error_of([&] { add(s, s); }), HasSubstr("[add] unsupported dtype string"));
  EXPECT_THAT(error_of([&] { neg(s); }), HasSubstr("[neg] unsupported dtype string"));
  EXPECT_THAT(error_of([&] { less(s, s); }), HasSubstr("[less] unsupported dtype string"));
  EXPECT_THAT(error_of([&] { reduce_sum(s); }), HasSubstr("[reduce_sum] unsupported dtype string"));
  EXPECT_THAT(error_of([&] { cast(s, DType::Float32); }), HasSubstr("[cast] unsupported dtype string"));
  EXPECT_THAT(error_of([] { cast(constant({1.f}), DType::String); }), HasSubstr("[cast] unsupported dtype string (output 0)"));
  EXPECT_THAT(error_of([&] { matmul(reshape(s, {1, 2}), reshape(s, {2, 1})); }), HasSubstr("[matmul] unsupported dtype string"));
  EXPECT_THAT(error_of([&] { pad(s, {{1, 1}}); }), HasSubstr("[pad] unsupported dtype string"));
  EXPECT_THAT(error_of([&] { ones_like(s); }), HasSubstr("unsupported dtype string"));
  EXPECT_THAT(error_of([&] { scatter_nd(constant(std::vector<int32_t>{0}, {1, 1}), s.slice0(0, 1), {2}); }),
              HasSubstr("[scatter_nd] unsupported dtype string"));
  EXPECT_THAT(error_of([&] { unsorted_segment_sum(s, constant(std::vector<int32_t>{0, 0}), 1); }),
              HasSubstr("[unsorted_segment_sum] unsupported dtype string"));
}

// --- autodiff: strings are never differentiable ---

TEST(StringAutodiff, TapeSkipsStrings) {
  Tensor x = constant({1.0, 2.0}, {2}, DType::Float64);
  Tensor s = constant(Strings{"a", "b"});
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  tape.watch(s);  // ignored, as TensorFlow does for non-float tensors
  Tensor picked = gather(s, constant(std::vector<int32_t>{1}));
  Tensor y = reduce_sum(x * x);
  EXPECT_EQ(tape.gradient(y, x).to_vector<double>(), (std::vector<double>{2, 4}));
  EXPECT_FALSE(tape.gradient(y, s).defined());
  EXPECT_FALSE(tape.gradient(y, s, UnconnectedGradients::Zero).defined());
  EXPECT_THAT(error_of([&] { tape.gradient(picked, x); }), HasSubstr("[GradientTape.gradient] target 0 is a string tensor"));
}

TEST(StringAutodiff, CondWithAStringOutputDifferentiatesTheFloatOne) {
  Tensor x = constant({3.0}, {1}, DType::Float64);
  Tensor s = string_scalar(big("label"));
  GradientTape tape;
  tape.watch(x);
  TensorList out = cond(scalar(1.0, DType::Bool), [&] { return TensorList{x * x, identity(s)}; },
                        [&] { return TensorList{x, string_scalar("other")}; });
  EXPECT_EQ(out[1].item<std::string>(), big("label"));
  EXPECT_EQ(tape.gradient(reduce_sum(out[0]), x).to_vector<double>(), (std::vector<double>{6}));
}

// --- graphs, sessions and traced functions ---

TEST(StringGraph, SessionFeedsAndFetchesStrings) {
  auto g = std::make_shared<Graph>();
  Tensor x, joined, same, picked, blank;
  Tensor suffix = constant(Strings{big("k")});
  {
    GraphScope scope(g);
    x = placeholder(DType::String, {-1});
    joined = concat({x, suffix}, 0);
    same = equal(joined, string_scalar("b"));
    picked = gather(joined, constant(std::vector<int32_t>{0}));
    blank = zeros_like(x);
  }
  Session sess(g);
  TensorList out = sess.run({{x, constant(Strings{"a", "b"})}}, {joined, same, picked, blank});
  EXPECT_EQ(strs(out[3]), (Strings{"", ""}));
  EXPECT_EQ(strs(out[0]), (Strings{"a", "b", big("k")}));
  EXPECT_EQ(out[1].to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(strs(out[2]), (Strings{"a"}));
  EXPECT_THAT(error_of([&] { sess.run({{x, constant({1.f})}}, {joined}); }), HasSubstr("string"));
}

TEST(StringGraph, TextFormRoundTripsStringConstants) {
  auto g = std::make_shared<Graph>();
  {
    GraphScope scope(g);
    Tensor c = constant(Strings{"plain", std::string("nul\0byte", 8), "quote\"back\\slash", "\xff\n"}, {2, 2});
    g->outputs.push_back(g->value_of(identity(c)));
  }
  std::string text = print_graph(*g);
  EXPECT_THAT(text, HasSubstr("tensor<str[2,2]>[\"plain\", \"nul\\x00byte\", \"quote\\\"back\\\\slash\", "));
  auto back = parse_graph(text);
  std::string why;
  EXPECT_TRUE(graph_equal(*g, *back, &why)) << why;
  EXPECT_EQ(print_graph(*back), text);
  EXPECT_THAT(error_of([] { parse_graph("%c = const() {value=tensor<str[2]>[\"a\"]} : str[2]\n"); }),
              HasSubstr("tensor<str[2]> needs 2 elements, got 1"));
  EXPECT_THAT(error_of([] { parse_graph("%c = const() {value=tensor<str[1]>[1]} : str[1]\n"); }),
              HasSubstr("expected a quoted string"));
}

TEST(StringGraph, TracedFunctionTakesAndReturnsStrings) {
  Function f = function(
      [](const Tensor& s, const Tensor& i) {
        return TensorList{gather(concat({s, constant(Strings{"tail"})}, 0), i), not_equal(s, string_scalar(""))};
      },
      {.input_signature = Signature{{DType::String, Shape{-1}}, {DType::Int32, Shape{-1}}}});
  TensorList r = f(constant(Strings{big("a"), ""}), constant(std::vector<int32_t>{2, 0}));
  EXPECT_EQ(strs(r[0]), (Strings{"tail", big("a")}));
  EXPECT_EQ(r[1].to_vector<bool>(), (std::vector<bool>{true, false}));
  TensorList r2 = f(constant(Strings{"x", "y", "z"}), constant(std::vector<int32_t>{1}));
  EXPECT_EQ(strs(r2[0]), (Strings{"y"}));
  EXPECT_EQ(f.concrete_functions().size(), 1u);
}

TEST(StringGraph, WhileLoopCarriesAString) {
  TensorList out = while_loop([](const TensorList& v) { return less(v[0], scalar(3.0, DType::Int32)); },
                              [](const TensorList& v) {
                                return TensorList{v[0] + scalar(1.0, DType::Int32), reverse(v[1], {0})};
                              },
                              {scalar(0.0, DType::Int32), constant(Strings{"s", big("t")})});
  EXPECT_EQ(out[0].item<int32_t>(), 3);
  EXPECT_EQ(strs(out[1]), (Strings{big("t"), "s"}));
}

TEST(StringGraph, WhileLoopWithHistoryForAGradientCopiesStrings) {
  // A float loop variable next to a string one: differentiating makes the loop keep the
  // history of every variable, strings included.
  Tensor x = constant({2.0}, {1}, DType::Float64);
  GradientTape tape;
  tape.watch(x);
  TensorList out = while_loop([](const TensorList& v) { return less(v[0], scalar(2.0, DType::Int32)); },
                              [](const TensorList& v) {
                                return TensorList{v[0] + scalar(1.0, DType::Int32), v[1] * v[1], reverse(v[2], {0})};
                              },
                              {scalar(0.0, DType::Int32), x, constant(Strings{big("a"), "b"})});
  EXPECT_EQ(strs(out[2]), (Strings{big("a"), "b"}));
  EXPECT_EQ(tape.gradient(reduce_sum(out[1]), x).to_vector<double>(), (std::vector<double>{32}));  // d x^4 = 4x^3
}

}  // namespace
}  // namespace deepflow
