// SPDX-License-Identifier: Apache-2.0
// Callbacks (tf.keras.callbacks): hooks fit / evaluate / predict call at the start
// and end of training, of each epoch and of each batch.
//
//   model->fit(x, y, {.epochs = 50, .callbacks = {
//       keras::callbacks::EarlyStopping({.monitor = "val_loss", .patience = 3}),
//       keras::callbacks::ModelCheckpoint({.filepath = "ckpt/best.weights", .save_best_only = true}),
//       keras::callbacks::CSVLogger("train.csv")}});
//
// Logs are name -> value maps ("loss", "accuracy", "val_loss", ...): at a batch end the
// running values of the epoch so far, at an epoch end the epoch's values.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace deepflow::keras {

class Model;
using Logs = std::map<std::string, double>;

class Callback {
 public:
  virtual ~Callback() = default;
  /// fit / evaluate / predict set the model before the first hook.
  void set_model(Model* model) { model_ = model; }
  Model* model() const { return model_; }

  virtual void on_train_begin(const Logs& /*logs*/) {}
  virtual void on_train_end(const Logs& /*logs*/) {}
  virtual void on_epoch_begin(int /*epoch*/, const Logs& /*logs*/) {}
  virtual void on_epoch_end(int /*epoch*/, Logs& /*logs*/) {}
  virtual void on_train_batch_begin(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_train_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_test_begin(const Logs& /*logs*/) {}
  virtual void on_test_end(const Logs& /*logs*/) {}
  virtual void on_test_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_predict_begin(const Logs& /*logs*/) {}
  virtual void on_predict_end(const Logs& /*logs*/) {}

 private:
  Model* model_ = nullptr;
};
using CallbackPtr = std::shared_ptr<Callback>;

namespace callbacks {

struct ModelCheckpointOptions {
  /// May hold "{epoch}" (1-based, zero-padded to 2 digits as Keras's {epoch:02d}) and
  /// "{<log name>}" (e.g. "{val_loss}", printed with 4 decimals).
  std::string filepath;
  std::string monitor = "val_loss";
  bool save_best_only = false;
  /// "auto" (max for names with "acc", "auc", "precision", "recall"; min otherwise), "min", "max".
  std::string mode = "auto";
  int verbose = 0;
};
/// Saves the weights (Model::save_weights) at each epoch end, or only on improvement.
CallbackPtr ModelCheckpoint(ModelCheckpointOptions options);

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;
  int patience = 0;
  std::string mode = "auto";
  /// Restores the weights of the best epoch when training stops (or ends).
  bool restore_best_weights = false;
  int start_from_epoch = 0;
  int verbose = 0;
};
/// Stops training when `monitor` has not improved by min_delta for `patience` epochs.
CallbackPtr EarlyStopping(EarlyStoppingOptions options = {});

/// Sets the optimizer's learning rate at each epoch begin to schedule(epoch, current lr).
CallbackPtr LearningRateScheduler(std::function<double(int epoch, double lr)> schedule, int verbose = 0);

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 10;
  std::string mode = "auto";
  double min_delta = 1e-4;
  int cooldown = 0;
  double min_lr = 0.0;
  int verbose = 0;
};
/// Multiplies the learning rate by `factor` when `monitor` stalls for `patience` epochs.
CallbackPtr ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});

/// Appends one row per epoch ("epoch,<log names sorted>") to a CSV file; `append`
/// continues an existing file (its header is kept).
CallbackPtr CSVLogger(std::string filename, char separator = ',', bool append = false);

/// Stops training on a NaN or infinite loss and reports the epoch and batch:
/// "Batch 17 (epoch 3): invalid loss, terminating training".
CallbackPtr TerminateOnNaN();

/// Calls the given functions (tf.keras.callbacks.LambdaCallback); unset ones do nothing.
struct LambdaCallbackOptions {
  std::function<void(int, Logs&)> on_epoch_end;
  std::function<void(int64_t, const Logs&)> on_train_batch_end;
  std::function<void(const Logs&)> on_train_begin, on_train_end;
};
CallbackPtr LambdaCallback(LambdaCallbackOptions options);

}  // namespace callbacks
}  // namespace deepflow::keras
