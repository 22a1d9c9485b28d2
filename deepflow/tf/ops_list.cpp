// SPDX-License-Identifier: Apache-2.0
// TensorFlow's TensorList ops, which Keras's LSTM and GRU loops (and tf.TensorArray) use,
// on a dense representation: a list of n elements of shape E is the tensor [n, E...], so
// it can be a while_loop variable. Reserve needs n known at import time; E may have dims
// known only at run time when they come from a Shape (the batch of an RNN).
#include "deepflow/core/error.h"
#include "deepflow/tf/op_importer.h"

namespace deepflow::tf {
namespace {

Values import_reserve(NodeContext& c) {
  auto elem = c.shape_input(0);
  DF_CHECK(elem && !(c.value(0).tensor.defined() && c.value(0).tensor.rank() == 0), "[tf::import] ", c.describe(),
           ": the element shape must be known (a list of elements of unknown rank is not supported)");
  auto count = c.shape_input(1);
  DF_CHECK(count && count->size() == 1, "[tf::import] ", c.describe(), ": num_elements must be a known scalar or come ",
           "from a Shape");
  const int64_t n = (*count)[0];
  std::vector<int64_t> dims{n};
  dims.insert(dims.end(), elem->begin(), elem->end());
  std::vector<std::pair<Tensor, int>> sources{c.value(1).sources.empty() ? std::pair<Tensor, int>{Tensor(), -1}
                                                                          : c.value(1).sources[0]};
  const Value& v = c.value(0);
  bool resolvable = n >= 0 || sources[0].first.defined();
  for (size_t i = 0; i < elem->size(); ++i) {
    sources.push_back(i < v.sources.size() ? v.sources[i] : std::pair<Tensor, int>{Tensor(), -1});
    resolvable &= (*elem)[i] >= 0 || sources.back().first.defined();
  }
  if (resolvable) return {dynamic_zeros(c, dims, sources, c.attr_type("element_dtype"))};
  Value pending;
  pending.pending_list =
      std::make_shared<Value::PendingList>(Value::PendingList{dims, sources, c.attr_type("element_dtype")});
  return {pending};
}

Values import_from_tensor(NodeContext& c) { return {c.input(0)}; }
Values import_stack(NodeContext& c) { return {c.input(0)}; }

Values import_get_item(NodeContext& c) { return {gather(c.input(0), c.input(1), 0)}; }

// The list with element `index` replaced: a select on a one-hot row mask (the index is a
// loop counter known only at run time).
Values import_set_item(NodeContext& c) {
  Tensor index = c.input(1), item = c.input(2);
  Tensor list;
  if (const auto& p = c.value(0).pending_list) {
    // The first element set gives the run-time dims: zeros [n, item dims...].
    DF_CHECK(item.rank() + 1 == int(p->dims.size()), "[tf::import] ", c.describe(), ": sets an element of rank ",
             item.rank(), " in a list of elements of rank ", p->dims.size() - 1);
    std::vector<std::pair<Tensor, int>> sources{p->sources.empty() ? std::pair<Tensor, int>{} : p->sources[0]};
    std::vector<int64_t> dims = p->dims;
    for (int k = 0; k < item.rank(); ++k) {
      sources.emplace_back(item, k);
      if (dims[size_t(k + 1)] < 0) dims[size_t(k + 1)] = item.dim(k);
    }
    list = dynamic_zeros(c, dims, sources, p->dtype);
  } else {
    list = c.input(0);
  }
  // The row mask position == index, with positions 0..n-1 counted at run time (n may be a
  // sequence length known only then).
  Axes rest;
  for (int a = 1; a < list.rank(); ++a) rest.push_back(a);
  Tensor rows = cast(rest.empty() ? zeros_like(list) : reduce_sum(zeros_like(list), rest), DType::Float32);
  Tensor positions = cumsum(rows + 1.0, 0) - 1.0;
  Tensor mask = equal(positions, cast(index, DType::Float32));
  std::vector<int64_t> at(size_t(list.rank()), 1);
  at[0] = -1;
  return {where(reshape(mask, Shape(at)), expand_dims(cast(item, list.dtype()), 0), list)};
}

Values import_length(NodeContext& c) {
  Tensor list = c.input(0);
  if (list.dim(0) >= 0) return {scalar(double(list.dim(0)), DType::Int32)};
  Axes rest;
  for (int a = 1; a < list.rank(); ++a) rest.push_back(a);
  return {cast(size(rest.empty() ? zeros_like(list) : reduce_sum(zeros_like(list), rest)), DType::Int32)};
}

}  // namespace

DF_TF_OP("TensorListReserve", import_reserve)
DF_TF_OP("TensorListFromTensor", import_from_tensor)
DF_TF_OP("TensorListStack", import_stack)
DF_TF_OP("TensorListGetItem", import_get_item)
DF_TF_OP("TensorListSetItem", import_set_item)
DF_TF_OP("TensorListLength", import_length)

}  // namespace deepflow::tf
