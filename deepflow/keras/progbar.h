// SPDX-License-Identifier: Apache-2.0
// The Keras progress bar of fit / evaluate (internal to the keras component).
//
//   Epoch 1/5
//   469/469 [==============================] - 3s 6ms/step - loss: 0.2113 - accuracy: 0.9371
//
// verbose 1 on a terminal redraws one line in place (at most every 50 ms) with an ETA;
// verbose 1 elsewhere and verbose 2 print one line when the epoch ends; 0 prints nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

namespace deepflow::keras {

class Progbar {
 public:
  /// `target` steps per epoch (0 when unknown); output to `out` (stdout by default).
  Progbar(int64_t target, int verbose, std::FILE* out = stdout);
  /// After step `current` (1-based) with the running logs.
  void update(int64_t current, const std::map<std::string, double>& logs, bool finalize = false);

  /// "loss: 0.2113 - accuracy: 0.9371" (Keras's order: loss first, then sorted names).
  static std::string format_logs(const std::map<std::string, double>& logs);

 private:
  int64_t target_;
  int verbose_;
  std::FILE* out_;
  bool interactive_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace deepflow::keras
