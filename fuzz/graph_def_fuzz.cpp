// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the GraphDef reader (make fuzz). Any input may be rejected with a
// deepflow::Error; anything else (a crash, a sanitizer report, another exception, a
// hang) is a bug. An accepted graph must serialize and read back to an equal graph, and
// its text form must read back too.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "deepflow/graph/graph_def.h"
#include "deepflow/graph/text.h"
#include "fuzz_ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepflow;
  fuzz::register_fuzz_ops();
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in names is logged, then rejected
    return true;
  }();
  (void)quiet;
  ParseOptions options;
  options.max_new_variable_bytes = size_t(1) << 16;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<Graph> g;
  try {
    g = parse_graph_def(bytes, options);
    g->validate();
  } catch (const Error&) {
    return 0;
  }
  ParseOptions same = options;
  same.variables = graph_variables(*g);
  std::string why;
  try {
    auto back = parse_graph_def(serialize_graph(*g), same);
    if (!graph_equal(*g, *back, &why)) {
      std::fprintf(stderr, "GraphDef round trip differs: %s\n", why.c_str());
      std::abort();
    }
    auto text = parse_graph(print_graph(*g), same);
    if (!graph_equal(*g, *text, &why)) {
      std::fprintf(stderr, "text round trip differs: %s\n", why.c_str());
      std::abort();
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "an accepted graph does not read back: %s\n%s", e.what(), print_graph(*g).c_str());
    std::abort();
  }
  return 0;
}
