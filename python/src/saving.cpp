// SPDX-License-Identifier: Apache-2.0
// Saving from Python: SavedModels (tf.saved_model.save / load), Keras model directories
// (model.save / load_model / export) and object-based checkpoints (tf.train.Checkpoint,
// CheckpointManager) over deepflow/io. python/deepflow/saved_model, train and
// keras/_saving.py walk the Python objects; these take flat lists and maps.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "deepflow/io/checkpoint.h"
#include "deepflow/io/checkpoint_manager.h"
#include "deepflow/io/keras_file.h"
#include "deepflow/io/keras_saving.h"
#include "deepflow/io/saved_model.h"

namespace deepflow::py {
namespace {

namespace k = deepflow::keras;

nb::list type_map_to_py(const std::map<std::string, TensorType>& m) {
  nb::list out;
  for (const auto& [key, t] : m) out.append(nb::make_tuple(key, int(t.dtype), t.shape.to_vector()));
  return out;
}

// A Python object tree -> what a checkpoint saves: dicts are nodes; leaves are layers and
// models, optimizers (their C++ object), variables and dataset iterators.
io::Trackable trackable_of(nb::handle obj, const std::string& path) {
  if (nb::isinstance<nb::dict>(obj)) {
    io::Trackable::Map children;
    for (auto [key, value] : nb::cast<nb::dict>(obj)) {
      const std::string name = nb::cast<std::string>(nb::str(key));
      children.emplace(name, trackable_of(value, path + "/" + name));
    }
    return io::Trackable(std::move(children));
  }
  if (nb::isinstance<k::Layer>(obj)) return io::Trackable(nb::cast<std::shared_ptr<k::Layer>>(obj));
  if (nb::isinstance<k::Optimizer>(obj)) return io::Trackable(nb::cast<std::shared_ptr<k::Optimizer>>(obj));
  if (nb::isinstance<Variable>(obj)) return io::Trackable(nb::cast<Variable>(obj));
  if (data::Iterator* it = iterator_of(obj)) return io::Trackable(it);
  fail("[Checkpoint] ", path, ": cannot checkpoint a ", nb::cast<std::string>(nb::str(obj.type().attr("__name__"))),
       " (give variables, Keras layers and models, optimizers, dataset iterators, or objects holding them)");
}

void bind_saved_model(nb::module_& m) {
  // specs: [(key, concrete function, input names, output names)]
  // metadata_fn(names of `extra` as saved) -> the object_metadata text.
  m.def("_save_saved_model", [](const std::string& dir, nb::handle specs, const std::vector<Variable>& extra,
                                nb::object metadata_fn, bool overwrite) {
    std::vector<io::SignatureSpec> sigs;
    for (nb::handle s : specs) {
      auto [key, fn, ins, outs] =
          nb::cast<std::tuple<std::string, ConcreteFunction, std::vector<std::string>, std::vector<std::string>>>(s);
      sigs.push_back({.key = key, .fn = fn, .input_names = ins, .output_names = outs});
    }
    io::SaveOptions o{.extra_variables = extra, .overwrite = overwrite};
    o.object_metadata_from_names = [&metadata_fn](const std::vector<std::string>& names) {
      return nb::cast<std::string>(metadata_fn(names));
    };
    return io::save_saved_model(dir, sigs, o);
  });
  m.def("_is_saved_model_dir", &io::is_saved_model_dir);
  m.def("_load_saved_model", [](const std::string& dir, const std::vector<std::string>& tags) {
    return io::load_saved_model(dir, tags);
  }, nb::call_guard<nb::gil_scoped_release>());

  nb::class_<io::SavedModel>(m, "_SavedModel")
      .def_prop_ro("dir", &io::SavedModel::dir)
      .def_prop_ro("tags", &io::SavedModel::tags)
      .def("signature_keys", &io::SavedModel::signature_keys)
      .def_prop_ro("object_metadata", [](const io::SavedModel& s) { return nb::bytes(s.object_metadata().data(),
                                                                                      s.object_metadata().size()); })
      .def_prop_ro("variables", &io::SavedModel::variables)
      .def("assets", &io::SavedModel::assets)
      .def("_inputs", [](const io::SavedModel& s, const std::string& key) {
        return type_map_to_py(s.signature(key).inputs());
      })
      .def("_outputs", [](const io::SavedModel& s, const std::string& key) {
        return type_map_to_py(s.signature(key).outputs());
      })
      .def("_call", [](const io::SavedModel& s, const std::string& key, const std::map<std::string, Tensor>& in) {
        const io::LoadedSignature& sig = s.signature(key);
        nb::gil_scoped_release nogil;
        return sig(in);
      });
}

void bind_keras_saving(nb::module_& m) {
  m.def("_keras_save_model", [](k::Model& model, const std::string& dir, bool include_optimizer, bool overwrite,
                                const std::string& extra_metadata, nb::handle signature) {
    k::SaveModelOptions o{.include_optimizer = include_optimizer, .overwrite = overwrite,
                          .extra_metadata = extra_metadata};
    if (!signature.is_none()) {
      Signature sig;
      for (nb::handle item : signature) {
        auto [dtype, dims] = nb::cast<std::pair<int, std::vector<int64_t>>>(item);
        sig.push_back(TensorType{dtype_of_int(dtype), Shape(dims)});
      }
      o.input_signature = std::move(sig);
    }
    k::save_model(model, dir, o);
  }, nb::arg("model"), nb::arg("dir"), nb::arg("include_optimizer"), nb::arg("overwrite"), nb::arg("extra_metadata"),
     nb::arg("signature").none());
  m.def("_keras_read_metadata", &k::read_model_metadata);
  m.def("_keras_file_config", &k::read_keras_file_config);
  m.def("_keras_file_restore_weights", &k::restore_keras_file_weights);
  m.def("_keras_restore_state", &k::restore_model_state);
}

void bind_checkpoint(nb::module_& m) {
  nb::class_<io::CheckpointStatus>(m, "_CheckpointStatus")
      .def("assert_consumed", &io::CheckpointStatus::assert_consumed, nb::rv_policy::reference)
      .def("assert_existing_objects_matched", &io::CheckpointStatus::assert_existing_objects_matched,
           nb::rv_policy::reference)
      .def("expect_partial", &io::CheckpointStatus::expect_partial, nb::rv_policy::reference)
      .def_prop_ro("unused_checkpoint_keys", &io::CheckpointStatus::unused_checkpoint_keys)
      .def_prop_ro("unmatched_objects", &io::CheckpointStatus::unmatched_objects)
      .def_prop_ro("path", &io::CheckpointStatus::path);

  // Saving reads iterators whose pipelines may run Python (a generator): without the GIL.
  nb::class_<io::Checkpoint>(m, "_Checkpoint")
      .def("__init__", [](io::Checkpoint* self, nb::dict objects) {
        io::Trackable root = trackable_of(objects, "");
        new (self) io::Checkpoint(root.children());
      })
      .def("save", [](io::Checkpoint& c, const std::string& prefix, const std::string& format) {
             return c.save(prefix, {.format = format});
           }, nb::arg("file_prefix"), nb::arg("format") = "", nb::call_guard<nb::gil_scoped_release>())
      .def("write", [](io::Checkpoint& c, const std::string& prefix, const std::string& format) {
             return c.write(prefix, {.format = format});
           }, nb::arg("file_prefix"), nb::arg("format") = "", nb::call_guard<nb::gil_scoped_release>())
      .def("restore", &io::Checkpoint::restore, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("save_counter", &io::Checkpoint::save_counter)
      .def("keys", &io::Checkpoint::keys);

  nb::class_<io::CheckpointManager>(m, "_CheckpointManager")
      .def(nb::init<io::Checkpoint, std::string, std::optional<int>, std::optional<double>, std::string>())
      .def("save", &io::CheckpointManager::save, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("latest_checkpoint", [](const io::CheckpointManager& c) {
        return c.latest_checkpoint().empty() ? nb::none() : nb::cast(c.latest_checkpoint());
      })
      .def_prop_ro("checkpoints", &io::CheckpointManager::checkpoints)
      .def_prop_ro("directory", &io::CheckpointManager::directory)
      .def("restore_or_initialize", [](io::CheckpointManager& c) {
        std::string path;
        {
          nb::gil_scoped_release nogil;
          path = c.restore_or_initialize();
        }
        return path.empty() ? nb::none() : nb::cast(path);
      });
  m.def("_latest_checkpoint", [](const std::string& dir) {
    const std::string p = io::latest_checkpoint(dir);
    return p.empty() ? nb::none() : nb::cast(p);
  });
}

}  // namespace

void init_saving(nb::module_& m) {
  bind_saved_model(m);
  bind_keras_saving(m);
  bind_checkpoint(m);
}

}  // namespace deepflow::py
