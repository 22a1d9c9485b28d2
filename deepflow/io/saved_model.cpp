// SPDX-License-Identifier: Apache-2.0
// Saving a SavedModel (the loader is saved_model_load.cpp). The whole directory is built
// under a temporary sibling and renamed into place, so readers see either no model or a
// complete one.
#include "deepflow/io/saved_model.h"
#include "deepflow/io/saved_model_formats.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>

#include "deepflow/graph/graph_def.h"
#include "deepflow/graph/text.h"
#include "deepflow/io/bundle.h"
#include "graph.pb.h"
#include "saved_model.pb.h"

namespace deepflow::io {
namespace {

namespace fs = std::filesystem;
namespace pb = deepflow::proto;

pb::DataType to_proto(DType t) { return pb::DataType(int(t) + 1); }

void set_tensor_info(pb::TensorInfo* out, const std::string& name, const TensorType& t) {
  out->set_name(name);
  out->set_dtype(to_proto(t.dtype));
  pb::TensorShapeProto* s = out->mutable_tensor_shape();
  for (int64_t d : t.shape) s->add_dim()->set_size(d);
}

// Names a variable the way the loader will look it up: every distinct variable (by id)
// gets one name, its own unless an earlier variable took it.
class VariableNames {
 public:
  const std::string& add(const Variable& v) {
    if (auto it = by_id_.find(v.id()); it != by_id_.end()) return it->second;
    std::string name = v.name();
    for (int k = 1; taken_.count(name); ++k) name = v.name() + "_" + std::to_string(k);
    taken_.insert(name);
    order_.push_back(v);
    return by_id_[v.id()] = name;
  }
  const std::string& name(const Variable& v) const { return by_id_.at(v.id()); }
  const std::vector<Variable>& variables() const { return order_; }

 private:
  std::unordered_map<uint64_t, std::string> by_id_;
  std::set<std::string> taken_;
  std::vector<Variable> order_;
};

// graph_to_proto names variables and nested functions per graph; a MetaGraph holds many
// graphs, so both are renamed to names unique across the file.
void rename_refs(google::protobuf::RepeatedPtrField<pb::NodeDef>* nodes,
                 const std::unordered_map<std::string, std::string>& vars, const std::string& fn_prefix) {
  for (pb::NodeDef& n : *nodes)
    for (auto& [key, value] : *n.mutable_attr()) {
      if (value.has_variable()) value.mutable_variable()->set_name(vars.at(value.variable().name()));
      if (value.value_case() == pb::AttrValue::kFunc) value.set_func(fn_prefix + value.func());
    }
}

void add_function(const std::string& fname, const Graph& g, VariableNames& var_names, pb::GraphDef* library) {
  pb::GraphDef gd;
  graph_to_proto(g, &gd);
  std::unordered_map<std::string, std::string> vars;  // graph_to_proto's name -> the file's
  for (const auto& [local, var] : graph_variables(g)) vars[local] = var_names.add(var);
  const std::string prefix = fname + "/";
  rename_refs(gd.mutable_node(), vars, prefix);
  pb::FunctionDef* fd = library->add_library();
  fd->set_name(fname);
  *fd->mutable_node() = gd.node();
  *fd->mutable_inputs() = gd.inputs();
  *fd->mutable_outputs() = gd.outputs();
  for (pb::FunctionDef& nested : *gd.mutable_library()) {
    nested.set_name(prefix + nested.name());
    rename_refs(nested.mutable_node(), vars, prefix);
    *library->add_library() = std::move(nested);
  }
}

std::string errno_text() { return std::strerror(errno); }

void fsync_path(const std::string& path, const std::string& dir_for_errors) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  DF_CHECK(fd >= 0, "[save_saved_model] ", dir_for_errors, ": cannot open ", path, ": ", errno_text());
  int rc = ::fsync(fd);
  ::close(fd);
  DF_CHECK(rc == 0, "[save_saved_model] ", dir_for_errors, ": fsync of ", path, " failed: ", errno_text());
}

void write_file(const std::string& path, const std::string& bytes, const std::string& dir) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  DF_CHECK(fd >= 0, "[save_saved_model] ", dir, ": cannot create ", path, ": ", errno_text());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = errno_text();
      ::close(fd);
      fail("[save_saved_model] ", dir, ": write to ", path, " failed: ", why);
    }
    done += size_t(n);
  }
  bool ok = ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  DF_CHECK(ok, "[save_saved_model] ", dir, ": cannot finish ", path, ": ", errno_text());
}

std::string read_whole(const std::string& path, const std::string& dir) {
  std::ifstream in(path, std::ios::binary);
  DF_CHECK(in, "[save_saved_model] ", dir, ": cannot read asset ", path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool non_empty_dir(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return false;
  return fs::directory_iterator(p, ec) != fs::directory_iterator();
}

// Builds the saved_model.pb message and collects the variables to write.
pb::SavedModel build_proto(const std::string& dir, const std::vector<SignatureSpec>& signatures,
                           const SaveOptions& options, VariableNames& var_names) {
  pb::SavedModel sm;
  sm.set_saved_model_schema_version(kSavedModelSchemaVersion);
  pb::MetaGraphDef* mg = sm.add_meta_graphs();
  for (const std::string& t : options.tags) mg->mutable_meta_info_def()->add_tags(t);
  mg->mutable_meta_info_def()->set_tensorflow_version("deepflow");
  pb::GraphDef* library = mg->mutable_graph_def();
  library->set_version(kGraphDefVersion);

  std::unordered_map<const Graph*, std::string> fn_names;
  std::set<std::string> used_fn_names;
  for (const SignatureSpec& spec : signatures) {
    const std::string at = "[save_saved_model] " + dir + ": signature '" + spec.key + "': ";
    DF_CHECK(!spec.key.empty(), "[save_saved_model] ", dir, ": a signature has an empty key");
    DF_CHECK(!mg->signature_def().count(spec.key), at, "the key is used twice");
    DF_CHECK(spec.fn.defined(), at, "the function is undefined");
    const Graph& g = spec.fn.graph();
    std::string& fname = fn_names[&g];
    if (fname.empty()) {
      fname = spec.fn.name().empty() ? "function" : spec.fn.name();
      for (char& c : fname)
        if (c == '/') c = '_';  // '/' separates a function from its nested ones
      const std::string base = fname;
      for (int k = 1; used_fn_names.count(fname); ++k) fname = base + "_" + std::to_string(k);
      used_fn_names.insert(fname);
      add_function(fname, g, var_names, library);
    }

    pb::SignatureDef& sd = (*mg->mutable_signature_def())[spec.key];
    sd.set_method_name(spec.method_name);
    sd.set_function(fname);
    const size_t n_in = g.inputs.size(), n_out = g.outputs.size();
    DF_CHECK(spec.input_names.empty() || spec.input_names.size() == n_in, at, "the function takes ", n_in,
             " inputs but ", spec.input_names.size(), " input names were given");
    DF_CHECK(spec.output_names.empty() || spec.output_names.size() == n_out, at, "the function returns ", n_out,
             " outputs but ", spec.output_names.size(), " output names were given");
    for (size_t i = 0; i < n_in; ++i) {
      const Node& ph = g.node(g.inputs[i]);
      const std::string key = spec.input_names.empty() ? ph.name : spec.input_names[i];
      DF_CHECK(!key.empty() && !sd.inputs().count(key), at, "input name '", key, "' is empty or used twice");
      set_tensor_info(&(*sd.mutable_inputs())[key], ph.name + ":0", ph.outputs.at(0));
    }
    for (size_t i = 0; i < n_out; ++i) {
      const ValueRef v = g.outputs[i];
      const std::string key = spec.output_names.empty() ? "output_" + std::to_string(i) : spec.output_names[i];
      DF_CHECK(!key.empty() && !sd.outputs().count(key), at, "output name '", key, "' is empty or used twice");
      set_tensor_info(&(*sd.mutable_outputs())[key], g.node(v.node).name + ":" + std::to_string(v.index), g.type(v));
    }
  }

  for (const Variable& v : options.extra_variables) {
    DF_CHECK(v.defined(), "[save_saved_model] ", dir, ": an extra variable is undefined");
    var_names.add(v);
  }
  for (const Variable& v : var_names.variables()) {
    pb::SavedVariable* sv = mg->add_variables();
    sv->set_name(var_names.name(v));
    sv->set_dtype(to_proto(v.dtype()));
    for (int64_t d : v.shape()) sv->add_shape(d);
    sv->set_trainable(v.trainable());
    sv->set_checkpoint_key(var_names.name(v));
  }
  for (const auto& [name, source] : options.assets) {
    DF_CHECK(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos, "[save_saved_model] ",
             dir, ": asset name '", name, "' must be a plain file name");
    mg->add_asset_file_def()->set_filename(name);
  }
  if (options.object_metadata_from_names) {
    std::vector<std::string> extra_names;
    for (const Variable& v : options.extra_variables) extra_names.push_back(var_names.name(v));
    mg->set_object_metadata(options.object_metadata_from_names(extra_names));
  } else {
    mg->set_object_metadata(options.object_metadata);
  }
  return sm;
}

std::string serialize(const pb::SavedModel& sm, const std::string& dir) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream sos(&out);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);  // same model, same bytes
    DF_CHECK(sm.SerializeToCodedStream(&cos), "[save_saved_model] ", dir,
             ": serializing saved_model.pb failed (over 2 GiB of graphs?)");
  }
  return out;
}

// Moves the finished temporary directory to its final name: a rename onto a missing or
// empty directory, or an atomic exchange with an existing one when overwriting.
void publish(const fs::path& tmp, const fs::path& dir, bool overwrite) {
  if (::rename(tmp.c_str(), dir.c_str()) == 0) return;
  const int err = errno;
  if (err != ENOTEMPTY && err != EEXIST)
    fail("[save_saved_model] ", dir.string(), ": cannot rename ", tmp.string(), " into place: ", std::strerror(err));
  DF_CHECK(overwrite, "[save_saved_model] ", dir.string(), " exists and is not empty (set SaveOptions::overwrite)");
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0) {
    // Filesystems without RENAME_EXCHANGE: move the old one aside first (not atomic; a
    // crash in between leaves the old model under "<dir>.old-*").
    fs::path old = dir;
    old += ".old-" + std::to_string(::getpid());
    DF_CHECK(::rename(dir.c_str(), old.c_str()) == 0 && ::rename(tmp.c_str(), dir.c_str()) == 0, "[save_saved_model] ",
             dir.string(), ": cannot replace the directory: ", errno_text());
    std::error_code ec;
    fs::remove_all(old, ec);
    return;
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);  // now the old model
}

}  // namespace

std::vector<std::string> save_saved_model(const std::string& dir, const std::vector<SignatureSpec>& signatures,
                                          const SaveOptions& options) {
  DF_CHECK(!dir.empty(), "[save_saved_model] empty directory name");
  if (!options.format.empty()) {
    const SavedModelFormat* f = find_saved_model_format_by_name(options.format);
    DF_CHECK(f != nullptr && f->save, "[save_saved_model] ", dir, ": no registered SavedModel format \"",
             options.format, "\" can write (\"\" is deepflow's own; \"TensorFlow\" needs deepflow_tf's "
             "register_tf_saved_model_format())");
    return f->save(dir, signatures, options);
  }
  fs::path final_dir = fs::path(dir).lexically_normal();
  if (final_dir.has_filename() == false) final_dir = final_dir.parent_path();
  std::error_code ec;
  DF_CHECK(!fs::exists(final_dir, ec) || fs::is_directory(final_dir, ec), "[save_saved_model] ", dir,
           " exists and is not a directory");
  DF_CHECK(options.overwrite || !non_empty_dir(final_dir), "[save_saved_model] ", dir,
           " exists and is not empty (set SaveOptions::overwrite)");
  fs::path parent = final_dir.has_parent_path() ? final_dir.parent_path() : fs::path(".");
  DF_CHECK(fs::is_directory(parent, ec), "[save_saved_model] ", dir, ": parent directory ", parent.string(),
           " does not exist");

  VariableNames var_names;
  const pb::SavedModel sm = build_proto(dir, signatures, options, var_names);
  const std::string pb_bytes = serialize(sm, dir);

  std::string tmpl = final_dir.string() + ".tmp-XXXXXX";
  DF_CHECK(::mkdtemp(tmpl.data()) != nullptr, "[save_saved_model] ", dir, ": cannot create a temporary directory ",
           tmpl, ": ", errno_text());
  const fs::path tmp = tmpl;
  try {
    for (const char* sub : {"variables", "assets", "assets.extra"}) fs::create_directory(tmp / sub);
    {
      BundleWriter w((tmp / "variables" / "variables").string());
      for (const Variable& v : var_names.variables()) w.add(var_names.name(v), v.value());
      w.finish();
    }
    for (const auto& [name, source] : options.assets)
      write_file((tmp / "assets" / name).string(), read_whole(source, dir), dir);
    write_file((tmp / "saved_model.pb").string(), pb_bytes, dir);
    for (const char* sub : {"variables", "assets", "assets.extra"}) fsync_path((tmp / sub).string(), dir);
    fsync_path(tmp.string(), dir);
    publish(tmp, final_dir, options.overwrite);
    fsync_path(parent.string(), dir);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  std::vector<std::string> extra_names;
  for (const Variable& v : options.extra_variables) extra_names.push_back(var_names.name(v));
  return extra_names;
}

}  // namespace deepflow::io
