// SPDX-License-Identifier: Apache-2.0
// Partitioning, the rendezvous, and the send/recv ops that cross devices.
#include "deepflow/graph/partition.h"

#include <map>

#include "deepflow/ops/kernel.h"

namespace deepflow {

// --- rendezvous ---

void Rendezvous::send(const std::string& key, Tensor value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    DF_CHECK(!table_.count(key), "[send] key '", key, "' was already sent in this run");
    table_.emplace(key, std::move(value));
  }
  cv_.notify_all();
}

Tensor Rendezvous::recv(const std::string& key) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return aborted_ || table_.count(key); });
  auto it = table_.find(key);
  if (it == table_.end()) fail("[recv] waiting for '", key, "', the run was aborted: ", reason_);
  // Each key has exactly one recv, so the entry can go (and its buffer with the consumer).
  Tensor t = std::move(it->second);
  table_.erase(it);
  return t;
}

void Rendezvous::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return;
    aborted_ = true;
    reason_ = reason;
  }
  cv_.notify_all();
}

bool Rendezvous::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

std::string Rendezvous::abort_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

namespace {
thread_local Rendezvous* t_rendezvous = nullptr;
}  // namespace

Rendezvous* current_rendezvous() { return t_rendezvous; }
RendezvousScope::RendezvousScope(Rendezvous* r) : prev_(t_rendezvous) { t_rendezvous = r; }
RendezvousScope::~RendezvousScope() { t_rendezvous = prev_; }

// --- send --- [value] -> (); attrs: key, send_device, recv_device. No input: a control edge.
// --- recv --- () -> dtype[shape] (nothing when control); waits for the key's value.
namespace {

void infer_send(const OpCall& c, TypeList&) {
  DF_CHECK(c.num_inputs() <= 1, "[send] takes 0 or 1 inputs, got ", c.num_inputs());
  DF_CHECK(!c.attr_string("key").empty(), "[send] needs a non-empty 'key'");
}

void infer_recv(const OpCall& c, TypeList& out) {
  DF_CHECK(!c.attr_string("key").empty(), "[recv] needs a non-empty 'key'");
  if (c.attr_bool("control")) return;
  Shape s;
  for (int64_t d : c.attr_ints("shape")) {
    DF_CHECK(d >= -1, "[recv] shape dims must be >= -1, got ", d);
    s.push_back(d);
  }
  out.push_back({c.attr_dtype("dtype"), s});
}

Rendezvous& require_rendezvous(const OpCall& c) {
  Rendezvous* r = current_rendezvous();
  DF_CHECK(r, "[", c.name(), "] runs only inside a partitioned graph run (key '", c.attr_string("key"), "')");
  return *r;
}

void run_send(const OpCall& c, TensorList&) {
  require_rendezvous(c).send(c.attr_string("key"), c.num_inputs() ? c.in(0) : Tensor());
}

void run_recv(const OpCall& c, TensorList& out) {
  Tensor t = require_rendezvous(c).recv(c.attr_string("key"));
  if (c.attr_bool("control")) return;
  DF_CHECK(t.defined() && t.dtype() == c.attr_dtype("dtype"), "[recv] key '", c.attr_string("key"), "' expected ",
           dtype_name(c.attr_dtype("dtype")), ", got ", t.defined() ? dtype_name(t.dtype()) : "nothing");
  out[0] = std::move(t);
}

}  // namespace

DF_DEFINE_OP(Send, {.num_inputs = -1,
                    .attrs = {AttrSpec::required_of("key", AttrKind::String), AttrSpec("send_device", ""),
                              AttrSpec("recv_device", "")},
                    .infer = infer_send, .non_differentiable = true, .stateful = true, .strings = true});
DF_DEFINE_OP(Recv, {.num_inputs = 0,
                    .attrs = {AttrSpec::required_of("key", AttrKind::String), AttrSpec("dtype", DType::Float32),
                              AttrSpec("shape", std::vector<int64_t>{}), AttrSpec("control", false),
                              AttrSpec("send_device", ""), AttrSpec("recv_device", "")},
                    .infer = infer_recv, .non_differentiable = true, .stateful = true, .view_output = true,
                    .strings = true});
DF_REGISTER_KERNEL(Send, {.run = run_send});
DF_REGISTER_KERNEL(Recv, {.run = run_recv});

// --- partition ---

PartitionedGraph partition(const Graph& g, const std::vector<int>& order, const std::vector<std::string>& device_of,
                           const std::function<bool(ValueRef)>& is_fed) {
  PartitionedGraph p;
  p.graph = std::make_shared<Graph>(g);
  Graph& pg = *p.graph;
  std::map<std::string, int> device_index;
  for (int id : order) {
    const std::string& d = device_of[size_t(id)];
    if (device_index.emplace(d, int(p.devices.size())).second) p.devices.push_back(d);
    pg.mutable_node(id).device = d;
  }
  std::vector<char> in_run(size_t(g.num_nodes()), 0);
  for (int id : order) in_run[size_t(id)] = 1;
  std::vector<int> added;
  // One pair per (value or control source, destination device), shared by its consumers there.
  std::map<std::tuple<int, int, std::string>, int> recv_of;
  auto add = [&](Node n) {
    int id = pg.add_node(std::move(n));
    added.push_back(id);
    return id;
  };
  auto make_pair_for = [&](int src_node, int src_index, const std::string& dst, bool control) {
    auto key_t = std::make_tuple(src_node, control ? -1 : src_index, dst);
    if (auto it = recv_of.find(key_t); it != recv_of.end()) return it->second;
    const std::string& src = device_of[size_t(src_node)];
    const std::string what = control ? "^" + g.node(src_node).name : g.value_name({src_node, src_index});
    const std::string key = what + ";" + src + "->" + dst;
    Node send;
    send.name = pg.unique_name("send/" + g.node(src_node).name);
    send.op = OpId::Send;
    send.attrs = {{"key", key}, {"send_device", src}, {"recv_device", dst}};
    if (control) send.control_inputs = {src_node};
    else send.inputs = {{src_node, src_index}};
    send.device = src;
    add(std::move(send));
    Node recv;
    recv.name = pg.unique_name("recv/" + g.node(src_node).name);
    recv.op = OpId::Recv;
    recv.attrs = {{"key", key}, {"send_device", src}, {"recv_device", dst}};
    if (control) {
      recv.attrs.set("control", true);
    } else {
      const TensorType& t = g.type({src_node, src_index});
      recv.attrs.set("dtype", t.dtype);
      recv.attrs.set("shape", t.shape.to_vector());
      recv.outputs = {t};
    }
    recv.device = dst;
    int id = add(std::move(recv));
    recv_of.emplace(key_t, id);
    ++p.num_pairs;
    return id;
  };
  for (int id : order) {
    const std::string dst = device_of[size_t(id)];
    // Copies: make_pair_for appends nodes, which may move pg's node storage.
    std::vector<ValueRef> inputs = pg.node(id).inputs;
    std::vector<int> controls = pg.node(id).control_inputs;
    for (ValueRef& v : inputs)
      if (!is_fed(v) && device_of[size_t(v.node)] != dst) v = {make_pair_for(v.node, v.index, dst, false), 0};
    // A control input outside the run (a fed placeholder) is already satisfied.
    std::erase_if(controls, [&](int c) { return !in_run[size_t(c)]; });
    for (int& c : controls)
      if (device_of[size_t(c)] != dst) c = make_pair_for(c, 0, dst, true);
    pg.mutable_node(id).inputs = std::move(inputs);
    pg.mutable_node(id).control_inputs = std::move(controls);
  }
  in_run.resize(size_t(pg.num_nodes()), 1);
  p.parts.resize(p.devices.size());
  for (int id : pg.topological_order())
    if (in_run[size_t(id)]) p.parts[size_t(device_index.at(pg.node(id).device))].push_back(id);
  return p;
}

}  // namespace deepflow
