// SPDX-License-Identifier: Apache-2.0
// TensorFlow's ParseExampleV2 and ParseExample (the serving input of estimator-style and
// TFX models: classify / regress signatures take serialized tf.Examples) for dense
// features, on deepflow's tf.Example parser (data/example.h) as a custom op of deepflow_tf:
//
//   tf_parse_example(serialized [batch], default_0, ..., default_k-1)
//       attrs: keys (string tensor [k]), dtypes (k DTypes as ints), shapes (per key: rank,
//       then its dims) -> k dense tensors [batch, shape_i...]
//
// An empty default means the feature is required. Sparse and ragged features are named
// in the import error.
#include <cstring>
#include <map>

#include "deepflow/core/error.h"
#include "deepflow/data/example.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/tf/op_importer.h"
#include "tensorflow/attr_value.pb.h"

namespace deepflow::tf {
namespace {

std::vector<Shape> shapes_of(const std::vector<int64_t>& flat) {
  std::vector<Shape> out;
  for (size_t i = 0; i < flat.size();) {
    const int64_t rank = flat[i++];
    out.emplace_back(flat.begin() + int64_t(i), flat.begin() + int64_t(i) + rank);
    i += size_t(rank);
  }
  return out;
}

void infer_parse(const OpCall& c, TypeList& out) {
  const Tensor& serialized = c.in(0);
  DF_CHECK(serialized.dtype() == DType::String && serialized.rank() <= 1, "[tf_parse_example] serialized must be a ",
           "string scalar or vector, got ", dtype_name(serialized.dtype()), serialized.shape());
  const std::vector<int64_t>& dtypes = c.attr_ints("dtypes");
  std::vector<Shape> shapes = shapes_of(c.attr_ints("shapes"));
  DF_CHECK(shapes.size() == dtypes.size() && int(dtypes.size()) + 1 == c.num_inputs(), "[tf_parse_example] ",
           dtypes.size(), " keys, ", shapes.size(), " shapes and ", c.num_inputs() - 1, " defaults");
  for (size_t i = 0; i < dtypes.size(); ++i) {
    Shape s = serialized.shape();
    for (int64_t d : shapes[i]) s.push_back(d);
    out.push_back({DType(dtypes[i]), s});
  }
}

void run_parse(const OpCall& c, TensorList& out) {
  const Tensor& keys = c.attr_tensor("keys");
  const std::vector<int64_t>& dtypes = c.attr_ints("dtypes");
  std::vector<Shape> shapes = shapes_of(c.attr_ints("shapes"));
  std::map<std::string, data::FeatureSpec> spec;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const Tensor& def = c.in(int(i) + 1);
    spec[keys.data<std::string>()[i]] =
        data::FixedLenFeature{DType(dtypes[i]), shapes[i], def.size() == 0 ? Tensor() : def};
  }
  const Tensor& serialized = c.in(0);
  Tensor batch = serialized.rank() == 0 ? serialized.view(Shape{1}) : serialized;
  data::ParsedExamples p = data::parse_example(batch, spec);
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const Tensor& t = p.dense.at(keys.data<std::string>()[i]);
    if (t.dtype() == DType::String) {
      for (int64_t k = 0; k < t.size(); ++k) out[i].data<std::string>()[k] = t.data<std::string>()[k];
    } else {
      std::memcpy(out[i].raw_data(), t.raw_data(), t.nbytes());
    }
  }
}

OpId parse_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "tf_parse_example",
        .num_inputs = -1,
        .attrs = {AttrSpec::required_of("keys", AttrKind::Tensor), {"dtypes", std::vector<int64_t>{}},
                  {"shapes", std::vector<int64_t>{}}},
        .infer = infer_parse,
        .non_differentiable = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = run_parse});
    return op;
  }();
  return id;
}

// ParseExampleV2(serialized, names, sparse_keys, dense_keys, ragged_keys, dense_defaults...)
// -> sparse indices/values/shapes (num_sparse each), dense values, ragged values/splits.
Values import_parse_example_v2(NodeContext& c) {
  DF_CHECK(c.attr_int("num_sparse") == 0 && c.attr_types("ragged_value_types").empty(), "[tf::import] ",
           c.describe(), ": sparse and ragged features are not supported (dense features only)");
  std::vector<std::string> keys = c.constant_input(3).to_vector<std::string>();
  std::vector<DType> dtypes = c.attr_types("Tdense");
  const auto* shapes_attr = c.attr("dense_shapes");
  DF_CHECK(shapes_attr && size_t(shapes_attr->list().shape_size()) == keys.size(), "[tf::import] ", c.describe(),
           ": dense_shapes must have one shape per dense key");
  std::vector<int64_t> dt, flat_shapes;
  for (size_t i = 0; i < keys.size(); ++i) {
    dt.push_back(int64_t(dtypes[i]));
    const auto& s = shapes_attr->list().shape(int(i));
    flat_shapes.push_back(s.dim_size());
    for (const auto& d : s.dim()) {
      DF_CHECK(d.size() >= 0, "[tf::import] ", c.describe(), ": feature '", keys[i], "' needs a known shape");
      flat_shapes.push_back(d.size());
    }
  }
  TensorList in{c.input(0)};
  for (size_t i = 0; i < keys.size(); ++i) in.push_back(c.input(5 + i));
  TensorList out = dispatch(parse_op(), in,
                            {{"keys", constant(keys)}, {"dtypes", dt}, {"shapes", flat_shapes}});
  return Values(out.begin(), out.end());
}

}  // namespace

DF_TF_OP("ParseExampleV2", import_parse_example_v2)

}  // namespace deepflow::tf
