// SPDX-License-Identifier: Apache-2.0
// CheckpointManager (tf.train.CheckpointManager): numbered checkpoints in one directory,
// the oldest deleted beyond max_to_keep, and the `checkpoint` state file naming the
// latest, so a job restarted after a crash resumes from its last complete save.
//
//   io::Checkpoint ckpt({{"model", model}, {"optimizer", model->optimizer()}});
//   io::CheckpointManager manager(ckpt, "/runs/a", /*max_to_keep=*/3);
//   manager.restore_or_initialize();                 // resumes when /runs/a has a save
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     model->fit(x, y);
//     std::string path = manager.save();             // "/runs/a/ckpt-<n>"
//   }
//
// Order of a save: the bundle is written completely (bundle.h: temporaries, fsync,
// rename), then the state file is replaced atomically naming it (and the checkpoints
// kept), and only then are the checkpoints it no longer names deleted. A crash at any
// point leaves a state file whose every path is a complete bundle.
//
// keep_checkpoint_every_n_hours (TF's semantics): a checkpoint that max_to_keep would
// delete is kept for good when at least that many hours passed since the last one kept
// this way; kept checkpoints leave checkpoints() and the state file's list.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "deepflow/io/checkpoint.h"

namespace deepflow::io {

class CheckpointManager {
 public:
  /// max_to_keep: nullopt keeps every checkpoint, else it must be >= 1. Recovers the
  /// list of checkpoints (and their timestamps) from `directory`/checkpoint if present.
  CheckpointManager(Checkpoint checkpoint, std::string directory, std::optional<int> max_to_keep,
                    std::optional<double> keep_checkpoint_every_n_hours = std::nullopt,
                    std::string checkpoint_name = "ckpt");

  /// Increments the checkpoint's save_counter and writes "<directory>/<name>-<n>", n the
  /// given number or the counter; creates the directory if needed. Returns the prefix.
  std::string save(std::optional<int64_t> checkpoint_number = std::nullopt);
  /// The newest checkpoint's prefix, "" before the first.
  const std::string& latest_checkpoint() const { return latest_; }
  /// The checkpoints managed now, oldest first (those kept for good excluded).
  std::vector<std::string> checkpoints() const;
  /// Restores the latest checkpoint if there is one and returns its prefix; "" otherwise
  /// (the objects keep their initial values).
  std::string restore_or_initialize();

  const std::string& directory() const { return directory_; }
  const Checkpoint& checkpoint() const { return checkpoint_; }
  /// Replaces the wall clock (seconds since the epoch) that stamps saves, for tests of
  /// keep_checkpoint_every_n_hours; the interval then starts at the new clock's now
  /// unless a recovered state file says earlier.
  void set_clock(std::function<double()> clock);

 private:
  void record_state() const;

  Checkpoint checkpoint_;
  std::string directory_, name_, latest_;
  std::optional<int> max_to_keep_;
  std::optional<double> keep_every_hours_;
  std::vector<std::pair<std::string, double>> maybe_delete_;  // prefix, timestamp; oldest first
  double last_preserved_ = 0;
  std::function<double()> clock_;
};

}  // namespace deepflow::io
