// SPDX-License-Identifier: Apache-2.0
// TensorFlow checkpoints on our side alone (deepflow/tf/checkpoint.h, object_graph.h):
// write and read back every dtype, the DT_STRING layout, the object graph, and bad files
// (corrupt data, missing shards, sliced entries, unknown dtypes, every truncation of an
// index) failing with errors that name the file and the key.
#include "deepflow/tf/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "deepflow/core/crc32c.h"
#include "deepflow/io/atomic_file.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/object_graph.h"
#include "deepflow/tf/table.h"
#include "tensorflow/tensor_bundle.pb.h"
#include "tensorflow/trackable_object_graph.pb.h"
#include "test_util.h"

namespace deepflow::tf {
namespace {

namespace fs = std::filesystem;
using deepflow::testing::error_of;

class TfCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "tf_checkpoint_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

std::vector<std::pair<std::string, Tensor>> all_dtypes() {
  return {
      {"f32", constant({1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f}, {2, 3})},
      {"f64", constant(std::vector<double>{1e300, -0.5}, Shape{2}, DType::Float64)},
      {"f16", constant(std::vector<double>{0.5, -1.25, 2048}, Shape{3}, DType::Float16)},
      {"bf16", constant(std::vector<double>{1.0, -3.0}, Shape{2}, DType::BFloat16)},
      {"i8", constant(std::vector<double>{-128, 127}, Shape{2}, DType::Int8)},
      {"u8", constant(std::vector<double>{0, 255}, Shape{2}, DType::UInt8)},
      {"i32", constant(std::vector<int32_t>{-7, 1 << 30}, Shape{2})},
      {"i64", constant(std::vector<int64_t>{int64_t(1) << 40, -1}, Shape{1, 2})},
      {"b", constant(std::vector<bool>{true, false, true}, Shape{3})},
      {"s", constant(std::vector<std::string>{"", "hello", std::string(300, 'x'), std::string("\0\xff", 2)}, Shape{2, 2})},
      {"scalar", scalar(4.5)},
      {"empty", zeros(Shape{0, 3})},
      {"empty_strings", Tensor(Shape{0}, DType::String)},
  };
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& key) {
  ASSERT_EQ(got.dtype(), want.dtype()) << key;
  ASSERT_EQ(got.shape(), want.shape()) << key;
  if (want.dtype() == DType::String) {
    EXPECT_EQ(got.to_vector<std::string>(), want.to_vector<std::string>()) << key;
  } else {
    EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>()) << key;
  }
}

TEST_F(TfCheckpoint, WritesAndReadsEveryDtype) {
  const std::string prefix = dir_ + "/ckpt-1";
  {
    CheckpointWriter w(prefix);
    for (const auto& [key, t] : all_dtypes()) w.add(key, t);
    w.finish();
  }
  EXPECT_TRUE(fs::exists(prefix + ".index"));
  EXPECT_TRUE(fs::exists(prefix + ".data-00000-of-00001"));
  CheckpointReader r(prefix);
  EXPECT_EQ(r.num_shards(), 1);
  EXPECT_EQ(r.entries().size(), all_dtypes().size());
  for (const auto& [key, t] : all_dtypes()) {
    const CheckpointEntry& e = r.entry(key);
    EXPECT_EQ(e.tf_dtype, tf_dtype(t.dtype())) << key;
    EXPECT_EQ(e.shape, t.shape().to_vector()) << key;
    expect_same(r.read(key), t, key);
  }
  EXPECT_EQ(tf_dtype_name(r.entry("f16").tf_dtype), "DT_HALF");
  EXPECT_FALSE(r.has("nope"));
  const std::string e = error_of([&] { r.entry("nope"); });
  EXPECT_NE(e.find("[tf::checkpoint] " + prefix + ".index: no tensor 'nope'"), std::string::npos) << e;
}

TEST_F(TfCheckpoint, StringLayoutIsTensorFlows) {
  // Lengths as varints, the masked CRC of the lengths (each fed as 4 little-endian bytes),
  // then the bytes; the entry's CRC runs over the fed lengths, the 4 bytes and the strings.
  const std::vector<std::string> v = {"", "abc", std::string(200, 'z')};
  uint32_t crc = 0;
  const std::string bytes = encode_string_tensor(v.data(), v.size(), &crc);
  const std::string lengths("\x00\x03\xc8\x01", 4);
  EXPECT_EQ(bytes.substr(0, 4), lengths);
  const char fed[12] = {0, 0, 0, 0, 3, 0, 0, 0, char(200), 0, 0, 0};
  const uint32_t lengths_crc = crc32c(fed, sizeof fed);
  EXPECT_EQ(coding::load_fixed32(bytes.data() + 4), crc32c_mask(lengths_crc));
  EXPECT_EQ(bytes.substr(8), "abc" + std::string(200, 'z'));
  EXPECT_EQ(crc, crc32c_extend(lengths_crc, bytes.data() + 4, bytes.size() - 4));

  std::vector<std::string> out(3);
  uint32_t back = 0;
  EXPECT_EQ(decode_string_tensor(bytes.data(), bytes.size(), out.data(), 3, &back), "");
  EXPECT_EQ(out, v);
  EXPECT_EQ(back, crc);
  std::string bad = bytes;
  bad[1] = 4;  // a length that no longer matches its checksum
  EXPECT_EQ(decode_string_tensor(bad.data(), bad.size(), nullptr, 3, &back), "the lengths fail their CRC32C check");
  EXPECT_NE(decode_string_tensor(bytes.data(), bytes.size() - 1, nullptr, 3, &back), "");
  EXPECT_NE(decode_string_tensor(bytes.data(), 2, nullptr, 3, &back), "");
}

TEST_F(TfCheckpoint, ObjectGraphRoundTripsWithPaths) {
  ObjectGraphBuilder b;
  const std::string kernel = b.add_variable({"model", "dense", "kernel"});
  const std::string odd = b.add_variable({"model", "a.b/c"});
  b.add_variable({"optimizer", "iter"});
  const std::string slot = b.add_slot({"model", "dense", "kernel"}, {"optimizer"}, "m");
  EXPECT_EQ(kernel, "model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(odd, "model/a..b.Sc/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(slot, "model/dense/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_NE(error_of([&] { b.add_variable({"model", "dense", "kernel"}); }).find("already holds"), std::string::npos);
  EXPECT_NE(error_of([&] { b.add_slot({"nothing"}, {"optimizer"}, "v"); }).find("no object at 'nothing'"),
            std::string::npos);

  const std::string prefix = dir_ + "/og";
  CheckpointWriter w(prefix);
  w.add(kernel, ones(Shape{2, 2}));
  w.add(odd, scalar(1));
  w.add("optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE", scalar(3, DType::Int64));
  w.add(slot, zeros(Shape{2, 2}));
  w.add_object_graph(b.graph());
  w.finish();

  CheckpointReader r(prefix);
  tensorflow::TrackableObjectGraph g;
  ASSERT_TRUE(r.object_graph(&g));
  EXPECT_EQ(g.SerializeAsString(), b.graph().SerializeAsString());
  std::vector<std::string> listed;
  for (const ObjectTensor& t : object_graph_tensors(g)) {
    listed.push_back(t.path + " " + t.checkpoint_key);
    EXPECT_TRUE(r.has(t.checkpoint_key)) << t.checkpoint_key;
  }
  EXPECT_EQ(listed, (std::vector<std::string>{
                        "model/a..b.Sc " + odd,
                        "optimizer/iter optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE",
                        "model/dense/kernel " + kernel,
                        "model/dense/kernel/.OPTIMIZER_SLOT/optimizer/m " + slot,
                    }));
}

TEST_F(TfCheckpoint, CorruptDataNamesTheFileAndKey) {
  const std::string prefix = dir_ + "/c";
  CheckpointWriter w(prefix);
  w.add("a", constant({1.f, 2.f, 3.f}));
  w.add("s", constant(std::vector<std::string>{"xy", "z"}));
  w.finish();
  const std::string data = checkpoint_data_path(prefix, 0, 1);
  std::string bytes = io::detail::read_file(data, "");
  bytes[2] = char(bytes[2] ^ 4);
  bytes[bytes.size() - 1] = 'q';
  io::detail::write_file_atomic(data, bytes, "");
  CheckpointReader r(prefix);
  for (const char* key : {"a", "s"}) {
    const std::string e = error_of([&] { r.read(key); });
    EXPECT_NE(e.find("[tf::checkpoint] " + data), std::string::npos) << e;
    EXPECT_NE(e.find(std::string("'") + key + "'"), std::string::npos) << e;
  }
  // A data file cut short is found when the checkpoint is opened.
  io::detail::write_file_atomic(data, bytes.substr(0, 5), "");
  std::string e = error_of([&] { CheckpointReader again(prefix); });
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  fs::remove(data);
  e = error_of([&] { CheckpointReader again(prefix); });
  EXPECT_NE(e.find("cannot open data shard 0"), std::string::npos) << e;
  EXPECT_NE(e.find(data), std::string::npos) << e;
}

// An index with a header and the given entries, built with TableWriter.
std::string index_of(const std::vector<std::pair<std::string, tensorflow::BundleEntryProto>>& entries) {
  tensorflow::BundleHeaderProto h;
  h.set_num_shards(1);
  TableWriter t;
  t.add("", h.SerializeAsString());
  for (const auto& [k, e] : entries) t.add(k, e.SerializeAsString());
  return t.finish();
}

TEST_F(TfCheckpoint, SlicedAndForeignDtypesAreClearErrors) {
  tensorflow::BundleEntryProto sliced;
  sliced.set_dtype(tensorflow::DT_FLOAT);
  sliced.mutable_shape()->add_dim()->set_size(4);
  sliced.add_slices()->add_extent()->set_length(2);
  tensorflow::BundleEntryProto i16;
  i16.set_dtype(tensorflow::DT_INT16);
  i16.mutable_shape()->add_dim()->set_size(2);
  i16.set_size(4);
  i16.set_crc32c(crc32c_mask(crc32c("\1\0\2\0", 4)));
  const std::string prefix = dir_ + "/p";
  io::detail::write_file_atomic(prefix + ".index", index_of({{"i16", i16}, {"part", sliced}}), "");
  io::detail::write_file_atomic(checkpoint_data_path(prefix, 0, 1), std::string("\1\0\2\0", 4), "");
  CheckpointReader r(prefix);
  EXPECT_TRUE(r.entry("part").sliced);
  std::string e = error_of([&] { r.read("part"); });
  EXPECT_NE(e.find("'part' is saved in slices"), std::string::npos) << e;
  e = error_of([&] { r.read("i16"); });
  EXPECT_NE(e.find("'i16' has dtype DT_INT16"), std::string::npos) << e;
  EXPECT_EQ(r.read_bytes("i16"), std::string("\1\0\2\0", 4));

  // Sizes that disagree with dtype and shape, and shards that do not exist.
  i16.set_size(6);
  e = error_of([&] { CheckpointReader(prefix, index_of({{"i16", i16}}), false); });
  EXPECT_NE(e.find("key 'i16' (DT_INT16, 2 elements) has 6 bytes, not 4"), std::string::npos) << e;
  i16.set_size(4);
  i16.set_shard_id(3);
  e = error_of([&] { CheckpointReader(prefix, index_of({{"i16", i16}}), false); });
  EXPECT_NE(e.find("is in shard 3 of 1"), std::string::npos) << e;
}

TEST_F(TfCheckpoint, EveryTruncationOfAnIndexIsAClearError) {
  const std::string prefix = dir_ + "/t";
  CheckpointWriter w(prefix);
  w.add("a", constant({1.f, 2.f}));
  w.add("b/.ATTRIBUTES/VARIABLE_VALUE", constant(std::vector<std::string>{"x"}));
  w.finish();
  const std::string index = io::detail::read_file(prefix + ".index", "");
  for (size_t n = 0; n < index.size(); ++n) {
    const std::string e = error_of([&] { CheckpointReader(prefix, std::string_view(index).substr(0, n), false); });
    EXPECT_EQ(e.rfind("[tf::checkpoint] " + prefix + ".index", 0), 0u) << n << ": " << e;
  }
  // The header is required, and must be one.
  EXPECT_NE(error_of([&] { CheckpointReader(prefix, TableWriter().finish(), false); }).find("no header entry"),
            std::string::npos);
}

TEST_F(TfCheckpoint, WriterRefusesBadKeysAndLeavesNothingWhenAbandoned) {
  const std::string prefix = dir_ + "/w";
  {
    CheckpointWriter w(prefix);
    w.add("x", scalar(1));
    EXPECT_NE(error_of([&] { w.add("x", scalar(2)); }).find("'x' added twice"), std::string::npos);
    EXPECT_NE(error_of([&] { w.add("", scalar(2)); }).find("the empty key"), std::string::npos);
    EXPECT_NE(error_of([&] { w.add("u", Tensor()); }).find("no value"), std::string::npos);
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

}  // namespace
}  // namespace deepflow::tf
