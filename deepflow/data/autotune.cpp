// SPDX-License-Identifier: Apache-2.0
// The autotune model and its hill-climbing optimizer (autotune.h explains both).
#include "deepflow/data/autotune.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace deepflow::data::autotune {

int64_t cpu_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t element_bytes(const Element& e) {
  int64_t n = 0;
  for (const Tensor& t : e.tensors()) {
    if (!t.defined()) continue;
    if (t.dtype() == DType::String) {
      const std::string* s = t.data<std::string>();
      for (int64_t i = 0; i < t.size(); ++i) n += int64_t(s[i].size());
    } else {
      n += int64_t(t.nbytes());
    }
  }
  return n;
}

void Parameter::set(int64_t v) {
  v = std::clamp(v, min_, max_);
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    value_.store(v, std::memory_order_relaxed);
  }
  state_->cv.notify_all();
}

// --- nodes and clocks ---

namespace {
// The node whose clock runs on this thread, and since when.
struct Clock {
  Node* node = nullptr;
  int64_t since = 0;
};
thread_local Clock tl_clock;

// A worker's CPU-time sampler: clock_gettime(CLOCK_THREAD_CPUTIME_ID) costs about
// half a microsecond, too much per element for cheap pipelines, so it is read at
// most once per millisecond and the busy time in between is summed.
struct CpuSampler {
  uint64_t node = 0;  // Node::id_: an address could be reused by a later node
  int64_t last_wall = 0, last_cpu = 0, busy = 0;
};
thread_local CpuSampler tl_sampler;

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

Node::Node(std::string name, std::shared_ptr<Node> parent)
    : name_(std::move(name)), group_(name_), parent_(std::move(parent)) {
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id++;
}

Node::~Node() {
  if (!parent_) return;
  int64_t subtree = processing_ns();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [g, r] : retired_) subtree += r.subtree_ns;
  }
  std::string group;
  {
    std::lock_guard<std::mutex> lock(mu_);
    group = group_;
  }
  parent_->retire(group, elements(), subtree);
}

void Node::retire(const std::string& group, int64_t elements, int64_t subtree_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  Retired& r = retired_[group];
  r.elements += elements;
  r.subtree_ns += subtree_ns;
}

void Node::set_group(std::string group) {
  std::lock_guard<std::mutex> lock(mu_);
  group_ = std::move(group);
}

void Node::make_async(std::shared_ptr<Parameter> parallelism, int64_t fixed_parallelism,
                      std::shared_ptr<Parameter> buffer, int64_t buffer_per_worker, bool serial_input) {
  const bool tunable = (parallelism && parallelism->min() < parallelism->max()) || (buffer && buffer->min() < buffer->max());
  {
    std::lock_guard<std::mutex> lock(mu_);
    kind_ = Kind::Async;
    parallelism_ = std::move(parallelism);
    fixed_parallelism_ = std::max<int64_t>(1, fixed_parallelism);
    buffer_ = std::move(buffer);
    buffer_per_worker_ = std::max<int64_t>(1, buffer_per_worker);
    serial_input_ = serial_input;
  }
  if (tunable && model_) model_->on_tunable();
}

void Node::set_parallel_group(std::string group) {
  std::lock_guard<std::mutex> lock(mu_);
  parallel_group_ = std::move(group);
}

void Node::record_output(const Element& e) {
  elements_.fetch_add(1, std::memory_order_relaxed);
  bytes_.fetch_add(element_bytes(e), std::memory_order_relaxed);
}

void Node::record_work(int64_t busy_ns) {
  CpuSampler& s = tl_sampler;
  const int64_t now = now_ns();
  if (s.node != id_) {
    s = {id_, now, thread_cpu_ns(), 0};
    return;
  }
  s.busy += busy_ns;
  if (now - s.last_wall < 1000000) return;
  const int64_t cpu = thread_cpu_ns();
  add_cpu_sample(cpu - s.last_cpu, s.busy);
  s = {id_, now, cpu, 0};
}

std::vector<std::shared_ptr<Node>> Node::children() const {
  std::vector<std::shared_ptr<Node>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : children_)
    if (auto c = w.lock()) out.push_back(std::move(c));
  return out;
}

std::shared_ptr<Parameter> Node::parallelism() const {
  std::lock_guard<std::mutex> lock(mu_);
  return parallelism_;
}

std::shared_ptr<Parameter> Node::buffer() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buffer_;
}

Timer::Timer(Node* node, bool worker)
    : node_(node), prev_(tl_clock.node), consumer_(node && !worker && !node->parent_) {
  if (!node_) return;
  const int64_t now = now_ns();
  if (prev_) prev_->add_processing(now - tl_clock.since);
  if (consumer_) {
    // The root: the time since its last get_next() returned is the consumer's.
    const int64_t last = node_->last_return_ns_.load(std::memory_order_relaxed);
    if (last > 0) node_->add_consumer_time(now - last);
  }
  tl_clock = {node_, now};
}

Timer::~Timer() {
  if (!node_) return;
  const int64_t now = now_ns();
  if (tl_clock.node == node_) node_->add_processing(now - tl_clock.since);
  if (consumer_) node_->last_return_ns_.store(now, std::memory_order_relaxed);
  tl_clock = {prev_, now};
}

Idle::Idle() : node_(tl_clock.node) {
  if (node_) node_->add_processing(now_ns() - tl_clock.since);
  tl_clock.node = nullptr;
}

Idle::~Idle() { tl_clock = {node_, node_ ? now_ns() : 0}; }

// --- the model ---

namespace {
int64_t default_ram_budget() {
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return int64_t(1) << 30;
  return int64_t(pages) * page / 2;  // kRamBudgetShare = 0.5, as tf.data
}
}  // namespace

Model::Model(const Options& options)
    : cpu_budget_(options.autotune.cpu_budget > 0 ? options.autotune.cpu_budget : cpu_cores()),
      ram_budget_(options.autotune.ram_budget > 0 ? options.autotune.ram_budget : default_ram_budget()) {}

Model::~Model() { stop(); }

std::shared_ptr<Node> Model::add_node(const std::string& prefix, Node* parent) {
  const size_t slash = prefix.rfind('/');
  std::string name = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
  auto node = std::make_shared<Node>(std::move(name), parent ? parent->shared_from_this() : nullptr);
  node->model_ = this;
  if (parent) {
    std::lock_guard<std::mutex> lock(parent->mu_);
    std::erase_if(parent->children_, [](const std::weak_ptr<Node>& w) { return w.expired(); });
    parent->children_.push_back(node);
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(roots_, [](const std::weak_ptr<Node>& w) { return w.expired(); });
    roots_.push_back(node);
  }
  return node;
}

std::shared_ptr<Node> Model::root() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : roots_)
    if (auto r = w.lock()) return r;
  return nullptr;
}

void Model::start() {
  std::lock_guard<std::mutex> lock(mu_);
  wanted_ = true;
  spawn_locked();
}

void Model::on_tunable() {
  std::lock_guard<std::mutex> lock(mu_);
  tunable_ = true;
  spawn_locked();
}

void Model::spawn_locked() {
  if (!wanted_ || !tunable_ || thread_.joinable() || stop_) return;
  thread_ = std::thread([this] {
    // The period starts short so a fresh pipeline is tuned within its first
    // milliseconds (a cheap map that started with threads goes inline before it
    // has cost much), and doubles so a long run costs next to nothing.
    std::chrono::microseconds period(1000);
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
      lock.unlock();
      const int64_t before = runs_.load();
      optimize();
      lock.lock();
      // Not before the pipeline has produced something to measure.
      if (runs_.load() > before) period = std::min<std::chrono::microseconds>(period * 2, std::chrono::seconds(1));
    }
  });
}

void Model::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

// --- the optimizer ---

namespace {
// A frozen copy of the tree's statistics, so a hill climb can evaluate many knob
// settings without touching the live atomics.
struct Snap {
  bool async = false, serial_input = false;
  double s = 0;          // self time per own element (ns), hand-offs excluded
  double h_c = 0, h_w = 0;  // hand-off cost per element when async: consumer's, workers' (ns)
  double f = 1;          // share of a core the threads working in this subtree use
  double bytes_pe = 0;   // bytes per own element
  int par = -1, buf = -1;  // knob indexes, or -1: fixed
  int64_t fixed_par = 1, buffer_per_worker = 1;
  struct Group {
    double ratio = 0;        // group elements per own element
    int rep = -1;            // the snap of its live representative, or -1
    double retired_pe = 0;   // else: subtree time per element of its retired members
    bool parallel = false;   // read by the workers in parallel (interleave's cycle)
  };
  std::vector<Group> groups;
};

struct Knob {
  std::shared_ptr<Parameter> param;
  int snap;
};
}  // namespace

// The tree frozen into snaps (parents before children), its knobs, and the model's
// formulas evaluated on a trial vector of knob values (autotune.h has them).
class Plan {
 public:
  explicit Plan(const Node& root) {
    build(root, 1.0);
    consumer_pe_ = root.elements() > 0 ? double(root.consumer_ns_.load()) / double(root.elements()) : 0;
  }
  bool empty() const { return snaps_.empty(); }
  double consumer_pe() const { return consumer_pe_; }
  std::vector<Knob>& knobs() { return knobs_; }

  double output_time(const std::vector<int64_t>& v) const { return ot(0, consumer_pe_, v); }
  // CPU work per root element (ns of a core).
  double cpu_work() const { return work(0); }
  double cpu_threads(const std::vector<int64_t>& v) const {
    double t = 0;
    for (const Snap& n : snaps_)
      if (n.async && !runs_inline(n, v)) t += double(parallelism(n, v)) * n.f;
    return t;
  }
  double buffered_bytes(const std::vector<int64_t>& v) const {
    double b = 0;
    for (const Snap& n : snaps_)
      if (n.async) b += double(buffer(n, v)) * n.bytes_pe;
    return b;
  }

 private:
  int64_t parallelism(const Snap& n, const std::vector<int64_t>& v) const {
    return n.par >= 0 ? v[size_t(n.par)] : n.fixed_par;
  }
  int64_t buffer(const Snap& n, const std::vector<int64_t>& v) const {
    return n.buf >= 0 ? v[size_t(n.buf)] : n.buffer_per_worker * parallelism(n, v);
  }
  // A tuned knob at 0: the node works on its consumer's thread, as a sync one.
  bool runs_inline(const Snap& n, const std::vector<int64_t>& v) const {
    return (n.par >= 0 && v[size_t(n.par)] == 0) || (n.buf >= 0 && v[size_t(n.buf)] == 0);
  }

  // M/M/1/K: the chance the consumer finds the buffer empty, times the producer time.
  static double wait_time(double producer, double consumer, int64_t k) {
    if (producer <= 0) return 0;
    if (consumer <= 0) return producer;
    const double x = consumer / producer;
    if (std::abs(x - 1) < 1e-9) return producer / double(k + 1);
    const double p_empty = (1 - x) / (1 - std::pow(x, double(k + 1)));
    return producer * std::clamp(p_empty, 0.0, 1.0);
  }

  double ot(int i, double c, const std::vector<int64_t>& v) const {
    const Snap& n = snaps_[size_t(i)];
    const bool async = n.async && !runs_inline(n, v);
    const double p = async ? double(parallelism(n, v)) : 1;
    double in_par = 0, in_other = 0;
    for (const Snap::Group& g : n.groups) {
      if (g.ratio <= 0) continue;
      const double cg = (async ? (n.s + n.h_w) / p : c + n.s) / g.ratio;
      const double t = g.ratio * (g.rep >= 0 ? ot(g.rep, cg, v) : g.retired_pe);
      (async && g.parallel ? in_par : in_other) += t;
    }
    if (!async) return n.s + in_par + in_other;
    const double work = n.s + n.h_w;
    if (n.serial_input) return n.h_c + wait_time(std::max((work + in_other) / p, in_other), c, buffer(n, v));
    return n.h_c + wait_time((work + in_par) / p, c, buffer(n, v)) + in_other;
  }

  double work(int i) const {
    const Snap& n = snaps_[size_t(i)];
    double w = n.s * n.f;
    for (const Snap::Group& g : n.groups)
      w += g.ratio * (g.rep >= 0 ? work(g.rep) : g.retired_pe * n.f);
    return w;
  }

  // Appends the snap of `node` (f: the core share of the thread that runs it).
  int build(const Node& node, double f) {
    const int me = int(snaps_.size());
    snaps_.emplace_back();
    const double e = double(std::max<int64_t>(1, node.elements()));
    std::map<std::string, std::vector<std::shared_ptr<Node>>> live;
    std::map<std::string, Node::Retired> retired;
    std::string parallel_group;
    {
      Snap& n = snaps_.back();
      const int64_t handoff = node.handoff_ns(), worker_handoff = node.worker_handoff_ns();
      const int64_t handed = node.handoff_elements();
      n.s = double(std::max<int64_t>(0, node.processing_ns() - handoff - worker_handoff)) / e;
      n.bytes_pe = double(node.bytes()) / e;
      std::lock_guard<std::mutex> lock(node.mu_);
      n.async = node.kind_ == Node::Kind::Async;
      if (n.async) {
        // Measured when the node has run async; the prior matters only where the
        // optimizer may choose inline instead (a knob with a minimum of 0).
        const bool can_inline = (node.parallelism_ && node.parallelism_->min() == 0) ||
                                (node.buffer_ && node.buffer_->min() == 0);
        const double prior = can_inline ? double(kHandoffNs) : 0.0;
        n.h_c = handed > 0 ? double(handoff) / double(handed) : prior;
        n.h_w = handed > 0 ? double(worker_handoff) / double(handed) : prior;
        n.serial_input = node.serial_input_;
        n.fixed_par = node.fixed_parallelism_;
        n.buffer_per_worker = node.buffer_per_worker_;
        const int64_t busy = node.busy_ns_.load(), cpu = node.cpu_ns_.load();
        f = busy > 0 ? std::clamp(double(cpu) / double(busy), 0.0, 1.0) : 1.0;
        if (node.parallelism_ && node.parallelism_->min() < node.parallelism_->max()) {
          n.par = int(knobs_.size());
          knobs_.push_back({node.parallelism_, me});
        }
        if (node.buffer_ && node.buffer_->min() < node.buffer_->max()) {
          n.buf = int(knobs_.size());
          knobs_.push_back({node.buffer_, me});
        }
        parallel_group = node.parallel_group_;
      }
      n.f = f;
      for (const auto& w : node.children_)
        if (auto c = w.lock()) {
          std::lock_guard<std::mutex> clock(c->mu_);
          live[c->group_].push_back(std::move(c));
        }
      retired = node.retired_;
    }
    std::map<std::string, bool> groups;
    for (const auto& [g, _] : live) groups[g] = true;
    for (const auto& [g, _] : retired) groups[g] = true;
    for (const auto& [g, _] : groups) {
      Snap::Group grp;
      grp.parallel = !parallel_group.empty() && g == parallel_group;
      double elements = 0;
      const Node* rep = nullptr;
      for (const auto& c : live[g]) {
        elements += double(c->elements());
        if (c->elements() > 0 && (!rep || c->elements() > rep->elements())) rep = c.get();
      }
      if (auto it = retired.find(g); it != retired.end()) {
        elements += double(it->second.elements);
        if (it->second.elements > 0) grp.retired_pe = double(it->second.subtree_ns) / double(it->second.elements);
      }
      grp.ratio = elements / e;
      if (rep) grp.rep = build(*rep, f);  // may reallocate snaps_: no references kept
      snaps_[size_t(me)].groups.push_back(grp);
    }
    return me;
  }

  std::vector<Snap> snaps_;
  std::vector<Knob> knobs_;
  double consumer_pe_ = 0;
};

namespace {
// Has any iterator of the tree produced an element? (A batch of slow elements may
// not have, when the first decision is already due.)
bool produced(const Node& n) {
  if (n.elements() > 0) return true;
  for (const auto& c : n.children())
    if (produced(*c)) return true;
  return false;
}
}  // namespace

double Model::output_time() const {
  std::shared_ptr<Node> r = root();
  if (!r || !produced(*r)) return 0;
  Plan plan(*r);
  std::vector<int64_t> v;
  for (const Knob& k : plan.knobs()) v.push_back(k.param->value());
  return plan.output_time(v);
}

void Model::optimize() {
  std::shared_ptr<Node> r = root();
  if (!r || !produced(*r)) return;
  Plan plan(*r);
  std::vector<Knob>& knobs = plan.knobs();
  ++runs_;
  if (knobs.empty()) return;
  // Hill climb from the minimum: the result depends on the statistics only, not on
  // where the last run left the knobs.
  std::vector<int64_t> v;
  for (const Knob& k : knobs) v.push_back(k.param->min());
  const double cpu_limit = 1.1 * double(cpu_budget_), floor = plan.cpu_work() / double(cpu_budget_);
  for (int step = 0; step < 10000; ++step) {
    const double ot = plan.output_time(v);
    // As fast as the CPUs allow: more threads cannot help (a buffer still may).
    const bool cpu_bound = ot <= floor;
    int best = -1;
    double best_ot = ot;
    int64_t best_value = 0;
    auto fits = [&] { return plan.cpu_threads(v) <= cpu_limit && plan.buffered_bytes(v) <= double(ram_budget_); };
    for (size_t i = 0; i < knobs.size(); ++i) {
      const Parameter& p = *knobs[i].param;
      const bool threads = p.kind() == Parameter::Kind::Parallelism;
      if (cpu_bound && threads) continue;
      const int64_t old = v[i];
      // Leaving inline: one thread alone may lose to inline where two win (a
      // hand-off per element, half the work each), so try every parallelism.
      int64_t lo = threads ? old + 1 : std::max<int64_t>(1, old * 2), hi = old == 0 && threads ? p.max() : lo;
      lo = std::min(lo, p.max());
      int64_t next = old;
      double t = ot;
      for (int64_t cand = lo; cand <= hi && cand != old; ++cand) {
        v[i] = cand;
        const double tc = fits() ? plan.output_time(v) : ot;
        if (tc < t) t = tc, next = cand;
      }
      v[i] = old;
      if (next == old) continue;
      // A buffer step doubles memory for a gain the queue model shrinks
      // geometrically, so it must earn more than a thread step (or than leaving
      // inline: that adds one buffer slot and a thread).
      const double min_gain = (!threads && old > 0 ? 0.05 : 0.01) * (ot + plan.consumer_pe());
      if (ot - t >= min_gain && t < best_ot) best = int(i), best_ot = t, best_value = next;
    }
    if (best < 0) break;
    v[size_t(best)] = best_value;
  }
  for (size_t i = 0; i < knobs.size(); ++i)
    if (knobs[i].param->value() != v[i]) knobs[i].param->set(v[i]);
}

std::shared_ptr<Model> make_model(const Options& options) {
  return options.autotune.enabled ? std::make_shared<Model>(options) : nullptr;
}

}  // namespace deepflow::data::autotune
