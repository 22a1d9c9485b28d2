// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the ONNX importer: arbitrary bytes as a ModelProto. Every input
// must import or fail with a deepflow::Error; crashes, hangs and other exceptions are bugs.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "deepflow/core/error.h"
#include "deepflow/onnx/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    deepflow::onnx::OnnxModel m = deepflow::onnx::import_model_from_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), {}, "fuzz.onnx");
    (void)m.inputs();
  } catch (const deepflow::Error&) {
  }
  return 0;
}
