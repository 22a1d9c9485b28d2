// SPDX-License-Identifier: Apache-2.0
// Devices and placement: which logical device runs each node of a graph.
//
// The logical devices are /cpu:0 .. /cpu:N-1 (N from ExecutorOptions/SessionOptions,
// default 2); each runs its share of a graph on its own thread (see partition.h).
// Placement keeps what DeviceScope asked for, puts a node without a device on the
// device of its inputs (so a chain follows its first layer), puts sources (constants,
// variable reads, placeholders) next to their first consumer, and sends the rest to
// the default device. An unknown device is an error naming the node.
#pragma once

#include <string>
#include <vector>

#include "deepflow/graph/graph.h"

namespace deepflow {

/// "/cpu:0" .. "/cpu:<n-1>".
std::vector<std::string> logical_devices(int num_devices);

/// The canonical name of a device ("cpu:1", "/CPU:1", "/device:CPU:1" -> "/cpu:1"), or
/// "" when `name` is not a device of the form /cpu:K with K < num_devices.
std::string canonical_device(const std::string& name, int num_devices);

/// The device of each node id of g (indexed by id); nodes outside `order` get "".
/// Throws "[placement] node 'x' asks for device '/gpu:0', ..." for an unknown device.
std::vector<std::string> place_nodes(const Graph& g, const std::vector<int>& order, int num_devices,
                                     const std::string& default_device = "/cpu:0");

}  // namespace deepflow
