// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for deepflow_lite's model loader and interpreter (make fuzz): any bytes
// are loaded as a .tflite file, and an accepted file gets its kernels built, its tensors
// allocated and one invoke on zeroed inputs. Rejection is a lite::Error; anything else (a
// crash, a sanitizer report, another exception, a hang, memory past -rss_limit_mb) is a bug.
// The interpreter's memory limit bounds what a file's shapes may ask for, and its WHILE
// iteration limit how long a loop whose condition never turns false may run. The file's size
// picks exact or fast int8 requantization, so both kernel paths are fuzzed.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "deepflow/lite/interpreter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepflow::lite;
  try {
    auto model = Model::from_buffer(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.tflite");
    Interpreter interp(model);
    interp.set_memory_limit(size_t{64} << 20);
    interp.set_while_iteration_limit(1000);
    interp.set_fast_int8(size % 2 == 1);
    interp.allocate_tensors();
    for (size_t i = 0; i < interp.inputs().size(); ++i) {
      Tensor& t = interp.input_tensor(static_cast<int>(i));
      if (t.data_ptr) std::memset(t.data_ptr, 0, t.bytes);
    }
    interp.invoke();
  } catch (const Error&) {
  }
  return 0;
}
