// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the TF.js graph-model reader (deepflow/tf/tfjs_model.h): the input
// is model.json's bytes; every weight file it lists reads as one in-memory blob (the
// input's own bytes after the marker "TFJSBIN!", else 256 bytes of a fixed pattern), so
// the manifest's slicing, dequantization and string decoding run on fuzzed data too. The
// graph is imported (parsed, weights filled, inputs and outputs checked), not traced:
// tracing is the GraphDef importer's, and a Const may legitimately ask for any size.
// Any input may be rejected with a deepflow::Error; anything else (a crash, a sanitizer
// report, another exception, a hang) is a bug. Invariant: an imported model has one
// signature entry per input, and keys for all of its inputs and outputs or none.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "deepflow/core/error.h"
#include "deepflow/tf/tfjs_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepflow;
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // protobuf logs what it rejects
    return true;
  }();
  (void)quiet;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string blob(256, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = char(i * 37 + 11);
  if (const size_t at = input.find("TFJSBIN!"); at != std::string_view::npos) {
    blob = std::string(input.substr(at + 8));
    input = input.substr(0, at);
  }
  const tf::TfjsFileReader read = [&](const std::string& path) {
    if (path == "missing.bin") fail("[fuzz] ", path, ": no such file");
    return blob;
  };
  try {
    tf::GraphDefModel m = tf::import_tfjs_model_from_bytes(input, "fuzz/model.json", read);
    const bool keys_ok = (m.input_keys.empty() || m.input_keys.size() == m.inputs.size()) &&
                         (m.output_keys.empty() || m.output_keys.size() == m.outputs.size());
    if (m.input_signature.size() != m.inputs.size() || !keys_ok) {
      std::fprintf(stderr, "imported model's inputs (%zu), signature (%zu) and keys disagree\n", m.inputs.size(),
                   m.input_signature.size());
      std::abort();
    }
  } catch (const Error&) {
  }
  return 0;
}
