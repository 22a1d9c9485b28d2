// SPDX-License-Identifier: Apache-2.0
#include "deepflow/io/saved_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "deepflow/function/control_flow.h"
#include "deepflow/io/bundle.h"
#include "deepflow/ops/ops.h"
#include "io/io_test_util.h"
#include "saved_model.pb.h"
#include "test_util.h"

namespace deepflow::io {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

Signature sig(std::initializer_list<int64_t> dims) { return {{DType::Float32, Shape(dims)}}; }

void expect_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(cast(a, DType::Float64).to_vector<double>(), cast(b, DType::Float64).to_vector<double>());
}

// y = relu(x w + b), x: [?, 3].
struct Dense {
  Variable w{random_normal({3, 2}, 0, 1, DType::Float32, int64_t(1)), "dense/kernel"};
  Variable b{constant({0.5f, -0.25f}), "dense/bias"};
  Function f = function([this](const Tensor& x) { return relu(add(matmul(x, w.value()), b.value())); },
                        {.name = "serve", .input_signature = sig({-1, 3})});
};

TEST(SavedModel, RoundTripRunsWithoutTheModelCode) {
  TempDir tmp;
  Tensor x = random_normal({4, 3}, 0, 1, DType::Float32, int64_t(7));
  Tensor expected;
  {
    Dense d;
    expected = d.f(x)[0];
    save_saved_model(tmp / "m", {{.fn = d.f.get_concrete_function(), .input_names = {"x"}}});
  }  // the model (its variables and function) is gone
  for (const char* f : {"saved_model.pb", "variables/variables.index", "variables/variables.data-00000-of-00001"})
    EXPECT_TRUE(fs::is_regular_file(tmp / "m/" + f)) << f;
  EXPECT_TRUE(fs::is_directory(tmp / "m/assets"));
  EXPECT_TRUE(fs::is_directory(tmp / "m/assets.extra"));
  EXPECT_EQ(testing::list_dir(tmp.path()), std::vector<std::string>{"m"});  // no temporaries left

  for (bool mmap : {true, false}) {
    SavedModel m = load_saved_model(tmp / "m", {"serve"}, {.mmap = mmap});
    EXPECT_EQ(m.signature_keys(), std::vector<std::string>{"serving_default"});
    const LoadedSignature& s = m.signature("serving_default");
    EXPECT_EQ(s.method_name(), "tensorflow/serving/predict");
    EXPECT_EQ(s.inputs().at("x"), (TensorType{DType::Float32, {-1, 3}}));
    EXPECT_EQ(s.outputs().at("output_0"), (TensorType{DType::Float32, {-1, 2}}));
    auto out = s({{"x", x}});
    ASSERT_EQ(out.size(), 1u);
    expect_equal(out.at("output_0"), expected);
    ASSERT_EQ(m.variables().size(), 2u);
    EXPECT_EQ(m.variables().at("dense/kernel").shape(), Shape({3, 2}));
    EXPECT_TRUE(m.variables().at("dense/bias").trainable());
  }
}

TEST(SavedModel, DefaultNamesSeveralSignaturesAndInfo) {
  TempDir tmp;
  Dense d;
  Function twice = function(
      [&](const Tensor& a, const Tensor& b) {
        return TensorList{a * 2.0, a + b, d.b.value()};
      },
      {.name = "twice", .input_signature = Signature{{DType::Float32, {2}}, {DType::Float32, {2}}}});
  save_saved_model(tmp / "m",
                   {{.fn = d.f.get_concrete_function()},
                    {.key = "twice",
                     .fn = twice.get_concrete_function(),
                     .output_names = {"doubled", "sum", "bias"},
                     .method_name = "custom/method"}},
                   {.tags = {"serve", "gpu"}});
  std::vector<MetaGraphInfo> info = read_saved_model_info(tmp / "m");
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(tag_set_string(info[0].tags), "gpu, serve");
  const SignatureInfo& serve = info[0].signatures.at("serving_default");
  EXPECT_EQ(serve.inputs.at("input").name, "input:0");  // the traced placeholder's name
  EXPECT_EQ(serve.outputs.begin()->first, "output_0");
  const SignatureInfo& t = info[0].signatures.at("twice");
  EXPECT_EQ(t.method_name, "custom/method");
  EXPECT_EQ((std::vector<std::string>{t.inputs.begin()->first, std::next(t.inputs.begin())->first}),
            (std::vector<std::string>{"input_0", "input_1"}));
  EXPECT_EQ(t.outputs.size(), 3u);

  EXPECT_THAT(error_of([&] { load_saved_model(tmp / "m"); }),
              HasSubstr("no MetaGraph with tag set 'serve'; available tag sets: 'gpu, serve'"));
  SavedModel m = load_saved_model(tmp / "m", {"gpu", "serve"});
  EXPECT_EQ(m.signature_keys(), (std::vector<std::string>{"serving_default", "twice"}));
  auto out = m.signature("twice")({{"input_0", constant({1.f, 2.f})}, {"input_1", constant({10.f, 20.f})}});
  expect_equal(out.at("doubled"), constant({2.f, 4.f}));
  expect_equal(out.at("sum"), constant({11.f, 22.f}));
  expect_equal(out.at("bias"), constant({0.5f, -0.25f}));
  EXPECT_EQ(m.variables().size(), 2u);  // shared by both functions, saved once
  EXPECT_THAT(error_of([&] { m.signature("nope"); }),
              HasSubstr("no signature 'nope'; available: serving_default, twice"));
}

TEST(SavedModel, InputsAreChecked) {
  TempDir tmp;
  Dense d;
  save_saved_model(tmp / "m", {{.fn = d.f.get_concrete_function(), .input_names = {"x"}}});
  SavedModel m = load_saved_model(tmp / "m");
  const LoadedSignature& s = m.signature("serving_default");
  const std::string expect = "expected inputs: x: float32[?,3]";
  EXPECT_THAT(error_of([&] { s({{"y", ones({1, 3})}}); }), HasSubstr("unknown input 'y'; " + expect));
  EXPECT_THAT(error_of([&] { s({}); }), HasSubstr("missing input 'x'; " + expect));
  EXPECT_THAT(error_of([&] { s({{"x", ones({1, 4})}}); }), HasSubstr("input 'x' is float32[1,4]; " + expect));
  EXPECT_THAT(error_of([&] { s({{"x", ones({1, 3}, DType::Int32)}}); }), HasSubstr("input 'x' is int32[1,3]"));
  EXPECT_EQ(s({{"x", ones({5, 3})}}).at("output_0").shape(), Shape({5, 2}));
}

TEST(SavedModel, AssignsRunAndVariablesAreShared) {
  TempDir tmp;
  Variable counter(scalar(0), "counter", /*trainable=*/false);
  Function bump = function(
      [&] {
        counter.assign_add(scalar(1));
        return counter.value();
      },
      {.name = "bump"});
  Function read = function([&] { return counter.value() * 10.0; }, {.name = "read"});
  save_saved_model(tmp / "m", {{.key = "bump", .fn = bump.get_concrete_function(Signature{})},
                               {.key = "read", .fn = read.get_concrete_function(Signature{})}});
  SavedModel m = load_saved_model(tmp / "m");
  EXPECT_FALSE(m.variables().at("counter").trainable());
  m.signature("bump")({});
  m.signature("bump")({});
  EXPECT_EQ(m.variables().at("counter").value().item<float>(), 2.f);
  EXPECT_EQ(m.signature("read")({}).at("output_0").item<float>(), 20.f);
  EXPECT_EQ(counter.value().item<float>(), 0.f);  // the original is untouched
}

TEST(SavedModel, NestedFunctionsOfTwoSignaturesDoNotClash) {
  TempDir tmp;
  // Both traced graphs hold a cond whose branch functions get the same per-graph names.
  Function a = function(
      [](const Tensor& x) {
        return cond(
            greater(reduce_sum(x), scalar(0)), [&] { return x * 2.0; }, [&] { return x; });
      },
      {.name = "f", .input_signature = sig({2})});
  Function b = function(
      [](const Tensor& x) {
        return cond(
            greater(reduce_sum(x), scalar(0)), [&] { return x + 100.0; }, [&] { return -x; });
      },
      {.name = "f", .input_signature = sig({2})});
  save_saved_model(tmp / "m", {{.key = "a", .fn = a.get_concrete_function(), .input_names = {"x"}},
                               {.key = "b", .fn = b.get_concrete_function(), .input_names = {"x"}}});
  SavedModel m = load_saved_model(tmp / "m");
  EXPECT_NE(m.info().signatures.at("a").function, m.info().signatures.at("b").function);
  expect_equal(m.signature("a")({{"x", constant({1.f, 2.f})}}).at("output_0"), constant({2.f, 4.f}));
  expect_equal(m.signature("b")({{"x", constant({1.f, 2.f})}}).at("output_0"), constant({101.f, 102.f}));
  expect_equal(m.signature("b")({{"x", constant({-1.f, -2.f})}}).at("output_0"), constant({1.f, 2.f}));
}

TEST(SavedModel, ExtraVariablesMetadataAssetsAndNameClashes) {
  TempDir tmp;
  Dense d;
  Variable slot(fill({3, 2}, 7), "dense/kernel");  // same name as a model variable
  Variable step(scalar(41, DType::Int64), "step", false);
  Variable vocab(constant(std::vector<std::string>{"", std::string("a\0b", 3), std::string(300, 'z')}, {3}), "vocab",
                 false);
  testing::write_bytes(tmp / "vocab.txt", "a\nb\n");
  const std::vector<std::string> saved_as =
      save_saved_model(tmp / "m", {{.fn = d.f.get_concrete_function()}},
                       {.assets = {{"vocab.txt", tmp / "vocab.txt"}},
                        .object_metadata = std::string("{\"k\": 1}\0x", 10),
                        .extra_variables = {slot, step, d.w, vocab}});
  // The function's variables are named first; a clashing extra one gets a suffix.
  EXPECT_EQ(saved_as, (std::vector<std::string>{"dense/kernel_1", "step", "dense/kernel", "vocab"}));
  // Metadata that names the variables is made once their names are known.
  save_saved_model(tmp / "names", {{.fn = d.f.get_concrete_function()}},
                   {.extra_variables = {slot, step},
                    .object_metadata_from_names = [](const std::vector<std::string>& names) {
                      return names.at(0) + "," + names.at(1);
                    }});
  EXPECT_EQ(load_saved_model(tmp / "names").object_metadata(), "dense/kernel_1,step");
  SavedModel m = load_saved_model(tmp / "m");
  EXPECT_EQ(m.object_metadata(), std::string("{\"k\": 1}\0x", 10));
  EXPECT_EQ(testing::read_bytes(m.assets().at("vocab.txt")), "a\nb\n");
  ASSERT_EQ(m.variables().size(), 5u);
  EXPECT_EQ(m.variables().at("vocab").value().to_vector<std::string>(), vocab.value().to_vector<std::string>());
  expect_equal(m.variables().at("dense/kernel").value(), d.w.value());
  expect_equal(m.variables().at("dense/kernel_1").value(), fill({3, 2}, 7));
  EXPECT_EQ(m.variables().at("step").value().item<int64_t>(), 41);
  EXPECT_THAT(error_of([&] {
                save_saved_model(tmp / "n", {}, {.assets = {{"../x", tmp / "vocab.txt"}}});
              }),
              HasSubstr("asset name '../x' must be a plain file name"));
  EXPECT_THAT(error_of([&] {
                save_saved_model(tmp / "n", {}, {.assets = {{"x", tmp / "nope"}}});
              }),
              HasSubstr("cannot read asset"));
  EXPECT_FALSE(fs::exists(tmp / "n"));
}

TEST(SavedModel, SaveIsAtomicAndRefusesToClobber) {
  TempDir tmp;
  Dense d;
  ConcreteFunction cf = d.f.get_concrete_function();
  fs::create_directory(tmp / "empty");
  save_saved_model(tmp / "empty", {{.fn = cf}});  // an empty directory is fine
  EXPECT_TRUE(is_saved_model_dir(tmp / "empty"));
  EXPECT_THAT(error_of([&] { save_saved_model(tmp / "empty", {{.fn = cf}}); }),
              HasSubstr("exists and is not empty (set SaveOptions::overwrite)"));
  d.b.assign(constant({100.f, 100.f}));
  save_saved_model(tmp / "empty", {{.fn = cf}}, {.overwrite = true});
  expect_equal(load_saved_model(tmp / "empty").variables().at("dense/bias").value(), constant({100.f, 100.f}));
  EXPECT_EQ(testing::list_dir(tmp.path()), std::vector<std::string>{"empty"});
  // A failing save leaves nothing behind.
  EXPECT_THAT(error_of([&] {
                save_saved_model(tmp / "bad", {{.fn = cf}, {.fn = cf}});
              }),
              HasSubstr("signature 'serving_default': the key is used twice"));
  EXPECT_THAT(error_of([&] {
                save_saved_model(tmp / "bad", {{.fn = cf, .input_names = {"a", "b"}}});
              }),
              HasSubstr("the function takes 1 inputs but 2 input names were given"));
  EXPECT_THAT(error_of([&] { save_saved_model(tmp / "bad", {{.fn = ConcreteFunction()}}); }),
              HasSubstr("the function is undefined"));
  EXPECT_THAT(error_of([&] { save_saved_model(tmp / "no/such/parent", {{.fn = cf}}); }), HasSubstr("parent directory"));
  testing::write_bytes(tmp / "file", "x");
  EXPECT_THAT(error_of([&] { save_saved_model(tmp / "file", {{.fn = cf}}, {.overwrite = true}); }),
              HasSubstr(tmp / "file" + " exists and is not a directory"));
  fs::remove(tmp / "file");
  EXPECT_EQ(testing::list_dir(tmp.path()), std::vector<std::string>{"empty"});
}

// --- damaged files ---

class DamagedSavedModel : public ::testing::Test {
 protected:
  TempDir tmp;
  std::string dir = tmp / "m";
  std::string pb = dir + "/saved_model.pb";
  std::string original;
  void SetUp() override {
    Dense d;
    save_saved_model(dir, {{.fn = d.f.get_concrete_function(), .input_names = {"x"}}});
    original = testing::read_bytes(pb);
  }
  proto::SavedModel read() {  // the file as saved
    proto::SavedModel sm;
    EXPECT_TRUE(sm.ParseFromString(original));
    return sm;
  }
  void write(const proto::SavedModel& sm) { testing::write_bytes(pb, sm.SerializeAsString()); }
};

TEST_F(DamagedSavedModel, MissingPieces) {
  EXPECT_THAT(error_of([&] { load_saved_model(tmp / "nope"); }), HasSubstr(tmp / "nope" + ": no such directory"));
  fs::remove_all(dir + "/variables");
  EXPECT_THAT(error_of([&] { load_saved_model(dir); }), HasSubstr(dir + "/variables/variables"));
  fs::remove(pb);
  EXPECT_THAT(error_of([&] { load_saved_model(dir); }), HasSubstr(pb + ": missing"));
  EXPECT_THAT(error_of([&] { read_saved_model_info(dir); }), HasSubstr("[read_saved_model_info] " + pb + ": missing"));
}

TEST_F(DamagedSavedModel, VersionAndReferences) {
  proto::SavedModel sm = read();
  sm.set_saved_model_schema_version(2);
  write(sm);
  EXPECT_THAT(error_of([&] { load_saved_model(dir); }),
              HasSubstr(pb + ": schema version 2 is newer than this reader's 1"));

  sm = read();
  sm.mutable_meta_graphs(0)->mutable_variables(0)->set_checkpoint_key("gone");
  write(sm);
  EXPECT_THAT(error_of([&] { load_saved_model(dir); }), HasSubstr("key 'gone' is missing from the bundle"));

  sm.mutable_meta_graphs(0)->mutable_variables(0)->set_checkpoint_key(sm.meta_graphs(0).variables(0).name());
  sm.mutable_meta_graphs(0)->mutable_variables(0)->add_shape(1);
  write(sm);
  EXPECT_THAT(error_of([&] { load_saved_model(dir); }), HasSubstr("saved_model.pb says"));

  sm = read();
  sm.mutable_meta_graphs(0)->mutable_variables()->RemoveLast();
  write(sm);
  EXPECT_THAT(error_of([&] { load_saved_model(dir); }), HasSubstr("which is not among the saved variables"));

  sm = read();
  (*sm.mutable_meta_graphs(0)->mutable_signature_def())["serving_default"].set_function("nope");
  write(sm);
  EXPECT_THAT(error_of([&] { load_saved_model(dir); }), HasSubstr("function 'nope' is not in the library"));

  sm = read();
  (*(*sm.mutable_meta_graphs(0)->mutable_signature_def())["serving_default"].mutable_inputs())["x"].set_name("zz:0");
  write(sm);
  EXPECT_THAT(error_of([&] { load_saved_model(dir); }), HasSubstr("input 'x': [graph] no node named 'zz'"));
}

TEST_F(DamagedSavedModel, TruncatedAtEveryLengthNeverCrashes) {
  const std::string bytes = testing::read_bytes(pb);
  ASSERT_GT(bytes.size(), 100u);
  int loaded = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    testing::write_bytes(pb, bytes.substr(0, n));
    try {
      load_saved_model(dir);
      ++loaded;  // a cut between two fields can still be a valid message
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(dir)) << "at length " << n;
    }
  }
  EXPECT_LT(loaded, int(bytes.size()) / 10);
  testing::write_bytes(pb, "");
  EXPECT_THAT(error_of([&] { load_saved_model(dir); }), HasSubstr(pb + ": missing schema version"));
}

TEST_F(DamagedSavedModel, BitFlipsNeverCrash) {
  const std::string bytes = testing::read_bytes(pb);
  std::mt19937 rng(5);
  for (int i = 0; i < 400; ++i) {
    std::string b = bytes;
    b[rng() % b.size()] ^= char(1 << (rng() % 8));
    testing::write_bytes(pb, b);
    try {
      SavedModel m = load_saved_model(dir);
      for (const auto& k : m.signature_keys()) (void)m.signature(k).inputs();
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(dir)) << "flip " << i;
    }
  }
}

TEST_F(DamagedSavedModel, CorruptVariablesFile) {
  const std::string data = dir + "/variables/variables.data-00000-of-00001";
  std::string bytes = testing::read_bytes(data);
  bytes[0] ^= 1;
  testing::write_bytes(data, bytes);
  EXPECT_THAT(error_of([&] { load_saved_model(dir, {"serve"}, {.mmap = false}); }), HasSubstr("variables"));
}

}  // namespace
}  // namespace deepflow::io
