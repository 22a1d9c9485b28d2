// SPDX-License-Identifier: Apache-2.0
// Traced functions, control flow and graph mode: deepflow::Function with a Python
// callable, cond / while_loop with Python branches, Graph + GraphScope + Session for
// tf.compat.v1. The Python side (python/deepflow/_function.py, _graph.py) flattens
// nested structures and keys traces on Python values; these take and return flat lists.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "deepflow/function/control_flow.h"
#include "deepflow/function/function.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/node_observer.h"
#include "deepflow/graph/session.h"

namespace deepflow::py {
namespace {

TensorList tensors_of(nb::handle seq, const char* who) {
  TensorList out;
  if (seq.is_none()) return out;
  for (nb::handle x : seq) {
    if (x.is_none()) fail("[", who, "] a function returned None where a tensor is needed");
    out.push_back(to_tensor(x));
  }
  return out;
}

// Calls a Python function of a list of tensors that returns a list of tensors, from C++
// code that may run without the GIL.
std::function<TensorList(const TensorList&)> list_fn(nb::object f, const char* who) {
  return [f = std::move(f), who](const TensorList& in) -> TensorList {
    nb::gil_scoped_acquire gil;
    nb::list args;
    for (const Tensor& t : in) args.append(nb::cast(t));
    return tensors_of(f(args), who);
  };
}

Signature signature_of_py(nb::handle sig) {
  Signature s;
  for (nb::handle item : sig) {
    auto [dtype, dims] = nb::cast<std::pair<int, std::vector<int64_t>>>(item);
    s.push_back(TensorType{dtype_of_int(dtype), Shape(dims)});
  }
  return s;
}

nb::list signature_to_py(const Signature& s) {
  nb::list out;
  for (const TensorType& t : s) out.append(nb::make_tuple(int(t.dtype), t.shape.to_vector()));
  return out;
}

// One `with graph.as_default():` block: the GraphScope lives between enter and exit.
struct PyGraphScope {
  std::shared_ptr<Graph> graph;
  std::unique_ptr<GraphScope> scope;
};

// Calls the Python callable in `context` (a strong reference) with the new node's name.
void call_py_observer(const Node& node, void* context) {
  nb::gil_scoped_acquire gil;
  nb::handle(static_cast<PyObject*>(context))(node.name);
}

}  // namespace

void init_function(nb::module_& m) {
  // Where each traced node was built (_traceback.py): sets this thread's observer to a
  // callable taking the node's name (None: none) and returns the one it replaces.
  m.def("_set_node_observer", [](nb::object callback) -> nb::object {
    NodeObserver next;
    if (!callback.is_none()) next = {&call_py_observer, callback.release().ptr()};
    NodeObserver prev = set_node_observer(next);
    if (!prev.context) return nb::none();
    return nb::steal(static_cast<PyObject*>(prev.context));
  }, nb::arg("callback").none());

  nb::class_<ConcreteFunction>(m, "_ConcreteFunction")
      .def("__call__", [](const ConcreteFunction& f, nb::handle inputs) {
        TensorList in = tensors_of(inputs, "ConcreteFunction");
        nb::gil_scoped_release nogil;
        return f(in);
      })
      .def_prop_ro("name", &ConcreteFunction::name)
      .def_prop_ro("_inputs", [](const ConcreteFunction& f) { return signature_to_py(f.inputs()); })
      .def_prop_ro("_outputs", [](const ConcreteFunction& f) { return signature_to_py(f.outputs()); })
      .def("_graph_text", &ConcreteFunction::to_string)
      .def("_optimized_graph_text", [](const ConcreteFunction& f) { return f.optimized_graph().to_string(); })
      .def("_graph", [](const ConcreteFunction& f) { return std::const_pointer_cast<Graph>(f.graph_ptr()); });

  nb::class_<Function>(m, "_Function")
      .def("__init__", [](Function* self, nb::object callable, const std::string& name, nb::handle signature,
                          bool generalize_shapes) {
        FunctionOptions o;
        o.name = name;
        if (!signature.is_none()) o.input_signature = signature_of_py(signature);
        o.generalize_shapes = generalize_shapes;
        new (self) Function(list_fn(std::move(callable), "tf.function"), std::move(o));
      }, nb::arg("callable"), nb::arg("name"), nb::arg("input_signature").none() = nb::none(),
         nb::arg("generalize_shapes") = true)
      .def("__call__", [](const Function& f, nb::handle inputs) {
        TensorList in = tensors_of(inputs, "tf.function");
        nb::gil_scoped_release nogil;
        return f(in);
      })
      .def("get_concrete_function", [](const Function& f, nb::handle signature) {
        Signature s = signature_of_py(signature);
        nb::gil_scoped_release nogil;
        return f.get_concrete_function(s);
      })
      .def("concrete_functions", &Function::concrete_functions)
      .def_prop_ro("trace_count", &Function::trace_count);

  m.def("cond", [](const TensorArg& pred, nb::object true_fn, nb::object false_fn) {
    auto t = list_fn(std::move(true_fn), "tf.cond");
    auto f = list_fn(std::move(false_fn), "tf.cond");
    return cond(pred, [&] { return t({}); }, [&] { return f({}); });
  });
  m.def("while_loop", [](nb::object cond_fn, nb::object body_fn, nb::handle loop_vars,
                         std::optional<int64_t> maximum_iterations) {
    auto c = list_fn(std::move(cond_fn), "tf.while_loop");
    auto b = list_fn(std::move(body_fn), "tf.while_loop");
    auto cond1 = [&](const TensorList& v) -> Tensor {
      TensorList r = c(v);
      DF_CHECK(r.size() == 1, "[tf.while_loop] cond must return one boolean tensor, got ", r.size());
      return r[0];
    };
    return while_loop(cond1, b, tensors_of(loop_vars, "tf.while_loop"), maximum_iterations);
  });

  // Graph mode.
  nb::class_<Graph>(m, "_Graph")
      .def(nb::new_([] { return std::make_shared<Graph>(); }))
      .def("_text", &Graph::to_string);
  nb::class_<PyGraphScope>(m, "_GraphScope")
      .def("__init__", [](PyGraphScope* self, std::shared_ptr<Graph> g) { new (self) PyGraphScope{std::move(g), nullptr}; })
      .def("_enter", [](PyGraphScope& s) {
        DF_CHECK(!s.scope, "[Graph.as_default] this scope is already entered");
        s.scope = std::make_unique<GraphScope>(s.graph);
      })
      .def("_exit", [](PyGraphScope& s) { s.scope.reset(); });
  m.def("_building_graph", [] { return GraphScope::current() != nullptr; });
  // tf.init_scope: ops run eagerly while it is entered, even inside a trace.
  struct PyInitScope {
    std::unique_ptr<BuildScopeGuard> guard;
  };
  nb::class_<PyInitScope>(m, "_InitScope")
      .def(nb::init<>())
      .def("_enter", [](PyInitScope& s) { s.guard = std::make_unique<BuildScopeGuard>(nullptr); })
      .def("_exit", [](PyInitScope& s) { s.guard.reset(); });
  m.def("_current_graph", []() -> std::shared_ptr<Graph> {
    GraphScope* s = GraphScope::current();
    return s ? s->graph_ptr() : nullptr;
  });
  struct PyNameScope {
    std::string name;
    std::unique_ptr<NameScope> scope;
  };
  nb::class_<PyNameScope>(m, "_NameScope")
      .def("__init__", [](PyNameScope* self, const std::string& n) { new (self) PyNameScope{n, nullptr}; })
      .def("_enter", [](PyNameScope& s) { s.scope = std::make_unique<NameScope>(s.name); })
      .def("_exit", [](PyNameScope& s) { s.scope.reset(); });

  nb::class_<Session>(m, "_Session")
      .def("__init__", [](Session* self, std::shared_ptr<Graph> g) { new (self) Session(std::move(g)); })
      .def("_run", [](Session& s, nb::handle feeds, nb::handle fetches) {
        std::vector<std::pair<SessionRef, Tensor>> f;
        for (nb::handle item : feeds) {
          nb::tuple kv = nb::cast<nb::tuple>(item);
          Tensor key = nb::cast<Tensor>(kv[0]);
          f.emplace_back(SessionRef(key), to_tensor(kv[1], key.dtype()));
        }
        std::vector<SessionRef> out, targets;
        for (nb::handle x : fetches) {
          if (nb::isinstance<nb::str>(x)) out.emplace_back(nb::cast<std::string>(x));
          else out.emplace_back(nb::cast<Tensor>(x));
        }
        nb::gil_scoped_release nogil;
        return s.run(f, out, targets);
      });
}

}  // namespace deepflow::py
