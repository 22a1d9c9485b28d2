// SPDX-License-Identifier: Apache-2.0
#include "deepflow/ops/variable.h"

#include "deepflow/ops/op.h"
#include "deepflow/ops/ops.h"
#include "deepflow/ops/variable_reads.h"

namespace deepflow {

struct Variable::State {
  std::string name;
  bool trainable = true;
  TensorImpl impl;  // storage, shape, dtype and the shared id
};

Variable::Variable(const Tensor& initial_value, std::string name, bool trainable) {
  DF_CHECK(initial_value.defined(), "[Variable] '", name, "' needs an initial value");
  DF_CHECK(!initial_value.is_symbolic(), "[Variable] '", name, "' needs a concrete initial value");
  state_ = std::make_shared<State>();
  state_->name = std::move(name);
  state_->trainable = trainable;
  Tensor copy = initial_value.clone();
  state_->impl = *copy.impl();
  state_->impl.id = TensorImpl::next_id();
  state_->impl.flags = trainable ? kTrainableVariable : 0;
}

Variable Variable::wrap(const Tensor& value, std::string name, bool trainable) {
  DF_CHECK(value.defined() && !value.is_symbolic(), "[Variable] '", name, "' needs a concrete value");
  Variable v;
  v.state_ = std::make_shared<State>();
  v.state_->name = std::move(name);
  v.state_->trainable = trainable;
  v.state_->impl = *value.impl();
  v.state_->impl.id = TensorImpl::next_id();
  v.state_->impl.flags = trainable ? kTrainableVariable : 0;
  return v;
}

Tensor Variable::value() const {
  DF_CHECK(state_, "[Variable] read of an undefined variable");
  if (state_->trainable && detail::any_tape_recording()) detail::note_variable_read(*this);
  if (current_build_scope()) {
    // Inside a graph or trace the read is a node, so the graph sees later assignments.
    // Its output carries the variable's id, so tapes treat every read as the variable.
    Tensor t = dispatch1(OpId::ReadVariable, {}, {{"variable", *this}});
    t.impl()->id = state_->impl.id;
    t.impl()->flags = state_->impl.flags;
    return t;
  }
  return Tensor(std::make_shared<TensorImpl>(state_->impl));
}

void Variable::assign(const Tensor& value) {
  DF_CHECK(state_, "[Variable.assign] undefined variable");
  if (current_build_scope()) {  // a stateful node, ordered by the graph's control dependencies
    dispatch(OpId::AssignVariable, {value}, {{"variable", *this}});
    return;
  }
  DF_CHECK(value.dtype() == dtype() && value.shape() == shape(), "[Variable.assign] '", name(), "' is ",
           dtype_name(dtype()), shape(), ", value is ", dtype_name(value.dtype()), value.shape());
  TensorImpl& impl = state_->impl;
  // Assignment swaps buffers and never writes into one, so sharing the value's
  // buffer is safe and reads taken before an assignment keep their values.
  if (!value.is_symbolic()) {
    impl.storage = value.impl()->storage;
    impl.offset = value.impl()->offset;
    return;
  }
  fail("[Variable.assign] '", name(), "' cannot take a symbolic value outside a graph");
}

void Variable::assign_add(const Tensor& delta) {
  Tensor sum = add(value(), delta);
  assign(sum);
}
void Variable::assign_sub(const Tensor& delta) {
  Tensor diff = sub(value(), delta);
  assign(diff);
}

const std::string& Variable::name() const { return state_->name; }
bool Variable::trainable() const { return state_->trainable; }
void Variable::set_trainable(bool trainable) {
  state_->trainable = trainable;
  state_->impl.flags = trainable ? kTrainableVariable : 0;
}
const Shape& Variable::shape() const { return state_->impl.shape; }
DType Variable::dtype() const { return state_->impl.dtype; }
uint64_t Variable::id() const { return state_->impl.id; }

}  // namespace deepflow
