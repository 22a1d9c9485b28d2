// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/predict.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deepflow/data/example.h"
#include "serving/serving_test_util.h"

namespace deepflow::serving {
namespace {

using ::testing::HasSubstr;

class ServingPredict : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new testing::TempDir;
    std::string dir = testing::save_half_plus(tmp_->path(), 1, 2.f);
    half_ = new ServableHandle(std::make_shared<Servable>(Servable{"half", 1, dir, io::load_saved_model(dir)}));
  }
  static void TearDownTestSuite() {
    delete half_;
    delete tmp_;
  }
  static const ServableHandle& half() { return *half_; }

  static testing::TempDir* tmp_;
  static ServableHandle* half_;
};
testing::TempDir* ServingPredict::tmp_ = nullptr;
ServableHandle* ServingPredict::half_ = nullptr;

// The ServingError thrown by f; fails the test when there is none.
template <class F>
ServingError error_of(F&& f) {
  try {
    f();
  } catch (const ServingError& e) {
    return e;
  }
  ADD_FAILURE() << "no ServingError";
  return ServingError(Code::Ok, "");
}

std::string example(std::vector<float> x) { return data::ExampleBuilder().set("x", std::move(x)).serialize(); }

TEST_F(ServingPredict, RunsTheDefaultSignature) {
  auto out = run_predict(half(), "", {{"x", constant({1.f, 2.f, 5.f})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.at("y").to_vector<float>(), (std::vector<float>{2.5f, 3.f, 4.5f}));
  // By name, through a runner that sees the resolved key.
  int calls = 0;
  SignatureRunner counting = [&](const ServableHandle& s, const std::string& key,
                                 const std::map<std::string, Tensor>& in) {
    ++calls;
    EXPECT_EQ(key, "serving_default");
    return run_signature_directly(s, key, in);
  };
  out = run_predict(half(), "serving_default", {{"x", constant({0.f})}}, {}, counting);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(out.at("y").to_vector<float>(), (std::vector<float>{2.f}));
}

TEST_F(ServingPredict, UnknownSignature) {
  ServingError e = error_of([&] { run_predict(half(), "nope", {{"x", constant({1.f})}}); });
  EXPECT_EQ(e.code(), Code::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("[predict] Serving signature name: \"nope\" not found in signature def"));
}

TEST_F(ServingPredict, BadInputsAreRejectedBeforeRunning) {
  int calls = 0;
  SignatureRunner counting = [&](const ServableHandle& s, const std::string& key,
                                 const std::map<std::string, Tensor>& in) {
    ++calls;
    return run_signature_directly(s, key, in);
  };
  auto err = [&](std::map<std::string, Tensor> in) {
    return error_of([&] { run_predict(half(), "", in, {}, counting); });
  };
  const std::string expects = "Signature \"serving_default\" expects inputs: x (DT_FLOAT [-1]).";

  ServingError missing = err({});
  EXPECT_EQ(missing.code(), Code::InvalidArgument);
  EXPECT_THAT(missing.what(), HasSubstr("input size does not match signature: 0!=1 len({}) != len({x}). Sent extra: "
                                        "{}. Missing but required: {x}."));
  EXPECT_THAT(missing.what(), HasSubstr(expects));

  ServingError extra = err({{"x", constant({1.f})}, {"z", constant({1.f})}});
  EXPECT_THAT(extra.what(), HasSubstr("Sent extra: {z}. Missing but required: {}."));

  ServingError unknown = err({{"z", constant({1.f})}});
  EXPECT_THAT(unknown.what(), HasSubstr("input tensor alias not found in signature: z. Inputs expected to be in the "
                                        "set {x}."));

  ServingError typed = err({{"x", constant(std::vector<int32_t>{1})}});
  EXPECT_EQ(typed.code(), Code::InvalidArgument);
  EXPECT_THAT(typed.what(), HasSubstr("input 'x' is DT_INT32 but the signature expects DT_FLOAT"));
  EXPECT_THAT(typed.what(), HasSubstr(expects));

  ServingError shaped = err({{"x", ones({2, 2})}});
  EXPECT_THAT(shaped.what(), HasSubstr("input 'x' has shape [2,2], not compatible with the signature's [-1]"));

  ServingError undefined = err({{"x", Tensor()}});
  EXPECT_THAT(undefined.what(), HasSubstr("input 'x' has no value"));
  EXPECT_EQ(calls, 0);
}

TEST_F(ServingPredict, OutputFilter) {
  auto out = run_predict(half(), "", {{"x", constant({4.f})}}, {"y"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.at("y").to_vector<float>(), (std::vector<float>{4.f}));
  ServingError unknown = error_of([&] { run_predict(half(), "", {{"x", constant({4.f})}}, {"y", "nope"}); });
  EXPECT_EQ(unknown.code(), Code::InvalidArgument);
  EXPECT_THAT(unknown.what(),
              HasSubstr("output tensor alias not found in signature: nope Outputs expected to be in the "
                        "set {y}."));
  ServingError dup = error_of([&] { run_predict(half(), "", {{"x", constant({4.f})}}, {"y", "y"}); });
  EXPECT_THAT(dup.what(), HasSubstr("duplicate output tensor alias: y"));
}

TEST_F(ServingPredict, RegressParsesExamples) {
  EXPECT_EQ(run_regress(half(), "regress_x_to_y", {example({1.f}), example({2.f})}), (std::vector<float>{2.5f, 3.f}));
  // A single float output works as the regression output too.
  EXPECT_EQ(run_regress(half(), "", {example({4.f})}), (std::vector<float>{4.f}));
  // REST's JSON `3` arrives as an int64_list; a float input takes it.
  std::string int_ex = data::ExampleBuilder().set("x", std::vector<int64_t>{3}).serialize();
  EXPECT_EQ(run_regress(half(), "regress_x_to_y", {int_ex}), (std::vector<float>{3.5f}));
}

TEST_F(ServingPredict, ClassifyParsesExamples) {
  auto r = run_classify(half(), "classify_x_to_y", {example({2.f}), example({-8.f})});
  ASSERT_EQ(r.size(), 2u);
  ASSERT_EQ(r[0].size(), 2u);
  EXPECT_EQ(r[0][0].label, "");
  EXPECT_EQ(r[0][0].score, 3.f);
  EXPECT_EQ(r[0][1].score, -3.f);
  EXPECT_EQ(r[1][0].score, -2.f);
  EXPECT_EQ(r[1][1].score, 2.f);
  ServingError e = error_of([&] { run_classify(half(), "", {example({2.f})}); });
  EXPECT_THAT(e.what(),
              HasSubstr("[classify] Expected output Tensor shape to be [batch_size, num_classes] but got [1]"));
}

TEST_F(ServingPredict, ContextIsMergedIntoEveryExample) {
  std::string context = example({4.f});
  std::string other = data::ExampleBuilder().set("id", std::vector<std::string>{"a"}).serialize();
  EXPECT_EQ(run_regress(half(), "regress_x_to_y", {other, other}, context), (std::vector<float>{4.f, 4.f}));
  auto r = run_classify(half(), "classify_x_to_y", {other}, context);
  EXPECT_EQ(r[0][0].score, 4.f);

  ServingError both = error_of([&] { run_regress(half(), "regress_x_to_y", {other, example({1.f})}, context); });
  EXPECT_EQ(both.code(), Code::InvalidArgument);
  EXPECT_THAT(both.what(), HasSubstr("[regress] feature 'x' is in both the context and example 1"));
}

TEST_F(ServingPredict, BadExamples) {
  auto err = [&](std::vector<std::string> ex) { return error_of([&] { run_regress(half(), "regress_x_to_y", ex); }); };
  std::string other = data::ExampleBuilder().set("id", std::vector<std::string>{"a"}).serialize();
  ServingError missing = err({example({1.f}), other});
  EXPECT_EQ(missing.code(), Code::InvalidArgument);
  EXPECT_THAT(missing.what(),
              HasSubstr("[regress] example 1 has no feature 'x', needed by signature input 'x' (DT_FLOAT [-1])"));
  EXPECT_THAT(err({example({1.f, 2.f})}).what(),
              HasSubstr("feature 'x' of example 0 has 2 values; signature input 'x' (DT_FLOAT [-1]) needs 1"));
  std::string bytes_ex = data::ExampleBuilder().set("x", std::vector<std::string>{"1"}).serialize();
  EXPECT_THAT(err({bytes_ex}).what(), HasSubstr("feature 'x' of example 0 is a bytes_list"));
  EXPECT_THAT(err({"\xff\xff\xff"}).what(), HasSubstr("example 0 is not a valid tf.train.Example (3 bytes)"));
  EXPECT_THAT(err({}).what(), HasSubstr("[regress] Input is empty."));
  ServingError ctx = error_of([&] { run_regress(half(), "regress_x_to_y", {example({1.f})}, "\xff"); });
  EXPECT_THAT(ctx.what(), HasSubstr("the context is not a valid tf.train.Example"));
  ServingError sig = error_of([&] { run_classify(half(), "nope", {example({1.f})}); });
  EXPECT_THAT(sig.what(), HasSubstr("Serving signature name: \"nope\" not found in signature def"));
}

// A signature with one string input gets the serialized examples (with the context
// merged in): scores = [x == reference bytes].
TEST_F(ServingPredict, StringSignatureGetsSerializedExamples) {
  testing::TempDir tmp;
  std::string reference = example({1.f});
  Tensor ref = string_scalar(reference);
  Function f = function(
      [&](const Tensor& s) {
        return cast(equal(reshape(s, {-1, 1}), ref), DType::Float32);
      },
      {.name = "is_ref", .input_signature = Signature{{DType::String, Shape({-1})}}});
  std::string dir = tmp.path() + "/1";
  io::save_saved_model(dir, {{.key = "classify",
                              .fn = f.get_concrete_function(),
                              .input_names = {"inputs"},
                              .output_names = {"scores"},
                              .method_name = "tensorflow/serving/classify"}});
  ServableHandle s = std::make_shared<Servable>(Servable{"str", 1, dir, io::load_saved_model(dir)});
  auto r = run_classify(s, "classify", {reference, example({2.f})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0][0].score, 1.f);
  EXPECT_EQ(r[1][0].score, 0.f);
  // An empty Example plus the context {x: 1} re-serializes to the reference bytes.
  r = run_classify(s, "classify", {std::string()}, reference);
  EXPECT_EQ(r[0][0].score, 1.f);
}

}  // namespace
}  // namespace deepflow::serving
