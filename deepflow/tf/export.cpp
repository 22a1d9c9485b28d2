// SPDX-License-Identifier: Apache-2.0
// save_tf_saved_model: the SavedModel proto (export_graph.cpp) and the variables in TF's
// checkpoint format, written into a temporary sibling directory that is renamed into place.
#include "deepflow/tf/export.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <unistd.h>

#include "deepflow/core/error.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/export_graph.h"
#include "deepflow/tf/export_internal.h"
#include "tensorflow/fingerprint.pb.h"
#include "tensorflow/trackable_object_graph.pb.h"

namespace deepflow::tf {

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  DF_CHECK(fd >= 0, "[tf::export] cannot create ", path.string(), ": ", std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      fail("[tf::export] cannot write ", path.string(), ": ", std::strerror(err));
    }
    done += size_t(n);
  }
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  DF_CHECK(ok, "[tf::export] cannot fsync ", path.string(), ": ", std::strerror(errno));
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

bool non_empty_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) && fs::directory_iterator(p, ec) != fs::directory_iterator();
}

// Renames tmp to dir; an existing directory (only with overwrite) is moved aside first and
// removed after.
void publish(const fs::path& tmp, const fs::path& dir, bool overwrite) {
  if (::rename(tmp.c_str(), dir.c_str()) == 0) return;
  const int err = errno;
  DF_CHECK(err == ENOTEMPTY || err == EEXIST, "[tf::export] ", dir.string(), ": cannot rename ", tmp.string(),
           " into place: ", std::strerror(err));
  DF_CHECK(overwrite, "[tf::export] ", dir.string(), " exists and is not empty (set SaveOptions::overwrite)");
  fs::path old = dir;
  old += ".old-" + std::to_string(::getpid());
  DF_CHECK(::rename(dir.c_str(), old.c_str()) == 0 && ::rename(tmp.c_str(), dir.c_str()) == 0, "[tf::export] ",
           dir.string(), ": cannot replace the directory: ", std::strerror(errno));
  std::error_code ec;
  fs::remove_all(old, ec);
}

// FNV-1a, 64 bits: the fingerprint's hashes (TensorFlow computes FarmHash64 over its own
// regularized forms; loaders only log them, as the model's identity).
uint64_t hash64(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

// fingerprint.pb: FingerprintDef over the pieces tf.saved_model.save hashes.
std::string fingerprint(const tensorflow::SavedModel& sm, const std::string& pb_bytes, const std::string& index) {
  const tensorflow::MetaGraphDef& mg = sm.meta_graphs(0);
  std::string graph, sigs, sog;
  mg.graph_def().SerializeToString(&graph);
  for (const auto& [key, sd] : std::map<std::string, tensorflow::SignatureDef>(mg.signature_def().begin(),
                                                                              mg.signature_def().end()))
    sigs += key + sd.SerializeAsString();
  mg.object_graph_def().SerializeToString(&sog);
  tensorflow::FingerprintDef f;
  f.set_saved_model_checksum(hash64(pb_bytes));
  f.set_graph_def_program_hash(hash64(graph));
  f.set_signature_def_hash(hash64(sigs));
  f.set_saved_object_graph_hash(hash64(sog));
  f.set_checkpoint_hash(hash64(index));
  f.mutable_version()->set_producer(1);
  return f.SerializeAsString();
}

}  // namespace

std::vector<std::string> save_tf_saved_model(const std::string& dir, const std::vector<io::SignatureSpec>& signatures,
                                             const io::SaveOptions& options) {
  DF_CHECK(!dir.empty(), "[tf::export] empty directory name");
  DF_CHECK(!signatures.empty(), "[tf::export] ", dir, ": no signatures to save");
  DF_CHECK(options.assets.empty(), "[tf::export] ", dir, ": assets are not written in TensorFlow's format yet");
  fs::path final_dir = fs::path(dir).lexically_normal();
  if (!final_dir.has_filename()) final_dir = final_dir.parent_path();
  std::error_code ec;
  DF_CHECK(!fs::exists(final_dir, ec) || fs::is_directory(final_dir, ec), "[tf::export] ", dir,
           " exists and is not a directory");
  DF_CHECK(options.overwrite || !non_empty_dir(final_dir), "[tf::export] ", dir,
           " exists and is not empty (set SaveOptions::overwrite)");
  const fs::path parent = final_dir.has_parent_path() ? final_dir.parent_path() : fs::path(".");
  DF_CHECK(fs::is_directory(parent, ec), "[tf::export] ", dir, ": parent directory ", parent.string(),
           " does not exist");

  detail::ExportVariables vars;
  tensorflow::SavedModel sm;
  try {
    sm = detail::build_tf_saved_model(signatures, options, vars);
  } catch (const Error& e) {
    fail("[tf::export] ", dir, ": ", detail::strip_export_prefix(e.what()));
  }
  std::string pb_bytes;
  DF_CHECK(sm.SerializeToString(&pb_bytes), "[tf::export] ", dir, ": cannot serialize saved_model.pb (over 2 GiB?)");

  std::string tmpl = final_dir.string() + ".tmp-XXXXXX";
  DF_CHECK(::mkdtemp(tmpl.data()) != nullptr, "[tf::export] ", dir, ": cannot create a temporary directory ", tmpl,
           ": ", std::strerror(errno));
  const fs::path tmp = tmpl;
  try {
    fs::create_directory(tmp / "variables");
    fs::create_directory(tmp / "assets");
    {
      CheckpointWriter w((tmp / "variables" / "variables").string());
      for (size_t i = 0; i < vars.list.size(); ++i) w.add(vars.keys[i], vars.list[i].value());
      tensorflow::TrackableObjectGraph graph;
      DF_CHECK(graph.ParseFromString(vars.object_graph), "[tf::export] ", dir, ": bad object graph");
      w.add_object_graph(graph);
      w.finish();
    }
    write_file(tmp / "saved_model.pb", pb_bytes);
    std::string index;
    {
      std::ifstream in(checkpoint_index_path((tmp / "variables" / "variables").string()), std::ios::binary);
      index.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    write_file(tmp / "fingerprint.pb", fingerprint(sm, pb_bytes, index));
    fsync_dir(tmp / "variables");
    fsync_dir(tmp);
    publish(tmp, final_dir, options.overwrite);
    fsync_dir(parent);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  std::vector<std::string> extra_names;
  for (const Variable& v : options.extra_variables) extra_names.push_back(vars.local_names[size_t(vars.index(v))]);
  return extra_names;
}

std::vector<std::string> tf_exportable_primitives() {
  std::vector<std::string> out;
  for (const auto& [op, fn] : detail::export_table()) out.push_back(op_def(op).name);
  for (OpId op : {OpId::Placeholder, OpId::ReadVariable, OpId::NoOp}) out.push_back(op_def(op).name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace deepflow::tf
