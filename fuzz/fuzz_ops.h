// SPDX-License-Identifier: Apache-2.0
// A custom op with a function attribute for the fuzz targets, so function bodies
// (func @f ... / the GraphDef library) are exercised whatever control-flow ops exist:
// fuzz_call(inputs...) {body=@f} -> the types of f's outputs.
#pragma once

#include "deepflow/graph/graph.h"

namespace deepflow::fuzz {

inline void register_fuzz_ops() {
  static const bool once = [] {
    register_custom_op(OpDef{.name = "fuzz_call",
                             .num_inputs = -1,
                             .attrs = {AttrSpec::required_of("body", AttrKind::Func)},
                             .infer = [](const OpCall& c, TypeList& out) {
                               const GraphRef& f = c.attr_func("body");
                               DF_CHECK(f, "[fuzz_call] no body");
                               for (const ValueRef& v : f->outputs) out.push_back(f->type(v));
                             },
                             .non_differentiable = true});
    return true;
  }();
  (void)once;
}

}  // namespace deepflow::fuzz
