// SPDX-License-Identifier: Apache-2.0
// TensorFlow's messages (proto/tensorflow/): unknown fields survive a parse and
// re-serialization, at the top and nested, and every message and enum we declare has
// TensorFlow 2.21's fields and numbers (tests/tf/compare_protos.py against TF's own
// compiled descriptors; skips without the peers environment, fails under CI).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "deepflow/tf/table.h"
#include "oracle.h"
#include "tensorflow/saved_model.pb.h"
#include "tensorflow/tensor_bundle.pb.h"

namespace deepflow::tf {
namespace {

std::string varint(uint64_t v) {
  std::string s;
  coding::put_varint64(&s, v);
  return s;
}
// A length-delimited field `number` holding `payload`, and a varint field.
std::string bytes_field(int number, const std::string& payload) {
  return varint(uint64_t(number) << 3 | 2) + varint(payload.size()) + payload;
}
std::string varint_field(int number, uint64_t value) { return varint(uint64_t(number) << 3) + varint(value); }

TEST(TfProto, UnknownFieldsSurviveAReadWriteRoundTrip) {
  // A MetaGraphDef with a field TensorFlow may add later (99), inside a SavedModel that
  // has one too (15); and a BundleEntryProto with one (20).
  tensorflow::MetaGraphDef known;
  known.mutable_meta_info_def()->add_tags("serve");
  const std::string meta = known.SerializeAsString() + varint_field(99, 7);
  const std::string saved = varint_field(1, 1) + bytes_field(2, meta) + bytes_field(15, "future");

  tensorflow::SavedModel m;
  ASSERT_TRUE(m.ParseFromString(saved));
  EXPECT_EQ(m.saved_model_schema_version(), 1);
  EXPECT_EQ(m.meta_graphs(0).meta_info_def().tags(0), "serve");
  m.mutable_meta_graphs(0)->mutable_meta_info_def()->add_tags("gpu");  // edit, then write
  const std::string again = m.SerializeAsString();
  EXPECT_NE(again.find(bytes_field(15, "future")), std::string::npos);
  EXPECT_NE(again.find(varint_field(99, 7)), std::string::npos);
  tensorflow::SavedModel back;
  ASSERT_TRUE(back.ParseFromString(again));
  EXPECT_EQ(back.meta_graphs(0).meta_info_def().tags_size(), 2);
  EXPECT_EQ(back.SerializeAsString(), again);

  tensorflow::BundleEntryProto e;
  ASSERT_TRUE(e.ParseFromString(varint_field(1, 1) + varint_field(20, 3)));
  EXPECT_EQ(e.dtype(), tensorflow::DT_FLOAT);
  EXPECT_EQ(e.SerializeAsString(), varint_field(1, 1) + varint_field(20, 3));
  // Enum values we do not know stay numbers (proto3 enums are open).
  ASSERT_TRUE(e.ParseFromString(varint_field(1, 77)));
  EXPECT_EQ(int(e.dtype()), 77);
  EXPECT_EQ(e.SerializeAsString(), varint_field(1, 77));
}

TEST(TfProto, FieldsAndNumbersMatchTensorFlow) {
  const std::string python = testing::peers_python();
  if (python.empty()) DEEPFLOW_ORACLE_MISSING("no .venv-peers/bin/python (make peers installs TensorFlow 2.21)");
  if (std::system("protoc --version >/dev/null 2>&1")) DEEPFLOW_ORACLE_MISSING("protoc missing (protobuf-compiler)");
  std::string tmpl = ::testing::TempDir() + "tf_proto_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string root = DEEPFLOW_TESTS_SOURCE_ROOT;
  const std::string desc = tmpl + "/tf.desc", log = tmpl + "/log";
  std::string cmd = "cd '" + root + "/proto' && protoc -I . --include_imports --descriptor_set_out='" + desc +
                    "' tensorflow/*.proto > '" + log + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  cmd = "unset OPENBLAS_CORETYPE; TF_CPP_MIN_LOG_LEVEL=3 '" + python + "' '" + root +
        "/tests/tf/compare_protos.py' '" + desc + "' > '" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::string out;
  if (FILE* f = std::fopen(log.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    std::fclose(f);
  }
  std::filesystem::remove_all(tmpl);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(": ok"), std::string::npos) << out;
}

}  // namespace
}  // namespace deepflow::tf
