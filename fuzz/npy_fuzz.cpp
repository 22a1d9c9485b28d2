// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the .npy reader (make fuzz). Any input may be rejected with a
// deepflow::Error; anything else (a crash, a sanitizer report, another exception, a
// hang, memory beyond -rss_limit_mb) is a bug. An accepted array must write and read
// back to the same dtype, shape and bytes (strings: the same elements), and the reader
// may never allocate more than the input's size suggests.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "deepflow/io/npy.h"

namespace {

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepflow;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Tensor t;
  try {
    t = io::parse_npy(bytes, "fuzz.npy");
  } catch (const Error&) {
    return 0;
  }
  if (t.dtype() != DType::String && t.nbytes() > size) bug("an array larger than its file");
  Tensor back;
  try {
    back = io::parse_npy(io::npy_bytes(t), "written.npy");
  } catch (const Error& e) {
    bug(std::string("an accepted array does not read back: ") + e.what());
  }
  if (back.dtype() != t.dtype() || back.shape() != t.shape()) bug("dtype or shape changed on a round trip");
  if (t.dtype() == DType::String) {
    if (back.to_vector<std::string>() != t.to_vector<std::string>()) bug("strings changed on a round trip");
  } else if (t.nbytes() && std::memcmp(back.raw_data(), t.raw_data(), t.nbytes()) != 0) {
    bug("bytes changed on a round trip");
  }
  return 0;
}
