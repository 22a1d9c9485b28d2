// SPDX-License-Identifier: Apache-2.0
// AUTOTUNE: a performance model of a running pipeline and an optimizer that picks
// the parallelism of map / interleave / batch and the buffer size of prefetch
// (a simplified version of TensorFlow's core/framework/model.h; docs/autotune.md).
//
// The model. Every iterator of a pipeline whose Iterator has a Model owns a Node;
// the nodes form a tree that mirrors the iterators (a node's parent is the
// iterator that consumes it). Each node counts, with relaxed atomics:
//   elements   produced by get_next();
//   bytes      of the tensors it produced (to estimate what a buffer holds);
//   processing wall time a thread spends working in the node, excluding the time
//              inside its inputs' get_next() and time spent waiting: a thread-local
//              "active node" clock pauses the caller's node when get_next() enters
//              an input (Timer) and while a thread blocks (Idle);
//   cpu / busy the CPU time and busy wall time of an async node's worker threads,
//              sampled at most every millisecond: their ratio f is the fraction of a
//              core one busy worker uses (f ~ 1 for compute, ~ 0 for sleeps or I/O);
//   handoff    the part of processing an async node spends handing elements between
//              threads rather than working: on the consumer's side (taking an element:
//              the lock, waking a worker) and on the workers' (queue slots, locks,
//              publishing), and the elements it handed off that way.
// From these, per element: self time s = (processing - handoffs) / elements,
// hand-off costs h_c and h_w = each side's handoff / handed-off elements
// (kHandoffNs each before any was measured), and the input ratio r = input
// elements / own elements, per input group. An iterator that is destroyed
// (repeat's passes, interleave's exhausted cycle elements) folds its subtree time
// into its parent's "retired" record of its group, so their cost is still counted.
//
// Output time OT(node, c): the expected time the consumer waits in get_next() per
// element, c being the consumer's own time per element (measured for the root as
// the time between its get_next() calls):
//   inputs:  I = sum over input groups g of r_g * OT(g, c_g)
//   sync:    OT = s + I
//   async with parallelism p and buffer K (map, batch: K = p; prefetch: p = 1):
//            producer time P = max((s + h_w + I) / p, I_serial), where I_serial is
//            the part of I that is read under one lock (map and batch read their
//            input in order; interleave's cycle elements are read in parallel), and
//            OT = h_c + P * P(buffer empty), with P(empty) from an M/M/1/K queue:
//            x = c/P; x == 1: 1/(K+1); otherwise (1 - x) / (1 - x^(K+1)).
//   inline:  a tuned map or batch at parallelism 0, or a tuned prefetch at buffer
//            0, runs on its consumer's thread (no workers, no buffer, no locks) and
//            is modelled as sync: OT = s + I. So a function of a few microseconds,
//            whose hand-offs cost more than the threads save, runs inline (with 2
//            workers: while h_c + h_w / 2 > s / 2), and so does a prefetch whose
//            input costs less than h_c (a batch of row views, for a training step).
//            Interleave keeps at least one worker.
//
// The optimizer (a background thread; every 1 ms until the pipeline has produced
// an element, then with a period that doubles up to 1 s) hill-climbs from scratch
// on each run: every tunable knob starts at its minimum (0 for map / batch
// parallelism and prefetch buffers); each step applies the one move (parallelism
// + 1, buffer x 2; from 0: to the best parallelism that fits the budgets, since one
// worker may lose to inline where two win, or to a buffer of 1) that lowers
// OT(root) most, and it stops when no move gains 1% of (OT + consumer time), 5% for
// buffer moves above 1 (each doubles the memory while the queue model's gains
// shrink geometrically). Parallelism moves are not tried once OT <= CPU work per
// element / cpu_budget (the CPUs are saturated), nor moves that break a budget:
//   CPU: sum over async nodes of p * f <= 1.1 * cpu_budget (threads counted by the
//        share of a core they use, so sleeping readers may exceed the cores);
//   RAM: sum over async nodes of K * bytes per element <= ram_budget.
// Then it writes the knobs; each knob notifies its iterator's condition variable.
//
// Tuned knobs start at 0 (inline): no thread runs until the optimizer finds that
// it pays, and s is first measured without workers competing for the cores. Runs
// start once any iterator of the tree has produced an element (a batch of 2 ms
// elements has none for a while; an output count of 0 is then taken as 1).
//
// With Options::autotune.enabled = false there is no Model: kAutotune takes fixed
// values: parallelism = cpu_budget (the cores), and prefetch uses the legacy rule
// of TensorFlow's PrefetchAutotuner (start at 1, double when the consumer finds the
// buffer empty after it had been full, never shrink; capped at kMaxBuffer).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "deepflow/data/dataset.h"

namespace deepflow::data::autotune {

/// The cores this process may run on (sched_getaffinity).
int64_t cpu_cores();
/// Largest buffer a prefetch takes when tuned.
inline constexpr int64_t kMaxBuffer = 1024;
/// The hand-off cost per element (ns, on each side) assumed for a node that has
/// never run async: a futex wake-up and a context switch, about what one costs.
inline constexpr int64_t kHandoffNs = 5000;
/// Monotonic nanoseconds.
int64_t now_ns();
/// Bytes of the tensors of an element (strings: their characters).
int64_t element_bytes(const Element& e);

/// The mutex and condition variable an iterator synchronizes on; its knobs share
/// them so the optimizer's writes wake the iterator's threads.
struct SharedState {
  std::mutex mu;
  std::condition_variable cv;
};

/// A knob: parallelism (+1 steps) or a buffer size (x2 steps), in [min, max]. A min
/// of 0 lets the optimizer run the node inline (see the model above).
class Plan;  // the optimizer's frozen copy of the tree (autotune.cpp)

class Parameter {
 public:
  enum class Kind { Parallelism, Buffer };
  Parameter(Kind kind, int64_t value, int64_t min, int64_t max, std::shared_ptr<SharedState> state)
      : kind_(kind), min_(min), max_(max), value_(value), state_(std::move(state)) {}
  Kind kind() const { return kind_; }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  /// Sets the value under the iterator's mutex and wakes its threads.
  void set(int64_t v);

 private:
  Kind kind_;
  int64_t min_, max_;
  std::atomic<int64_t> value_;
  std::shared_ptr<SharedState> state_;
};

/// One iterator's statistics and knobs (see the model above).
class Node : public std::enable_shared_from_this<Node> {
 public:
  enum class Kind { Sync, Async };
  Node(std::string name, std::shared_ptr<Node> parent);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const { return name_; }
  /// Siblings of one group (a repeat's passes, interleave's cycle elements) pool
  /// their statistics; the default group is the node's name.
  void set_group(std::string group);
  /// Marks the node async: parallelism p and buffer K come from the knobs when set,
  /// else from the fixed values; K = buffer_per_worker * p when `buffer` is null.
  /// serial_input: the input is read under one lock (map, batch).
  void make_async(std::shared_ptr<Parameter> parallelism, int64_t fixed_parallelism,
                  std::shared_ptr<Parameter> buffer, int64_t buffer_per_worker, bool serial_input);
  /// Children in this group are read in parallel by the workers (interleave's cycle).
  void set_parallel_group(std::string group);

  void add_processing(int64_t ns) { processing_ns_.fetch_add(ns, std::memory_order_relaxed); }
  void record_output(const Element& e);
  /// A worker finished one unit of work that took `busy_ns` of wall time.
  void record_work(int64_t busy_ns);
  /// Workers used `cpu_ns` of CPU time in `busy_ns` of busy wall time (their ratio is the
  /// share of a core a busy worker uses). record_work() samples the thread's CPU clock into
  /// it; tests call it directly, so their figures do not depend on the machine's load.
  void add_cpu_sample(int64_t cpu_ns, int64_t busy_ns) {
    cpu_ns_.fetch_add(cpu_ns, std::memory_order_relaxed);
    busy_ns_.fetch_add(busy_ns, std::memory_order_relaxed);
  }
  void add_consumer_time(int64_t ns) { consumer_ns_.fetch_add(ns, std::memory_order_relaxed); }
  /// Time (part of processing) the consumer's thread spent taking `elements`
  /// elements from the node's threads, and time those threads spent handing them.
  void add_handoff(int64_t ns, int64_t elements) {
    handoff_ns_.fetch_add(ns, std::memory_order_relaxed);
    handoff_elements_.fetch_add(elements, std::memory_order_relaxed);
  }
  void add_worker_handoff(int64_t ns) { worker_handoff_ns_.fetch_add(ns, std::memory_order_relaxed); }

  int64_t elements() const { return elements_.load(std::memory_order_relaxed); }
  int64_t processing_ns() const { return processing_ns_.load(std::memory_order_relaxed); }
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  /// Time the root's consumer spent between get_next() calls.
  int64_t consumer_ns() const { return consumer_ns_.load(std::memory_order_relaxed); }
  int64_t handoff_ns() const { return handoff_ns_.load(std::memory_order_relaxed); }
  int64_t worker_handoff_ns() const { return worker_handoff_ns_.load(std::memory_order_relaxed); }
  int64_t handoff_elements() const { return handoff_elements_.load(std::memory_order_relaxed); }
  Node* parent() const { return parent_.get(); }
  std::vector<std::shared_ptr<Node>> children() const;
  /// The knobs (null when fixed).
  std::shared_ptr<Parameter> parallelism() const;
  std::shared_ptr<Parameter> buffer() const;

 private:
  friend class Model;
  friend class Plan;
  friend class Timer;
  struct Retired {
    int64_t elements = 0, subtree_ns = 0;
  };
  void retire(const std::string& group, int64_t elements, int64_t subtree_ns);

  std::string name_, group_;
  uint64_t id_ = 0;
  Model* model_ = nullptr;  // used while the iterator is being built, when ctx.model holds it
  std::shared_ptr<Node> parent_;
  std::atomic<int64_t> elements_{0}, processing_ns_{0}, bytes_{0}, consumer_ns_{0};
  std::atomic<int64_t> cpu_ns_{0}, busy_ns_{0}, last_return_ns_{0}, handoff_ns_{0}, handoff_elements_{0};
  std::atomic<int64_t> worker_handoff_ns_{0};
  mutable std::mutex mu_;  // guards the fields below
  std::vector<std::weak_ptr<Node>> children_;
  std::map<std::string, Retired> retired_;
  Kind kind_ = Kind::Sync;
  std::shared_ptr<Parameter> parallelism_, buffer_;
  int64_t fixed_parallelism_ = 1, buffer_per_worker_ = 1;
  bool serial_input_ = false;
  std::string parallel_group_;
};

/// Times get_next(): while alive, `node`'s clock runs and the caller's node (the
/// thread's active node) is paused. A null node times nothing. `worker`: a thread
/// of the node's own (not a get_next() call), which is not the root's consumer.
class Timer {
 public:
  explicit Timer(Node* node, bool worker = false);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

 private:
  Node* node_;
  Node* prev_;
  bool consumer_;  // a get_next() call on the root: measures the consumer's time
};

/// Stops this thread's active node clock while it blocks (waits on a condition
/// variable or a lock): waiting is not processing.
class Idle {
 public:
  Idle();
  ~Idle();
  Idle(const Idle&) = delete;
  Idle& operator=(const Idle&) = delete;

 private:
  Node* node_;
};

/// The model of one Iterator's pipeline and its optimizer thread.
class Model {
 public:
  explicit Model(const Options& options);
  ~Model();  ///< stops the optimizer
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  /// A node for the iterator at `prefix` (name: its last path component).
  std::shared_ptr<Node> add_node(const std::string& prefix, Node* parent);
  /// Starts / stops (and joins) the optimizer thread; stop is idempotent. The
  /// thread starts only once a node has a tunable knob (a pipeline without
  /// kAutotune costs no thread), which may be after start().
  void start();
  void stop();
  /// One optimization run now (the thread calls it; tests call it directly).
  void optimize();
  /// Projected time the consumer waits per root element with the current knobs (ns).
  double output_time() const;
  int64_t cpu_budget() const { return cpu_budget_; }
  int64_t ram_budget() const { return ram_budget_; }
  /// Optimization runs so far.
  int64_t runs() const { return runs_.load(); }

 private:
  friend class Node;
  std::shared_ptr<Node> root() const;
  void on_tunable();  // a node registered a knob
  void spawn_locked();

  int64_t cpu_budget_, ram_budget_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::weak_ptr<Node>> roots_;
  bool stop_ = false, wanted_ = false, tunable_ = false;
  std::thread thread_;
  std::atomic<int64_t> runs_{0};
};

/// The Model an Iterator owns: null when options.autotune.enabled is false.
std::shared_ptr<Model> make_model(const Options& options);

}  // namespace deepflow::data::autotune
