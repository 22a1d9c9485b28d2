// SPDX-License-Identifier: Apache-2.0
#include "deepflow/io/checkpoint_formats.h"

#include <mutex>

namespace deepflow::io {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::unique_ptr<CheckpointFormat>>& registry() {
  static std::vector<std::unique_ptr<CheckpointFormat>> r;
  return r;
}

}  // namespace

void register_checkpoint_format(CheckpointFormat format) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (const auto& f : registry()) {
    if (f->name == format.name) return;
  }
  registry().push_back(std::make_unique<CheckpointFormat>(std::move(format)));
}

const CheckpointFormat* find_checkpoint_format(const std::string& prefix) {
  std::vector<const CheckpointFormat*> formats;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (const auto& f : registry()) formats.push_back(f.get());
  }
  // Outside the lock: accepts() reads files.
  for (const CheckpointFormat* f : formats) {
    if (f->accepts && f->accepts(prefix)) return f;
  }
  return nullptr;
}

const CheckpointFormat* find_checkpoint_format_by_name(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (const auto& f : registry()) {
    if (f->name == name) return f.get();
  }
  return nullptr;
}

}  // namespace deepflow::io
