// SPDX-License-Identifier: Apache-2.0
// The graph text form. TODO(lead): the full printer and parser land with the text-form work.
#include <sstream>

#include "deepflow/graph/graph.h"

namespace deepflow {

std::string Graph::to_string() const {
  std::ostringstream os;
  for (const Node& n : nodes_) {
    os << '%' << n.name << " = " << n.def().name << '(';
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", %" : "%") << value_name(n.inputs[i]);
    os << ")\n";
  }
  return os.str();
}

}  // namespace deepflow
