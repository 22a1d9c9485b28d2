// SPDX-License-Identifier: Apache-2.0
#include "deepflow/graph/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "deepflow/graph/partition.h"
#include "deepflow/graph/placement.h"
#include "deepflow/graph/profiler.h"
#include "deepflow/graph/thread_pool.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

int64_t value_key(ValueRef v) { return (int64_t(v.node) << 20) | v.index; }

// A fetched value is never released: its use count starts out of reach.
constexpr int kPinned = std::numeric_limits<int>::max() / 2;

// Ops that cost next to nothing: they do not make a graph "wide" enough for threads.
bool is_trivial(OpId op) {
  return op == OpId::Const || op == OpId::Placeholder || op == OpId::ReadVariable || op == OpId::NoOp ||
         op == OpId::Send || op == OpId::Recv;
}

// Elementwise ops whose kernels read element i before writing element i (and nothing
// else of it), so the output may share the buffer of a same-shaped input.
bool is_elementwise_float(OpId op) {
  switch (op) {
    case OpId::Neg: case OpId::Abs: case OpId::Sign: case OpId::Exp: case OpId::Log: case OpId::Log1p:
    case OpId::Expm1: case OpId::Sqrt: case OpId::Rsqrt: case OpId::Square: case OpId::Sin: case OpId::Cos:
    case OpId::Tanh: case OpId::Sigmoid: case OpId::Relu: case OpId::Erf: case OpId::Floor: case OpId::Ceil:
    case OpId::Round: case OpId::Add: case OpId::Sub: case OpId::Mul: case OpId::Div: case OpId::Pow:
    case OpId::Maximum: case OpId::Minimum: case OpId::ReluGrad:
      return true;
    default:
      return false;
  }
}

// One node of a part, with everything the run loop needs precomputed.
struct Step {
  int node = -1;
  std::vector<int> in_slots;      // one per data input
  int out_base = 0;               // slot of output 0; outputs are consecutive
  int num_outputs = 0;
  std::vector<int> successors;    // steps waiting on this one (data or control)
  int num_preds = 0;              // distinct steps this one waits on
  int inplace_input = -1;         // input whose buffer the output may take
  Tensor constant;                // a Const node's value (a view made once): handed out without dispatch
  bool share_constant = false;    // not fetched: every run may hand out that same view
};

// The share of a run that one device executes.
struct Part {
  std::vector<Step> steps;        // topological order
  int num_slots = 0;
  std::vector<int> initial_uses;  // per slot: consumers (kPinned when fetched or unplanned)
  std::vector<std::pair<int, int>> feed_slots;   // (feed index, slot)
  std::vector<std::pair<int, int>> fetch_slots;  // (fetch index, slot)
  std::vector<int> roots;         // steps with no predecessor
  bool parallel = false;
};

}  // namespace

struct Executor::Plan {
  std::shared_ptr<const Graph> graph;     // as given
  std::shared_ptr<const Graph> run_graph; // graph, or its partitioned copy
  std::vector<ValueRef> feeds, fetches;
  std::vector<int> order;
  ExecutorOptions options;
  std::vector<std::string> devices;
  std::vector<Part> parts;                // one per device
  std::unique_ptr<Part> whole;            // unpartitioned, for runs under a GradientTape
  std::vector<int> fetch_from_feed;       // per fetch: the feed index it reads, or -1
};

namespace {

Part build_part(const Graph& g, const std::vector<int>& nodes, const std::vector<ValueRef>& feeds,
                const std::vector<ValueRef>& fetches, const ExecutorOptions& opt) {
  Part p;
  std::unordered_map<int64_t, int> feed_index, slot_of;
  for (size_t i = 0; i < feeds.size(); ++i) feed_index.emplace(value_key(feeds[i]), int(i));
  std::unordered_map<int, int> step_of;  // node id -> step
  std::vector<int> producer;             // slot -> step, -1 for feeds
  p.steps.reserve(nodes.size());
  for (int id : nodes) {
    const Node& n = g.node(id);
    Step s;
    s.node = id;
    // A model's weights are most of its nodes (43 of resnet18's 92): running each through
    // infer and kernel selection cost ~1 us apiece.
    if (n.op == OpId::Const)
      if (const AttrValue* v = n.attrs.find("value"); v && std::holds_alternative<Tensor>(*v)) {
        const Tensor& value = std::get<Tensor>(*v);
        s.constant = value.view(value.shape());  // what the Const kernel returns
      }
    for (const ValueRef& v : n.inputs) {
      const int64_t k = value_key(v);
      auto it = slot_of.find(k);
      if (it == slot_of.end()) {
        auto f = feed_index.find(k);
        DF_CHECK(f != feed_index.end(), "[Executor] internal: input '", g.value_name(v), "' of node '", n.name,
                 "' is neither fed nor produced earlier in its part");
        it = slot_of.emplace(k, p.num_slots++).first;
        producer.push_back(-1);
        p.feed_slots.emplace_back(f->second, it->second);
      }
      s.in_slots.push_back(it->second);
    }
    s.out_base = p.num_slots;
    s.num_outputs = int(n.outputs.size());
    for (int i = 0; i < s.num_outputs; ++i) {
      // A fed output keeps its feed's slot: consumers read the feed, not this node.
      if (!feed_index.count(value_key({id, i}))) slot_of.emplace(value_key({id, i}), p.num_slots);
      producer.push_back(int(p.steps.size()));
      ++p.num_slots;
    }
    step_of.emplace(id, int(p.steps.size()));
    p.steps.push_back(std::move(s));
  }
  p.initial_uses.assign(size_t(p.num_slots), 0);
  for (const Step& s : p.steps)
    for (int slot : s.in_slots) ++p.initial_uses[size_t(slot)];
  std::vector<char> fetched(size_t(p.num_slots), 0);
  for (size_t i = 0; i < fetches.size(); ++i) {
    const int64_t k = value_key(fetches[i]);
    if (feed_index.count(k) || !step_of.count(fetches[i].node)) continue;  // from the feed, or another part
    const int slot = slot_of.at(k);
    p.fetch_slots.emplace_back(int(i), slot);
    fetched[size_t(slot)] = 1;
  }
  // Tensors are immutable and consumers make their own outputs (identity makes a view),
  // so a constant used only inside the run need not be a new tensor each time. A fetched
  // one is: results of two runs must not share an identity (a tape watches by id).
  for (Step& s : p.steps) s.share_constant = s.constant.defined() && !fetched[size_t(s.out_base)];
  for (int slot = 0; slot < p.num_slots; ++slot)
    if (fetched[size_t(slot)] || !opt.free_at_last_use) p.initial_uses[size_t(slot)] = kPinned;

  // Dependencies: distinct producer steps of data inputs, plus control inputs.
  for (int si = 0; si < int(p.steps.size()); ++si) {
    Step& s = p.steps[size_t(si)];
    std::vector<int> preds;
    for (int slot : s.in_slots)
      if (producer[size_t(slot)] >= 0) preds.push_back(producer[size_t(slot)]);
    for (int c : g.node(s.node).control_inputs)
      if (auto it = step_of.find(c); it != step_of.end()) preds.push_back(it->second);
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    s.num_preds = int(preds.size());
    for (int pr : preds) p.steps[size_t(pr)].successors.push_back(si);
    if (preds.empty()) p.roots.push_back(si);
  }

  // In place: the input's only consumer is this step, it is produced in this run,
  // and dtype (and shape, where known) agree. Ownership is checked again at run time.
  if (opt.free_at_last_use && opt.reuse_in_place) {
    for (Step& s : p.steps) {
      const Node& n = g.node(s.node);
      if (!is_elementwise_float(n.op) || n.outputs.size() != 1 || !is_floating(n.outputs[0].dtype)) continue;
      for (int i = 0; i < int(s.in_slots.size()); ++i) {
        const int slot = s.in_slots[size_t(i)];
        if (producer[size_t(slot)] < 0 || p.initial_uses[size_t(slot)] != 1) continue;
        const TensorType& t = g.type(n.inputs[size_t(i)]);
        const Shape& o = n.outputs[0].shape;
        if (t.dtype != n.outputs[0].dtype) continue;
        if (t.shape.is_fully_defined() && o.is_fully_defined() && t.shape != o) continue;
        s.inplace_input = i;
        break;
      }
    }
  }

  // Width: how many compute nodes could run at once in the widest stage.
  if (opt.parallel && opt.inter_op_threads > 1) {
    std::vector<int> level(p.steps.size(), 0);
    std::unordered_map<int, int> per_level;
    int widest = 0;
    for (size_t si = 0; si < p.steps.size(); ++si) {
      const bool compute = !is_trivial(g.node(p.steps[si].node).op);
      if (compute) widest = std::max(widest, ++per_level[level[si]]);
      for (int succ : p.steps[si].successors)
        level[size_t(succ)] = std::max(level[size_t(succ)], level[si] + (compute ? 1 : 0));
    }
    p.parallel = widest >= std::max(opt.parallel_min_width, 1) && p.steps.size() > 1;
  }
  return p;
}

// The mutable state of one part during one run.
struct RunState {
  const Part* part = nullptr;
  const Graph* graph = nullptr;
  Rendezvous* rendezvous = nullptr;
  bool allow_inplace = true;
  std::vector<Tensor> slots;
  std::unique_ptr<std::atomic<int>[]> uses;

  // Parallel path only (guarded by mu).
  std::mutex mu;
  std::condition_variable cv;
  std::deque<int> ready;
  std::vector<int> pending;
  int remaining = 0, in_flight = 0, helpers = 0;
  bool failed = false;
  std::string error;
};

// The output may take input k's buffer when nothing else can see it.
bool owns_buffer(const Tensor& t) {
  const TensorImpl* impl = t.impl();
  return impl && impl->storage && t.impl_ptr().use_count() == 1 && impl->storage.use_count() == 1 &&
         impl->offset == 0 && impl->storage->nbytes() >= t.nbytes();
}

// Runs one node on its gathered inputs into `outs`; ins is left empty (so a dying
// input's buffer is free again once the node is done with it).
void compute_step(const Step& s, const Node& n, TensorList& ins, bool allow_inplace, bool share_constants,
                  TensorList& outs) {
  const bool profiling = profiler::active();
  const auto t0 = profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  try {
    bool done = false;
    if (s.constant.defined()) {
      outs.push_back(s.share_constant && share_constants ? s.constant : s.constant.view(s.constant.shape()));
      done = true;
    } else if (s.inplace_input >= 0 && allow_inplace && owns_buffer(ins[size_t(s.inplace_input)])) {
      const Tensor& x = ins[size_t(s.inplace_input)];
      TypeList types = infer_types(n.op, ins, n.attrs);
      if (types.size() == 1 && types[0].dtype == x.dtype() && types[0].shape == x.shape()) {
        const OpDef& def = n.def();
        OpCall call{&def, ins, &n.attrs, {}};
        auto alias = std::make_shared<TensorImpl>();
        alias->storage = x.impl()->storage;
        alias->shape = x.shape();
        alias->dtype = x.dtype();
        alias->id = TensorImpl::next_id();
        outs.emplace_back(std::move(alias));
        select_kernel(call).run(call, outs);
        done = true;
      }
    }
    if (!done) outs = dispatch(n.op, ins, n.attrs);
  } catch (const std::exception& e) {
    ins.clear();
    fail("[graph] node '", n.name, "': ", e.what());
  }
  ins.clear();
  if (profiling)
    profiler::record({n.name, n.def().name,
                      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count()});
}

// The parallel path: several threads may read the slots of one run at once.
void run_step(RunState& st, int si) {
  const Step& s = st.part->steps[size_t(si)];
  const Node& n = st.graph->node(s.node);
  TensorList ins;
  ins.reserve(s.in_slots.size());
  for (int slot : s.in_slots) ins.push_back(st.slots[size_t(slot)]);
  // Copy every input before giving up any: a node may read one value twice (x * x).
  for (int slot : s.in_slots)
    if (st.uses[size_t(slot)].fetch_sub(1, std::memory_order_acq_rel) == 1) st.slots[size_t(slot)] = Tensor();
  TensorList outs;
  compute_step(s, n, ins, st.allow_inplace, /*share_constants=*/true, outs);
  for (int i = 0; i < s.num_outputs && i < int(outs.size()); ++i) {
    const int slot = s.out_base + i;
    if (st.part->initial_uses[size_t(slot)] > 0) st.slots[size_t(slot)] = std::move(outs[size_t(i)]);
  }
}

// The scratch of one sequential run. Frames are reused by later runs on the same
// thread, so running a small graph allocates nothing beyond what its kernels do.
struct Frame {
  std::vector<Tensor> slots;
  std::vector<int> uses;  // one thread: plain counts
  TensorList ins, outs;
};

// Frames free on this thread. A kernel that runs another graph (cond, while_loop, a
// called function) takes a second frame while the first is in use.
thread_local std::vector<std::unique_ptr<Frame>> t_free_frames;
constexpr size_t kMaxFreeFrames = 8;

class FrameLease {
 public:
  FrameLease() {
    if (t_free_frames.empty()) {
      frame_ = std::make_unique<Frame>();
    } else {
      frame_ = std::move(t_free_frames.back());
      t_free_frames.pop_back();
    }
  }
  ~FrameLease() {
    // Values (fetched ones, those of a failed run) go now; the capacity stays.
    for (Tensor& t : frame_->slots) t = Tensor();
    frame_->ins.clear();
    frame_->outs.clear();
    if (t_free_frames.size() < kMaxFreeFrames) t_free_frames.push_back(std::move(frame_));
  }
  FrameLease(const FrameLease&) = delete;
  FrameLease& operator=(const FrameLease&) = delete;
  Frame& operator*() const { return *frame_; }

 private:
  std::unique_ptr<Frame> frame_;
};

// Runs a part in order on this thread. An input at its last use is moved, not copied,
// so its buffer is owned by the node alone (what in-place reuse checks).
void run_frame(Frame& f, const Part& part, const Graph& g, const TensorList& feed_values, bool taped) {
  f.slots.resize(size_t(part.num_slots));
  f.uses.assign(part.initial_uses.begin(), part.initial_uses.end());
  for (const auto& [fi, slot] : part.feed_slots) f.slots[size_t(slot)] = feed_values[size_t(fi)];
  RendezvousScope rdv(nullptr);
  for (const Step& s : part.steps) {
    for (int slot : s.in_slots) {
      if (--f.uses[size_t(slot)] == 0) f.ins.push_back(std::move(f.slots[size_t(slot)]));
      else f.ins.push_back(f.slots[size_t(slot)]);
    }
    // Under a tape: no buffer is taken over, and every constant is a tensor of its own.
    compute_step(s, g.node(s.node), f.ins, !taped, !taped, f.outs);
    for (int i = 0; i < s.num_outputs && i < int(f.outs.size()); ++i) {
      const int slot = s.out_base + i;
      if (part.initial_uses[size_t(slot)] > 0) f.slots[size_t(slot)] = std::move(f.outs[size_t(i)]);
    }
    f.outs.clear();
  }
}

void init_state(RunState& st, const Part& part, const Graph& g, const TensorList& feed_values) {
  st.part = &part;
  st.graph = &g;
  st.slots.assign(size_t(part.num_slots), Tensor());
  st.uses = std::make_unique<std::atomic<int>[]>(size_t(part.num_slots));
  for (int i = 0; i < part.num_slots; ++i) st.uses[size_t(i)].store(part.initial_uses[size_t(i)]);
  for (const auto& [f, slot] : part.feed_slots) st.slots[size_t(slot)] = feed_values[size_t(f)];
}

void run_sequential(RunState& st) {
  RendezvousScope rdv(st.rendezvous);
  for (int si = 0; si < int(st.part->steps.size()); ++si) run_step(st, si);
}

// Takes ready steps until none is left (a helper) or the run is over (the caller).
void drain(const std::shared_ptr<RunState>& sp, bool caller, ThreadPool* pool) {
  RunState& st = *sp;
  RendezvousScope rdv(st.rendezvous);
  std::unique_lock<std::mutex> lock(st.mu);
  for (;;) {
    if (caller) {
      st.cv.wait(lock, [&] {
        return (!st.failed && !st.ready.empty()) || st.remaining == 0 || (st.failed && st.in_flight == 0);
      });
      if (st.remaining == 0 || st.failed) return;
    } else if (st.failed || st.ready.empty()) {
      --st.helpers;
      return;
    }
    const int si = st.ready.front();
    st.ready.pop_front();
    ++st.in_flight;
    lock.unlock();
    std::string error;
    try {
      run_step(st, si);
    } catch (const std::exception& e) {
      error = e.what();
    }
    lock.lock();
    --st.in_flight;
    --st.remaining;
    if (!error.empty()) {
      if (!st.failed) {
        st.failed = true;
        st.error = error;
        if (st.rendezvous) st.rendezvous->abort(error);
      }
      st.cv.notify_all();
      continue;
    }
    if (st.failed) {
      st.cv.notify_all();
      continue;
    }
    for (int succ : st.part->steps[size_t(si)].successors)
      if (--st.pending[size_t(succ)] == 0) st.ready.push_back(succ);
    // This thread takes one ready step itself; helpers take the others.
    for (int extra = int(st.ready.size()) - 1; extra > 0 && st.helpers < pool->size(); --extra) {
      ++st.helpers;
      pool->submit([sp, pool] { drain(sp, false, pool); });
    }
    if (!caller || st.remaining == 0) st.cv.notify_all();
  }
}

void run_parallel(const std::shared_ptr<RunState>& sp, ThreadPool& pool) {
  RunState& st = *sp;
  const Part& part = *st.part;
  st.pending.resize(part.steps.size());
  for (size_t i = 0; i < part.steps.size(); ++i) st.pending[i] = part.steps[i].num_preds;
  st.remaining = int(part.steps.size());
  st.ready.assign(part.roots.begin(), part.roots.end());
  {
    std::lock_guard<std::mutex> lock(st.mu);
    for (int extra = int(st.ready.size()) - 1; extra > 0 && st.helpers < pool.size(); --extra) {
      ++st.helpers;
      pool.submit([sp, p = &pool] { drain(sp, false, p); });
    }
  }
  drain(sp, true, &pool);
  if (st.failed) throw Error(st.error);
}

// Runs one part to the end on this thread (helped by the pool on the parallel path).
void run_part(RunState& st, const std::shared_ptr<RunState>& sp, const ExecutorOptions& opt) {
  if (st.part->parallel) {
    run_parallel(sp, ThreadPool::shared(opt.inter_op_threads));
    return;
  }
  try {
    run_sequential(st);
  } catch (const std::exception& e) {
    if (st.rendezvous) st.rendezvous->abort(e.what());
    throw;
  }
}

}  // namespace

std::vector<int> prune(const Graph& g, const Feeds& feeds, const std::vector<ValueRef>& fetches,
                       const std::vector<int>& targets) {
  std::unordered_map<int64_t, bool> fed;
  for (const auto& [v, t] : feeds) fed[value_key(v)] = true;
  // A node whose every output is fed (a fed placeholder) is replaced by its feeds:
  // control edges on it are satisfied without running it.
  std::unordered_map<int, int> fed_outputs;
  for (const auto& [v, t] : feeds) ++fed_outputs[v.node];
  auto replaced = [&](int id) {
    auto it = fed_outputs.find(id);
    return it != fed_outputs.end() && it->second >= int(g.node(id).outputs.size());
  };
  std::vector<char> needed(size_t(g.num_nodes()), 0);
  std::vector<int> stack;
  auto need = [&](int id) {
    if (!needed[size_t(id)]) {
      needed[size_t(id)] = 1;
      stack.push_back(id);
    }
  };
  for (const ValueRef& v : fetches)
    if (!fed.count(value_key(v))) need(v.node);
  for (int t : targets) need(t);
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    const Node& n = g.node(id);
    for (const ValueRef& v : n.inputs)
      if (!fed.count(value_key(v))) need(v.node);
    for (int c : n.control_inputs)
      if (!replaced(c)) need(c);
  }
  std::vector<int> order;
  for (int id : g.topological_order())
    if (needed[size_t(id)]) order.push_back(id);
  return order;
}

Executor::Executor(std::shared_ptr<const Graph> graph, std::vector<ValueRef> feeds, std::vector<ValueRef> fetches,
                   std::vector<int> targets, ExecutorOptions options)
    : plan_(std::make_unique<Plan>()) {
  DF_CHECK(graph, "[Executor] needs a graph");
  Plan& p = *plan_;
  Feeds keys;
  for (const ValueRef& v : feeds) keys.emplace_back(v, Tensor());
  p.order = prune(*graph, keys, fetches, targets);
  p.graph = std::move(graph);
  p.feeds = std::move(feeds);
  p.fetches = std::move(fetches);
  p.options = options;
  std::unordered_map<int64_t, int> feed_index;
  for (size_t i = 0; i < p.feeds.size(); ++i) feed_index.emplace(value_key(p.feeds[i]), int(i));
  for (const ValueRef& v : p.fetches) {
    auto it = feed_index.find(value_key(v));
    p.fetch_from_feed.push_back(it == feed_index.end() ? -1 : it->second);
  }

  // Placement only matters when some node asks for a device.
  bool any_device = false;
  for (int id : p.order) any_device |= !p.graph->node(id).device.empty();
  std::vector<std::string> device_of;
  if (any_device) device_of = place_nodes(*p.graph, p.order, options.num_devices, options.default_device);
  bool split = false;
  for (int id : p.order) split |= any_device && device_of[size_t(id)] != device_of[size_t(p.order[0])];
  if (!split) {
    p.run_graph = p.graph;
    p.devices = {p.order.empty() || !any_device ? options.default_device : device_of[size_t(p.order[0])]};
    p.parts.push_back(build_part(*p.graph, p.order, p.feeds, p.fetches, options));
    return;
  }
  PartitionedGraph pg =
      partition(*p.graph, p.order, device_of, [&](ValueRef v) { return feed_index.count(value_key(v)) > 0; });
  p.run_graph = pg.graph;
  p.devices = pg.devices;
  for (const std::vector<int>& nodes : pg.parts)
    p.parts.push_back(build_part(*p.run_graph, nodes, p.feeds, p.fetches, options));
  p.whole = std::make_unique<Part>(build_part(*p.graph, p.order, p.feeds, p.fetches, options));
}
Executor::~Executor() = default;
Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;

const std::vector<int>& Executor::schedule() const { return plan_->order; }
std::vector<std::string> Executor::devices() const { return plan_->devices; }
const Graph& Executor::executed_graph() const { return *plan_->run_graph; }
bool Executor::runs_parallel() const {
  for (const Part& part : plan_->parts)
    if (part.parallel) return true;
  return false;
}

TensorList Executor::run(const TensorList& feed_values) const {
  const Plan& p = *plan_;
  const Graph& g = *p.graph;
  DF_CHECK(feed_values.size() == p.feeds.size(), "[Session.run] ", p.feeds.size(), " feeds expected, got ",
           feed_values.size());
  for (size_t i = 0; i < feed_values.size(); ++i) {
    const ValueRef v = p.feeds[i];
    const Tensor& t = feed_values[i];
    const TensorType& type = g.type(v);
    DF_CHECK(t.defined() && !t.is_symbolic(), "[Session.run] feed for '", g.value_name(v), "' is not a concrete tensor");
    DF_CHECK(t.dtype() == type.dtype && t.shape().compatible_with(type.shape), "[Session.run] feed for '",
             g.value_name(v), "' is ", dtype_name(t.dtype()), t.shape(), ", expected ", dtype_name(type.dtype),
             type.shape);
  }
  BuildScopeGuard eager(nullptr);  // nodes run eagerly even when called while a graph is built
  TensorList result(p.fetches.size());
  for (size_t i = 0; i < p.fetches.size(); ++i)
    if (p.fetch_from_feed[i] >= 0) result[i] = feed_values[size_t(p.fetch_from_feed[i])];
  auto collect = [&](const Part& part, RunState& st) {
    for (const auto& [f, slot] : part.fetch_slots) result[size_t(f)] = st.slots[size_t(slot)];  // a value may be fetched twice
  };

  // A recording tape lives on this thread: run here, in order, on the unsplit graph.
  const bool taped = detail::g_active_tapes > 0;
  if (taped || p.parts.size() == 1) {
    const Part& part = taped && p.whole ? *p.whole : p.parts[0];
    if (taped || !part.parallel) {
      FrameLease lease;
      run_frame(*lease, part, g, feed_values, taped);
      for (const auto& [f, slot] : part.fetch_slots) result[size_t(f)] = (*lease).slots[size_t(slot)];
      return result;
    }
    auto sp = std::make_shared<RunState>();
    init_state(*sp, part, g, feed_values);
    run_parallel(sp, ThreadPool::shared(p.options.inter_op_threads));
    collect(part, *sp);
    return result;
  }

  // Partitioned: part 0 here, the others on their own threads, joined by a rendezvous.
  Rendezvous rendezvous;
  const Graph& rg = *p.run_graph;
  std::vector<std::shared_ptr<RunState>> states;
  for (const Part& part : p.parts) {
    auto sp = std::make_shared<RunState>();
    init_state(*sp, part, rg, feed_values);
    sp->rendezvous = &rendezvous;
    states.push_back(std::move(sp));
  }
  std::vector<std::string> errors(p.parts.size());
  auto run_one = [&](size_t i) {
    try {
      run_part(*states[i], states[i], p.options);
    } catch (const std::exception& e) {
      errors[i] = e.what();
      rendezvous.abort(e.what());
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < p.parts.size(); ++i) threads.emplace_back(run_one, i);
  run_one(0);
  for (std::thread& t : threads) t.join();
  // The first failure is the cause; the others are recvs it aborted.
  if (rendezvous.aborted()) throw Error(rendezvous.abort_reason());
  for (size_t i = 0; i < p.parts.size(); ++i) collect(p.parts[i], *states[i]);
  return result;
}

TensorList execute(const Graph& g, const Feeds& feeds, const std::vector<ValueRef>& fetches,
                   const std::vector<int>& targets) {
  std::vector<ValueRef> keys;
  TensorList vals;
  for (const auto& [v, t] : feeds) {
    keys.push_back(v);
    vals.push_back(t);
  }
  // A non-owning pointer: the caller's graph outlives this call.
  Executor ex(std::shared_ptr<const Graph>(&g, [](const Graph*) {}), keys, fetches, targets);
  return ex.run(vals);
}

TensorList call_graph(const Graph& g, const TensorList& inputs) {
  DF_CHECK(inputs.size() == g.inputs.size(), "[call] the function takes ", g.inputs.size(), " inputs, got ",
           inputs.size());
  Feeds feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds.emplace_back(ValueRef{g.inputs[i], 0}, inputs[i]);
  return execute(g, feeds, g.outputs);
}

}  // namespace deepflow
