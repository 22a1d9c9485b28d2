// SPDX-License-Identifier: Apache-2.0
// keras::callbacks, driven through their hooks as fit() calls them (made-up logs), plus
// a few runs inside fit().
#include "deepflow/keras/callbacks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "deepflow/keras/initializers.h"
#include "deepflow/keras/model.h"
#include "deepflow/keras/optimizers.h"
#include "deepflow/ops/ops.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
namespace fs = std::filesystem;
namespace cb = callbacks;

// y = x * w with one weight of shape [1].
class Tiny : public Model {
 public:
  Tiny() : Model("tiny") { w_ = add_weight("w", {1}, initializers::Constant(0.0)); }
  TensorList call(const TensorList& inputs, bool) override { return {inputs[0] * read(w_)}; }
  using Model::call;
  void set_w(double v) { w_.assign(constant({float(v)})); }
  double w() const { return w_.value().flat(0); }

 private:
  Variable w_;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class KerasCallbacks : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("df_callbacks_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_ = std::make_shared<Tiny>();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // The value of w saved in a checkpoint file.
  double saved_w(const std::string& file) {
    auto other = std::make_shared<Tiny>();
    other->load_weights(file);
    return other->w();
  }
  void compile(double lr) { model_->compile({.optimizer = optimizers::SGD({.learning_rate = lr}), .loss = {"mse"}}); }
  fs::path dir_;
  std::shared_ptr<Tiny> model_;
};

TEST_F(KerasCallbacks, ModelCheckpointEveryEpochFormatsThePath) {
  CallbackPtr c = cb::ModelCheckpoint({.filepath = path("ckpt/w-{epoch}-{val_loss}.weights")});
  c->set_model(model_.get());
  c->on_train_begin({});
  for (int epoch = 0; epoch < 2; ++epoch) {
    model_->set_w(10 + epoch);
    Logs logs{{"loss", 1.0}, {"val_loss", 0.5 / (epoch + 1)}};
    c->on_epoch_end(epoch, logs);
  }
  // The directory is created; {epoch} is 1-based and 2 digits, log values have 4 decimals.
  EXPECT_EQ(saved_w(path("ckpt/w-01-0.5000.weights")), 10);
  EXPECT_EQ(saved_w(path("ckpt/w-02-0.2500.weights")), 11);
  // Python format specs and escaped braces.
  CallbackPtr f = cb::ModelCheckpoint({.filepath = path("e{epoch:03d}_{loss:.1f}_{{x}}")});
  f->set_model(model_.get());
  Logs logs{{"loss", 0.25}};
  f->on_epoch_end(6, logs);
  EXPECT_TRUE(fs::exists(path("e007_0.2_{x}")));
  CallbackPtr bad = cb::ModelCheckpoint({.filepath = path("w-{acc}")});
  bad->set_model(model_.get());
  EXPECT_THAT(error_of([&] { bad->on_epoch_end(0, logs); }),
              HasSubstr("refers to '{acc}', which is neither 'epoch' nor in the logs (loss)"));
  CallbackPtr spec = cb::ModelCheckpoint({.filepath = path("w-{loss:>8s}")});
  spec->set_model(model_.get());
  EXPECT_THAT(error_of([&] { spec->on_epoch_end(0, logs); }), HasSubstr("unsupported format spec '>8s' for 'loss'"));
  EXPECT_THAT(error_of([] { cb::ModelCheckpoint({.filepath = ""}); }), HasSubstr("[ModelCheckpoint] filepath is empty"));
  EXPECT_THAT(error_of([] { cb::ModelCheckpoint({.filepath = "x", .mode = "best"}); }),
              HasSubstr("[ModelCheckpoint] mode must be 'auto', 'min' or 'max', got 'best'"));
}

TEST_F(KerasCallbacks, ModelCheckpointSaveBestOnly) {
  const std::string p = path("best.weights");
  CallbackPtr c = cb::ModelCheckpoint({.filepath = p, .save_best_only = true, .verbose = 1});
  c->set_model(model_.get());
  c->on_train_begin({});
  const double val_loss[] = {1.0, 0.5, 0.7, 0.4};
  ::testing::internal::CaptureStdout();
  for (int epoch = 0; epoch < 4; ++epoch) {
    model_->set_w(epoch);
    Logs logs{{"val_loss", val_loss[epoch]}};
    c->on_epoch_end(epoch, logs);
    if (epoch == 2) {
      EXPECT_EQ(saved_w(p), 1);  // epoch 3 did not improve: epoch 2's weights stay
    }
  }
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(saved_w(p), 3);
  EXPECT_THAT(out, HasSubstr("Epoch 1: val_loss improved from inf to 1.00000, saving model to " + p));
  EXPECT_THAT(out, HasSubstr("Epoch 2: val_loss improved from 1.00000 to 0.50000, saving model to " + p));
  EXPECT_THAT(out, HasSubstr("Epoch 3: val_loss did not improve from 0.50000"));
  // "auto" maximizes accuracies.
  const std::string q = path("acc.weights");
  CallbackPtr a = cb::ModelCheckpoint({.filepath = q, .monitor = "val_accuracy", .save_best_only = true});
  a->set_model(model_.get());
  const double acc[] = {0.5, 0.9, 0.7};
  for (int epoch = 0; epoch < 3; ++epoch) {
    model_->set_w(20 + epoch);
    Logs logs{{"val_accuracy", acc[epoch]}};
    a->on_epoch_end(epoch, logs);
  }
  EXPECT_EQ(saved_w(q), 21);
}

TEST_F(KerasCallbacks, EarlyStoppingWithPatienceRestoresTheBest) {
  CallbackPtr c = cb::EarlyStopping({.patience = 2, .restore_best_weights = true, .verbose = 1});
  c->set_model(model_.get());
  c->on_train_begin({});
  const double val_loss[] = {1.0, 0.8, 0.9, 0.85, 0.1};
  int epoch = 0;
  for (; epoch < 5 && !model_->stop_training; ++epoch) {
    model_->set_w(100 + epoch);
    Logs logs{{"val_loss", val_loss[epoch]}};
    c->on_epoch_end(epoch, logs);
  }
  EXPECT_TRUE(model_->stop_training);
  EXPECT_EQ(epoch, 4);  // epochs 0..3 ran: 2 and 3 did not improve on 0.8
  EXPECT_EQ(model_->w(), 103);
  ::testing::internal::CaptureStdout();
  c->on_train_end({});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(model_->w(), 101);  // the best epoch's weights
  EXPECT_THAT(out, HasSubstr("Epoch 4: early stopping"));
  EXPECT_THAT(out, HasSubstr("Restoring model weights from the end of the best epoch: 2."));
}

TEST_F(KerasCallbacks, EarlyStoppingMinDeltaModeAndWarmup) {
  // min_delta 0.1: 0.95 and 0.91 are no improvement on 1.0; patience 0 stops at once
  // (but never at epoch 0).
  CallbackPtr c = cb::EarlyStopping({.monitor = "loss", .min_delta = 0.1});
  c->set_model(model_.get());
  c->on_train_begin({});
  Logs l0{{"loss", 1.0}}, l1{{"loss", 0.95}};
  c->on_epoch_end(0, l0);
  EXPECT_FALSE(model_->stop_training);
  c->on_epoch_end(1, l1);
  EXPECT_TRUE(model_->stop_training);
  model_->stop_training = false;
  // val_accuracy is maximized; start_from_epoch ignores the first two epochs.
  CallbackPtr m = cb::EarlyStopping({.monitor = "val_accuracy", .patience = 1, .start_from_epoch = 2});
  m->set_model(model_.get());
  m->on_train_begin({});
  const double acc[] = {0.9, 0.1, 0.5, 0.6, 0.55, 0.58};
  int stopped = -1;
  for (int epoch = 0; epoch < 6 && stopped < 0; ++epoch) {
    Logs logs{{"val_accuracy", acc[epoch]}};
    m->on_epoch_end(epoch, logs);
    if (model_->stop_training) stopped = epoch;
  }
  EXPECT_EQ(stopped, 4);
  model_->stop_training = false;
  // Without the monitored value it warns and never stops.
  CallbackPtr w = cb::EarlyStopping({.monitor = "val_loss"});
  w->set_model(model_.get());
  w->on_train_begin({});
  ::testing::internal::CaptureStderr();
  for (int epoch = 0; epoch < 3; ++epoch) {
    Logs logs{{"loss", 1.0}};
    w->on_epoch_end(epoch, logs);
  }
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("[EarlyStopping] warning: 'val_loss' is not in the logs (loss)"));
  EXPECT_FALSE(model_->stop_training);
  CallbackPtr orphan = cb::EarlyStopping();
  Logs logs{{"val_loss", 1.0}};
  EXPECT_THAT(error_of([&] { orphan->on_epoch_end(0, logs); }),
              HasSubstr("[EarlyStopping] has no model: fit() sets it"));
}

TEST_F(KerasCallbacks, LearningRateScheduler) {
  CallbackPtr c = cb::LearningRateScheduler([](int epoch, double lr) { return epoch < 1 ? lr : lr * 0.5; }, 1);
  c->set_model(model_.get());
  Logs logs;
  EXPECT_THAT(error_of([&] { c->on_epoch_begin(0, logs); }),
              HasSubstr("[LearningRateScheduler] model 'tiny' has no optimizer: compile() it first"));
  compile(0.5);
  ::testing::internal::CaptureStdout();
  c->on_epoch_begin(0, logs);
  EXPECT_EQ(model_->optimizer()->current_learning_rate(), 0.5);
  c->on_epoch_begin(1, logs);
  c->on_epoch_end(1, logs);
  EXPECT_EQ(model_->optimizer()->current_learning_rate(), 0.25);
  EXPECT_EQ(logs.at("learning_rate"), 0.25);
  c->on_epoch_begin(2, logs);
  EXPECT_EQ(model_->optimizer()->current_learning_rate(), 0.125);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(),
              HasSubstr("Epoch 2: LearningRateScheduler setting learning rate to 0.25."));
}

TEST_F(KerasCallbacks, ReduceLROnPlateau) {
  compile(1.0);
  CallbackPtr c = cb::ReduceLROnPlateau({.monitor = "loss", .factor = 0.5, .patience = 2, .cooldown = 1, .min_lr = 0.2});
  c->set_model(model_.get());
  c->on_train_begin({});
  auto lr = [&] { return model_->optimizer()->current_learning_rate(); };
  std::vector<double> seen;
  // loss stalls at 1.0 from epoch 0 on; min_delta 1e-4 makes 0.99995 no improvement.
  const double loss[] = {1.0, 1.0, 0.99995, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  for (int epoch = 0; epoch < 10; ++epoch) {
    Logs logs{{"loss", loss[epoch]}};
    c->on_epoch_end(epoch, logs);
    EXPECT_EQ(logs.at("learning_rate"), seen.empty() ? 1.0 : seen.back());
    seen.push_back(lr());
  }
  // Reduces after 2 stalled epochs; the cooldown epoch resets the wait, then counts as
  // the first stalled one (Keras's order); never below min_lr (float32 in the variable).
  const std::vector<double> want{1, 1, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2, 0.2};
  ASSERT_EQ(seen.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(seen[i], want[i], 1e-7) << "epoch " << i;
  EXPECT_THAT(error_of([] { cb::ReduceLROnPlateau({.factor = 1.0}); }),
              HasSubstr("[ReduceLROnPlateau] does not support a factor >= 1.0, got 1"));
}

TEST_F(KerasCallbacks, CSVLogger) {
  const std::string p = path("log.csv");
  CallbackPtr c = cb::CSVLogger(p);
  c->set_model(model_.get());
  c->on_train_begin({});
  Logs l0{{"loss", 0.5}, {"accuracy", 1.0}, {"val_loss", 1e-5}};
  c->on_epoch_end(0, l0);
  // Flushed each epoch: readable before training ends.
  EXPECT_EQ(read_text(p), "epoch,accuracy,loss,val_loss\n0,1.0,0.5,1e-05\n");
  Logs l1{{"loss", 0.25}, {"accuracy", 0.75}};
  c->on_epoch_end(1, l1);
  c->on_train_end({});
  EXPECT_EQ(read_text(p), "epoch,accuracy,loss,val_loss\n0,1.0,0.5,1e-05\n1,0.75,0.25,NA\n");
  // append keeps the header and adds rows; a new logger without append starts over.
  CallbackPtr a = cb::CSVLogger(p, ',', true);
  a->on_train_begin({});
  Logs l2{{"loss", 0.125}, {"accuracy", 0.5}, {"val_loss", 0.0}};
  a->on_epoch_end(2, l2);
  a->on_train_end({});
  EXPECT_EQ(read_text(p), "epoch,accuracy,loss,val_loss\n0,1.0,0.5,1e-05\n1,0.75,0.25,NA\n2,0.5,0.125,0.0\n");
  CallbackPtr s = cb::CSVLogger(p, ';');
  s->on_train_begin({});
  Logs l3{{"a;b", std::nan("")}};
  s->on_epoch_end(0, l3);
  s->on_train_end({});
  EXPECT_EQ(read_text(p), "epoch;\"a;b\"\n0;nan\n");
  CallbackPtr bad = cb::CSVLogger(path("no/such/dir.csv"));
  EXPECT_THAT(error_of([&] { bad->on_train_begin({}); }), HasSubstr("[CSVLogger] cannot open '" + path("no/such/dir.csv")));
}

TEST_F(KerasCallbacks, TerminateOnNaN) {
  CallbackPtr c = cb::TerminateOnNaN();
  c->set_model(model_.get());
  c->on_epoch_begin(2, {});
  c->on_train_batch_end(16, {{"loss", 0.5}});
  EXPECT_FALSE(model_->stop_training);
  ::testing::internal::CaptureStdout();
  c->on_train_batch_end(17, {{"loss", std::nan("")}});
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "Batch 17 (epoch 3): invalid loss, terminating training\n");
  EXPECT_TRUE(model_->stop_training);
  model_->stop_training = false;
  ::testing::internal::CaptureStdout();
  c->on_train_batch_end(0, {{"loss", std::numeric_limits<double>::infinity()}});
  ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(model_->stop_training);
}

TEST_F(KerasCallbacks, LambdaCallback) {
  int begins = 0, ends = 0, batches = 0;
  std::vector<int> epochs;
  CallbackPtr c = cb::LambdaCallback({.on_epoch_end = [&](int e, Logs& logs) { epochs.push_back(e); logs["x"] = 1; },
                                      .on_train_batch_end = [&](int64_t, const Logs&) { ++batches; },
                                      .on_train_begin = [&](const Logs&) { ++begins; },
                                      .on_train_end = [&](const Logs&) { ++ends; }});
  c->on_train_begin({});
  c->on_train_batch_end(0, {});
  c->on_train_batch_end(1, {});
  Logs logs;
  c->on_epoch_end(0, logs);
  c->on_train_end({});
  EXPECT_EQ(begins, 1);
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(epochs, std::vector<int>{0});
  EXPECT_EQ(logs.at("x"), 1);
  // Unset hooks do nothing.
  CallbackPtr empty = cb::LambdaCallback({});
  empty->on_epoch_end(0, logs);
  empty->on_train_begin({});
}

// --- inside fit ---

TEST_F(KerasCallbacks, InsideFit) {
  compile(0.1);
  Tensor x = ones({8, 1}), y = fill({8, 1}, 2.0);
  const std::string csv = path("fit.csv"), ckpt = path("fit.weights");
  // LR 0 after the first epoch freezes w, so EarlyStopping (patience 1) ends the run.
  History h = model_->fit(x, y,
                          {.batch_size = 4,
                           .epochs = 10,
                           .verbose = 0,
                           .callbacks = {cb::LearningRateScheduler([](int e, double lr) { return e == 0 ? lr : 0.0; }),
                                         cb::EarlyStopping({.monitor = "loss", .patience = 1}),
                                         cb::CSVLogger(csv), cb::ModelCheckpoint({.filepath = ckpt})}});
  // Epoch 0 trains; epoch 1 (lr 0) logs the loss of the trained w, an improvement;
  // epoch 2 logs the same loss: no improvement, so it stops.
  EXPECT_EQ(h.epoch.size(), 3u);
  EXPECT_EQ(saved_w(ckpt), model_->w());
  const std::string log = read_text(csv);
  EXPECT_THAT(log, ::testing::StartsWith("epoch,learning_rate,loss\n0,"));
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), int(h.epoch.size()) + 1);
  // A NaN target makes the loss NaN: TerminateOnNaN stops after the first batch.
  Tensor bad = fill({8, 1}, std::nan(""));
  int batches = 0;
  ::testing::internal::CaptureStdout();
  model_->fit(x, bad,
              {.batch_size = 2,
               .epochs = 3,
               .verbose = 0,
               .callbacks = {cb::TerminateOnNaN(),
                             cb::LambdaCallback({.on_train_batch_end = [&](int64_t, const Logs&) { ++batches; }})}});
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("Batch 0 (epoch 1): invalid loss"));
  EXPECT_EQ(batches, 1);
}

}  // namespace
}  // namespace deepflow::keras
