// SPDX-License-Identifier: Apache-2.0
#include "deepflow/io/checkpoint_manager.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "deepflow/io/atomic_file.h"
#include "deepflow/io/bundle.h"
#include "deepflow/ops/op.h"

namespace deepflow::io {
namespace {

double wall_clock() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void make_dirs(const std::string& dir) {
  if (dir.empty() || detail::file_exists(dir)) return;
  const std::string parent = detail::dir_of(dir);
  if (parent != dir) make_dirs(parent);
  DF_CHECK(::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST, "[CheckpointManager.save] ", dir,
           ": cannot create the directory: ", std::strerror(errno));
}

// The index goes first: without it the bundle no longer counts as present.
void delete_bundle(const std::string& prefix) {
  ::unlink(bundle_index_path(prefix).c_str());
  const std::string dir = detail::dir_of(prefix), data = detail::base_of(prefix) + ".data-";
  if (DIR* d = ::opendir(dir.c_str())) {
    std::vector<std::string> doomed;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      // "<base>.data-SSSSS-of-NNNNN" exactly; temporaries are another writer's business.
      if (name.size() == data.size() + 14 && name.compare(0, data.size(), data) == 0 &&
          name.compare(data.size() + 5, 4, "-of-") == 0)
        doomed.push_back(dir + "/" + name);
    }
    ::closedir(d);
    for (const std::string& p : doomed) ::unlink(p.c_str());
  }
}

std::string relative_to(const std::string& dir, const std::string& path) {
  return detail::dir_of(path) == dir ? detail::base_of(path) : path;
}

}  // namespace

CheckpointManager::CheckpointManager(Checkpoint checkpoint, std::string directory, std::optional<int> max_to_keep,
                                     std::optional<double> keep_checkpoint_every_n_hours, std::string checkpoint_name)
    : checkpoint_(std::move(checkpoint)),
      directory_(std::move(directory)),
      name_(std::move(checkpoint_name)),
      max_to_keep_(max_to_keep),
      keep_every_hours_(keep_checkpoint_every_n_hours),
      clock_(wall_clock) {
  DF_CHECK(!directory_.empty(), "[CheckpointManager] empty directory");
  while (directory_.size() > 1 && directory_.back() == '/') directory_.pop_back();
  DF_CHECK(!max_to_keep_ || *max_to_keep_ >= 1, "[CheckpointManager] max_to_keep must be at least 1 (or unset to keep "
           "every checkpoint), got ", max_to_keep_.value_or(0));
  DF_CHECK(!name_.empty() && name_.find('/') == std::string::npos, "[CheckpointManager] checkpoint_name '", name_,
           "' must be a non-empty file name");
  // Recover the list from the state file, as TF does, so max_to_keep spans restarts.
  const double now = clock_();
  last_preserved_ = now;
  CheckpointState state;
  if (!read_checkpoint_state(directory_, &state)) return;
  auto absolute = [&](const std::string& p) { return p.empty() || p.front() == '/' ? p : directory_ + "/" + p; };
  latest_ = absolute(state.model_checkpoint_path);
  if (!detail::file_exists(bundle_index_path(latest_))) latest_.clear();
  last_preserved_ = std::min(state.last_preserved_timestamp, now);
  std::vector<double> stamps = state.all_model_checkpoint_timestamps;
  if (stamps.size() != state.all_model_checkpoint_paths.size())
    stamps.assign(state.all_model_checkpoint_paths.size(), last_preserved_);
  for (size_t i = 0; i < stamps.size(); ++i) {
    const double t = std::min(stamps[i], now);
    if (t >= last_preserved_) maybe_delete_.emplace_back(absolute(state.all_model_checkpoint_paths[i]), t);
  }
}

void CheckpointManager::set_clock(std::function<double()> clock) {
  clock_ = std::move(clock);
  last_preserved_ = std::min(last_preserved_, clock_());
}

std::vector<std::string> CheckpointManager::checkpoints() const {
  std::vector<std::string> out;
  for (const auto& [p, t] : maybe_delete_) out.push_back(p);
  return out;
}

void CheckpointManager::record_state() const {
  CheckpointState state;
  state.model_checkpoint_path = relative_to(directory_, latest_);
  for (const auto& [p, t] : maybe_delete_) {
    state.all_model_checkpoint_paths.push_back(relative_to(directory_, p));
    state.all_model_checkpoint_timestamps.push_back(t);
  }
  state.last_preserved_timestamp = last_preserved_;
  write_checkpoint_state(directory_, state);
}

std::string CheckpointManager::save(std::optional<int64_t> checkpoint_number) {
  BuildScopeGuard eager(nullptr);
  make_dirs(directory_);
  // What killed writers left: bundle temporaries of this name, and the state file's.
  detail::remove_stale_temporaries(directory_, name_ + "-");
  detail::remove_stale_temporaries(directory_, "checkpoint.tmp-");

  Variable counter = checkpoint_.save_counter();
  const int64_t n = counter.value().item<int64_t>() + 1;
  counter.assign(scalar(double(n), DType::Int64));
  const std::string prefix = directory_ + "/" + name_ + "-" + std::to_string(checkpoint_number.value_or(n));
  try {
    checkpoint_.write(prefix);
  } catch (...) {
    counter.assign(scalar(double(n - 1), DType::Int64));
    throw;
  }
  const double now = clock_();
  std::erase_if(maybe_delete_, [&](const auto& e) { return e.first == prefix; });  // re-saved: now the newest
  maybe_delete_.emplace_back(prefix, now);
  latest_ = prefix;

  std::vector<std::string> doomed;
  if (max_to_keep_) {
    while (maybe_delete_.size() > size_t(*max_to_keep_)) {
      const auto [old, stamp] = maybe_delete_.front();
      maybe_delete_.erase(maybe_delete_.begin());
      if (keep_every_hours_ && stamp - *keep_every_hours_ * 3600.0 >= last_preserved_) {
        last_preserved_ = stamp;  // kept for good
        continue;
      }
      doomed.push_back(old);
    }
  }
  // The state file stops naming a checkpoint before its files go.
  record_state();
  for (const std::string& p : doomed) delete_bundle(p);
  if (!doomed.empty()) detail::fsync_dir(directory_);
  return prefix;
}

std::string CheckpointManager::restore_or_initialize() {
  if (latest_.empty()) return "";
  checkpoint_.restore(latest_).expect_partial();
  return latest_;
}

}  // namespace deepflow::io
