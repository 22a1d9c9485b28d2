// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for TensorFlow's checkpoint reader (deepflow/tf): the LevelDB table of
// the index, the header and entry protos, the tensor bytes of the data file, the object
// graph. Input: one mode byte, then the index part, then (after the marker "TFSPLIT!", if
// present) the data file's bytes. Mode bits, so the fuzzer gets past the checksums:
//   bit 0: the index part is a list of records (varint key length, key, varint value
//          length, value) that the harness sorts and writes as a valid table;
//   bit 1: open the data file and read every tensor;
//   bit 2: with bit 0, tiny data blocks (many blocks, a larger index block);
//   bit 3: with bit 0, set every parseable entry's CRC to that of the bytes it names;
//   bit 4: also decode the whole body as a DT_STRING tensor of data[1] elements.
// A parsed object graph is also matched onto a Keras model and its Adam optimizer
// (tf::map_object_graph, what io::Checkpoint::restore runs on TensorFlow's files).
// Any input may be rejected with a deepflow::Error; anything else (a crash, a sanitizer
// report, another exception, a hang, memory beyond -rss_limit_mb) is a bug. Invariants:
//   - a tensor read has its entry's dtype and shape, and (numeric) its exact bytes;
//   - every tensor read, written to a new checkpoint and read back, is equal;
//   - the object graph's match names only keys the graph holds.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "deepflow/core/crc32c.h"
#include "deepflow/core/error.h"
#include "deepflow/io/checkpoint.h"
#include "deepflow/keras/keras.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/checkpoint_format.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/object_graph.h"
#include "deepflow/tf/table.h"
#include "tensorflow/tensor_bundle.pb.h"
#include "tensorflow/trackable_object_graph.pb.h"

namespace {

using namespace deepflow;
using namespace deepflow::tf;

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

// A nested Sequential, an optimizer with slots and a Variable: what map_object_graph walks.
struct Objects {
  io::Trackable::Map map;
  std::vector<io::CheckpointBinding> bindings;
};
const Objects& objects() {
  static const Objects* o = [] {
    namespace L = keras::layers;
    auto inner = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{L::Dense(2)});
    auto model = std::make_shared<keras::Sequential>(
        std::vector<keras::LayerPtr>{L::InputLayer(Shape{3}), L::Dense(4), inner, L::BatchNormalization()});
    auto opt = keras::optimizers::Adam();
    opt->build(model->trainable_weights());
    auto* out = new Objects;
    out->map = {{"model", model}, {"optimizer", opt}, {"step", Variable(scalar(0, DType::Int64), "step", false)}};
    int k = 0;
    for (const Variable& v : model->weights()) out->bindings.push_back({"", "model/w" + std::to_string(k++), v});
    return out;
  }();
  return *o;
}

void check_mapping(const tensorflow::TrackableObjectGraph& g) {
  std::set<std::string> keys;
  for (const auto& node : g.nodes())
    for (const auto& a : node.attributes()) keys.insert(a.checkpoint_key());
  for (const auto& [ours, theirs] : map_object_graph(g, objects().map, objects().bindings))
    if (!keys.count(theirs)) bug("map_object_graph names a key the graph does not hold: " + theirs + " for " + ours);
}

// tmpfs when there is one. Removed at exit (the name lives on the heap: static strings
// are destroyed before atexit handlers run).
const std::string& scratch() {
  static const std::string* dir = [] {
    auto* d = new std::string(std::string(::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
                              "/tf_checkpoint_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    return d;
  }();
  static const bool cleanup = [] {
    return std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(*dir, ec);
    }) == 0;
  }();
  (void)cleanup;
  return *dir;
}

void put(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) bug("cannot write " + path);
}

// The records of bit 0, sorted by key (the last of duplicates wins); entries whose value
// is a BundleEntryProto get the CRC of the data they name when bit 3 asks for it.
std::string table_of_records(const std::string& part, const std::string& data, uint8_t mode) {
  std::map<std::string, std::string> records;
  size_t pos = 0;
  uint64_t klen = 0, vlen = 0;
  while (coding::get_varint64(part.data(), part.size(), &pos, &klen) && klen <= part.size() - pos) {
    std::string key = part.substr(pos, size_t(klen));
    pos += size_t(klen);
    if (!coding::get_varint64(part.data(), part.size(), &pos, &vlen) || vlen > part.size() - pos) break;
    records[key] = part.substr(pos, size_t(vlen));
    pos += size_t(vlen);
  }
  TableWriter w(mode & 4 ? 64 : 256 * 1024);
  for (auto& [key, value] : records) {
    tensorflow::BundleEntryProto e;
    if ((mode & 8) && !key.empty() && e.ParseFromString(value) && e.offset() >= 0 && e.size() >= 0 &&
        uint64_t(e.offset()) <= data.size() && uint64_t(e.size()) <= data.size() - uint64_t(e.offset())) {
      const char* p = data.data() + e.offset();
      uint32_t crc = crc32c(p, size_t(e.size()));
      if (e.dtype() == tensorflow::DT_STRING) {
        uint64_t n = 1;
        for (const auto& d : e.shape().dim()) n = d.size() >= 0 && d.size() < (1 << 20) ? n * uint64_t(d.size()) : 0;
        if (n > uint64_t(e.size())) n = 0;
        decode_string_tensor(p, size_t(e.size()), nullptr, size_t(n), &crc);
      }
      e.set_crc32c(crc32c_mask(crc));
      value = e.SerializeAsString();
    }
    w.add(key, value);
  }
  return w.finish();
}

bool same(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DType::String) return a.to_vector<std::string>() == b.to_vector<std::string>();
  return a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string index = body, shard;
  if (const size_t split = body.find("TFSPLIT!"); split != std::string::npos) {
    index = body.substr(0, split);
    shard = body.substr(split + 8);
  }
  if (mode & 16) {
    const size_t n = size > 1 ? data[1] : 0;
    std::vector<std::string> out(n);
    uint32_t crc = 0;
    (void)decode_string_tensor(body.data(), body.size(), out.data(), n, &crc);
  }
  if (mode & 1) index = table_of_records(index, shard, mode);
  try {
    (void)read_table(index, "fuzz.index");
  } catch (const Error&) {
  }

  const std::string prefix = scratch() + "/in";
  const bool open_data = (mode & 2) != 0;
  if (open_data) put(checkpoint_data_path(prefix, 0, 1), shard);
  std::vector<std::pair<std::string, Tensor>> good;
  try {
    CheckpointReader r(prefix, index, open_data);
    tensorflow::TrackableObjectGraph g;
    try {
      if (open_data && r.object_graph(&g)) {
        (void)object_graph_tensors(g);
        check_mapping(g);
      }
    } catch (const Error&) {
    }
    for (const CheckpointEntry& e : r.entries()) {
      if (!open_data) break;
      Tensor t;
      try {
        t = r.read(e.key);
      } catch (const Error&) {
        continue;
      }
      if (t.dtype() != dtype_from_tf(e.tf_dtype) || t.shape().to_vector() != e.shape)
        bug("a tensor read does not match its entry: " + e.key);
      if (t.dtype() != DType::String && t.nbytes() > 0 &&
          std::memcmp(t.raw_data(), shard.data() + e.offset, t.nbytes()) != 0)
        bug("a tensor read does not hold its bytes: " + e.key);
      good.emplace_back(e.key, t);
    }
  } catch (const Error&) {
    return 0;
  }
  if (good.empty()) return 0;
  const std::string out = scratch() + "/out";
  {
    CheckpointWriter w(out);
    for (const auto& [k, t] : good) w.add(k, t);
    w.finish();
  }
  CheckpointReader back(out);
  if (back.entries().size() != good.size()) bug("a round trip changed the key count");
  for (const auto& [k, t] : good)
    if (!same(back.read(k), t)) bug("a round trip changed tensor " + k);
  return 0;
}
