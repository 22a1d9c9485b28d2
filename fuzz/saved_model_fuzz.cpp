// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the SavedModel reader (make fuzz): the input is a saved_model.pb,
// loaded from a scratch directory whose variables/ holds a small real bundle (variables
// "w" float32[3,2], "b" float32[2], "step" int64[], what the corpus models use). Any input
// may be rejected with a deepflow::Error; anything else (a crash, a sanitizer report,
// another exception, a hang, memory beyond -rss_limit_mb) is a bug. Invariants checked
// for an accepted model: each signature has the inputs and outputs its description
// lists, and each variable the dtype and shape saved_model.pb gives it.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "deepflow/io/saved_model.h"
#include "deepflow/ops/ops.h"

namespace {

namespace fs = std::filesystem;

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

// A scratch directory, removed when the process ends.
struct Scratch {
  std::string root, model;
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

// A real SavedModel saved once per process; each input replaces its saved_model.pb.
const std::string& scratch_dir() {
  static const Scratch scratch = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 is logged, then rejected
    std::string tmpl = (fs::temp_directory_path() / "saved_model_fuzz_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) bug("mkdtemp failed");
    using namespace deepflow;
    Variable w(constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {3, 2}), "w");
    Variable b(constant({0.5f, -0.5f}), "b");
    Variable step(scalar(0, DType::Int64), "step", false);
    Function f = function([&](const Tensor& x) { return matmul(x, w.value()) + b.value(); },
                          {.input_signature = Signature{{DType::Float32, {-1, 3}}}});
    const std::string d = tmpl + "/m";
    io::save_saved_model(d, {{.fn = f.get_concrete_function(), .input_names = {"x"}}}, {.extra_variables = {step}});
    return Scratch{tmpl, d};
  }();
  return scratch.model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepflow;
  const std::string& dir = scratch_dir();
  {
    std::ofstream out(dir + "/saved_model.pb", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    if (!out) bug("cannot write the scratch saved_model.pb");
  }
  std::vector<io::MetaGraphInfo> info;
  try {
    info = io::read_saved_model_info(dir);
  } catch (const Error&) {
  }
  for (const io::MetaGraphInfo& mg : info) {
    std::optional<io::SavedModel> loaded;
    try {
      // No passes: constant folding would run the fuzzed graph's ops, which is the
      // executor's business, not the reader's.
      loaded = io::load_saved_model(dir, mg.tags, {.mmap = (size & 1) != 0, .optimize = false});
    } catch (const Error&) {
      continue;
    }
    const io::SavedModel& m = *loaded;
    for (const std::string& k : m.signature_keys()) {
      const io::LoadedSignature& s = m.signature(k);
      if (s.inputs().size() != s.info().inputs.size() || s.outputs().size() != s.info().outputs.size())
        bug("signature '" + k + "': loaded inputs/outputs differ from its description");
      for (const auto& [name, type] : s.inputs())
        if (type.dtype != s.info().inputs.at(name).type.dtype)
          bug("signature '" + k + "': input '" + name + "' dtype differs");
    }
    for (const io::VariableInfo& v : m.info().variables) {
      const Variable& var = m.variables().at(v.name);
      if (var.dtype() != v.dtype || var.shape() != v.shape) bug("variable '" + v.name + "' loaded with another type");
    }
  }
  return 0;
}
