// SPDX-License-Identifier: Apache-2.0
// A step profiler for graph runs (the role of tf.profiler's trace of a step): while
// it is on, every node the executor runs is timed (infer, allocation and kernel, as
// the executor dispatches it) and recorded with its name and op.
//
//   profiler::start();
//   for (int i = 0; i < 100; ++i) step(x, y);
//   std::vector<profiler::NodeRecord> records = profiler::stop();
//   std::cout << profiler::summary(records, /*steps=*/100);
//
// Recording costs one relaxed atomic load per node when off. Records from all threads
// (the parallel executor's pool included) land in one list.
#pragma once

#include <string>
#include <vector>

namespace deepflow::profiler {

/// One node run: its graph name, op name and wall time in microseconds.
struct NodeRecord {
  std::string node;
  std::string op;
  double micros = 0;
};

/// Starts recording (clears what an earlier session left).
void start();
/// Stops recording and returns the records in completion order.
std::vector<NodeRecord> stop();
/// True while recording.
bool active();
/// Appends one record (the executor calls this; thread-safe).
void record(NodeRecord r);

/// A table per op, most expensive first: node runs, total and per-step microseconds,
/// share of the total. `steps` divides the totals (the number of runs profiled).
std::string summary(const std::vector<NodeRecord>& records, int steps = 1);

}  // namespace deepflow::profiler
