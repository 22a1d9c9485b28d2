// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the Keras file reader (deepflow/io/keras_file.h), from memory.
// Input: one mode byte, then
//   mode bit 0 set: the bytes of a .keras zip archive, taken as they are, except that an
//     archive whose model.weights.h5 member is not the harness's valid one is skipped;
//   mode bit 0 clear: config.json's text, and after the marker "DFSPLIT!" (if present)
//     metadata.json's; the harness zips them (bit 1: deflated, else stored) with a valid
//     model.weights.h5 of a small Sequential (InputLayer [3], Dense 2, Dense 1).
// So the fuzzer works on the zip container, the configs and the weight mapping, and never
// hands libhdf5 bytes it made: Debian's libhdf5 1.10.8 reads out of bounds on malformed
// files (a mutated legacy .h5 crashed this harness; valgrind: an invalid read in
// H5HG_read under H5Aread of a variable-length string attribute, an upstream bug we
// cannot fix). Truncated HDF5 files are covered by tests/io/keras_file_test.cpp instead.
// Any input may be rejected with a deepflow::Error; anything else (a crash, a sanitizer
// report, another exception, a hang, memory beyond -rss_limit_mb) is a bug. Invariant: a
// model that loads can be written again (keras_file_bytes) and that file loads too.
#include <zip.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/io/keras_file.h"
#include "deepflow/keras/layers.h"
#include "deepflow/ops/ops.h"

namespace {

using namespace deepflow;

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

const std::string& valid_weights() {
  static const std::string* h5 = [] {
    // Fixed names and weights: the seed corpus holds archives with these very bytes.
    auto m = std::make_shared<keras::Sequential>(
        std::vector<keras::LayerPtr>{keras::layers::InputLayer(Shape{3}), keras::layers::Dense(2, {.name = "fuzz_d1"}),
                                     keras::layers::Dense(1, {.name = "fuzz_d2"})},
        "fuzz_small");
    int64_t seed = 1;
    for (Variable v : m->weights()) v.assign(random_uniform(v.shape(), -1, 1, v.dtype(), seed++));
    return new std::string(keras::keras_weights_h5_bytes(*m));
  }();
  return *h5;
}

std::string zip_of(const std::vector<std::pair<std::string, std::string>>& members, bool deflate) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &err);
  if (!out) bug("zip_source_buffer_create failed");
  zip_source_keep(out);
  zip_t* z = zip_open_from_source(out, ZIP_TRUNCATE, &err);
  if (!z) bug("zip_open_from_source failed");
  for (const auto& [name, bytes] : members) {
    zip_source_t* s = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    const zip_int64_t i = s ? zip_file_add(z, name.c_str(), s, 0) : -1;
    if (i < 0) bug("zip_file_add failed");
    zip_set_file_compression(z, zip_uint64_t(i), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  if (zip_close(z) != 0) bug("zip_close failed");
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_source_stat(out, &st) != 0 || zip_source_open(out) != 0) bug("cannot read back the zip");
  std::string bytes(size_t(st.size), '\0');
  const zip_int64_t n = zip_source_read(out, bytes.data(), bytes.size());
  zip_source_close(out);
  zip_source_free(out);
  if (n != zip_int64_t(bytes.size())) bug("short read of the zip");
  return bytes;
}

// The model.weights.h5 member of an archive (libzip, as the reader opens it); nullopt
// when it cannot be read.
std::optional<std::string> weights_member(const std::string& file) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(file.data(), file.size(), 0, &err);
  zip_t* z = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err) : nullptr;
  if (!z) {
    if (src) zip_source_free(src);
    return std::nullopt;
  }
  std::optional<std::string> out;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(z, "model.weights.h5", 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE) && st.size < (1u << 24)) {
    if (zip_file_t* f = zip_fopen(z, "model.weights.h5", 0)) {
      std::string bytes(size_t(st.size), '\0');
      if (zip_fread(f, bytes.data(), bytes.size()) == zip_int64_t(bytes.size())) out = bytes;
      zip_fclose(f);
    }
  }
  zip_discard(z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string file;
  if (mode & 1) {
    file = body;
    if (file.size() < 2 || file.compare(0, 2, "PK") != 0) return 0;  // HDF5 and other bytes: see above
    const auto weights = weights_member(file);
    if (weights && *weights != valid_weights()) return 0;
  } else {
    std::string config = body, metadata = "{}";
    const size_t split = body.find("DFSPLIT!");
    if (split != std::string::npos) {
      config = body.substr(0, split);
      metadata = body.substr(split + 8);
    }
    file = zip_of({{"metadata.json", metadata}, {"config.json", config}, {"model.weights.h5", valid_weights()}},
                  (mode & 2) != 0);
  }
  keras::ModelPtr model;
  try {
    model = keras::load_keras_file_from_memory(file, "fuzz.keras");
  } catch (const Error&) {
    return 0;
  }
  std::string again;
  try {
    again = keras::keras_file_bytes(*model, "again.keras");
  } catch (const Error&) {
    return 0;  // a model we read but cannot describe in Keras 3's terms (a legacy-only config)
  }
  try {
    keras::load_keras_file_from_memory(again, "again.keras");
  } catch (const Error& e) {
    bug(std::string("a file we wrote does not load: ") + e.what());
  }
  return 0;
}
