// SPDX-License-Identifier: Apache-2.0
#include "deepflow/graph/profiler.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>

namespace deepflow::profiler {
namespace {

std::atomic<bool> g_active{false};
std::mutex g_mu;
std::vector<NodeRecord> g_records;

}  // namespace

void start() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_records.clear();
  g_active.store(true, std::memory_order_relaxed);
}

std::vector<NodeRecord> stop() {
  g_active.store(false, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(g_mu);
  return std::move(g_records);
}

bool active() { return g_active.load(std::memory_order_relaxed); }

void record(NodeRecord r) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_active.load(std::memory_order_relaxed)) g_records.push_back(std::move(r));
}

std::string summary(const std::vector<NodeRecord>& records, int steps) {
  struct Row {
    int runs = 0;
    double micros = 0;
  };
  std::map<std::string, Row> per_op;
  double total = 0;
  for (const NodeRecord& r : records) {
    per_op[r.op].runs++;
    per_op[r.op].micros += r.micros;
    total += r.micros;
  }
  std::vector<std::pair<std::string, Row>> rows(per_op.begin(), per_op.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.micros > b.second.micros; });
  const double n = std::max(1, steps);
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%-28s %10s %12s %8s\n", "op", "runs/step", "us/step", "share");
  out += line;
  for (const auto& [op, row] : rows) {
    std::snprintf(line, sizeof line, "%-28s %10.1f %12.1f %7.1f%%\n", op.c_str(), row.runs / n, row.micros / n,
                  total > 0 ? 100.0 * row.micros / total : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-28s %10.1f %12.1f\n", "total", double(records.size()) / n, total / n);
  out += line;
  return out;
}

}  // namespace deepflow::profiler
