// SPDX-License-Identifier: Apache-2.0
#include "deepflow/io/saved_model_formats.h"

#include <mutex>

namespace deepflow::io {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::unique_ptr<SavedModelFormat>>& registry() {
  static std::vector<std::unique_ptr<SavedModelFormat>> r;
  return r;
}

}  // namespace

void register_saved_model_format(SavedModelFormat format) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (const auto& f : registry()) {
    if (f->name == format.name) return;
  }
  registry().push_back(std::make_unique<SavedModelFormat>(std::move(format)));
}

const SavedModelFormat* find_saved_model_format(const std::string& dir) {
  std::vector<const SavedModelFormat*> formats;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (const auto& f : registry()) formats.push_back(f.get());
  }
  for (const SavedModelFormat* f : formats) {
    if (f->accepts(dir)) return f;
  }
  return nullptr;
}

const SavedModelFormat* find_saved_model_format_by_name(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (const auto& f : registry()) {
    if (f->name == name) return f.get();
  }
  return nullptr;
}

}  // namespace deepflow::io
