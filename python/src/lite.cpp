// SPDX-License-Identifier: Apache-2.0
// deepflow._deepflow's view of deepflow_lite: the interpreter, its tensors as numpy arrays
// (zero-copy views; python/deepflow/lite/ builds tf.lite.Interpreter's API on them).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "deepflow/lite/interpreter.h"
#include "schema/tflite_generated.h"

namespace deepflow::py {
namespace {

using lite::DType;

// The numpy dtype name of a lite type ("" when numpy has none).
const char* numpy_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kFloat64: return "float64";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kUInt16: return "uint16";
    case DType::kInt32: return "int32";
    case DType::kUInt32: return "uint32";
    case DType::kInt64: return "int64";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kComplex64: return "complex64";
    case DType::kComplex128: return "complex128";
    default: return "";
  }
}

nb::dlpack::dtype dlpack_of(DType t) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code c, uint8_t bits) { return nb::dlpack::dtype{uint8_t(c), bits, 1}; };
  switch (t) {
    case DType::kFloat32: return make(dtype_code::Float, 32);
    case DType::kFloat16: return make(dtype_code::Float, 16);
    case DType::kFloat64: return make(dtype_code::Float, 64);
    case DType::kInt8: return make(dtype_code::Int, 8);
    case DType::kUInt8: return make(dtype_code::UInt, 8);
    case DType::kInt16: return make(dtype_code::Int, 16);
    case DType::kUInt16: return make(dtype_code::UInt, 16);
    case DType::kInt32: return make(dtype_code::Int, 32);
    case DType::kUInt32: return make(dtype_code::UInt, 32);
    case DType::kInt64: return make(dtype_code::Int, 64);
    case DType::kUInt64: return make(dtype_code::UInt, 64);
    case DType::kBool: return make(dtype_code::Bool, 8);
    case DType::kComplex64: return make(dtype_code::Complex, 64);
    case DType::kComplex128: return make(dtype_code::Complex, 128);
    default: throw nb::value_error((std::string("[lite] tensors of type ") + lite::dtype_name(t) + " have no numpy dtype").c_str());
  }
}

/// One interpreter with the model it keeps alive.
struct PyInterpreter {
  std::shared_ptr<const lite::Model> model;
  std::unique_ptr<lite::Interpreter> interp;
};

nb::dict details(lite::Subgraph& g, int index) {
  const lite::Tensor& t = g.tensor(index);
  nb::dict d;
  d["name"] = t.name;
  d["index"] = index;
  d["shape"] = t.shape;
  d["shape_signature"] = t.shape_signature;
  d["dtype"] = numpy_name(t.type);
  d["scales"] = t.quant.scale;
  d["zero_points"] = t.quant.zero_point;
  d["quantized_dimension"] = t.quant.dim;
  return d;
}

}  // namespace

void init_lite(nb::module_& m) {
  nb::class_<PyInterpreter>(m, "_LiteInterpreter")
      .def("__init__",
           [](PyInterpreter* self, nb::object path, nb::object content, int threads, bool preserve, bool fast_int8) {
             new (self) PyInterpreter();
             if (!path.is_none()) {
               self->model = lite::Model::from_file(nb::cast<std::string>(path));
             } else {
               nb::bytes b = nb::cast<nb::bytes>(content);
               self->model = lite::Model::from_buffer(std::string_view(b.c_str(), b.size()), "<model_content>");
             }
             self->interp = std::make_unique<lite::Interpreter>(self->model, threads);
             self->interp->set_preserve_all_tensors(preserve);
             self->interp->set_fast_int8(fast_int8);
           },
           nb::arg("model_path").none(), nb::arg("model_content").none(), nb::arg("num_threads"),
           nb::arg("preserve_all_tensors") = false, nb::arg("fast_int8") = false)
      .def("inputs", [](PyInterpreter& s, int g) { return s.interp->subgraph(g).inputs(); }, nb::arg("subgraph") = 0)
      .def("outputs", [](PyInterpreter& s, int g) { return s.interp->subgraph(g).outputs(); }, nb::arg("subgraph") = 0)
      .def("num_subgraphs", [](PyInterpreter& s) { return s.interp->num_subgraphs(); })
      .def("num_tensors", [](PyInterpreter& s, int g) { return s.interp->subgraph(g).tensors().size(); },
           nb::arg("subgraph") = 0)
      .def("details", [](PyInterpreter& s, int index, int g) { return details(s.interp->subgraph(g), index); },
           nb::arg("index"), nb::arg("subgraph") = 0)
      .def("resize", [](PyInterpreter& s, int index, std::vector<int> shape, bool strict, int g) {
             s.interp->subgraph(g).resize_input(index, shape, strict);
           }, nb::arg("index"), nb::arg("shape"), nb::arg("strict"), nb::arg("subgraph") = 0)
      .def("allocate", [](PyInterpreter& s, int g) { s.interp->subgraph(g).allocate_tensors(); },
           nb::arg("subgraph") = 0)
      .def("needs_allocation", [](PyInterpreter& s, int g) { return s.interp->subgraph(g).needs_allocation(); },
           nb::arg("subgraph") = 0)
      .def("invoke", [](PyInterpreter& s, int g) {
             nb::gil_scoped_release release;
             s.interp->subgraph(g).invoke();
           }, nb::arg("subgraph") = 0)
      // A writable view of a tensor's memory, valid until the next allocate.
      .def("view", [](nb::handle self, int index, int g) {
             PyInterpreter& s = nb::cast<PyInterpreter&>(self);
             lite::Tensor& t = s.interp->subgraph(g).tensor(index);
             if (t.data_ptr == nullptr && t.num_elements() > 0)
               throw nb::value_error(("[lite] tensor " + std::to_string(index) + " '" + t.name +
                                      "' has no memory: call allocate_tensors() first").c_str());
             std::vector<size_t> shape(t.shape.begin(), t.shape.end());
             return nb::ndarray<nb::numpy>(t.data_ptr, shape.size(), shape.data(), self, nullptr, dlpack_of(t.type));
           }, nb::arg("index"), nb::arg("subgraph") = 0)
      .def("signatures", [](PyInterpreter& s) {
             // key -> (subgraph, [(name, tensor index)] of inputs, ... of outputs)
             nb::dict out;
             if (const auto* sigs = s.model->fb()->signature_defs()) {
               for (const auto* sig : *sigs) {
                 auto maps = [](const auto* v) {
                   nb::list l;
                   if (v)
                     for (const auto* m : *v) l.append(nb::make_tuple(m->name() ? m->name()->str() : "", m->tensor_index()));
                   return l;
                 };
                 out[nb::str(sig->signature_key() ? sig->signature_key()->c_str() : "")] =
                     nb::make_tuple(sig->subgraph_index(), maps(sig->inputs()), maps(sig->outputs()));
               }
             }
             return out;
           });
}

}  // namespace deepflow::py
