// SPDX-License-Identifier: Apache-2.0
// The TFRecord files of the TensorFlow corpus (data/tf_models/tfrecord, written by
// tf.io.TFRecordWriter at install time by scripts/make-tf-models.py, docs/tf_corpus.md):
// every record of the none, ZLIB and GZIP files reads here as exactly the bytes TensorFlow
// serialized (io.json), parses to the same features (float32 bits, int64s, bytes, empty
// lists, an Example with no features, an empty features map), re-serializes with our
// ExampleBuilder to the same bytes, and written with our RecordWriter gives TensorFlow's
// uncompressed file byte for byte. Needs no TensorFlow at test time; skips (fails under CI)
// when the corpus was not generated.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "data/data_test_util.h"
#include "deepflow/data/example.h"
#include "deepflow/data/tfrecord.h"
#include "oracle.h"

namespace deepflow::data {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path corpus() {
  if (const char* d = std::getenv("DEEPFLOW_TF_MODELS"); d && *d) return fs::path(d) / "tfrecord";
  return fs::path(DEEPFLOW_TESTS_SOURCE_ROOT) / "data" / "tf_models" / "tfrecord";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += char(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

// io.json's description of one feature, in its own encoding (float bits, int64 decimals, bytes hex).
json describe(const FeatureValues& v) {
  json out = json::object();
  switch (v.kind) {
    case FeatureValues::Kind::Float:
      out["kind"] = "float";
      out["bits"] = json::array();
      for (float x : v.floats) out["bits"].push_back(float_bits(x));
      break;
    case FeatureValues::Kind::Int64:
      out["kind"] = "int64";
      out["values"] = json::array();
      for (int64_t x : v.int64s) out["values"].push_back(std::to_string(x));
      break;
    case FeatureValues::Kind::Bytes:
      out["kind"] = "bytes";
      out["hex"] = json::array();
      for (const std::string& x : v.bytes) out["hex"].push_back(hex_string(x));
      break;
    case FeatureValues::Kind::None: out["kind"] = "none"; break;
  }
  return out;
}

TEST(TFRecordCorpus, TensorFlowsRecordsBitForBitBothWays) {
  const fs::path dir = corpus();
  if (!fs::exists(dir / "done.json") || !fs::exists(dir / "io.json"))
    DEEPFLOW_ORACLE_MISSING("no TFRecord corpus at " << dir << " (scripts/make-tf-models.py writes it)");
  json io;
  std::ifstream(dir / "io.json") >> io;
  const json& records = io.at("tfrecord").at("records");
  ASSERT_GE(records.size(), 5u);

  for (const auto& [file, info] : io.at("tfrecord").at("files").items()) {
    SCOPED_TRACE(file);
    const std::string compression = info.at("compression") == "NONE" ? "" : info.at("compression").get<std::string>();
    RecordReader r((dir / file).string(), {.compression_type = compression});
    size_t n = 0;
    while (auto record = r.read()) {
      ASSERT_LT(n, records.size());
      const json& want = records[n];
      EXPECT_EQ(hex_string(std::string(*record)), want.at("hex").get<std::string>()) << "record " << n;
      const std::map<std::string, FeatureValues> features = read_example(*record);
      if (want.at("features").is_null()) {
        EXPECT_TRUE(features.empty()) << "record " << n;
      } else {
        ASSERT_EQ(features.size(), want.at("features").size()) << "record " << n;
        for (const auto& [name, v] : features) {
          json expected = want.at("features").at(name);
          expected.erase("values");  // Python's repr of the floats; the bits say it exactly
          if (v.kind == FeatureValues::Kind::Int64) expected["values"] = want.at("features").at(name).at("values");
          EXPECT_EQ(describe(v), expected) << "record " << n << " feature " << name;
        }
      }
      ++n;
    }
    EXPECT_EQ(n, records.size());
  }

  // Ours: the same Examples built anew, and TensorFlow's file byte for byte.
  const std::string ours = ::testing::TempDir() + "tfrecord_corpus_ours.tfrecord";
  RecordWriter w(ours);
  for (size_t n = 0; n < records.size(); ++n) {
    const std::string theirs = unhex(records[n].at("hex"));
    const std::map<std::string, FeatureValues> features = read_example(theirs);
    if (!features.empty()) {
      ExampleBuilder b;
      for (const auto& [name, v] : features) {
        if (v.kind == FeatureValues::Kind::Float) b.set(name, v.floats);
        if (v.kind == FeatureValues::Kind::Int64) b.set(name, v.int64s);
        if (v.kind == FeatureValues::Kind::Bytes) b.set(name, v.bytes);
      }
      EXPECT_EQ(hex_string(b.serialize()), records[n].at("hex").get<std::string>()) << "record " << n;
    }
    w.write(theirs);
  }
  w.close();
  EXPECT_TRUE(slurp(ours) == slurp(dir / "none.tfrecord")) << "our file is not TensorFlow's none.tfrecord";
  fs::remove(ours);
}

}  // namespace
}  // namespace deepflow::data
