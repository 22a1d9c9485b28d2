// SPDX-License-Identifier: Apache-2.0
// tf.train.Checkpoint (checkpoint.h): the object map is walked into (key, live state)
// bindings each time, because a model's weights exist only once it is built.
#include "deepflow/io/checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "deepflow/io/atomic_file.h"
#include "deepflow/io/bundle.h"
#include "deepflow/io/checkpoint_formats.h"
#include "deepflow/ops/op.h"

namespace deepflow::io {
namespace {

constexpr const char* kVariableSuffix = "/.ATTRIBUTES/VARIABLE_VALUE";
constexpr const char* kIteratorSuffix = "/.ATTRIBUTES/ITERATOR_STATE";
constexpr const char* kSlotMarker = "/.OPTIMIZER_SLOT/";
constexpr const char* kSaveCounter = "save_counter";

using Binding = CheckpointBinding;

std::string root_of(const std::string& path) { return path.substr(0, path.find('/')); }

class Collector {
 public:
  std::vector<Binding> bindings;
  std::vector<std::pair<std::string, keras::OptimizerPtr>> optimizers;

  void visit(const std::string& path, const Trackable& t) {
    switch (t.kind()) {
      case Trackable::Kind::Layer: layer(path, *t.layer()); break;
      case Trackable::Kind::Optimizer: optimizers.emplace_back(path, t.optimizer()); break;
      case Trackable::Kind::Variable: variable(path, t.variable()); break;
      case Trackable::Kind::Iterator:
        if (seen_iterators_.insert(t.iterator()).second)
          bindings.push_back({path + kIteratorSuffix, path, Variable(), t.iterator()});
        break;
      case Trackable::Kind::Map:
        for (const auto& [name, child] : t.children()) visit(path.empty() ? name : path + "/" + name, child);
        break;
    }
  }

  // Optimizers go last: their slots are keyed under the variables they belong to.
  void finish_optimizers() {
    for (const auto& [path, opt] : optimizers) {
      const std::vector<Variable> vars = opt->variables();
      for (size_t i = 0; i < vars.size(); ++i) {
        const Variable& v = vars[i];
        if (v.id() == opt->iterations().id()) {
          variable(path + "/iter", v);
        } else if (i == 1 && v.name() == opt->name() + "/learning_rate") {
          variable(path + "/learning_rate", v);
        } else {
          // A slot is named "<variable name>/<slot>"; its owner must be bound exactly once.
          const size_t slash = v.name().rfind('/');
          const std::string owner = slash == std::string::npos ? "" : v.name().substr(0, slash);
          auto it = by_name_.find(owner);
          if (slash != std::string::npos && it != by_name_.end() && it->second.size() == 1)
            variable(bindings[it->second[0]].path + kSlotMarker + path + "/" + v.name().substr(slash + 1), v);
          else
            variable(path + "/slots/" + v.name(), v);
        }
      }
    }
    optimizers.clear();
  }

  // The bound variables that have slots of optimizer `opt_path` in the checkpoint.
  std::vector<Variable> owners_with_slots(const std::string& opt_path, const std::vector<std::string>& keys) const {
    std::vector<Variable> out;
    for (const Binding& b : bindings) {
      if (!b.var.defined()) continue;
      const std::string prefix = b.path + kSlotMarker + opt_path + "/";
      auto it = std::lower_bound(keys.begin(), keys.end(), prefix);
      if (it != keys.end() && it->compare(0, prefix.size(), prefix) == 0) out.push_back(b.var);
    }
    return out;
  }

 private:
  void variable(const std::string& path, const Variable& v) {
    DF_CHECK(v.defined(), "[Checkpoint] '", path, "' is an undefined Variable");
    if (!seen_vars_.insert(v.id()).second) return;  // reachable twice: saved under its first path
    by_name_[v.name()].push_back(bindings.size());
    bindings.push_back({path + kVariableSuffix, path, v, nullptr});
  }

  void layer(const std::string& path, const keras::Layer& l) {
    seen_layers_.insert(&l);
    // The layer's own weights: all of them minus its sublayers'.
    std::unordered_set<uint64_t> below;
    for (const keras::LayerPtr& s : l.layers())
      for (const Variable& v : s->weights()) below.insert(v.id());
    std::set<std::string> names;
    const std::string own = l.name() + "/";
    for (const Variable& v : l.weights()) {
      if (below.count(v.id())) continue;
      std::string name = v.name();
      if (name.size() > own.size() && name.compare(0, own.size(), own) == 0) name = name.substr(own.size());
      DF_CHECK(names.insert(name).second, "[Checkpoint] ", path, ": layer '", l.name(), "' has two weights named '",
               name, "'");
      variable(path + "/" + name, v);
    }
    int index = 0;
    for (const keras::LayerPtr& s : l.layers()) {
      if (s->weights().empty()) continue;
      const std::string sub = path + "/layer_with_weights-" + std::to_string(index++);
      if (seen_layers_.count(s.get())) continue;  // a shared layer: its weights are bound already
      seen_layers_.insert(s.get());
      layer(sub, *s);
    }
  }

  std::unordered_set<uint64_t> seen_vars_;
  std::unordered_set<const keras::Layer*> seen_layers_;
  std::set<data::Iterator*> seen_iterators_;
  std::unordered_map<std::string, std::vector<size_t>> by_name_;
};

void check_names(const Trackable::Map& objects, const std::string& where) {
  for (const auto& [name, t] : objects) {
    DF_CHECK(!name.empty() && name.find('/') == std::string::npos, "[Checkpoint] object name '", name, "'", where,
             " must be non-empty and have no '/'");
    DF_CHECK(!(where.empty() && name == kSaveCounter), "[Checkpoint] 'save_counter' is the checkpoint's own counter");
    if (t.kind() == Trackable::Kind::Map) check_names(t.children(), " (in '" + name + "')");
  }
}

std::string type_of(DType dtype, const Shape& shape) { return std::string(dtype_name(dtype)) + shape.to_string(); }

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// deepflow's own bundles: the file's keys are deepflow's keys.
class BundleSource : public CheckpointSource {
 public:
  explicit BundleSource(const std::string& prefix) : reader_(prefix), keys_(reader_.keys()) {}
  std::vector<std::string> file_keys() const override { return keys_; }
  std::vector<std::string> keys() const override { return keys_; }
  std::string find(const std::string& key) const override { return reader_.contains(key) ? key : ""; }
  DType dtype(const std::string& key) const override { return reader_.entry(key).dtype; }
  Shape shape(const std::string& key) const override { return reader_.entry(key).shape; }
  Tensor read(const std::string& key) const override { return reader_.read(key); }

 private:
  BundleReader reader_;
  std::vector<std::string> keys_;
};

}  // namespace

// --- Trackable ---

Trackable::Trackable(keras::LayerPtr layer) : kind_(Kind::Layer), layer_(std::move(layer)) {
  DF_CHECK(layer_ != nullptr, "[Checkpoint] a null layer");
}
Trackable::Trackable(keras::OptimizerPtr optimizer) : kind_(Kind::Optimizer), optimizer_(std::move(optimizer)) {
  DF_CHECK(optimizer_ != nullptr, "[Checkpoint] a null optimizer");
}
Trackable::Trackable(Variable variable) : kind_(Kind::Variable), variable_(std::move(variable)) {
  DF_CHECK(variable_.defined(), "[Checkpoint] an undefined Variable");
}
Trackable::Trackable(data::Iterator* iterator) : kind_(Kind::Iterator), iterator_(iterator) {
  DF_CHECK(iterator_ != nullptr, "[Checkpoint] a null iterator");
}
Trackable::Trackable(Map children) : kind_(Kind::Map), children_(std::make_shared<const Map>(std::move(children))) {}

// --- CheckpointStatus ---

struct CheckpointStatus::State {
  std::string path;
  std::vector<std::string> unused_keys, unmatched;
  mutable bool silenced = false;
  ~State() {
    if (silenced || unused_keys.empty()) return;
    std::string list;
    for (size_t i = 0; i < unused_keys.size() && i < 5; ++i) list += (i ? ", " : "") + unused_keys[i];
    if (unused_keys.size() > 5) list += ", ...";
    std::fprintf(stderr,
                 "deepflow: warning: [Checkpoint.restore] %s: %zu value(s) in the checkpoint were not restored: %s "
                 "(call expect_partial() on the status to silence this)\n",
                 path.c_str(), unused_keys.size(), list.c_str());
  }
};

const CheckpointStatus& CheckpointStatus::assert_consumed() const {
  state_->silenced = true;
  std::string msg;
  if (!state_->unused_keys.empty()) {
    msg += "checkpoint keys that no object took: ";
    for (size_t i = 0; i < state_->unused_keys.size(); ++i) msg += (i ? ", " : "") + state_->unused_keys[i];
  }
  if (!state_->unmatched.empty()) {
    msg += msg.empty() ? "" : "; ";
    msg += "objects not in the checkpoint: ";
    for (size_t i = 0; i < state_->unmatched.size(); ++i) msg += (i ? ", " : "") + state_->unmatched[i];
  }
  DF_CHECK(msg.empty(), "[Checkpoint.restore] ", state_->path, ": not consumed: ", msg);
  return *this;
}

const CheckpointStatus& CheckpointStatus::assert_existing_objects_matched() const {
  state_->silenced = true;
  std::string list;
  for (size_t i = 0; i < state_->unmatched.size(); ++i) list += (i ? ", " : "") + state_->unmatched[i];
  DF_CHECK(list.empty(), "[Checkpoint.restore] ", state_->path, ": objects not in the checkpoint: ", list);
  return *this;
}

const CheckpointStatus& CheckpointStatus::expect_partial() const {
  state_->silenced = true;
  return *this;
}

const std::vector<std::string>& CheckpointStatus::unused_checkpoint_keys() const { return state_->unused_keys; }
const std::vector<std::string>& CheckpointStatus::unmatched_objects() const { return state_->unmatched; }
const std::string& CheckpointStatus::path() const { return state_->path; }

// --- Checkpoint ---

struct Checkpoint::Impl {
  Trackable::Map objects;
  Variable save_counter{scalar(0, DType::Int64), kSaveCounter, false};

  Collector collect() const {
    Collector c;
    c.visit("", Trackable(objects));
    c.visit(kSaveCounter, save_counter);
    return c;
  }
};

Checkpoint::Checkpoint(Trackable::Map objects) : impl_(std::make_shared<Impl>()) {
  check_names(objects, "");
  impl_->objects = std::move(objects);
}

const Variable& Checkpoint::save_counter() const { return impl_->save_counter; }

std::vector<std::string> Checkpoint::keys() const {
  Collector c = impl_->collect();
  c.finish_optimizers();
  std::vector<std::string> out;
  for (const Binding& b : c.bindings) out.push_back(b.key);
  std::sort(out.begin(), out.end());
  return out;
}

std::string Checkpoint::write(const std::string& file_prefix, const CheckpointOptions& options) const {
  DF_CHECK(!file_prefix.empty(), "[Checkpoint.write] empty path");
  BuildScopeGuard eager(nullptr);  // concrete values even when called from a traced function
  Collector c = impl_->collect();
  c.finish_optimizers();
  if (!options.format.empty()) {
    const CheckpointFormat* f = find_checkpoint_format_by_name(options.format);
    DF_CHECK(f != nullptr && f->write, "[Checkpoint.write] ", file_prefix, ": no registered checkpoint format \"",
             options.format, "\" can write (\"\" is deepflow's own; \"TensorFlow\" needs deepflow_tf's "
             "register_tf_checkpoint_format())");
    f->write(file_prefix, impl_->objects, c.bindings);
    return file_prefix;
  }
  BundleWriter w(file_prefix);
  for (const Binding& b : c.bindings) {
    if (b.iterator) w.add(b.key, string_scalar(b.iterator->save()));
    else w.add(b.key, b.var.value());
  }
  w.finish();
  return file_prefix;
}

std::string Checkpoint::save(const std::string& file_prefix, const CheckpointOptions& options) {
  DF_CHECK(!file_prefix.empty(), "[Checkpoint.save] empty path");
  BuildScopeGuard eager(nullptr);
  Variable& counter = impl_->save_counter;
  const int64_t n = counter.value().item<int64_t>() + 1;
  counter.assign(scalar(double(n), DType::Int64));
  std::string path;
  try {
    path = write(file_prefix + "-" + std::to_string(n), options);
  } catch (...) {
    counter.assign(scalar(double(n - 1), DType::Int64));
    throw;
  }
  // Like TF: the state file of the directory names this save as the latest.
  const std::string dir = detail::dir_of(path);
  CheckpointState state;
  state.model_checkpoint_path = detail::base_of(path);
  state.all_model_checkpoint_paths = {state.model_checkpoint_path};
  write_checkpoint_state(dir, state);
  return path;
}

CheckpointStatus Checkpoint::restore(const std::string& save_path) {
  BuildScopeGuard eager(nullptr);
  std::string prefix = save_path;
  if (is_directory(save_path)) {
    prefix = latest_checkpoint(save_path);
    DF_CHECK(!prefix.empty(), "[Checkpoint.restore] ", save_path,
             ": no checkpoint in this directory (no 'checkpoint' file naming a bundle)");
  }
  Collector c = impl_->collect();
  std::unique_ptr<CheckpointSource> source;
  if (const CheckpointFormat* f = find_checkpoint_format(prefix)) source = f->open(prefix, impl_->objects, c.bindings);
  else source = std::make_unique<BundleSource>(prefix);
  const std::vector<std::string> keys = source->keys();

  // As Keras: an optimizer's slots are built before they are restored.
  for (const auto& [path, opt] : c.optimizers) {
    const std::vector<Variable> owners = c.owners_with_slots(path, keys);
    if (!owners.empty()) opt->build(owners);
  }
  c.finish_optimizers();

  auto state = std::make_shared<CheckpointStatus::State>();
  state->path = prefix;
  std::vector<std::string> mismatches;
  std::vector<const Binding*> matched;
  std::set<std::string> used;
  std::vector<std::string> file_key(c.bindings.size());
  for (size_t i = 0; i < c.bindings.size(); ++i) {
    const Binding& b = c.bindings[i];
    file_key[i] = source->find(b.key);
    if (file_key[i].empty()) {
      // A checkpoint TensorFlow wrote with write() has no save_counter: ours keeps its value.
      if (b.path != kSaveCounter) state->unmatched.push_back(b.describe());
      continue;
    }
    used.insert(file_key[i]);
    const DType dtype = source->dtype(file_key[i]);
    const Shape shape = source->shape(file_key[i]);
    const std::string named = file_key[i] == b.key ? "" : " (as " + file_key[i] + ")";
    if (b.iterator) {
      if (dtype != DType::String || !shape.is_scalar())
        mismatches.push_back(b.path + named + ": checkpoint has " + type_of(dtype, shape) +
                             ", an iterator position is a string[] scalar");
    } else if (dtype != b.var.dtype() || shape != b.var.shape()) {
      mismatches.push_back(b.describe() + named + ": checkpoint has " + type_of(dtype, shape) + ", the " +
                           root_of(b.path) + " has " + type_of(b.var.dtype(), b.var.shape()));
    } else {
      matched.push_back(&b);
    }
  }
  if (!mismatches.empty()) {
    std::string msg;
    for (size_t i = 0; i < mismatches.size(); ++i) msg += (i ? "; " : "") + mismatches[i];
    fail("[Checkpoint.restore] ", prefix, ": ", msg);
  }
  for (size_t i = 0; i < c.bindings.size(); ++i)
    if (c.bindings[i].iterator && !file_key[i].empty()) matched.push_back(&c.bindings[i]);

  // Read (and checksum) everything before changing anything; iterators, which can
  // still refuse their bytes, go before the variables.
  std::vector<Tensor> values;
  values.reserve(matched.size());
  for (const Binding* b : matched) values.push_back(source->read(file_key[size_t(b - c.bindings.data())]));
  for (size_t i = 0; i < matched.size(); ++i)
    if (matched[i]->iterator) matched[i]->iterator->restore(values[i].item<std::string>());
  for (size_t i = 0; i < matched.size(); ++i)
    if (!matched[i]->iterator) Variable(matched[i]->var).assign(values[i]);

  for (const std::string& k : source->file_keys())
    if (!used.count(k)) state->unused_keys.push_back(k);
  return CheckpointStatus(std::move(state));
}

}  // namespace deepflow::io
