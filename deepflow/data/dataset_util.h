// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the dataset implementations (private to deepflow/data).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "deepflow/data/dataset.h"

namespace deepflow::data {

/// The dataset behind Dataset::with_options; Dataset::options() looks for it.
class OptionsDataset : public DatasetBase {
 public:
  OptionsDataset(DatasetPtr input, Options options) : input_(std::move(input)), options_(options) {}
  std::string name() const override { return "with_options"; }
  const ElementSpec& spec() const override { return input_->spec(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  const Options& options() const { return options_; }

 private:
  DatasetPtr input_;
  Options options_;
};

namespace detail {

/// "float32[-1,28,28]" (-1 for unknown dims, as in ElementSpec::to_string).
std::string type_string(const TensorType& t);
/// "float32[2,3]" for a concrete tensor.
std::string tensor_string(const Tensor& t);
/// The components of an element as "(float32[2], int64[])".
std::string element_string(const Element& e);

/// Copies every element of src into dst starting at flat element `offset` (strings
/// are assigned one by one, never memcpy'd). dtypes must agree.
void copy_into(Tensor& dst, int64_t offset, const Tensor& src);
/// A tensor of the given shape and dtype whose elements are all `value`'s single
/// element (padding); value must hold one element.
Tensor filled_like(const Shape& shape, DType dtype, const Tensor& value);

/// Stacks equally shaped elements into one batch element (batch, parallel batch);
/// `first` is the input index of elems[0]. A mismatch is an error naming the element
/// index within the batch, the input index and both shapes ("[op] element 3 of ...").
Element stack_elements(const std::vector<Element>& elems, int64_t first, const char* op);

/// Runs f(); any exception it throws becomes deepflow::Error
/// "[where] element <index>: <original message>".
template <class F>
auto with_element_context(const char* where, int64_t index, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    throw Error(::deepflow::detail::cat("[", where, "] element ", index, ": ", e.what()));
  }
}

/// Saves an element under `key` ("<key>/n", "<key>/0", "<key>/name0", ...) and reads it back.
void write_element(IteratorStateWriter& w, const std::string& key, const Element& e);
Element read_element(const IteratorStateReader& r, const std::string& key);

/// Cardinality of `n` passes over a dataset of cardinality c (n < 0: forever).
int64_t repeat_cardinality(int64_t c, int64_t n);

/// The unknown spec: what map and flat_map produce, since a C++ function cannot be
/// inspected without running it (TensorFlow traces it instead). Empty components.
const ElementSpec& unknown_spec();

}  // namespace detail
}  // namespace deepflow::data
