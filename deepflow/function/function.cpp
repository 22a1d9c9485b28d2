// SPDX-License-Identifier: Apache-2.0
#include "deepflow/function/function.h"

#include <climits>
#include <iostream>
#include <mutex>
#include <sstream>

#include "deepflow/graph/builder.h"
#include "deepflow/ops/ops.h"

namespace deepflow {

// --- signatures ---

namespace {

std::string type_to_string(const TensorType& t) { return std::string(dtype_name(t.dtype)) + t.shape.to_string(); }

bool type_matches(const TensorType& t, const Tensor& x) {
  return x.dtype() == t.dtype && x.shape().compatible_with(t.shape);
}

int unknown_dims(const Signature& sig) {
  int n = 0;
  for (const TensorType& t : sig)
    for (int64_t d : t.shape) n += d < 0;
  return n;
}

// Throws "[function] 'f' input 0 is float32[2,5], the signature expects float32[?,4]".
void check_inputs(const std::string& name, const Signature& sig, const TensorList& inputs) {
  DF_CHECK(inputs.size() == sig.size(), "[function] '", name, "' takes ", sig.size(), " inputs ",
           signature_to_string(sig), ", got ", inputs.size());
  for (size_t i = 0; i < sig.size(); ++i)
    DF_CHECK(type_matches(sig[i], inputs[i]), "[function] '", name, "' input ", i, " is ",
             dtype_name(inputs[i].dtype()), inputs[i].shape(), ", the signature expects ", type_to_string(sig[i]));
}

// The signature that serves both `seen` and `sig` with the fewest unknown dims: the dims
// where they differ become -1. Empty when they differ in count, dtype or rank.
std::optional<Signature> generalize(const Signature& seen, const Signature& sig) {
  if (seen.size() != sig.size()) return std::nullopt;
  Signature out = seen;
  for (size_t i = 0; i < sig.size(); ++i) {
    if (seen[i].dtype != sig[i].dtype || seen[i].shape.rank() != sig[i].shape.rank()) return std::nullopt;
    for (int d = 0; d < sig[i].shape.rank(); ++d)
      if (seen[i].shape[d] != sig[i].shape[d]) out[i].shape[d] = -1;
  }
  return out;
}

// Eager tapes must not record the symbolic ops of a trace (they record the ops the graph
// runs when it is called). Tapes created inside the callable still record.
class HideTapes {
 public:
  HideTapes() : saved_(detail::g_active_tapes) { detail::g_active_tapes = 0; }
  ~HideTapes() { detail::g_active_tapes += saved_; }
  HideTapes(const HideTapes&) = delete;
  HideTapes& operator=(const HideTapes&) = delete;

 private:
  int saved_;
};

}  // namespace

std::string signature_to_string(const Signature& sig) {
  std::string s = "(";
  for (size_t i = 0; i < sig.size(); ++i) s += (i ? ", " : "") + type_to_string(sig[i]);
  return s + ")";
}

Signature signature_of(const TensorList& inputs) {
  Signature sig;
  sig.reserve(inputs.size());
  for (const Tensor& t : inputs) sig.push_back({t.dtype(), t.shape()});
  return sig;
}

bool signature_matches(const Signature& sig, const TensorList& inputs) {
  if (sig.size() != inputs.size()) return false;
  for (size_t i = 0; i < sig.size(); ++i)
    if (!type_matches(sig[i], inputs[i])) return false;
  return true;
}

// --- ConcreteFunction ---

struct ConcreteFunction::Impl {
  std::string name;
  Signature signature;
  std::shared_ptr<Graph> graph;      // as traced
  std::shared_ptr<Graph> optimized;  // what the executor runs
  std::optional<Executor> executor;  // prepared once: feeds, fetches, side-effect targets
};

const std::string& ConcreteFunction::name() const { return impl_->name; }
const Graph& ConcreteFunction::graph() const { return *impl_->graph; }
std::shared_ptr<const Graph> ConcreteFunction::graph_ptr() const { return impl_->graph; }
const Graph& ConcreteFunction::optimized_graph() const { return *impl_->optimized; }
const Signature& ConcreteFunction::inputs() const { return impl_->signature; }

TypeList ConcreteFunction::outputs() const {
  TypeList out;
  for (const ValueRef& v : impl_->graph->outputs) out.push_back(impl_->graph->type(v));
  return out;
}

TensorList ConcreteFunction::operator()(const TensorList& inputs) const {
  DF_CHECK(impl_, "[function] call of an undefined ConcreteFunction");
  check_inputs(impl_->name, impl_->signature, inputs);
  for (size_t i = 0; i < inputs.size(); ++i)
    DF_CHECK(!inputs[i].is_symbolic(), "[function] concrete function '", impl_->name, "' input ", i,
             " is symbolic: call the Function (which inlines) inside a graph");
  return impl_->executor->run(inputs);
}

std::string ConcreteFunction::to_string() const { return impl_->graph->to_string(); }
std::string ConcreteFunction::serialize() const { return impl_->graph->to_string(); }

// --- Function ---

struct Function::State {
  Callable callable;
  FunctionOptions options;
  std::recursive_mutex mu;  // recursive: the callable may ask trace_count() while tracing
  std::vector<std::shared_ptr<ConcreteFunction::Impl>> concrete;  // in trace order
  int traces = 0;
  bool warned = false;

  std::shared_ptr<ConcreteFunction::Impl> trace(const Signature& sig);
  std::shared_ptr<ConcreteFunction::Impl> find_or_trace(const TensorList& inputs);
};

std::shared_ptr<ConcreteFunction::Impl> Function::State::trace(const Signature& sig) {
  auto g = std::make_shared<Graph>();
  TensorList ins;
  {
    // Placeholders are built outside the automatic control dependencies: they are fed, so
    // no node may depend on them running.
    GraphScope scope(g);
    for (size_t i = 0; i < sig.size(); ++i)
      ins.push_back(placeholder(sig[i].dtype, sig[i].shape, sig.size() == 1 ? "input" : "input_" + std::to_string(i)));
  }
  for (const Tensor& t : ins) g->inputs.push_back(g->value_of(t).node);
  {
    HideTapes hide;
    GraphScope scope(g, {.auto_control_dependencies = true});
    TensorList outs = callable(ins);
    for (size_t i = 0; i < outs.size(); ++i) {
      DF_CHECK(outs[i].defined(), "[function] '", options.name, "' returned an undefined tensor as output ", i);
      g->outputs.push_back(scope.input_value(outs[i]));  // concrete results become constants
    }
  }
  ++traces;
  if (traces - 1 >= 5 && !warned) {
    warned = true;
    std::cerr << "[function] '" << options.name << "' was retraced " << traces - 1
              << " times; pass an input_signature with unknown dims (-1) to trace once for all shapes, "
                 "or avoid calling it with changing dtypes or ranks\n";
  }
  // The passes keep every stateful node and remap the inputs and outputs.
  std::shared_ptr<Graph> run = options.optimize ? optimize(*g, options.passes) : g;
  // Side effects run on every call: stateful nodes that no output needs become targets.
  // Variable reads and placeholders have none.
  std::vector<int> targets;
  for (int id = 0; id < run->num_nodes(); ++id) {
    const Node& n = run->node(id);
    if (n.def().stateful && n.op != OpId::Placeholder && n.op != OpId::ReadVariable) targets.push_back(id);
  }
  std::vector<ValueRef> feeds;
  for (int id : run->inputs) feeds.push_back({id, 0});
  auto cf = std::make_shared<ConcreteFunction::Impl>();
  cf->name = options.name;
  cf->signature = sig;
  cf->graph = g;
  cf->optimized = run;
  cf->executor.emplace(run, std::move(feeds), run->outputs, std::move(targets), options.executor);
  concrete.push_back(cf);
  return cf;
}

std::shared_ptr<ConcreteFunction::Impl> Function::State::find_or_trace(const TensorList& inputs) {
  if (options.input_signature) {
    check_inputs(options.name, *options.input_signature, inputs);
    for (const auto& cf : concrete)
      if (cf->signature == *options.input_signature) return cf;
    return trace(*options.input_signature);
  }
  // The most specific concrete function that accepts these inputs.
  std::shared_ptr<ConcreteFunction::Impl> best;
  int best_unknown = INT_MAX;
  for (const auto& cf : concrete) {
    if (!signature_matches(cf->signature, inputs)) continue;
    const int u = unknown_dims(cf->signature);
    if (u < best_unknown) best = cf, best_unknown = u;
  }
  if (best) return best;
  const Signature sig = signature_of(inputs);
  if (options.generalize_shapes) {
    // A dim seen with a second size becomes unknown: trace once with the fewest such dims.
    std::optional<Signature> general;
    for (const auto& cf : concrete) {
      std::optional<Signature> s = generalize(cf->signature, sig);
      if (s && (!general || unknown_dims(*s) < unknown_dims(*general))) general = std::move(s);
    }
    if (general) return trace(*general);
  }
  return trace(sig);
}

Function::Function(Callable callable, FunctionOptions options) : state_(std::make_shared<State>()) {
  DF_CHECK(callable, "[function] needs a callable");
  state_->callable = std::move(callable);
  state_->options = std::move(options);
}

TensorList Function::operator()(const TensorList& inputs) const {
  DF_CHECK(state_, "[function] call of an empty Function");
  // Inside another trace or graph: inline (the callable adds its ops to that graph).
  if (current_build_scope()) return state_->callable(inputs);
  for (size_t i = 0; i < inputs.size(); ++i)
    DF_CHECK(inputs[i].defined() && !inputs[i].is_symbolic(), "[function] '", state_->options.name, "' input ", i,
             " is ", inputs[i].defined() ? "symbolic outside a graph" : "undefined");
  std::shared_ptr<ConcreteFunction::Impl> cf;
  {
    std::lock_guard<std::recursive_mutex> lock(state_->mu);
    cf = state_->find_or_trace(inputs);
  }
  return cf->executor->run(inputs);
}

ConcreteFunction Function::get_concrete_function(const Signature& signature) const {
  DF_CHECK(state_, "[function] get_concrete_function of an empty Function");
  std::lock_guard<std::recursive_mutex> lock(state_->mu);
  for (const auto& cf : state_->concrete)
    if (cf->signature == signature) return ConcreteFunction(cf);
  return ConcreteFunction(state_->trace(signature));
}

ConcreteFunction Function::get_concrete_function() const {
  DF_CHECK(state_ && state_->options.input_signature, "[function] '", state_ ? state_->options.name : "",
           "' has no input_signature: pass a signature to get_concrete_function");
  return get_concrete_function(*state_->options.input_signature);
}

std::vector<ConcreteFunction> Function::concrete_functions() const {
  std::lock_guard<std::recursive_mutex> lock(state_->mu);
  std::vector<ConcreteFunction> out;
  for (const auto& cf : state_->concrete) out.push_back(ConcreteFunction(cf));
  return out;
}

int Function::trace_count() const {
  std::lock_guard<std::recursive_mutex> lock(state_->mu);
  return state_->traces;
}
const std::string& Function::name() const { return state_->options.name; }
const FunctionOptions& Function::options() const { return state_->options; }

}  // namespace deepflow
