// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the TensorFlow importer (deepflow/tf): GraphDefs and saved_model.pb
// files as TensorFlow writes them, through parsing, the function library, signatures, the
// object graph, TF's attribute defaults and the op importers, up to a traced graph.
// Input: one mode byte, then the file's bytes. Mode bits:
//   bit 0: the bytes are a saved_model.pb (written into a scratch directory with no
//          variables/, so a model that has variables fails at its restore); else a GraphDef;
//   bit 1: also trace every signature (GraphDef: its placeholders) at concrete shapes,
//          unknown dims set to 2, which runs the import-time folding of shape arithmetic.
// Any input may be rejected with a deepflow::Error; anything else (a crash, a sanitizer
// report, another exception, a hang) is a bug. Tensors are capped at 64 MiB each
// (set_max_allocation_bytes), so a file that asks for a huge constant is an error here.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "deepflow/core/allocator.h"
#include "deepflow/core/error.h"
#include "deepflow/tf/graph_def.h"
#include "deepflow/tf/saved_model.h"

namespace {

using namespace deepflow;

constexpr size_t kMaxTensorBytes = size_t(64) << 20;

// tmpfs when there is one; removed at exit.
const std::string& scratch() {
  static const std::string* dir = [] {
    auto* d = new std::string(std::string(::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
                              "/tf_import_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(*dir, ec);
    });
    return d;
  }();
  return *dir;
}

Signature concrete(Signature sig) {
  for (TensorType& t : sig) {
    std::vector<int64_t> dims;
    for (int i = 0; i < t.shape.rank(); ++i) dims.push_back(t.shape[i] < 0 ? 2 : t.shape[i]);
    t.shape = Shape(dims);
  }
  return sig;
}

void import_saved_model(const std::string& bytes, bool trace) {
  const std::string pb = scratch() + "/saved_model.pb";
  {
    std::ofstream out(pb, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
  }
  tf::TfSavedModel m = tf::load_tf_saved_model(scratch());
  if (!trace) return;
  for (const std::string& key : m.signature_keys()) {
    Signature sig;
    for (const auto& [k, t] : m.signature(key).inputs()) sig.push_back(t);
    (void)m.signature(key).function().get_concrete_function(concrete(sig));
  }
}

void import_graph_def(const std::string& bytes, bool trace) {
  tf::GraphDefModel m = tf::import_graph_def_from_bytes(bytes, "fuzz.pb");
  if (trace) (void)m.function.get_concrete_function(concrete(m.input_signature));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool setup = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in names is logged, then rejected
    set_max_allocation_bytes(kMaxTensorBytes);
    return true;
  }();
  (void)setup;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (mode & 1) import_saved_model(bytes, (mode & 2) != 0);
    else import_graph_def(bytes, (mode & 2) != 0);
  } catch (const Error&) {
  }
  return 0;
}
