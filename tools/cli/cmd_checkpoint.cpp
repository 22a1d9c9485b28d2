// SPDX-License-Identifier: Apache-2.0
// `deepflow checkpoint inspect`: what a checkpoint (a tensor bundle) holds.
//
//   deepflow checkpoint inspect /runs/a              # the latest checkpoint of a directory
//   deepflow checkpoint inspect /runs/a/ckpt-3       # a bundle prefix (or its .index file)
//   deepflow checkpoint inspect /runs/a --tensor model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE
//   deepflow checkpoint inspect /runs/a --json
//
// The listing is one line per tensor, sorted by key: key, dtype, shape, bytes in the
// data file; --tensor prints one tensor's values (numpy style, long ones summarized),
// --json the same as a JSON object (with --tensor, every value).
//
// Both our bundles and TensorFlow's checkpoints (tf.train.Checkpoint, a SavedModel's
// variables/) are read, told apart by the index file's footer magic. For TensorFlow's,
// the listing says so, names dtypes TensorFlow's way when deepflow has no such dtype
// (DT_INT16), and ends with the object graph's paths (object path -> checkpoint key); a
// SavedModel directory means its variables/variables.
#include <sys/stat.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.h"
#include "deepflow/io/atomic_file.h"
#include "deepflow/io/bundle.h"
#include "deepflow/io/checkpoint.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/object_graph.h"
#include "deepflow/tf/table.h"
#include "tensorflow/trackable_object_graph.pb.h"

namespace deepflow::cli {
namespace {

struct InspectOptions {
  std::string path;
  std::string tensor;
  bool json = false;
};

std::string human_bytes(uint64_t n) {
  if (n < 1024) return std::to_string(n) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = double(n);
  int u = -1;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

// A directory means its latest checkpoint (a SavedModel directory: its variables); "x.index"
// means the bundle "x".
std::string resolve_prefix(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    const std::string variables = path + "/variables/variables";
    if (io::detail::file_exists(variables + ".index") && !io::detail::file_exists(path + "/checkpoint"))
      return variables;
    const std::string latest = io::latest_checkpoint(path);
    DF_CHECK(!latest.empty(), "[checkpoint inspect] ", path,
             ": no checkpoint in this directory (no 'checkpoint' state file naming an existing bundle)");
    return latest;
  }
  const std::string suffix = ".index";
  if (path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0)
    return path.substr(0, path.size() - suffix.size());
  return path;
}

nlohmann::json values_json(const Tensor& t) {
  nlohmann::json out = nlohmann::json::array();
  if (t.dtype() == DType::String) {
    for (const std::string& s : t.to_vector<std::string>()) out.push_back(s);
  } else if (t.dtype() == DType::Bool) {
    for (bool b : t.to_vector<bool>()) out.push_back(b);
  } else if (is_integer(t.dtype())) {
    for (int64_t v : t.to_vector<int64_t>()) out.push_back(v);
  } else {
    for (double v : t.to_vector<double>()) out.push_back(v);
  }
  return out;
}

std::string tf_dtype_text(int tf_dtype) {
  const std::optional<DType> d = tf::dtype_from_tf(tf_dtype);
  return d ? dtype_name(*d) : tf::tf_dtype_name(tf_dtype);
}

void inspect_tf(const InspectOptions& o, const std::string& prefix) {
  tf::CheckpointReader reader(prefix);
  tensorflow::TrackableObjectGraph graph;
  const bool has_graph = reader.object_graph(&graph);
  const std::vector<tf::ObjectTensor> named = has_graph ? tf::object_graph_tensors(graph) : std::vector<tf::ObjectTensor>{};
  if (o.json) {
    nlohmann::json j;
    j["path"] = prefix;
    j["format"] = "tensorflow";
    if (!o.tensor.empty()) {
      const tf::CheckpointEntry& e = reader.entry(o.tensor);
      j["key"] = e.key;
      j["dtype"] = tf_dtype_text(e.tf_dtype);
      j["shape"] = e.shape;
      j["values"] = values_json(reader.read(o.tensor));
    } else {
      uint64_t total = 0;
      j["tensors"] = nlohmann::json::array();
      for (const tf::CheckpointEntry& e : reader.entries()) {
        total += uint64_t(e.size);
        j["tensors"].push_back({{"key", e.key}, {"dtype", tf_dtype_text(e.tf_dtype)}, {"shape", e.shape},
                                {"size", e.size}});
      }
      j["total_size"] = total;
      j["object_graph"] = nlohmann::json::array();
      for (const tf::ObjectTensor& t : named)
        j["object_graph"].push_back({{"path", t.path}, {"name", t.name}, {"key", t.checkpoint_key}});
    }
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  if (!o.tensor.empty()) {
    const tf::CheckpointEntry& e = reader.entry(o.tensor);
    const Tensor t = reader.read(o.tensor);
    std::cout << e.key << ": " << tf_dtype_text(e.tf_dtype) << t.shape() << "\n" << array_string(t) << "\n";
    return;
  }
  size_t key_w = 3, dtype_w = 5, shape_w = 5;
  uint64_t total = 0;
  for (const tf::CheckpointEntry& e : reader.entries()) {
    key_w = std::max(key_w, e.key.size());
    dtype_w = std::max(dtype_w, tf_dtype_text(e.tf_dtype).size());
    shape_w = std::max(shape_w, Shape(e.shape).to_string().size());
    total += uint64_t(e.size);
  }
  const size_t n = reader.entries().size();
  std::cout << "TensorFlow checkpoint " << prefix << ": " << n << (n == 1 ? " tensor, " : " tensors, ")
            << human_bytes(total) << "\n";
  auto row = [&](const std::string& k, const std::string& d, const std::string& s, const std::string& b) {
    std::cout << k << std::string(key_w - k.size() + 2, ' ') << d << std::string(dtype_w - d.size() + 2, ' ') << s
              << std::string(shape_w - s.size() + 2, ' ') << b << "\n";
  };
  row("key", "dtype", "shape", "size");
  for (const tf::CheckpointEntry& e : reader.entries())
    row(e.key, tf_dtype_text(e.tf_dtype), e.sliced ? "(sliced)" : Shape(e.shape).to_string(), human_bytes(uint64_t(e.size)));
  if (!has_graph) {
    std::cout << "No object graph (" << tf::kObjectGraphKey << "): a name-based (TF1) checkpoint\n";
    return;
  }
  std::cout << "\nObject graph: " << graph.nodes_size() << " objects, " << named.size() << " saved tensors\n";
  size_t path_w = 4;
  for (const tf::ObjectTensor& t : named) path_w = std::max(path_w, t.path.size() + 1 + t.name.size());
  for (const tf::ObjectTensor& t : named) {
    const std::string p = t.path + "." + t.name;
    std::cout << "  " << p << std::string(path_w - p.size() + 2, ' ') << t.checkpoint_key << "\n";
  }
}

void inspect(const InspectOptions& o) {
  const std::string prefix = resolve_prefix(o.path);
  if (tf::is_tf_checkpoint(prefix)) return inspect_tf(o, prefix);
  io::BundleReader reader(prefix, {.mmap = true});
  const std::vector<std::string> keys = reader.keys();

  if (o.json) {
    nlohmann::json j;
    j["path"] = prefix;
    if (!o.tensor.empty()) {
      const io::BundleEntry& e = reader.entry(o.tensor);
      j["key"] = e.key;
      j["dtype"] = dtype_name(e.dtype);
      j["shape"] = e.shape.to_vector();
      j["values"] = values_json(reader.read(o.tensor));
    } else {
      uint64_t total = 0;
      j["tensors"] = nlohmann::json::array();
      for (const std::string& k : keys) {
        const io::BundleEntry& e = reader.entry(k);
        total += e.size;
        j["tensors"].push_back({{"key", k}, {"dtype", dtype_name(e.dtype)}, {"shape", e.shape.to_vector()},
                                {"size", e.size}});
      }
      j["total_size"] = total;
    }
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }

  if (!o.tensor.empty()) {
    const io::BundleEntry& e = reader.entry(o.tensor);
    const Tensor t = reader.read(o.tensor);
    std::cout << e.key << ": " << dtype_name(e.dtype) << e.shape << "\n" << array_string(t) << "\n";
    return;
  }
  size_t key_w = 3, dtype_w = 5, shape_w = 5;
  uint64_t total = 0;
  for (const std::string& k : keys) {
    const io::BundleEntry& e = reader.entry(k);
    key_w = std::max(key_w, k.size());
    dtype_w = std::max(dtype_w, std::string(dtype_name(e.dtype)).size());
    shape_w = std::max(shape_w, e.shape.to_string().size());
    total += e.size;
  }
  std::cout << "Checkpoint " << prefix << ": " << keys.size() << (keys.size() == 1 ? " tensor, " : " tensors, ")
            << human_bytes(total) << "\n";
  auto row = [&](const std::string& k, const std::string& d, const std::string& s, const std::string& n) {
    std::cout << k << std::string(key_w - k.size() + 2, ' ') << d << std::string(dtype_w - d.size() + 2, ' ') << s
              << std::string(shape_w - s.size() + 2, ' ') << n << "\n";
  };
  row("key", "dtype", "shape", "size");
  for (const std::string& k : keys) {
    const io::BundleEntry& e = reader.entry(k);
    row(k, dtype_name(e.dtype), e.shape.to_string(), human_bytes(e.size));
  }
}

void setup_checkpoint(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("checkpoint", "Inspect training checkpoints (ours and TensorFlow's)");
  cmd->require_subcommand(1);
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* sub = cmd->add_subcommand(
      "inspect", "List a checkpoint's tensors (key, dtype, shape, size), or print one tensor's values");
  sub->add_option("path", opts->path,
                  "A checkpoint prefix (/runs/a/ckpt-3), its .index file, or a directory (its latest checkpoint)")
      ->required();
  sub->add_option("--tensor", opts->tensor, "Print this tensor's values instead of the listing");
  sub->add_flag("--json", opts->json, "Print JSON instead of text");
  sub->callback([opts] { inspect(*opts); });
}

}  // namespace

DF_CLI_COMMAND(setup_checkpoint)

}  // namespace deepflow::cli
