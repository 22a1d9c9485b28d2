// SPDX-License-Identifier: Apache-2.0
// Cross-check with an independent implementation: the npm package @roboflow/tfrecords
// (installed by scripts/fetch-test-deps.sh into data/node_modules) writes TFRecord
// files of tf.train.Examples that we read and parse, and reads files we write. Driven
// through tests/data/tfrecord_cross.js; skipped, saying why, without node or the package.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "deepflow/data/dataset.h"
#include "deepflow/data/example.h"
#include "deepflow/data/tfrecord.h"
#include "data/data_test_util.h"
#include "oracle.h"

namespace deepflow::data {
namespace {

namespace fs = std::filesystem;

// The repository root: $DEEPFLOW_SOURCE_DIR, or the first parent of this executable
// (or of the working directory) that holds tests/data/tfrecord_cross.js.
std::string source_dir() {
  if (const char* s = std::getenv("DEEPFLOW_SOURCE_DIR")) return s;
  std::error_code ec;
  for (fs::path start : {fs::read_symlink("/proc/self/exe", ec), fs::current_path(ec)})
    for (fs::path p = start; !p.empty() && p != p.root_path(); p = p.parent_path())
      if (fs::exists(p / "tests/data/tfrecord_cross.js", ec)) return p.string();
  return "";
}

std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  *status = ::pclose(f);
  return out;
}

// The values tfrecord_cross.js builds for example i (keep the two in step).
struct Expected {
  std::vector<float> f;
  std::vector<int64_t> i;
  std::vector<std::string> s, b;
};
Expected expected(int i) {
  Expected e;
  e.f = {float(i + 0.5), float(-double(i) * 0.25), float(1e-3 * i)};  // -0.0 for i = 0, as in JS
  e.i = {i, -1000 * int64_t(i), (int64_t(1) << 40) + i};
  e.s = {"name" + std::to_string(i),
         "\xc3\xbcn\xc3\xaf"
         "code"};
  std::string bytes;
  for (int k = 0; k <= i; ++k) bytes.push_back(char((k * 37 + 255) & 0xff));
  e.b = {bytes};
  return e;
}

class TFRecordNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = source_dir();
    if (root_.empty()) DEEPFLOW_ORACLE_MISSING("cannot find the source tree (set DEEPFLOW_SOURCE_DIR)");
    int status = 0;
    run("node --version 2>/dev/null", &status);
    if (status != 0) DEEPFLOW_ORACLE_MISSING("node is not installed");
    modules_ = root_ + "/data/node_modules";
    if (!fs::exists(modules_ + "/@roboflow/tfrecords/package.json"))
      DEEPFLOW_ORACLE_MISSING("@roboflow/tfrecords is not in " << modules_ << " (run scripts/fetch-test-deps.sh)");
    std::string tmpl = ::testing::TempDir() + "tfrecord_node_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  std::string node(const std::string& args) {
    int status = 0;
    const std::string out = run(
        "NODE_PATH='" + modules_ + "' node '" + root_ + "/tests/data/tfrecord_cross.js' " + args + " 2>&1", &status);
    EXPECT_EQ(status, 0) << out;
    return out;
  }
  std::string root_, modules_, dir_;
};

TEST_F(TFRecordNodeTest, WeReadTheirFiles) {
  const int n = 12;
  const std::string file = dir_ + "/theirs.tfrecord";
  node("write '" + file + "' " + std::to_string(n));
  const std::map<std::string, FeatureSpec> spec = {
      {"f", FixedLenFeature{DType::Float32, {3}}}, {"i", FixedLenFeature{DType::Int64, {3}}},
      {"s", FixedLenFeature{DType::String, {2}}},  {"b", VarLenFeature{DType::String}},
      {"e", VarLenFeature{DType::Float32}},
  };
  int seen = 0;
  for (const Element& batch : Dataset::tfrecord({file}).batch(5)) {
    const ParsedExamples p = parse_example(batch[0], spec);
    const int64_t rows = batch[0].dim(0);
    const float* f = p.dense.at("f").data<float>();
    const int64_t* i = p.dense.at("i").data<int64_t>();
    const std::string* s = p.dense.at("s").data<std::string>();
    const SparseTensor& b = p.sparse.at("b");
    for (int64_t r = 0; r < rows; ++r, ++seen) {
      const Expected e = expected(seen);
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(float_bits(f[r * 3 + k]), float_bits(e.f[k])) << "example " << seen << " f[" << k << "]";
        EXPECT_EQ(i[r * 3 + k], e.i[k]) << "example " << seen << " i[" << k << "]";
      }
      EXPECT_EQ(s[r * 2], e.s[0]);
      EXPECT_EQ(s[r * 2 + 1], e.s[1]);
      EXPECT_EQ(b.values.data<std::string>()[r], e.b[0]) << "example " << seen;  // one value each
    }
    EXPECT_EQ(b.indices.dim(0), rows);
    // Only example 0 has "e", and it is an empty float list.
    EXPECT_EQ(p.sparse.at("e").values.size(), 0);
  }
  EXPECT_EQ(seen, n);
  // The raw records agree with read_example too (the empty list keeps its kind).
  RecordReader r(file);
  const auto first = read_example(std::string(r.read().value()));
  EXPECT_EQ(first.at("e").kind, FeatureValues::Kind::Float);
  EXPECT_EQ(first.at("b").to_string(), "bytes_list [\"\\xff\"]");
}

TEST_F(TFRecordNodeTest, TheyReadOurFiles) {
  const int n = 7;
  const std::string file = dir_ + "/ours.tfrecord";
  std::ostringstream want;
  {
    RecordWriter w(file);
    for (int i = 0; i < n; ++i) {
      const Expected e = expected(i);
      w.write(ExampleBuilder().set("f", e.f).set("i", e.i).set("s", e.s).set("b", e.b).serialize());
      want << "record " << i << ": b=bytes:" << hex_string(e.b[0]) << " f=float:" << float_bits(e.f[0]) << ","
           << float_bits(e.f[1]) << "," << float_bits(e.f[2]) << " i=int64:" << e.i[0] << "," << e.i[1] << "," << e.i[2]
           << " s=bytes:" << hex_string(e.s[0]) << "," << hex_string(e.s[1]) << "\n";
    }
    w.close();
  }
  want << "count " << n << "\n";
  EXPECT_EQ(node("read '" + file + "'"), want.str());
}

TEST_F(TFRecordNodeTest, TheyStopAtOurCorruption) {
  // A checksum they verify: flip one payload byte of record 1 and they stop there.
  const std::string file = dir_ + "/bad.tfrecord";
  {
    RecordWriter w(file);
    for (int i = 0; i < 3; ++i) w.write(ExampleBuilder().set("i", std::vector<int64_t>{i}).serialize());
    w.close();
  }
  RecordReader r(file);
  r.read();
  const uint64_t second = r.offset();
  FILE* f = std::fopen(file.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, long(second + 12 + 3), SEEK_SET);
  const int c = std::fgetc(f);
  std::fseek(f, long(second + 12 + 3), SEEK_SET);
  std::fputc(c ^ 1, f);
  std::fclose(f);
  const std::string out = node("read '" + file + "'");
  EXPECT_THAT(out, ::testing::HasSubstr("Wrong Data CRC"));
  EXPECT_THAT(out, ::testing::HasSubstr("count 1"));
}

}  // namespace
}  // namespace deepflow::data
