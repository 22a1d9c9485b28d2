// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for tf.train.Example parsing (make fuzz): read_example and
// parse_single_example on arbitrary bytes. Any input may be rejected with a
// deepflow::Error; anything else (a crash, a sanitizer report, another exception) is a
// bug. Invariants checked: an accepted Example rebuilt with ExampleBuilder reads back
// to the same features, and parse_single_example agrees with read_example on every
// feature the fixed spec below asks for.
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "deepflow/core/error.h"
#include "deepflow/data/example.h"

namespace {

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepflow;
  using namespace deepflow::data;
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in keys is logged, then rejected
    return true;
  }();
  (void)quiet;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::map<std::string, FeatureValues> features;
  try {
    features = read_example(bytes);
  } catch (const Error&) {
    return 0;
  }
  // Rebuild and compare (features with no list set cannot be built; skip those).
  ExampleBuilder b;
  std::map<std::string, FeatureValues> buildable;
  for (const auto& [name, v] : features) {
    if (v.kind == FeatureValues::Kind::Float)
      b.set(name, v.floats);
    else if (v.kind == FeatureValues::Kind::Int64)
      b.set(name, v.int64s);
    else if (v.kind == FeatureValues::Kind::Bytes)
      b.set(name, v.bytes);
    else
      continue;
    buildable.emplace(name, v);
  }
  std::map<std::string, FeatureValues> again;
  try {
    again = read_example(b.serialize());
  } catch (const Error& e) {
    bug(std::string("a rebuilt Example does not parse: ") + e.what());
  }
  // Floats compare by bits (NaN payloads included) through operator== on vectors of
  // float, which NaN breaks; compare the bytes of the rebuilt example instead.
  if (b.serialize() != [&] {
        ExampleBuilder c;
        for (const auto& [name, v] : again) {
          if (v.kind == FeatureValues::Kind::Float)
            c.set(name, v.floats);
          else if (v.kind == FeatureValues::Kind::Int64)
            c.set(name, v.int64s);
          else
            c.set(name, v.bytes);
        }
        return c.serialize();
      }())
    bug("an Example rebuilt twice differs");
  if (again.size() != buildable.size()) bug("a rebuilt Example has other features");

  const std::map<std::string, FeatureSpec> spec = {
      {"x", VarLenFeature{DType::Float32}},
      {"i", VarLenFeature{DType::Int64}},
      {"s", VarLenFeature{DType::String}},
      {"f2", FixedLenFeature{DType::Float32, {2}, scalar(0.f)}},
  };
  ParsedExamples p;
  try {
    p = parse_single_example(string_scalar(bytes), spec);
  } catch (const Error&) {
    // Only a kind or count mismatch on a spec'd feature may fail here.
    for (const auto& [name, fs] : spec)
      if (features.count(name)) return 0;
    bug("parse_single_example rejected an Example read_example accepts");
  }
  for (const auto& [name, fs] : spec) {
    if (!std::holds_alternative<VarLenFeature>(fs)) continue;
    auto it = features.find(name);
    const int64_t n = p.sparse.at(name).values.size();
    const int64_t want = it == features.end()                            ? 0
                         : it->second.kind == FeatureValues::Kind::Float ? int64_t(it->second.floats.size())
                         : it->second.kind == FeatureValues::Kind::Int64 ? int64_t(it->second.int64s.size())
                                                                         : int64_t(it->second.bytes.size());
    if (n != want) bug("parse_single_example and read_example disagree on the count of '" + name + "'");
  }
  return 0;
}
