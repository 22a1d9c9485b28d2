// SPDX-License-Identifier: Apache-2.0
// io::Checkpoint: the key scheme, a full round trip (model, optimizer with slots, a step
// variable, an iterator) into freshly built objects that then train exactly like the
// originals, shape and dtype mismatches that change nothing, partial restores and their
// reports, save numbering and the state file, damaged checkpoints.
#include "deepflow/io/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "deepflow/io/bundle.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"
#include "deepflow/ops/ops.h"
#include "io_test_util.h"
#include "test_util.h"

namespace deepflow::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::error_of;
using testing::TempDir;
using keras::LayerPtr;
using keras::Sequential;
namespace layers = keras::layers;

std::shared_ptr<Sequential> mlp(int64_t hidden = 3) {
  return std::make_shared<Sequential>(
      std::vector<LayerPtr>{layers::InputLayer(Shape{2}), layers::Dense(hidden, "relu"), layers::Dense(1)});
}

void expect_equal(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  EXPECT_EQ(cast(a, DType::Float64).to_vector<double>(), cast(b, DType::Float64).to_vector<double>()) << what;
}

TEST(Checkpoint, KeysFollowTheObjectPaths) {
  auto model = mlp();
  auto opt = keras::optimizers::SGD({.momentum = 0.9});
  opt->build(model->trainable_weights());
  Variable step(scalar(0, DType::Int64), "step", false);
  data::Iterator it = data::Dataset::range(10).iter();
  Checkpoint ckpt({{"model", model}, {"optimizer", opt}, {"step", step}, {"iterator", &it},
                   {"extra", Trackable::Map{{"bias", Variable(zeros({2}), "b")}}}});
  EXPECT_THAT(ckpt.keys(),
              ElementsAre("extra/bias/.ATTRIBUTES/VARIABLE_VALUE", "iterator/.ATTRIBUTES/ITERATOR_STATE",
                          "model/layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE",
                          "model/layer_with_weights-0/bias/.OPTIMIZER_SLOT/optimizer/momentum/.ATTRIBUTES/VARIABLE_VALUE",
                          "model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                          "model/layer_with_weights-0/kernel/.OPTIMIZER_SLOT/optimizer/momentum/.ATTRIBUTES/"
                          "VARIABLE_VALUE",
                          "model/layer_with_weights-1/bias/.ATTRIBUTES/VARIABLE_VALUE",
                          "model/layer_with_weights-1/bias/.OPTIMIZER_SLOT/optimizer/momentum/.ATTRIBUTES/VARIABLE_VALUE",
                          "model/layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                          "model/layer_with_weights-1/kernel/.OPTIMIZER_SLOT/optimizer/momentum/.ATTRIBUTES/"
                          "VARIABLE_VALUE",
                          "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE",
                          "optimizer/learning_rate/.ATTRIBUTES/VARIABLE_VALUE",
                          "save_counter/.ATTRIBUTES/VARIABLE_VALUE", "step/.ATTRIBUTES/VARIABLE_VALUE"));
  EXPECT_THAT(error_of([&] { Checkpoint c({{"a/b", step}}); }), HasSubstr("object name 'a/b' must be non-empty"));
  EXPECT_THAT(error_of([&] { Checkpoint c({{"save_counter", step}}); }), HasSubstr("the checkpoint's own counter"));
}

// Train, save, restore into new objects, train both one more step: equal.
TEST(Checkpoint, RoundTripResumesTrainingExactly) {
  TempDir dir;
  Tensor x = random_normal({8, 2}, 0, 1, DType::Float32, 1), y = random_normal({8, 1}, 0, 1, DType::Float32, 2);
  auto a = mlp();
  a->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 0.01}), .loss = {"mse"}});
  for (int i = 0; i < 3; ++i) a->train_on_batch({x}, {y});
  Variable step_a(scalar(3, DType::Int64), "step", false);
  data::Dataset ds = data::Dataset::range(100).shuffle(10, {.seed = 7});
  data::Iterator it_a = ds.iter();
  for (int i = 0; i < 5; ++i) it_a.next();
  Checkpoint ca({{"model", a}, {"optimizer", a->optimizer()}, {"step", step_a}, {"iterator", &it_a}});
  const std::string path = ca.save(dir / "ckpt");
  EXPECT_EQ(path, dir / "ckpt-1");

  auto b = mlp();
  b->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 0.01}), .loss = {"mse"}});
  Variable step_b(scalar(0, DType::Int64), "step", false);
  data::Iterator it_b = ds.iter();
  Checkpoint cb({{"model", b}, {"optimizer", b->optimizer()}, {"step", step_b}, {"iterator", &it_b}});
  cb.restore(path).assert_consumed();

  const auto wa = a->weights(), wb = b->weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) expect_equal(wa[i].value(), wb[i].value(), wa[i].name());
  const auto va = a->optimizer()->variables(), vb = b->optimizer()->variables();
  ASSERT_EQ(va.size(), vb.size());  // the slots were built by restore
  for (size_t i = 0; i < va.size(); ++i) expect_equal(va[i].value(), vb[i].value(), va[i].name());
  EXPECT_EQ(step_b.value().item<int64_t>(), 3);
  EXPECT_EQ(cb.save_counter().value().item<int64_t>(), 1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(it_a.next()->tensors()[0].item<int64_t>(), it_b.next()->tensors()[0].item<int64_t>());

  a->train_on_batch({x}, {y});
  b->train_on_batch({x}, {y});
  for (size_t i = 0; i < wa.size(); ++i) expect_equal(wa[i].value(), wb[i].value(), "after a step: " + wa[i].name());
}

TEST(Checkpoint, MismatchesAreListedAndChangeNothing) {
  TempDir dir;
  auto a = mlp(3);
  Variable step(scalar(1, DType::Int64), "step", false);
  const std::string path = Checkpoint({{"model", a}, {"step", step}}).write(dir / "c");

  auto b = mlp(4);
  Variable step_f(scalar(0), "step", false);
  const Tensor before = b->weights()[0].value().clone();
  const std::string err = error_of([&] { Checkpoint({{"model", b}, {"step", step_f}}).restore(path); });
  const std::string kernel = b->model_layers()[0]->name() + "/kernel";
  EXPECT_THAT(err, HasSubstr("[Checkpoint.restore] " + path + ": model/layer_with_weights-0/kernel (" + kernel +
                             "): checkpoint has float32[2,3], the model has float32[2,4]"));
  EXPECT_THAT(err, HasSubstr("step (step): checkpoint has int64[], the step has float32[]"));
  expect_equal(b->weights()[0].value(), before, "untouched");
  EXPECT_EQ(step_f.value().item<float>(), 0.f);
}

TEST(Checkpoint, PartialRestoresReportWhatDidNotMatch) {
  TempDir dir;
  auto a = mlp();
  Variable step(scalar(5, DType::Int64), "step", false);
  const std::string path = Checkpoint({{"model", a}, {"step", step}}).write(dir / "c");

  auto b = mlp();
  auto s1 = Checkpoint({{"model", b}}).restore(path);
  EXPECT_THAT(s1.unused_checkpoint_keys(), ElementsAre("step/.ATTRIBUTES/VARIABLE_VALUE"));
  EXPECT_TRUE(s1.unmatched_objects().empty());
  s1.expect_partial();
  expect_equal(b->weights()[1].value(), a->weights()[1].value(), "model restored");

  Variable other(zeros({2}), "other", false);
  auto s2 = Checkpoint({{"model", b}, {"step", step}, {"other", other}}).restore(path);
  EXPECT_THAT(error_of([&] { s2.assert_consumed(); }),
              HasSubstr("not consumed: objects not in the checkpoint: other (other)"));
  EXPECT_THAT(error_of([&] { s2.assert_existing_objects_matched(); }),
              HasSubstr("[Checkpoint.restore] " + path + ": objects not in the checkpoint: other (other)"));

  // An unbuilt model has no weights yet: its keys stay unused.
  auto lazy = std::make_shared<Sequential>(std::vector<LayerPtr>{layers::Dense(3), layers::Dense(1)});
  auto s3 = Checkpoint({{"model", lazy}, {"step", step}}).restore(path);
  EXPECT_THAT(error_of([&] { s3.assert_consumed(); }),
              HasSubstr("checkpoint keys that no object took: model/layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE"));
}

TEST(Checkpoint, SaveNumbersAndTheStateFile) {
  TempDir dir;
  auto model = mlp();
  Checkpoint ckpt({{"model", model}});
  EXPECT_EQ(latest_checkpoint(dir.path()), "");
  EXPECT_EQ(ckpt.save(dir / "p"), dir / "p-1");
  EXPECT_EQ(ckpt.save(dir / "p"), dir / "p-2");
  EXPECT_EQ(latest_checkpoint(dir.path()), dir / "p-2");
  EXPECT_EQ(testing::read_bytes(dir / "checkpoint"),
            "model_checkpoint_path: \"p-2\"\nall_model_checkpoint_paths: \"p-2\"\n");

  // The counter travels with the checkpoint: a restored one continues the numbering.
  Checkpoint again({{"model", mlp()}});
  again.restore(dir.path()).assert_consumed();  // a directory means its latest checkpoint
  EXPECT_EQ(again.save(dir / "p"), dir / "p-3");

  TempDir empty;
  EXPECT_THAT(error_of([&] { ckpt.restore(empty.path()); }),
              HasSubstr("[Checkpoint.restore] " + empty.path() + ": no checkpoint in this directory"));
  EXPECT_THAT(error_of([&] { ckpt.restore(empty / "nope"); }),
              HasSubstr("[BundleReader] " + empty / "nope.index" + ": cannot open"));
}

TEST(Checkpoint, StateFileParsing) {
  TempDir dir;
  testing::write_bytes(dir / "checkpoint",
                       "model_checkpoint_path: \"a\\\"b\\\\c\\101\"\n"
                       "all_model_checkpoint_paths: \"x\"\n\n"
                       "  all_model_checkpoint_timestamps: 1.5e9\n"
                       "last_preserved_timestamp: 12\n");
  CheckpointState s;
  ASSERT_TRUE(read_checkpoint_state(dir.path(), &s));
  EXPECT_EQ(s.model_checkpoint_path, "a\"b\\cA");
  EXPECT_THAT(s.all_model_checkpoint_paths, ElementsAre("x"));
  EXPECT_THAT(s.all_model_checkpoint_timestamps, ElementsAre(1.5e9));
  EXPECT_EQ(s.last_preserved_timestamp, 12);
  write_checkpoint_state(dir.path(), s);
  CheckpointState t;
  ASSERT_TRUE(read_checkpoint_state(dir.path(), &t));
  EXPECT_EQ(t.model_checkpoint_path, s.model_checkpoint_path);
  EXPECT_EQ(latest_checkpoint(dir.path()), "");  // names no existing bundle

  testing::write_bytes(dir / "checkpoint", "model_checkpoint_path: \"a\"\nbogus line\n");
  EXPECT_THAT(error_of([&] { latest_checkpoint(dir.path()); }),
              HasSubstr("[latest_checkpoint] " + dir / "checkpoint" + ":2: expected 'field: value'"));
  testing::write_bytes(dir / "checkpoint", "model_checkpoint_path: a\n");
  EXPECT_THAT(error_of([&] { latest_checkpoint(dir.path()); }), HasSubstr(":1: model_checkpoint_path: expected a quoted"));
  testing::write_bytes(dir / "checkpoint", "all_model_checkpoint_timestamps: 12x\n");
  EXPECT_THAT(error_of([&] { latest_checkpoint(dir.path()); }), HasSubstr("expected a number, got '12x'"));
}

TEST(Checkpoint, DamagedFilesFailBeforeAnythingChanges) {
  TempDir dir;
  auto a = mlp();
  const std::string path = Checkpoint({{"model", a}}).write(dir / "c");
  const std::string data_path = bundle_data_path(path);
  std::string data = testing::read_bytes(data_path);
  const BundleEntry e = BundleReader(path).entry("model/layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE");
  data[e.offset + 1] = char(data[e.offset + 1] ^ 0x10);
  testing::write_bytes(data_path, data);
  auto b = mlp();
  const Tensor before = b->weights()[0].value().clone();
  EXPECT_THAT(error_of([&] { Checkpoint({{"model", b}}).restore(path); }),
              HasSubstr("[BundleReader] " + data_path +
                        ": tensor 'model/layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE' fails its checksum"));
  expect_equal(b->weights()[0].value(), before, "untouched");
}

TEST(Checkpoint, SharedLayersAndNestedModels) {
  // A functional model calling one Dense twice, inside a Sequential: weights once each.
  Tensor in = keras::Input({4});
  layers::Dense shared(4);
  Tensor out = layers::Dense(2)(shared(shared(in)));
  auto inner = std::make_shared<keras::Model>(TensorList{in}, TensorList{out});
  auto outer = std::make_shared<Sequential>(std::vector<LayerPtr>{layers::InputLayer(Shape{4}), inner, layers::Dense(1)});
  Checkpoint ckpt({{"net", outer}});
  EXPECT_THAT(ckpt.keys(),
              ElementsAre("net/layer_with_weights-0/layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE",
                          "net/layer_with_weights-0/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                          "net/layer_with_weights-0/layer_with_weights-1/bias/.ATTRIBUTES/VARIABLE_VALUE",
                          "net/layer_with_weights-0/layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                          "net/layer_with_weights-1/bias/.ATTRIBUTES/VARIABLE_VALUE",
                          "net/layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                          "save_counter/.ATTRIBUTES/VARIABLE_VALUE"));
}

}  // namespace
}  // namespace deepflow::io
