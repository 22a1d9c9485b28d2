// SPDX-License-Identifier: Apache-2.0
// Op-table rows of send and recv (graph/partition.cpp). They exchange tensors through
// the run's Rendezvous, so outside a partitioned run they are errors; the round-trip
// rows make one.
#include "deepflow/graph/partition.h"
#include "op_cases.h"

namespace deepflow::testing {

DF_OP_CASES(partition) {
  auto round_trip = [](const TensorList& x) {
    Rendezvous r;
    RendezvousScope scope(&r);
    dispatch(OpId::Send, {x[0]}, {{"key", std::string("t")}});
    return dispatch(OpId::Recv, {}, {{"key", std::string("t")}, {"dtype", x[0].dtype()}, {"shape", x[0].shape().to_vector()}});
  };
  return {
      {.name = "send/round-trip", .op = "send", .inputs = {in({2, 3})}, .fn = round_trip, .gradcheck = false},
      {.name = "recv/round-trip", .op = "recv", .inputs = {in({4})}, .fn = round_trip,
       .dtypes = {DType::Float32, DType::Float64, DType::BFloat16}, .gradcheck = false},
      {.name = "send/outside-a-run", .op = "send", .inputs = {in({2})}, .attrs = {{"key", std::string("k")}},
       .error = "[send] runs only inside a partitioned graph run (key 'k')"},
      {.name = "recv/outside-a-run", .op = "recv", .attrs = {{"key", std::string("k")}, {"dtype", DType::Float32}},
       .error = "[recv] runs only inside a partitioned graph run (key 'k')"},
      {.name = "recv/no-key", .op = "recv", .attrs = {{"key", std::string("")}, {"dtype", DType::Float32}}, .error = "[recv] needs a non-empty 'key'"},
  };
}

}  // namespace deepflow::testing
