// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the IDX parser behind keras::datasets::read_idx (make fuzz). Any
// input may be rejected with a deepflow::Error; anything else (a crash, a sanitizer
// report, another exception, an allocation beyond -rss_limit_mb) is a bug. An accepted
// input must describe exactly its own bytes: header plus elements times element size.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "deepflow/keras/datasets/mnist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepflow;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  Tensor t;
  try {
    t = keras::datasets::parse_idx(bytes, "fuzz input");
  } catch (const Error&) {
    return 0;
  }
  // Accepted: the header is 4 + 4 * rank bytes, and the payload fills the rest (int16
  // widens to int32, so its payload is half the tensor's bytes).
  if (size < 4) {
    std::fprintf(stderr, "accepted %zu bytes, shorter than the 4-byte magic\n", size);
    std::abort();
  }
  const size_t header = 4 + 4 * size_t(t.rank());
  const size_t payload = data[2] == 0x0B ? t.nbytes() / 2 : t.nbytes();
  if (header + payload != size || t.rank() != data[3]) {
    std::fprintf(stderr, "accepted %zu bytes as rank %d, %zu payload bytes\n", size, t.rank(), payload);
    std::abort();
  }
  return 0;
}
