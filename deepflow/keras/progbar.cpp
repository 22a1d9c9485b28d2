// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/progbar.h"

#include <unistd.h>

#include <cmath>
#include <vector>

namespace deepflow::keras {
namespace {

std::string fmt_value(double v) {
  char buf[32];
  if (v != 0 && (std::fabs(v) < 1e-3 || std::fabs(v) >= 1e5)) std::snprintf(buf, sizeof buf, "%.4e", v);
  else std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

std::string fmt_time(double seconds) {
  char buf[32];
  if (seconds >= 3600) std::snprintf(buf, sizeof buf, "%d:%02d:%02d", int(seconds) / 3600, int(seconds) % 3600 / 60, int(seconds) % 60);
  else if (seconds >= 60) std::snprintf(buf, sizeof buf, "%d:%02d", int(seconds) / 60, int(seconds) % 60);
  else std::snprintf(buf, sizeof buf, "%ds", int(seconds));
  return buf;
}

std::string fmt_per_step(double seconds) {
  char buf[32];
  if (seconds >= 1) std::snprintf(buf, sizeof buf, "%.0fs/step", seconds);
  else if (seconds >= 1e-3) std::snprintf(buf, sizeof buf, "%.0fms/step", seconds * 1e3);
  else std::snprintf(buf, sizeof buf, "%.0fus/step", seconds * 1e6);
  return buf;
}

}  // namespace

Progbar::Progbar(int64_t target, int verbose, std::FILE* out)
    : target_(target), verbose_(verbose), out_(out), interactive_(isatty(fileno(out)) != 0) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

std::string Progbar::format_logs(const std::map<std::string, double>& logs) {
  std::vector<std::string> parts;
  if (auto it = logs.find("loss"); it != logs.end()) parts.push_back("loss: " + fmt_value(it->second));
  for (const auto& [k, v] : logs)
    if (k != "loss" && k.rfind("val_", 0) != 0) parts.push_back(k + ": " + fmt_value(v));
  if (auto it = logs.find("val_loss"); it != logs.end()) parts.push_back("val_loss: " + fmt_value(it->second));
  for (const auto& [k, v] : logs)
    if (k.rfind("val_", 0) == 0 && k != "val_loss") parts.push_back(k + ": " + fmt_value(v));
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : " - ") + p;
  return s;
}

void Progbar::update(int64_t current, const std::map<std::string, double>& logs, bool finalize) {
  if (verbose_ == 0) return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const bool live = verbose_ == 1 && interactive_;
  if (!finalize && (!live || now - last_draw_ < std::chrono::milliseconds(50))) return;
  last_draw_ = now;
  std::string line;
  const std::string count = std::to_string(current) + "/" + (target_ > 0 ? std::to_string(target_) : "Unknown");
  if (verbose_ == 1) {
    line = count;
    if (target_ > 0) {
      constexpr int kWidth = 30;
      const int filled = int(kWidth * double(std::min(current, target_)) / double(target_));
      std::string bar(size_t(kWidth), '.');
      for (int i = 0; i < filled; ++i) bar[size_t(i)] = '=';
      if (filled < kWidth && filled > 0) bar[size_t(filled - 1)] = '>';
      line += " [" + bar + "]";
    }
    if (finalize) line += " - " + fmt_time(elapsed) + " " + fmt_per_step(elapsed / double(std::max<int64_t>(current, 1)));
    else if (target_ > 0 && current > 0)
      line += " - ETA: " + fmt_time(elapsed / double(current) * double(target_ - current));
  } else {
    line = count + " - " + fmt_time(elapsed) + " - " + fmt_per_step(elapsed / double(std::max<int64_t>(current, 1)));
  }
  const std::string l = format_logs(logs);
  if (!l.empty()) line += " - " + l;
  if (live) std::fprintf(out_, "\r%s\033[K", line.c_str());
  else std::fprintf(out_, "%s", line.c_str());
  if (finalize) std::fprintf(out_, "\n");
  std::fflush(out_);
}

}  // namespace deepflow::keras
