// SPDX-License-Identifier: Apache-2.0
// Partitioning: splitting a placed graph into one part per device, with a Send/Recv
// pair on every edge that crosses devices.
//
// A `send` node (on the producer's device) hands its input to the run's Rendezvous
// under a key unique to the edge; the matching `recv` node (on the consumer's device)
// waits for that key and outputs the tensor. Control edges that cross devices become
// a send without input and a recv without output. Each device's part runs on its own
// thread; a part that fails aborts the rendezvous, so every recv waiting in another
// part wakes with an error instead of hanging.
//
//   Rendezvous rdv;
//   RendezvousScope scope(&rdv);   // send/recv kernels on this thread use rdv
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "deepflow/graph/graph.h"

namespace deepflow {

/// The keyed table through which the parts of one run exchange tensors.
class Rendezvous {
 public:
  /// Publishes a value (an undefined Tensor for a control edge); a key is sent once.
  void send(const std::string& key, Tensor value);
  /// Waits for the key's value; throws "[recv] ... aborted: <reason>" after abort().
  Tensor recv(const std::string& key);
  /// Wakes every waiting recv with an error; the first reason is kept.
  void abort(const std::string& reason);
  bool aborted() const;
  /// The reason given to the first abort() ("" when none).
  std::string abort_reason() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, Tensor> table_;
  bool aborted_ = false;
  std::string reason_;
};

/// The rendezvous that send/recv kernels on this thread use, or nullptr.
Rendezvous* current_rendezvous();
/// Makes `r` current on this thread while alive (restores the previous one).
class RendezvousScope {
 public:
  explicit RendezvousScope(Rendezvous* r);
  ~RendezvousScope();
  RendezvousScope(const RendezvousScope&) = delete;
  RendezvousScope& operator=(const RendezvousScope&) = delete;

 private:
  Rendezvous* prev_;
};

/// A graph split across devices.
struct PartitionedGraph {
  /// The original nodes under the same ids (with their device set and cross-device
  /// inputs rewired to recv nodes), followed by the added send/recv nodes.
  std::shared_ptr<Graph> graph;
  std::vector<std::string> devices;       ///< the devices with work, in order of first use
  std::vector<std::vector<int>> parts;    ///< per device: node ids of `graph`, topologically ordered
  int num_pairs = 0;                      ///< send/recv pairs added
};

/// Splits the nodes of `order` (an executable order of g) by `device_of` (indexed by
/// node id, from place_nodes). Values for which `is_fed` holds are given to every part
/// directly, so their edges need no send.
PartitionedGraph partition(const Graph& g, const std::vector<int>& order, const std::vector<std::string>& device_of,
                           const std::function<bool(ValueRef)>& is_fed);

}  // namespace deepflow
