// SPDX-License-Identifier: Apache-2.0
// TensorFlow's checkpoints behind io::Checkpoint (io/checkpoint_formats.h).
//
// Reading: TensorFlow's keys are the first path its breadth-first walk of the object graph
// found, which differs between trackers (Keras 3 saves a Dense kernel as
// "optimizer/_trainable_variables/0/..." when the optimizer comes first, tf-keras as
// "model/layer_with_weights-0/kernel/..."), so the keys are not matched as text: the
// object graph is walked from our objects' names down, structurally, and every value found
// gets the key deepflow would give it.
//   layers      tf-keras: children "layer_with_weights-<k>"; Keras 3: the items of
//               "_functional/_operations", "_operations" or "_layers" that hold weights,
//               in order. The k-th is our k-th sublayer with weights.
//   weights     a layer's variable children by name, a leading "_" dropped (Keras 3's
//               Dense and Conv keep the kernel in "_kernel").
//   optimizer   "_iterations" / "iter" and "_learning_rate" / "learning_rate"; slot lists
//               named by the slot's plural ("_momentums", "_velocities") whose i-th item belongs to the
//               i-th variable the optimizer was built for: the item of
//               "_trainable_variables" (Keras 3) or else the i-th trainable weight of the
//               checkpoint's layers (tf-keras builds for model.trainable_variables); and
//               the legacy optimizers' slot variables (m, v) by their original variable.
// Writing: the same objects in both trackers' shapes at once (the layer and variable
// objects are shared, so each tracker's restore finds its own path and assert_consumed
// holds in both), under deepflow's own keys.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "deepflow/core/error.h"
#include "deepflow/io/checkpoint_formats.h"
#include "deepflow/keras/model.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/checkpoint_format.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/object_graph.h"
#include "deepflow/tf/table.h"
#include "tensorflow/trackable_object_graph.pb.h"

namespace deepflow::tf {
namespace {

using Graph = tensorflow::TrackableObjectGraph;
constexpr const char* kValue = "VARIABLE_VALUE";
constexpr const char* kIterator = "ITERATOR_STATE";
constexpr const char* kSlotMarker = "/.OPTIMIZER_SLOT/";
constexpr const char* kSaveCounter = "save_counter";

std::string suffix_of(const char* attribute) { return std::string("/.ATTRIBUTES/") + attribute; }

// Keras keeps each slot in a list named after its plural: "momentum" in "_momentums",
// "velocity" in "_velocities", "velocity_hat" in "_velocity_hats".
std::string slot_list_of(const std::string& slot) {
  if (slot.size() > 1 && slot.back() == 'y') return "_" + slot.substr(0, slot.size() - 1) + "ies";
  return "_" + slot + "s";
}
std::string slot_of_list(const std::string& list) {  // "" when `list` is no such name
  if (list.size() < 3 || list[0] != '_' || list.back() != 's') return "";
  if (list.size() > 4 && list.compare(list.size() - 3, 3, "ies") == 0) return list.substr(1, list.size() - 4) + "y";
  return list.substr(1, list.size() - 2);
}

// "layer_with_weights-<k>" -> k, else -1.
long layer_index(const std::string& name) {
  constexpr std::string_view kPrefix = "layer_with_weights-";
  if (name.size() <= kPrefix.size() || name.size() > kPrefix.size() + 9 || name.compare(0, kPrefix.size(), kPrefix) != 0 ||
      name.find_first_not_of("0123456789", kPrefix.size()) != std::string::npos)
    return -1;
  return std::stol(name.substr(kPrefix.size()));
}

// Our Layer objects in order, nested maps included: the trainable order of tf-keras. A map
// of "layer_with_weights-<k>" (how the Python front end hands over a Sequential) goes by k.
void layers_of(const io::Trackable& t, std::vector<keras::LayerPtr>* out) {
  if (t.kind() == io::Trackable::Kind::Layer) out->push_back(t.layer());
  if (t.kind() != io::Trackable::Kind::Map) return;
  std::vector<std::pair<long, const io::Trackable*>> children;
  for (const auto& [name, child] : t.children()) children.emplace_back(layer_index(name), &child);
  std::stable_sort(children.begin(), children.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [k, child] : children) layers_of(*child, out);
}

// The object paths of the variables walked so far, by variable id.
std::unordered_map<uint64_t, std::string> paths_by_variable(const std::vector<io::CheckpointBinding>& bindings) {
  std::unordered_map<uint64_t, std::string> out;
  for (const io::CheckpointBinding& b : bindings)
    if (b.var.defined()) out.emplace(b.var.id(), b.path);
  return out;
}

// The variables an optimizer's slot lists are indexed by, as Keras builds them:
// model.trainable_variables of the checkpoint's models, in order.
std::vector<std::string> trainable_order(const io::Trackable::Map& objects,
                                         const std::unordered_map<uint64_t, std::string>& paths) {
  std::vector<keras::LayerPtr> layers;
  layers_of(io::Trackable(objects), &layers);
  std::vector<std::string> out;
  std::set<uint64_t> seen;
  for (const keras::LayerPtr& l : layers)
    for (const Variable& v : l->trainable_weights()) {
      auto it = paths.find(v.id());
      if (it != paths.end() && seen.insert(v.id()).second) out.push_back(it->second);
    }
  return out;
}

// --- reading: a TensorFlow object graph onto our keys ---

class Mapper {
 public:
  explicit Mapper(const Graph& g) : g_(g) {}

  std::map<std::string, std::string> map(const io::Trackable::Map& objects,
                                         const std::vector<io::CheckpointBinding>& bindings) {
    for (const auto& [name, t] : objects) visit(child(0, name), name, t);
    value(child(0, kSaveCounter), kSaveCounter, kValue);
    const std::vector<std::string> order = trainable_order(objects, paths_by_variable(bindings));
    for (const auto& [node, path] : optimizers_) optimizer(node, path, order);
    return std::move(keys_);
  }

 private:
  bool valid(int node) const { return node >= 0 && node < g_.nodes_size(); }

  int child(int node, std::string_view name) const {
    if (!valid(node)) return -1;
    for (const auto& c : g_.nodes(node).children())
      if (c.local_name() == name && valid(c.node_id())) return c.node_id();
    return -1;
  }

  const std::string* attribute(int node, std::string_view name) const {
    if (!valid(node)) return nullptr;
    for (const auto& a : g_.nodes(node).attributes())
      if (a.name() == name) return &a.checkpoint_key();
    return nullptr;
  }

  // The children named "<prefix><i>" for i = 0, 1, ... in order, up to the first gap: a
  // list's items (prefix "") or tf-keras's "layer_with_weights-<k>".
  std::vector<int> numbered(int node, std::string_view prefix) const {
    std::vector<int> out;
    if (!valid(node)) return out;
    std::map<size_t, int> by_index;
    for (const auto& c : g_.nodes(node).children()) {
      const std::string& name = c.local_name();
      if (!valid(c.node_id()) || name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string digits = name.substr(prefix.size());
      if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos ||
          (digits.size() > 1 && digits[0] == '0'))
        continue;
      by_index.emplace(std::stoul(digits), c.node_id());
    }
    for (const auto& [i, id] : by_index) {
      if (i != out.size()) break;
      out.push_back(id);
    }
    return out;
  }
  std::vector<int> items(int node) const { return numbered(node, ""); }

  void value(int node, const std::string& path, const char* attr) {
    const std::string* key = attribute(node, attr);
    if (!key) return;
    keys_.emplace(path + suffix_of(attr), *key);
    if (std::string_view(attr) == kValue) var_paths_.emplace(node, path);
  }

  void visit(int node, const std::string& path, const io::Trackable& t) {
    if (!valid(node)) return;
    switch (t.kind()) {
      case io::Trackable::Kind::Layer: layer(node, path, 0); break;
      case io::Trackable::Kind::Optimizer: optimizers_.emplace_back(node, path); break;
      case io::Trackable::Kind::Variable: value(node, path, kValue); break;
      case io::Trackable::Kind::Iterator: value(node, path, kIterator); break;
      case io::Trackable::Kind::Map: {
        // A map of "layer_with_weights-<k>" stands for a model: the k-th layer with weights
        // in the graph's own shape when it has no child of that name (Keras 3).
        std::vector<int> subs;
        bool listed = false;
        for (const auto& [name, c] : t.children()) {
          int n = child(node, name);
          if (n < 0 && layer_index(name) >= 0) {
            if (!listed) subs = sublayers(node, 0), listed = true;
            if (size_t(layer_index(name)) < subs.size()) n = subs[size_t(layer_index(name))];
          }
          visit(n, path + "/" + name, c);
        }
        break;
      }
    }
  }

  // The sublayers of a layer object that hold weights, in order (see the file comment).
  std::vector<int> sublayers(int node, int depth) const {
    std::vector<int> out = numbered(node, "layer_with_weights-");
    if (!out.empty()) return out;
    int list = child(child(node, "_functional"), "_operations");
    if (list < 0) list = child(node, "_operations");
    if (list < 0) list = child(node, "_layers");
    for (int c : items(list))
      if (has_weights(c, depth + 1)) out.push_back(c);
    return out;
  }

  // Memoized, and false while a node is being looked at: a cycle has no weights, and a
  // graph that lists one node many times costs one look.
  bool has_weights(int node, int depth) const {
    auto [it, fresh] = has_weights_.emplace(node, false);
    if (!fresh || depth > 64) return it->second;
    bool found = false;
    for (const auto& c : g_.nodes(node).children())
      if (attribute(c.node_id(), kValue)) found = true;
    if (!found) found = !sublayers(node, depth).empty();
    has_weights_[node] = found;
    return found;
  }

  void layer(int node, const std::string& path, int depth) {
    // A layer reached twice (shared, or a malformed graph's cycle) is bound under its first
    // path, as io::Checkpoint binds a shared layer's weights once.
    if (depth > 64 || !layers_done_.insert(node).second) return;
    std::set<int> done;
    for (const auto& c : g_.nodes(node).children()) {
      if (!attribute(c.node_id(), kValue) || !done.insert(c.node_id()).second) continue;
      std::string name = c.local_name();
      if (name.size() > 1 && name[0] == '_') name = name.substr(1);
      value(c.node_id(), path + "/" + name, kValue);
    }
    const std::vector<int> subs = sublayers(node, depth);
    for (size_t k = 0; k < subs.size(); ++k) layer(subs[k], path + "/layer_with_weights-" + std::to_string(k), depth + 1);
  }

  void optimizer(int node, const std::string& path, const std::vector<std::string>& trainable) {
    for (const char* name : {"_iterations", "iter"}) value(child(node, name), path + "/iter", kValue);
    for (const char* name : {"_learning_rate", "learning_rate"}) value(child(node, name), path + "/learning_rate", kValue);
    std::vector<std::string> owners = trainable;
    const int listed = child(node, "_trainable_variables");
    if (listed >= 0) {
      owners.clear();
      for (int v : items(listed)) owners.push_back(var_paths_.count(v) ? var_paths_.at(v) : "");
    }
    for (const auto& c : g_.nodes(node).children()) {
      const std::string& name = c.local_name();
      const std::string slot = slot_of_list(name);
      if (slot.empty() || name == "_variables" || name == "_trainable_variables") continue;
      const std::vector<int> list = items(c.node_id());
      for (size_t i = 0; i < list.size() && i < owners.size(); ++i)
        if (!owners[i].empty()) value(list[i], owners[i] + kSlotMarker + path + "/" + slot, kValue);
    }
    // Legacy optimizers (tf_keras.optimizers.legacy, TF1's): slot variables by owner.
    static const std::map<std::string, std::string> legacy = {{"m", "momentum"}, {"v", "velocity"},
                                                             {"vhat", "velocity_hat"}};
    for (const auto& s : g_.nodes(node).slot_variables()) {
      auto owner = var_paths_.find(s.original_variable_node_id());
      if (owner == var_paths_.end()) continue;
      auto renamed = legacy.find(s.slot_name());
      const std::string slot = renamed == legacy.end() ? s.slot_name() : renamed->second;
      value(s.slot_variable_node_id(), owner->second + kSlotMarker + path + "/" + slot, kValue);
    }
  }

  const Graph& g_;
  std::map<std::string, std::string> keys_;  // ours -> TensorFlow's
  std::unordered_map<int, std::string> var_paths_;
  std::vector<std::pair<int, std::string>> optimizers_;
  mutable std::unordered_map<int, bool> has_weights_;
  std::set<int> layers_done_;
};

class TfSource : public io::CheckpointSource {
 public:
  TfSource(const std::string& prefix, const io::Trackable::Map& objects,
           const std::vector<io::CheckpointBinding>& bindings)
      : reader_(prefix) {
    for (const CheckpointEntry& e : reader_.entries())
      if (e.key != kObjectGraphKey) file_keys_.push_back(e.key);
    tensorflow::TrackableObjectGraph g;
    if (reader_.object_graph(&g)) {
      keys_ = map_object_graph(g, objects, bindings);
    } else {
      for (const std::string& k : file_keys_) keys_.emplace(k, k);  // TF1 names: as written
    }
  }
  std::vector<std::string> file_keys() const override { return file_keys_; }
  std::vector<std::string> keys() const override {
    std::vector<std::string> out;
    for (const auto& [ours, theirs] : keys_)
      if (reader_.has(theirs)) out.push_back(ours);
    return out;
  }
  std::string find(const std::string& key) const override {
    auto it = keys_.find(key);
    return it != keys_.end() && reader_.has(it->second) ? it->second : "";
  }
  DType dtype(const std::string& file_key) const override {
    const int t = reader_.entry(file_key).tf_dtype;
    const std::optional<DType> d = dtype_from_tf(t);
    DF_CHECK(d.has_value(), "[tf::checkpoint] ", checkpoint_index_path(reader_.prefix()), ": '", file_key,
             "' has dtype ", tf_dtype_name(t), ", which deepflow does not restore");
    return *d;
  }
  Shape shape(const std::string& file_key) const override { return Shape(reader_.entry(file_key).shape); }
  Tensor read(const std::string& file_key) const override { return reader_.read(file_key); }

 private:
  CheckpointReader reader_;
  std::vector<std::string> file_keys_;
  std::map<std::string, std::string> keys_;
};

// --- writing ---

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t slash; (slash = path.find('/', start)) != std::string::npos; start = slash + 1)
    out.push_back(path.substr(start, slash - start));
  out.push_back(path.substr(start));
  return out;
}

std::vector<std::string> join(std::vector<std::string> a, std::initializer_list<std::string> b) {
  a.insert(a.end(), b);
  return a;
}

// Keras 3's names for the same layers: a Sequential's layers are the items of
// "_functional/_operations" after its InputLayer, and the kernels of Dense, Conv and
// Embedding sit in "_kernel" / "_embeddings".
void add_keras3_aliases(ObjectGraphBuilder& b, const keras::Layer& l, const std::vector<std::string>& path) {
  for (const char* weight : {"kernel", "embeddings"})
    if (b.has(join(path, {weight}))) b.add_alias(path, std::string("_") + weight, join(path, {weight}));
  int k = 0;
  for (size_t j = 0; j < l.layers().size(); ++j) {
    const keras::Layer& s = *l.layers()[j];
    if (s.weights().empty()) continue;
    const std::vector<std::string> sub = join(path, {"layer_with_weights-" + std::to_string(k++)});
    if (!b.has(sub)) continue;  // a shared layer, saved under its first path
    if (dynamic_cast<const keras::Sequential*>(&l))
      b.add_alias(join(path, {"_functional", "_operations"}), std::to_string(j + 1), sub);
    add_keras3_aliases(b, s, sub);
  }
}

void optimizer_paths(const io::Trackable& t, const std::string& path, std::set<std::string>* out) {
  if (t.kind() == io::Trackable::Kind::Optimizer) out->insert(path);
  if (t.kind() == io::Trackable::Kind::Map)
    for (const auto& [name, c] : t.children()) optimizer_paths(c, path.empty() ? name : path + "/" + name, out);
}

void write_tf(const std::string& prefix, const io::Trackable::Map& objects,
              const std::vector<io::CheckpointBinding>& bindings) {
  std::set<std::string> optimizers;
  optimizer_paths(io::Trackable(objects), "", &optimizers);
  std::vector<std::string> order = trainable_order(objects, paths_by_variable(bindings));
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < order.size(); ++i) index.emplace(order[i], i);

  ObjectGraphBuilder b;
  CheckpointWriter w(prefix);
  for (const io::CheckpointBinding& v : bindings) {
    std::vector<std::string> at = split(v.path);
    const size_t marker = v.path.find(kSlotMarker);
    if (marker != std::string::npos) {
      // "<variable>/.OPTIMIZER_SLOT/<optimizer>/<slot>" -> "<optimizer>/_<slot>s/<i>".
      const std::string owner = v.path.substr(0, marker);
      const std::string rest = v.path.substr(marker + std::strlen(kSlotMarker));
      const size_t slash = rest.rfind('/');
      auto it = index.find(owner);
      if (it == index.end()) it = index.emplace(owner, order.size()).first, order.push_back(owner);
      at = join(split(rest.substr(0, slash)), {slot_list_of(rest.substr(slash + 1)), std::to_string(it->second)});
    } else if (at.size() >= 2 && optimizers.count(v.path.substr(0, v.path.rfind('/')))) {
      if (at.back() == "iter") at.back() = "_iterations";
      else if (at.back() == "learning_rate") at.back() = "_learning_rate";
    }
    if (v.iterator) {
      b.add_attribute(at, kIterator, v.key, v.path);
      w.add(v.key, string_scalar(v.iterator->save()));
    } else {
      b.add_attribute(at, kValue, v.key, v.var.name());
      w.add(v.key, v.var.value());
    }
  }
  for (const auto& [name, t] : objects)
    if (t.kind() == io::Trackable::Kind::Layer && b.has({name})) add_keras3_aliases(b, *t.layer(), {name});
  w.add_object_graph(b.graph());
  w.finish();
}

}  // namespace

std::map<std::string, std::string> map_object_graph(const tensorflow::TrackableObjectGraph& graph,
                                                    const io::Trackable::Map& objects,
                                                    const std::vector<io::CheckpointBinding>& bindings) {
  return Mapper(graph).map(objects, bindings);
}

bool is_tf_checkpoint(const std::string& prefix) {
  const std::string index = checkpoint_index_path(prefix);
  FILE* f = std::fopen(index.c_str(), "rb");
  if (!f) return false;
  char tail[kTableFooterSize];
  const bool ok = std::fseek(f, -long(sizeof tail), SEEK_END) == 0 && std::fread(tail, 1, sizeof tail, f) == sizeof tail;
  std::fclose(f);
  return ok && has_table_magic(std::string_view(tail, sizeof tail));
}

void register_tf_checkpoint_format() {
  io::register_checkpoint_format(
      {.name = "TensorFlow",
       .accepts = is_tf_checkpoint,
       .open = [](const std::string& prefix, const io::Trackable::Map& objects,
                  const std::vector<io::CheckpointBinding>& bindings) -> std::unique_ptr<io::CheckpointSource> {
         return std::make_unique<TfSource>(prefix, objects, bindings);
       },
       .write = write_tf});
}

}  // namespace deepflow::tf
