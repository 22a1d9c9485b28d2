// SPDX-License-Identifier: Apache-2.0
// Tensor: an n-dimensional array with a runtime dtype, shared storage and an id.
//
// Storage is contiguous, row-major, 64-byte aligned and reference counted.
// Copying a Tensor copies a handle, not the data; reshape and leading-axis
// slices are views of the same storage. Tensors are immutable to users: ops
// return new tensors, and only Variable::assign* writes into a buffer.
//
//   Tensor a = constant({1.f, 2.f, 3.f, 4.f}, {2, 2});
//   Tensor b = ones({2, 2});
//   std::cout << a + b;   // tf.Tensor([[2. 3.] [4. 5.]], shape=(2, 2), dtype=float32)
//
// A Tensor may also be symbolic: it has a dtype and a (partly known) shape but
// no storage. Graph building and tracing produce these; see deepflow/graph.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "deepflow/core/dtype.h"
#include "deepflow/core/error.h"
#include "deepflow/core/shape.h"

namespace deepflow {

/// A device a tensor lives on or a kernel runs on ("/cpu:0"; "/gpu:0" later).
enum class DeviceType : uint8_t { Cpu, Cuda };
struct Device {
  DeviceType type = DeviceType::Cpu;
  int index = 0;
  friend bool operator==(const Device&, const Device&) = default;
  std::string to_string() const;
};

/// A block of bytes owned by the caching allocator (or by someone else, with a deleter).
class Storage {
 public:
  explicit Storage(size_t nbytes);
  /// Wraps memory owned elsewhere (an mmap'ed file, a caller's buffer); `release` runs at the end.
  Storage(void* data, size_t nbytes, void (*release)(void* ctx, void* data), void* ctx);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }

 private:
  void* data_;
  size_t nbytes_;
  void (*release_)(void*, void*) = nullptr;
  void* ctx_ = nullptr;
};

/// Flags on a TensorImpl.
enum TensorFlags : uint8_t { kTrainableVariable = 1 };

/// What a Tensor handle points at. Public so that graph and autodiff code can
/// reach it; user code uses Tensor.
struct TensorImpl {
  std::shared_ptr<Storage> storage;  ///< null for symbolic tensors
  size_t offset = 0;                 ///< bytes from storage->data()
  Shape shape;
  DType dtype = DType::Float32;
  uint8_t flags = 0;
  uint64_t id = 0;  ///< identity for autodiff; reads of one Variable share it
  /// Set by graph builders on symbolic tensors: the graph (kept alive), and the node
  /// and output this tensor names in it.
  std::shared_ptr<void> symbol;
  int32_t symbol_node = -1;
  int32_t symbol_output = 0;

  static uint64_t next_id();
};

class Tensor {
 public:
  /// An undefined tensor (like a null handle); defined() is false.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  /// A new uninitialized tensor (String: every element an empty std::string,
  /// constructed here and destroyed with the storage).
  Tensor(const Shape& shape, DType dtype);

  bool defined() const { return impl_ != nullptr; }
  DType dtype() const { return impl_->dtype; }
  const Shape& shape() const { return impl_->shape; }
  int rank() const { return impl_->shape.rank(); }
  /// Dimension i, negative i from the end.
  int64_t dim(int i) const { return impl_->shape.dim(i); }
  /// Number of elements.
  int64_t size() const { return impl_->shape.num_elements(); }
  size_t nbytes() const { return size_t(size()) * dtype_size(dtype()); }
  uint64_t id() const { return impl_->id; }
  bool is_symbolic() const { return impl_ && !impl_->storage; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  Device device() const { return {}; }

  /// Typed pointer to the first element; throws when T does not match dtype().
  template <class T> T* data() {
    check_dtype(dtype_v<T>);
    return static_cast<T*>(raw_data());
  }
  template <class T> const T* data() const {
    check_dtype(dtype_v<T>);
    return static_cast<const T*>(raw_data());
  }
  void* raw_data() const;

  /// The single element of a one-element tensor, converted to T. For a string tensor
  /// only T = std::string works (numeric T throws "[item] a string tensor has no numeric value").
  template <class T> T item() const;
  /// All elements converted to T, row-major (std::string: copies of a string tensor's elements).
  template <class T> std::vector<T> to_vector() const;
  /// Element i (row-major flat index) as a double, whatever the numeric dtype (throws on strings).
  double flat(int64_t i) const;

  /// A view of the same storage with another shape of equal size.
  Tensor view(const Shape& shape) const;
  /// A view of rows [begin, end) along axis 0.
  Tensor slice0(int64_t begin, int64_t end) const;
  /// A deep copy into fresh storage (strings are copied element by element).
  Tensor clone() const;

  /// numpy-like text: "tf.Tensor([1. 2.], shape=(2,), dtype=float32)".
  std::string to_string() const;

 private:
  void check_dtype(DType t) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);
/// The array part of the printout, numpy style: "[[1. 2.]\n [3. 4.]]".
std::string array_string(const Tensor& t);

/// A list of dtype and shape: what `infer` computes for each output.
struct TensorType {
  DType dtype = DType::Float32;
  Shape shape;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

// --- creation (concrete tensors; not ops) ---

/// A tensor of the given shape filled with zeros (tf.zeros).
Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
/// A tensor filled with ones (tf.ones).
Tensor ones(const Shape& shape, DType dtype = DType::Float32);
/// A tensor filled with `value` converted to dtype (tf.fill).
Tensor fill(const Shape& shape, double value, DType dtype = DType::Float32);
/// A rank-0 tensor.
Tensor scalar(double value, DType dtype = DType::Float32);
/// A rank-0 string tensor (tf.constant(b"...")): `string_scalar("abc")`.
Tensor string_scalar(std::string value);
/// [start, start+delta, ...) below limit (tf.range).
Tensor arange(double start, double limit, double delta = 1, DType dtype = DType::Float32);
/// num evenly spaced values from start to stop inclusive (tf.linspace).
Tensor linspace(double start, double stop, int64_t num, DType dtype = DType::Float32);
/// An n x m identity matrix (m = n when m < 0) (tf.eye).
Tensor eye(int64_t n, int64_t m = -1, DType dtype = DType::Float32);
/// A tensor from values; shape defaults to [values.size()]. Sizes must match.
/// T = std::string gives a string tensor (tf.constant([b"a", b"bc"])).
template <class T> Tensor constant(const std::vector<T>& values, const Shape& shape);
template <class T> Tensor constant(const std::vector<T>& values) {
  return constant(values, Shape{int64_t(values.size())});
}
Tensor constant(std::initializer_list<float> values, const Shape& shape);
Tensor constant(std::initializer_list<float> values);
/// Copies the values (converted) into a tensor of the given dtype.
Tensor constant(const std::vector<double>& values, const Shape& shape, DType dtype);

// --- element conversion helpers used by kernels and printing ---

/// Converts between numeric element types with C++ semantics (bool: != 0). Not for strings.
template <class To, class From> inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) return static_cast<compute_t<From>>(v) != compute_t<From>(0);
  else return To(static_cast<compute_t<To>>(static_cast<compute_t<From>>(v)));
}

}  // namespace deepflow
