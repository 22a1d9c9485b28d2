// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the graph text parser (make fuzz). Any input may be rejected
// with a deepflow::Error; anything else (a crash, a sanitizer report, another exception,
// a hang) is a bug. An accepted graph must also print, re-parse and re-print to the
// same text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "deepflow/graph/text.h"
#include "fuzz_ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepflow;
  fuzz::register_fuzz_ops();
  ParseOptions options;
  options.max_new_variable_bytes = size_t(1) << 16;  // keep made-up variables small
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<Graph> g;
  try {
    g = parse_graph(text, options);
    g->validate();
  } catch (const Error&) {
    return 0;
  }
  const std::string printed = print_graph(*g);
  ParseOptions same = options;
  same.variables = graph_variables(*g);
  std::shared_ptr<Graph> back;
  try {
    back = parse_graph(printed, same);
  } catch (const Error& e) {
    std::fprintf(stderr, "printed text does not parse: %s\n%s", e.what(), printed.c_str());
    std::abort();
  }
  std::string why;
  if (print_graph(*back) != printed || !graph_equal(*g, *back, &why)) {
    std::fprintf(stderr, "round trip differs: %s\n%s---\n%s", why.c_str(), printed.c_str(), print_graph(*back).c_str());
    std::abort();
  }
  return 0;
}
