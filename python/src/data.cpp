// SPDX-License-Identifier: Apache-2.0
// tf.data and tf.io over deepflow/data: the Dataset and Iterator handles, the TFRecord
// writer, and the ops that parse tf.train.Example and read files (custom ops, so they
// run inside traced map functions without Python).
//
// Elements cross as flat lists of tensors: the Python side (python/deepflow/data/)
// keeps the nested structure (tuples, dicts) and TensorSpecs, and packs them back.
//
// The GIL: the C++ pipeline runs without it (next(), making and destroying iterators),
// so parallel map threads never wait on Python. A traced map or filter function is a
// ConcreteFunction and runs without Python at all. Only the Python callables that must
// stay Python (a generator, a flat_map / interleave function returning a Dataset) take
// the GIL, while they run. Python objects held by C++ closures are PyRefs, whose last
// release takes the GIL on whatever thread it happens.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "bind.h"
#include "deepflow/data/dataset.h"
#include "deepflow/data/example.h"
#include "deepflow/data/tfrecord.h"
#include "deepflow/function/function.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/ops/op.h"

namespace deepflow::py {
namespace {

using data::Dataset;
using data::Element;
using data::ElementSpec;

bool finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// A reference to a Python object that C++ closures may copy and drop on any thread:
// copies share one reference, and the last one takes the GIL to release it.
class PyRef {
 public:
  PyRef() = default;
  /// Needs the GIL (it takes a reference).
  explicit PyRef(nb::handle h) : p_(h.inc_ref().ptr(), release) {}
  nb::handle get() const { return nb::handle(p_.get()); }

 private:
  static void release(PyObject* o) {
    if (!Py_IsInitialized() || finalizing()) return;  // the interpreter frees everything itself
    PyGILState_STATE s = PyGILState_Ensure();
    Py_DECREF(o);
    PyGILState_Release(s);
  }
  std::shared_ptr<PyObject> p_;
};

// Runs f with the GIL from pipeline code; a Python exception becomes a deepflow::Error
// "<Class>: <message>" (the dataset adds "[Dataset.x] element i: " in front), so it
// crosses the C++ pipeline and reaches Python again through the error translator.
template <class F>
auto with_python(const char* where, F&& f) -> decltype(f()) {
  if (finalizing()) fail("[", where, "] the Python interpreter is shutting down");
  nb::gil_scoped_acquire gil;
  try {
    return f();
  } catch (nb::python_error& e) {
    std::string type = nb::cast<std::string>(nb::handle(e.type()).attr("__name__"));
    std::string msg = nb::cast<std::string>(nb::str(e.value()));
    throw Error(type + ": " + msg);
  } catch (const nb::builtin_exception& e) {
    throw Error(e.what());
  }
}

Element element_of(nb::handle seq) {
  std::vector<Tensor> ts;
  for (nb::handle x : seq) ts.push_back(to_tensor(x));
  return Element(std::move(ts));
}

nb::list list_of(const Element& e) {
  nb::list out;
  for (const Tensor& t : e.tensors()) out.append(nb::cast(t));
  return out;
}

// [(dtype number, [dims with -1])] -> ElementSpec (a tuple spec).
ElementSpec spec_of_py(nb::handle sig) {
  ElementSpec s;
  for (nb::handle item : sig) {
    auto [dtype, dims] = nb::cast<std::pair<int, std::vector<int64_t>>>(item);
    s.components.push_back(TensorType{dtype_of_int(dtype), Shape(dims)});
  }
  return s;
}

nb::list spec_to_py(const ElementSpec& s) {
  nb::list out;
  for (const TensorType& t : s.components) out.append(nb::make_tuple(int(t.dtype), t.shape.to_vector()));
  return out;
}

// One pass over a dataset. Making, advancing and destroying the C++ iterator wait on
// pipeline threads that may need the GIL (a generator): all three release it. close()
// ends the pass early; Python calls it for live iterators at exit, before the
// interpreter finalizes, since a pipeline thread that takes the GIL after that point
// is killed by Python, which takes the process down.
struct PyIterator {
  std::unique_ptr<data::Iterator> it;
  std::mutex mu;  // next() and close() from different Python threads
  ~PyIterator() { close(); }
  void close() {
    std::unique_ptr<data::Iterator> dead;
    {
      std::unique_lock<std::mutex> lock(mu, std::try_to_lock);
      if (!lock.owns_lock()) return;  // another thread is in next(): it keeps the pass
      dead = std::move(it);
    }
    if (!dead) return;
    nb::gil_scoped_release nogil;
    dead.reset();
  }
  std::optional<Element> next() {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mu);
    DF_CHECK(it != nullptr, "[Iterator.get_next] the iterator was closed");
    return it->next();
  }
};

// A function of one element returning a Dataset (flat_map, interleave), in Python.
data::DatasetFn dataset_fn(nb::handle fn, const char* where) {
  return [f = PyRef(fn), where](const Element& e) -> Dataset {
    return with_python(where, [&] {
      nb::object r = f.get()(list_of(e));
      Dataset d;
      if (!nb::try_cast(r, d, false))
        fail("[", where, "] the function must return a Dataset, got ", nb::cast<std::string>(nb::repr(r)));
      return d;
    });
  };
}

// A generator: make() returns a Python iterator of flat lists of tensors.
std::function<data::GeneratorFn()> generator_factory(nb::handle make) {
  return [mk = PyRef(make)]() -> data::GeneratorFn {
    PyRef it = with_python("Dataset.from_generator", [&] { return PyRef(mk.get()()); });
    return [it]() -> std::optional<Element> {
      return with_python("Dataset.from_generator", [&]() -> std::optional<Element> {
        nb::object item = nb::steal(PyIter_Next(it.get().ptr()));
        if (!item.is_valid()) {
          if (PyErr_Occurred()) throw nb::python_error();
          return std::nullopt;
        }
        return element_of(item);
      });
    };
  };
}

std::vector<std::string> strings_of(nb::handle seq) {
  std::vector<std::string> out;
  for (nb::handle x : seq) {
    if (PyBytes_Check(x.ptr())) out.emplace_back(PyBytes_AS_STRING(x.ptr()), size_t(PyBytes_GET_SIZE(x.ptr())));
    else out.push_back(nb::cast<std::string>(x));
  }
  return out;
}

void bind_dataset(nb::module_& d) {
  nb::class_<Dataset> cls(d, "Dataset");
  // --- sources ---
  cls.def_static("from_tensor_slices", [](nb::handle comps) { return Dataset::from_tensor_slices(element_of(comps)); })
      .def_static("from_tensors", [](nb::handle comps) { return Dataset::from_tensors(element_of(comps)); })
      .def_static("range", [](int64_t start, int64_t stop, int64_t step, int dtype) {
        return Dataset::range(start, stop, step, dtype_of_int(dtype));
      })
      .def_static("from_generator", [](nb::handle make, nb::handle sig) {
        return Dataset::from_generator(generator_factory(make), spec_of_py(sig));
      }, "make() returns a Python iterator of flat lists of tensors matching sig.")
      .def_static("list_files", [](const std::string& pattern, std::optional<bool> shuffle,
                                   std::optional<int64_t> seed) {
        return Dataset::list_files(pattern, shuffle, seed);
      })
      .def_static("text_line", [](nb::handle files, const std::string& compression, int64_t parallel) {
        return Dataset::text_line(strings_of(files), {.compression_type = compression, .num_parallel_reads = parallel});
      })
      .def_static("tfrecord", [](nb::handle files, const std::string& compression, int64_t buffer_size,
                                 int64_t parallel) {
        data::TFRecordOptions o;
        o.compression_type = compression;
        o.buffer_size = buffer_size;
        o.num_parallel_reads = parallel;
        return Dataset::tfrecord(strings_of(files), o);
      })
      .def_static("csv", [](nb::handle files, nb::handle defaults, std::vector<int> dtypes, bool header,
                            const std::string& delim, const std::string& na_value, std::vector<int> select_cols,
                            const std::string& compression) {
        DF_CHECK(delim.size() == 1, "[CsvDataset] field_delim must be one character, got '", delim, "'");
        data::CsvOptions o;
        for (nb::handle x : defaults) o.record_defaults.push_back(x.is_none() ? Tensor() : to_tensor(x));
        for (int t : dtypes) o.column_dtypes.push_back(dtype_of_int(t));
        o.header = header;
        o.field_delim = delim[0];
        o.na_value = na_value;
        o.select_cols = std::move(select_cols);
        o.compression_type = compression;
        return Dataset::csv(strings_of(files), std::move(o));
      })
      .def_static("zip", [](const std::vector<Dataset>& ds) { return Dataset::zip(ds); });

  // --- transformations ---
  cls.def("map", [](const Dataset& ds, const ConcreteFunction& f, int64_t parallel, std::optional<bool> det) {
        data::MapFn fn = [f](const Element& e) { return Element(f(e.tensors())); };
        return ds.map(std::move(fn), {.num_parallel_calls = parallel, .deterministic = det});
      }, "Applies a traced function (its ConcreteFunction) to every element, without Python.")
      .def("filter", [](const Dataset& ds, const ConcreteFunction& f) {
        return ds.filter([f](const Element& e) {
          TensorList r = f(e.tensors());
          DF_CHECK(r.size() == 1 && r[0].dtype() == DType::Bool && r[0].size() == 1,
                   "[Dataset.filter] the predicate must return one bool scalar, got ", r.size(), " outputs");
          return r[0].flat(0) != 0;
        });
      })
      .def("flat_map", [](const Dataset& ds, nb::handle fn) { return ds.flat_map(dataset_fn(fn, "Dataset.flat_map")); })
      .def("interleave", [](const Dataset& ds, nb::handle fn, int64_t cycle, int64_t block, int64_t parallel,
                            std::optional<bool> det) {
        return ds.interleave(dataset_fn(fn, "Dataset.interleave"), {.cycle_length = cycle, .block_length = block,
                                                                     .num_parallel_calls = parallel,
                                                                     .deterministic = det});
      })
      .def("batch", [](const Dataset& ds, int64_t n, bool drop, int64_t parallel, std::optional<bool> det) {
        return ds.batch(n, {.drop_remainder = drop, .num_parallel_calls = parallel, .deterministic = det});
      })
      .def("padded_batch", [](const Dataset& ds, int64_t n, std::vector<std::vector<int64_t>> shapes,
                              nb::handle values, bool drop) {
        data::PaddedBatchOptions o;
        o.drop_remainder = drop;
        for (auto& s : shapes) o.padded_shapes.push_back(Shape(s));
        for (nb::handle v : values) o.padding_values.push_back(to_tensor(v));
        return ds.padded_batch(n, std::move(o));
      })
      .def("unbatch", &Dataset::unbatch)
      .def("shuffle", [](const Dataset& ds, int64_t n, std::optional<int64_t> seed, bool reshuffle) {
        return ds.shuffle(n, {.seed = seed, .reshuffle_each_iteration = reshuffle});
      })
      .def("repeat", &Dataset::repeat)
      .def("take", &Dataset::take)
      .def("skip", &Dataset::skip)
      .def("cache", &Dataset::cache)
      .def("prefetch", &Dataset::prefetch)
      .def("concatenate", &Dataset::concatenate)
      .def("enumerate", &Dataset::enumerate)
      .def("shard", &Dataset::shard)
      .def("with_options", [](const Dataset& ds, bool deterministic, bool autotune, int64_t cpu, int64_t ram) {
        data::Options o;
        o.deterministic = deterministic;
        o.autotune.enabled = autotune;
        o.autotune.cpu_budget = cpu;
        o.autotune.ram_budget = ram;
        return ds.with_options(o);
      });

  // --- inspection ---
  cls.def("cardinality", &Dataset::cardinality)
      .def("_spec", [](const Dataset& ds) { return spec_to_py(ds.element_spec()); })
      .def("_spec_string", [](const Dataset& ds) { return ds.element_spec().to_string(); })
      .def("iter", [](const Dataset& ds) {
        auto out = std::make_unique<PyIterator>();
        nb::gil_scoped_release nogil;
        out->it = std::make_unique<data::Iterator>(ds.iter());
        return out.release();
      }, nb::rv_policy::take_ownership);

  nb::class_<PyIterator>(d, "Iterator")
      .def("next", [](PyIterator& self) -> nb::object {
        std::optional<Element> e = self.next();
        if (!e) return nb::none();
        return list_of(*e);
      }, "The next element as a flat list of tensors, or None at the end of the pass.")
      .def("close", &PyIterator::close, "Ends the pass: stops the pipeline's threads, frees its buffers.")
      .def("save", [](PyIterator& self) {
        std::string s;
        {
          nb::gil_scoped_release nogil;
          std::lock_guard<std::mutex> lock(self.mu);
          DF_CHECK(self.it != nullptr, "[Iterator.save] the iterator was closed");
          s = self.it->save();
        }
        return nb::bytes(s.data(), s.size());
      })
      .def("restore", [](PyIterator& self, nb::bytes state) {
        std::string s(state.c_str(), state.size());
        nb::gil_scoped_release nogil;
        std::lock_guard<std::mutex> lock(self.mu);
        DF_CHECK(self.it != nullptr, "[Iterator.restore] the iterator was closed");
        self.it->restore(s);
      });
}

void bind_tfrecord(nb::module_& d) {
  nb::class_<data::RecordWriter>(d, "RecordWriter")
      .def("__init__", [](data::RecordWriter* self, const std::string& path, const std::string& compression,
                          int level) {
        new (self) data::RecordWriter(path, {.compression_type = compression, .compression_level = level});
      })
      .def("write", [](data::RecordWriter& w, nb::bytes record) {
        w.write(std::string_view(record.c_str(), record.size()));
      })
      .def("flush", [](data::RecordWriter& w) {
        nb::gil_scoped_release nogil;
        w.flush();
      })
      .def("close", [](data::RecordWriter& w) {
        nb::gil_scoped_release nogil;
        w.close();
      })
      .def_prop_ro("path", &data::RecordWriter::path)
      .def_prop_ro("records_written", &data::RecordWriter::records_written);
  d.def("tfrecord_skipped_records", &data::tfrecord_skipped_records);
  d.attr("AUTOTUNE") = data::kAutotune;
  d.attr("INFINITE_CARDINALITY") = data::kInfiniteCardinality;
  d.attr("UNKNOWN_CARDINALITY") = data::kUnknownCardinality;
}

// --- ops: tf.io.parse_example / parse_single_example, read_file, write_file ---
//
// Custom ops (the custom-op path, as py_ops.cpp) so that a traced map function can
// parse records: the executor runs them like any kernel, without Python. The feature
// spec rides in a string attribute (so CSE compares it by value); default values are
// inputs after `serialized`. Outputs: the FixedLenFeatures by name, then the three
// tensors (indices, values, dense_shape) of each VarLenFeature by name.

struct FeatureEntry {
  std::string name;
  bool fixed = true;
  DType dtype = DType::Float32;
  Shape shape;
  bool has_default = false;
};

// "<name length>:<name><F|V><dtype>,<rank>[,<dim>...],<has_default>;" per feature.
std::string encode_features(const std::vector<FeatureEntry>& fs) {
  std::ostringstream os;
  for (const FeatureEntry& f : fs) {
    os << f.name.size() << ':' << f.name << (f.fixed ? 'F' : 'V') << int(f.dtype) << ',' << f.shape.rank();
    for (int64_t d : f.shape) os << ',' << d;
    os << ',' << int(f.has_default) << ';';
  }
  return os.str();
}

std::vector<FeatureEntry> decode_features(const std::string& s) {
  std::vector<FeatureEntry> out;
  size_t pos = 0;
  auto number = [&](char end) {
    const size_t stop = s.find(end, pos);
    DF_CHECK(stop != std::string::npos, "[parse_example] malformed features attribute at byte ", pos);
    const int64_t v = std::stoll(s.substr(pos, stop - pos));
    pos = stop + 1;
    return v;
  };
  while (pos < s.size()) {
    FeatureEntry f;
    const int64_t len = number(':');
    DF_CHECK(len >= 0 && pos + size_t(len) < s.size(), "[parse_example] malformed features attribute");
    f.name = s.substr(pos, size_t(len));
    pos += size_t(len);
    f.fixed = s[pos++] == 'F';
    f.dtype = dtype_of_int(int(number(',')));
    const int64_t rank = number(',');
    for (int64_t i = 0; i < rank; ++i) f.shape.push_back(number(','));
    f.has_default = number(';') != 0;
    out.push_back(std::move(f));
  }
  return out;
}

void infer_parse_example(const OpCall& c, TypeList& out) {
  const bool single = c.attr_bool("single");
  const char* who = single ? "parse_single_example" : "parse_example";
  const Tensor& ser = c.in(0);
  DF_CHECK(ser.dtype() == DType::String, "[", who, "] serialized must be a string tensor, got ",
           dtype_name(ser.dtype()));
  DF_CHECK(ser.rank() == (single ? 0 : 1), "[", who, "] serialized must be ", single ? "a scalar" : "a vector [batch]",
           " of strings, got shape ", ser.shape());
  const std::vector<FeatureEntry> fs = decode_features(c.attr_string("features"));
  int defaults = 0;
  for (const FeatureEntry& f : fs) {
    if (!f.fixed) continue;
    defaults += f.has_default;
    Shape s = f.shape;
    if (!single) s.insert(0, ser.shape()[0]);
    out.push_back({f.dtype, s});
  }
  DF_CHECK(c.num_inputs() == 1 + defaults, "[", who, "] ", c.num_inputs() - 1, " default values for ", defaults,
           " features that have one");
  for (const FeatureEntry& f : fs) {
    if (f.fixed) continue;
    out.push_back({DType::Int64, Shape{kUnknownDim, single ? 1 : 2}});
    out.push_back({f.dtype, Shape{kUnknownDim}});
    out.push_back({DType::Int64, Shape{single ? 1 : 2}});
  }
}

void run_parse_example(const OpCall& c, TensorList& out) {
  BuildScopeGuard eager(nullptr);  // results are values, even when called while a graph is built
  const std::vector<FeatureEntry> fs = decode_features(c.attr_string("features"));
  std::map<std::string, data::FeatureSpec> features;
  int k = 1;
  for (const FeatureEntry& f : fs) {
    if (f.fixed) features[f.name] = data::FixedLenFeature{f.dtype, f.shape, f.has_default ? c.in(k++) : Tensor()};
    else features[f.name] = data::VarLenFeature{f.dtype};
  }
  data::ParsedExamples p = c.attr_bool("single") ? data::parse_single_example(c.in(0), features)
                                                 : data::parse_example(c.in(0), features);
  size_t i = 0;
  for (const FeatureEntry& f : fs)
    if (f.fixed) out[i++] = p.dense.at(f.name);
  for (const FeatureEntry& f : fs) {
    if (f.fixed) continue;
    const data::SparseTensor& st = p.sparse.at(f.name);
    out[i++] = st.indices;
    out[i++] = st.values;
    out[i++] = st.dense_shape;
  }
}

OpId parse_example_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "parse_example",
        .num_inputs = -1,
        .attrs = {AttrSpec::required_of("features", AttrKind::String), {"single", false}},
        .infer = infer_parse_example,
        .non_differentiable = true,
        .view_output = true,  // the kernel sets outputs whose sizes only parsing finds
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = run_parse_example});
    return op;
  }();
  return id;
}

const std::string& string_scalar_of(const Tensor& t, const char* who, const char* what) {
  DF_CHECK(t.dtype() == DType::String && t.rank() == 0, "[", who, "] ", what, " must be a string scalar, got ",
           dtype_name(t.dtype()), t.shape());
  return *t.data<std::string>();
}

// read_file and write_file touch the file system on every call: stateful, so they are
// never folded into constants at trace time.
OpId read_file_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "read_file",
        .infer = [](const OpCall& c, TypeList& out) {
          DF_CHECK(c.in(0).dtype() == DType::String && c.in(0).rank() == 0,
                   "[read_file] filename must be a string scalar, got ", dtype_name(c.in(0).dtype()), c.in(0).shape());
          out.push_back({DType::String, Shape{}});
        },
        .non_differentiable = true,
        .stateful = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
      const std::string& path = string_scalar_of(c.in(0), "read_file", "filename");
      std::ifstream f(path, std::ios::binary);
      DF_CHECK(f.good(), "[read_file] cannot open ", path, ": ", std::strerror(errno));
      std::ostringstream buf;
      buf << f.rdbuf();
      DF_CHECK(!f.bad(), "[read_file] cannot read ", path);
      *out[0].data<std::string>() = std::move(buf).str();
    }});
    return op;
  }();
  return id;
}

OpId write_file_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "write_file",
        .num_inputs = 2,
        .infer = [](const OpCall& c, TypeList&) {
          for (int i = 0; i < 2; ++i)
            DF_CHECK(c.in(i).dtype() == DType::String && c.in(i).rank() == 0, "[write_file] ",
                     i ? "contents" : "filename", " must be a string scalar, got ", dtype_name(c.in(i).dtype()),
                     c.in(i).shape());
        },
        .non_differentiable = true,
        .stateful = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList&) {
      const std::string& path = string_scalar_of(c.in(0), "write_file", "filename");
      const std::string& contents = string_scalar_of(c.in(1), "write_file", "contents");
      // As TensorFlow's: the directories on the way are created.
      const std::filesystem::path parent = std::filesystem::path(path).parent_path();
      std::error_code ec;
      if (!parent.empty()) std::filesystem::create_directories(parent, ec);
      std::FILE* f = std::fopen(path.c_str(), "wb");
      DF_CHECK(f != nullptr, "[write_file] cannot open ", path, " for writing: ", std::strerror(errno));
      const bool ok = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
      DF_CHECK(std::fclose(f) == 0 && ok, "[write_file] cannot write ", path, ": ", std::strerror(errno));
    }});
    return op;
  }();
  return id;
}

void bind_ops(nb::module_& d) {
  // features: [(name, fixed, dtype, dims, default or None)]; returns the flat outputs.
  d.def("parse_example", [](const TensorArg& serialized, nb::handle features, bool single) {
    std::vector<FeatureEntry> fs;
    std::vector<std::pair<std::string, Tensor>> defaults;
    for (nb::handle item : features) {
      nb::tuple t = nb::cast<nb::tuple>(item);
      FeatureEntry f;
      f.name = nb::cast<std::string>(t[0]);
      f.fixed = nb::cast<bool>(t[1]);
      f.dtype = dtype_of_int(nb::cast<int>(t[2]));
      f.shape = Shape(nb::cast<std::vector<int64_t>>(t[3]));
      f.has_default = !t[4].is_none();
      if (f.has_default) defaults.emplace_back(f.name, to_tensor(t[4], f.dtype));
      fs.push_back(std::move(f));
    }
    std::sort(fs.begin(), fs.end(), [](const FeatureEntry& a, const FeatureEntry& b) { return a.name < b.name; });
    std::sort(defaults.begin(), defaults.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    TensorList in{serialized.t};
    for (auto& [name, t] : defaults) in.push_back(t);
    return dispatch(parse_example_op(), in, {{"features", encode_features(fs)}, {"single", single}});
  });
  d.def("read_file", [](const TensorArg& filename) { return dispatch1(read_file_op(), {filename.t}); });
  d.def("write_file", [](const TensorArg& filename, const TensorArg& contents) {
    dispatch(write_file_op(), {filename.t, contents.t});
  });
}

}  // namespace

data::Iterator* iterator_of(nb::handle obj) {
  if (!nb::isinstance<PyIterator>(obj)) return nullptr;
  PyIterator& self = nb::cast<PyIterator&>(obj);
  DF_CHECK(self.it != nullptr, "[Checkpoint] the dataset iterator was closed");
  return self.it.get();
}

void init_data(nb::module_& m) {
  nb::module_ d = m.def_submodule("data", "tf.data and tf.io over deepflow/data");
  bind_dataset(d);
  bind_tfrecord(d);
  bind_ops(d);
  init_data_graph(d);
}

}  // namespace deepflow::py
