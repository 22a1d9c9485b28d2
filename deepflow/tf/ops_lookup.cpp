// SPDX-License-Identifier: Apache-2.0
// TensorFlow's static lookup tables (tf.lookup.StaticHashTable, Keras's StringLookup and
// IntegerLookup, TFT vocabularies): HashTableV2 makes the table (graph_eval.cpp), its
// initializer fills it when the model loads (InitializeTableV2 from tensors, or
// InitializeTableFromTextFileV2 from an asset file), and LookupTableFindV2 becomes
// tf_lookup, a custom op of deepflow_tf over the table's keys and values (attrs), with a
// hash index built once per table.
#include <charconv>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "deepflow/core/error.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/tf/op_importer.h"

namespace deepflow::tf {
namespace {

LookupTable& table_of(NodeContext& c, size_t i) {
  DF_CHECK(i < c.num_inputs() && c.value(i).table, "[tf::import] ", c.describe(), ": input ", i,
           " must be a lookup table");
  return *c.value(i).table;
}

// The key of element i as a string (string keys) or its decimal text (integer keys).
std::string key_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::String ? t.data<std::string>()[i] : std::to_string(int64_t(t.flat(i)));
}

// One hash index per keys tensor, built on first use and kept while the tensor lives.
const std::unordered_map<std::string, int64_t>& index_of(const Tensor& keys) {
  static std::mutex mu;
  static std::unordered_map<const TensorImpl*, std::pair<Tensor, std::unordered_map<std::string, int64_t>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(keys.impl());
  if (it == cache.end()) {
    std::unordered_map<std::string, int64_t> index;
    for (int64_t i = 0; i < keys.size(); ++i) index.emplace(key_at(keys, i), i);
    it = cache.emplace(keys.impl(), std::make_pair(keys, std::move(index))).first;
  }
  return it->second.second;
}

void run_lookup(const OpCall& c, TensorList& out) {
  const Tensor &keys = c.attr_tensor("keys"), &values = c.attr_tensor("values");
  const auto& index = index_of(keys);
  const Tensor &x = c.in(0), &def = c.in(1);
  for (int64_t i = 0; i < x.size(); ++i) {
    auto it = index.find(key_at(x, i));
    const Tensor& src = it == index.end() ? def : values;
    const int64_t k = it == index.end() ? 0 : it->second;
    if (values.dtype() == DType::String) {
      out[0].data<std::string>()[i] = src.data<std::string>()[k];
    } else {
      const size_t w = dtype_size(values.dtype());
      std::memcpy(static_cast<char*>(out[0].raw_data()) + size_t(i) * w,
                  static_cast<const char*>(src.raw_data()) + size_t(k) * w, w);
    }
  }
}

OpId lookup_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "tf_lookup",
        .num_inputs = 2,
        .attrs = {AttrSpec::required_of("keys", AttrKind::Tensor), AttrSpec::required_of("values", AttrKind::Tensor)},
        .infer = [](const OpCall& c, TypeList& out) {
          const Tensor& values = c.attr_tensor("values");
          DF_CHECK(c.in(0).dtype() == c.attr_tensor("keys").dtype(), "[tf_lookup] keys of ",
                   dtype_name(c.in(0).dtype()), " in a table of ", dtype_name(c.attr_tensor("keys").dtype()), " keys");
          DF_CHECK(c.in(1).dtype() == values.dtype() && c.in(1).size() == 1, "[tf_lookup] the default must be one ",
                   dtype_name(values.dtype()), ", got ", dtype_name(c.in(1).dtype()), c.in(1).shape());
          out.push_back({values.dtype(), c.in(0).shape()});
        },
        .non_differentiable = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = run_lookup});
    return op;
  }();
  return id;
}

Values import_initialize(NodeContext& c) {
  LookupTable& t = table_of(c, 0);
  t.keys = c.constant_input(1).clone();
  t.values = c.constant_input(2).clone();
  return {};
}

// Columns of a vocabulary file: -2 the whole line, -1 the line number, k >= 0 field k.
Values import_initialize_from_text(NodeContext& c) {
  LookupTable& t = table_of(c, 0);
  const std::string path = c.constant_input(1).item<std::string>();
  const int64_t key_index = c.attr_int("key_index"), value_index = c.attr_int("value_index");
  const int64_t vocab_size = c.attr_int("vocab_size"), offset = c.has_attr("offset") ? c.attr_int("offset") : 0;
  const std::string delimiter = c.attr_string("delimiter");
  std::ifstream in(path);
  DF_CHECK(in, "[tf::import] ", c.describe(), ": cannot open the vocabulary file ", path);
  std::vector<std::string> key_text, value_text;
  std::string line;
  for (int64_t n = 0; std::getline(in, line) && (vocab_size < 0 || n < vocab_size); ++n) {
    auto field = [&](int64_t index) {
      if (index == -2) return line;
      if (index == -1) return std::to_string(n + offset);
      size_t start = 0;
      for (int64_t k = 0; k < index; ++k) {
        start = line.find(delimiter, start);
        DF_CHECK(start != std::string::npos, "[tf::import] ", path, ": line ", n + 1, " has no field ", index);
        start += delimiter.size();
      }
      return line.substr(start, line.find(delimiter, start) - start);
    };
    key_text.push_back(field(key_index));
    value_text.push_back(field(value_index));
  }
  auto as_tensor = [&](const std::vector<std::string>& text, DType dtype) {
    if (dtype == DType::String) return constant(text);
    std::vector<int64_t> v;
    for (const std::string& s : text) {
      int64_t x = 0;
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
      DF_CHECK(ec == std::errc() && ptr == s.data() + s.size(), "[tf::import] ", path, ": '", s,
               "' is not an integer");
      v.push_back(x);
    }
    return cast(constant(v), dtype);
  };
  t.keys = as_tensor(key_text, t.key_dtype);
  t.values = as_tensor(value_text, t.value_dtype);
  return {};
}

Values import_find(NodeContext& c) {
  LookupTable& t = table_of(c, 0);
  DF_CHECK(t.keys.defined(), "[tf::import] ", c.describe(), ": the table '", t.name,
           "' was not initialized (the model's init op does it)");
  return {dispatch1(lookup_op(), {c.input(1), c.input(2)}, {{"keys", t.keys}, {"values", t.values}})};
}

Values import_size(NodeContext& c) {
  LookupTable& t = table_of(c, 0);
  return {scalar(double(t.keys.defined() ? t.keys.size() : 0), DType::Int64)};
}

}  // namespace

DF_TF_OP("InitializeTableV2", import_initialize)
DF_TF_OP("InitializeTableFromTextFileV2", import_initialize_from_text)
DF_TF_OP("LookupTableFindV2", import_find)
DF_TF_OP("LookupTableSizeV2", import_size)

}  // namespace deepflow::tf
