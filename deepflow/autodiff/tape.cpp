// SPDX-License-Identifier: Apache-2.0
#include "deepflow/autodiff/tape.h"
#include "deepflow/ops/variable_reads.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "deepflow/ops/op.h"
#include "deepflow/ops/ops.h"

namespace deepflow {

struct GradientTape::Impl {
  struct Entry {
    const OpDef* def;
    Attrs attrs;
    TensorList inputs;
    TensorList outputs;
  };
  bool persistent;
  bool watch_variables;
  bool recording = true;
  bool used = false;
  std::unordered_set<uint64_t> watched;
  std::vector<Entry> entries;
  std::vector<Variable> variables;  // watched_variables(), first seen first
  std::unordered_set<uint64_t> variable_ids;

  void add_variable(const Variable& v) {
    if (variable_ids.insert(v.id()).second) variables.push_back(v);
  }

  bool is_watched(const Tensor& t) {
    if (watched.count(t.id())) return true;
    if (watch_variables && (t.impl()->flags & kTrainableVariable)) {
      watched.insert(t.id());
      return true;
    }
    return false;
  }
};

namespace {
// The tapes alive on this thread, innermost last.
thread_local std::vector<GradientTape::Impl*> t_tapes;
}  // namespace

namespace detail {
void record_on_tapes(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                     const TensorList& outputs) {
  for (GradientTape::Impl* tape : t_tapes) {
    if (!tape->recording) continue;
    bool any = false;
    for (const Tensor& t : inputs) any |= tape->is_watched(t);
    if (!any) continue;
    for (const Tensor& t : outputs) tape->watched.insert(t.id());
    tape->entries.push_back({&def, attrs, TensorList(inputs.begin(), inputs.end()), outputs});
  }
}
void note_variable_read(const Variable& v) {
  if (!v.trainable()) return;
  for (GradientTape::Impl* tape : t_tapes)
    if (tape->recording && tape->watch_variables) tape->add_variable(v);
}
bool any_tape_recording() {
  for (const GradientTape::Impl* tape : t_tapes)
    if (tape->recording) return true;
  return false;
}
}  // namespace detail

GradientTape::GradientTape(bool persistent, bool watch_accessed_variables)
    : impl_(std::make_unique<Impl>()) {
  impl_->persistent = persistent;
  impl_->watch_variables = watch_accessed_variables;
  t_tapes.push_back(impl_.get());
  ++detail::g_active_tapes;
}

GradientTape::~GradientTape() {
  auto it = std::find(t_tapes.begin(), t_tapes.end(), impl_.get());
  if (it != t_tapes.end()) {
    t_tapes.erase(it);
    --detail::g_active_tapes;
  }
}

void GradientTape::watch(const Tensor& t) {
  DF_CHECK(t.defined(), "[GradientTape.watch] undefined tensor");
  if (t.dtype() == DType::String) return;  // not differentiable: TF ignores it too
  impl_->watched.insert(t.id());
}
void GradientTape::watch(const Variable& v) {
  impl_->watched.insert(v.id());
  impl_->add_variable(v);
}
std::vector<Variable> GradientTape::watched_variables() const { return impl_->variables; }

GradientTape::StopRecording::StopRecording(GradientTape& tape) : tape_(tape), prev_(tape.impl_->recording) {
  tape.impl_->recording = false;
}
GradientTape::StopRecording::~StopRecording() { tape_.impl_->recording = prev_; }

void GradientTape::reset() {
  impl_->entries.clear();
  impl_->watched.clear();
  impl_->variables.clear();
  impl_->variable_ids.clear();
  impl_->used = false;
}

size_t GradientTape::num_recorded() const { return impl_->entries.size(); }

namespace {

// Runs the recorded vjps backwards from `seeds` (one per target) and returns the
// accumulated gradient of each source. Only entries on a path from a source are
// differentiated. See Note [Gradient accumulation].
std::vector<Tensor> backward(GradientTape::Impl& tape, const std::vector<Tensor>& targets,
                             const std::vector<Tensor>& seeds, const std::vector<Tensor>& sources,
                             UnconnectedGradients unconnected) {
  const auto& entries = tape.entries;
  std::unordered_set<uint64_t> reach;
  for (const Tensor& s : sources)  // a source the tape does not watch gets no gradient (TF)
    if (tape.is_watched(s)) reach.insert(s.id());
  std::vector<char> active(entries.size(), 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    for (const Tensor& t : entries[i].inputs)
      if (reach.count(t.id())) active[i] = 1;
    if (active[i])
      for (const Tensor& t : entries[i].outputs) reach.insert(t.id());
  }

  // Note [Gradient accumulation]: gradients are keyed by tensor id, and every read
  // of a variable shares the variable's id, so all uses of a variable add up.
  std::unordered_map<uint64_t, Tensor> grads;
  auto accumulate = [&](uint64_t id, const Tensor& g) {
    auto it = grads.find(id);
    if (it == grads.end()) grads.emplace(id, g);
    else it->second = add(it->second, g);
  };
  for (size_t i = 0; i < targets.size(); ++i)
    if (reach.count(targets[i].id())) accumulate(targets[i].id(), seeds[i]);

  for (size_t i = entries.size(); i-- > 0;) {
    if (!active[i]) continue;
    const auto& e = entries[i];
    TensorList out_grads(e.outputs.size());
    bool any = false;
    for (size_t j = 0; j < e.outputs.size(); ++j) {
      auto it = grads.find(e.outputs[j].id());
      if (it != grads.end()) {
        out_grads[j] = it->second;
        any = true;
      }
    }
    if (!any) continue;
    // Strings are never differentiable: their outputs get no gradient, not zeros (there are none).
    for (size_t j = 0; j < e.outputs.size(); ++j)
      if (!out_grads[j].defined() && e.outputs[j].dtype() != DType::String) out_grads[j] = zeros_like(e.outputs[j]);
    OpCall call{e.def, e.inputs, &e.attrs, e.outputs};
    DF_CHECK(e.def->vjp, "[gradient] op '", e.def->name, "' has no gradient");
    TensorList in_grads = e.def->vjp(call, out_grads);
    DF_CHECK(in_grads.size() == e.inputs.size(), "[gradient] vjp of '", e.def->name, "' returned ",
             in_grads.size(), " gradients for ", e.inputs.size(), " inputs");
    for (size_t j = 0; j < e.inputs.size(); ++j) {
      if (!in_grads[j].defined() || !reach.count(e.inputs[j].id())) continue;
      DF_CHECK(in_grads[j].shape() == e.inputs[j].shape() || in_grads[j].is_symbolic(),
               "[gradient] vjp of '", e.def->name, "' gave input ", j, " a gradient of shape ",
               in_grads[j].shape(), " for an input of shape ", e.inputs[j].shape());
      accumulate(e.inputs[j].id(), in_grads[j]);
    }
  }

  std::vector<Tensor> result;
  result.reserve(sources.size());
  for (const Tensor& s : sources) {
    auto it = grads.find(s.id());
    if (it != grads.end()) result.push_back(it->second);
    else if (unconnected == UnconnectedGradients::Zero && s.dtype() != DType::String) result.push_back(zeros_like(s));
    else result.emplace_back();
  }
  return result;
}

}  // namespace

std::vector<Tensor> GradientTape::gradient(const std::vector<Tensor>& targets, const std::vector<Tensor>& sources,
                                           UnconnectedGradients unconnected,
                                           const std::vector<Tensor>& output_gradients) {
  DF_CHECK(impl_->persistent || !impl_->used,
           "[GradientTape.gradient] a non-persistent tape can only be used once; "
           "create it with persistent=true to call gradient() again");
  DF_CHECK(output_gradients.empty() || output_gradients.size() == targets.size(),
           "[GradientTape.gradient] ", output_gradients.size(), " output_gradients for ", targets.size(),
           " targets");
  std::vector<Tensor> seeds;
  for (size_t i = 0; i < targets.size(); ++i) {
    const Tensor& t = targets[i];
    DF_CHECK(t.defined(), "[GradientTape.gradient] target ", i, " is undefined");
    DF_CHECK(t.dtype() != DType::String, "[GradientTape.gradient] target ", i, " is a string tensor ", t.shape(),
             ": strings are not differentiable");
    if (!output_gradients.empty() && output_gradients[i].defined()) {
      DF_CHECK(output_gradients[i].shape() == t.shape(), "[GradientTape.gradient] output_gradients[", i,
               "] has shape ", output_gradients[i].shape(), ", target has ", t.shape());
      seeds.push_back(output_gradients[i]);
    } else {
      seeds.push_back(ones_like(t));  // non-scalar targets are summed
    }
  }
  for (size_t i = 0; i < sources.size(); ++i)
    DF_CHECK(sources[i].defined(), "[GradientTape.gradient] source ", i, " is undefined");
  bool prev = impl_->recording;
  impl_->recording = false;  // our own backward ops are recorded only by outer tapes
  std::vector<Tensor> result;
  try {
    result = backward(*impl_, targets, seeds, sources, unconnected);
  } catch (...) {
    impl_->recording = prev;
    throw;
  }
  impl_->recording = prev;
  impl_->used = true;
  if (!impl_->persistent) impl_->entries.clear();
  return result;
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources,
                                           UnconnectedGradients unconnected) {
  return gradient(std::vector<Tensor>{target}, sources, unconnected);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Variable>& sources,
                                           UnconnectedGradients unconnected) {
  std::vector<Tensor> reads;
  reads.reserve(sources.size());
  for (const Variable& v : sources) reads.push_back(v.value());
  return gradient(std::vector<Tensor>{target}, reads, unconnected);
}

Tensor GradientTape::gradient(const Tensor& target, const Tensor& source, UnconnectedGradients unconnected) {
  return gradient(std::vector<Tensor>{target}, std::vector<Tensor>{source}, unconnected)[0];
}

Tensor GradientTape::gradient(const Tensor& target, const Variable& source, UnconnectedGradients unconnected) {
  return gradient(target, source.value(), unconnected);
}

Tensor GradientTape::jacobian(const Tensor& target, const Tensor& source, UnconnectedGradients unconnected) {
  DF_CHECK(impl_->persistent || !impl_->used, "[GradientTape.jacobian] a non-persistent tape can only be used once");
  bool prev = impl_->recording;
  impl_->recording = false;
  const int64_t n = target.size();
  std::vector<Tensor> rows;
  rows.reserve(size_t(n));
  try {
    for (int64_t i = 0; i < n; ++i) {
      Tensor seed = zeros(target.shape(), target.dtype());
      DF_DISPATCH_FLOAT(target.dtype(), "jacobian", [&] { seed.data<scalar_t>()[i] = scalar_t(1.0f); });
      Tensor g = backward(*impl_, {target}, {seed}, {source}, unconnected)[0];
      if (!g.defined()) break;  // not connected: every row would be empty
      rows.push_back(reshape(g, Shape{1, source.size()}));
    }
  } catch (...) {
    impl_->recording = prev;
    throw;
  }
  impl_->recording = prev;
  impl_->used = true;
  if (!impl_->persistent) impl_->entries.clear();
  Shape out = target.shape();
  for (int64_t d : source.shape()) out.push_back(d);
  if (n > 0 && rows.empty()) return Tensor();  // unconnected, UnconnectedGradients::None
  if (n == 0) return zeros(out, source.dtype());
  return reshape(concat(rows, 0), out);
}

}  // namespace deepflow
