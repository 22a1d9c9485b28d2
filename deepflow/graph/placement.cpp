// SPDX-License-Identifier: Apache-2.0
#include "deepflow/graph/placement.h"

#include <algorithm>
#include <cctype>

namespace deepflow {

std::vector<std::string> logical_devices(int num_devices) {
  std::vector<std::string> out;
  for (int i = 0; i < num_devices; ++i) out.push_back("/cpu:" + std::to_string(i));
  return out;
}

std::string canonical_device(const std::string& name, int num_devices) {
  std::string s;
  for (char ch : name) s += char(std::tolower(static_cast<unsigned char>(ch)));
  // TensorFlow's full names: keep only the device part.
  if (size_t p = s.rfind("/device:"); p != std::string::npos) s = s.substr(p + 8);
  if (!s.empty() && s[0] == '/') s = s.substr(1);
  if (s == "cpu") s = "cpu:0";
  if (s.rfind("cpu:", 0) != 0 || s.size() == 4) return "";
  int index = 0;
  for (size_t i = 4; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i])) || i > 12) return "";
    index = index * 10 + (s[i] - '0');
  }
  if (index >= num_devices) return "";
  return "/cpu:" + std::to_string(index);
}

std::vector<std::string> place_nodes(const Graph& g, const std::vector<int>& order, int num_devices,
                                     const std::string& default_device) {
  const std::string fallback = canonical_device(default_device, num_devices);
  DF_CHECK(!fallback.empty(), "[placement] the default device '", default_device, "' is not one of /cpu:0 .. /cpu:",
           num_devices - 1);
  std::vector<std::string> dev(size_t(g.num_nodes()));
  std::vector<std::vector<int>> consumers(size_t(g.num_nodes()));
  for (int id : order) {
    const Node& n = g.node(id);
    for (const ValueRef& v : n.inputs) consumers[size_t(v.node)].push_back(id);
    if (n.device.empty()) continue;
    dev[size_t(id)] = canonical_device(n.device, num_devices);
    DF_CHECK(!dev[size_t(id)].empty(), "[placement] node '", n.name, "' asks for device '", n.device,
             "', which is not one of /cpu:0 .. /cpu:", num_devices - 1);
  }
  // Unplaced nodes follow their first placed input (forward), then what is still
  // unplaced (sources, and nodes fed only by sources) follows its first placed
  // consumer (backward); the rest goes to the default device.
  for (int id : order) {
    if (!dev[size_t(id)].empty()) continue;
    for (const ValueRef& v : g.node(id).inputs)
      if (!dev[size_t(v.node)].empty()) {
        dev[size_t(id)] = dev[size_t(v.node)];
        break;
      }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (!dev[size_t(*it)].empty()) continue;
    for (int c : consumers[size_t(*it)])
      if (!dev[size_t(c)].empty()) {
        dev[size_t(*it)] = dev[size_t(c)];
        break;
      }
  }
  for (int id : order)
    if (dev[size_t(id)].empty()) dev[size_t(id)] = fallback;
  return dev;
}

}  // namespace deepflow
