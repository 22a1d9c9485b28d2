// SPDX-License-Identifier: Apache-2.0
// DType: the element types a Tensor can hold, as runtime values.
//
// Dtypes are values, not template parameters, in every public signature, so the
// API can be bound one to one from Python. Kernels switch on them with
// DF_DISPATCH_* below, which expands a body once per supported C++ type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "deepflow/core/half.h"

namespace deepflow {

/// Element types, named as in TensorFlow (tf.float32, tf.bfloat16, ...). String is
/// tf.string: each element a byte string (a std::string in the buffer). New dtypes go
/// last: the numbers are serialized.
enum class DType : uint8_t { Float32, Float64, Float16, BFloat16, Int8, UInt8, Int32, Int64, Bool, String };

inline constexpr int kNumDTypes = 10;

/// Bytes per element (sizeof(std::string) for String: the buffer holds std::string
/// objects, which must be constructed, copied and destroyed, never memcpy'd).
size_t dtype_size(DType t);
/// TensorFlow's name: "float32", "bfloat16", "int64", "bool".
const char* dtype_name(DType t);
/// Short name used in the graph text form: "f32", "bf16", "i64", "bool".
const char* dtype_short_name(DType t);
/// Parses either the long or the short name; throws deepflow::Error otherwise.
DType dtype_from_name(const std::string& name);
bool is_floating(DType t);
bool is_integer(DType t);  ///< signed or unsigned integers, not bool
std::ostream& operator<<(std::ostream& os, DType t);

/// The C++ type that stores one element of a DType, and back.
template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <> struct dtype_of<Half> { static constexpr DType value = DType::Float16; };
template <> struct dtype_of<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };
template <> struct dtype_of<std::string> { static constexpr DType value = DType::String; };
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

/// Arithmetic type for computing on T: float for the 16-bit types, T otherwise.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<Half> { using type = float; };
template <> struct compute_type<BFloat16> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

[[noreturn]] void dtype_unsupported(const char* where, DType t);

}  // namespace deepflow

#define DF_DTYPE_CASE_(E, CT, ...) \
  case ::deepflow::DType::E: {     \
    using scalar_t = CT;           \
    __VA_ARGS__();                 \
    break;                         \
  }

/// Runs the lambda body `__VA_ARGS__` with `scalar_t` bound to the C++ type of `dt`.
/// DF_DISPATCH_FLOAT covers the four float types, DF_DISPATCH_NUMERIC adds the
/// integers, DF_DISPATCH_ALL adds bool. None of them includes String: the others
/// throw "[where] unsupported dtype string". DF_DISPATCH_ALL_AND_STRING adds
/// std::string, for kernels that only move elements by assignment (copy, gather,
/// concat, transpose); never memcpy a string element.
#define DF_DISPATCH_FLOAT(dt, where, ...)                              \
  switch (dt) {                                                        \
    DF_DTYPE_CASE_(Float32, float, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Float64, double, __VA_ARGS__)                       \
    DF_DTYPE_CASE_(Float16, ::deepflow::Half, __VA_ARGS__)             \
    DF_DTYPE_CASE_(BFloat16, ::deepflow::BFloat16, __VA_ARGS__)        \
    default: ::deepflow::dtype_unsupported(where, dt);                 \
  }
#define DF_DISPATCH_NUMERIC(dt, where, ...)                            \
  switch (dt) {                                                        \
    DF_DTYPE_CASE_(Float32, float, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Float64, double, __VA_ARGS__)                       \
    DF_DTYPE_CASE_(Float16, ::deepflow::Half, __VA_ARGS__)             \
    DF_DTYPE_CASE_(BFloat16, ::deepflow::BFloat16, __VA_ARGS__)        \
    DF_DTYPE_CASE_(Int8, int8_t, __VA_ARGS__)                          \
    DF_DTYPE_CASE_(UInt8, uint8_t, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Int32, int32_t, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Int64, int64_t, __VA_ARGS__)                        \
    default: ::deepflow::dtype_unsupported(where, dt);                 \
  }
#define DF_DISPATCH_ALL(dt, where, ...)                                \
  switch (dt) {                                                        \
    DF_DTYPE_CASE_(Float32, float, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Float64, double, __VA_ARGS__)                       \
    DF_DTYPE_CASE_(Float16, ::deepflow::Half, __VA_ARGS__)             \
    DF_DTYPE_CASE_(BFloat16, ::deepflow::BFloat16, __VA_ARGS__)        \
    DF_DTYPE_CASE_(Int8, int8_t, __VA_ARGS__)                          \
    DF_DTYPE_CASE_(UInt8, uint8_t, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Int32, int32_t, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Int64, int64_t, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Bool, bool, __VA_ARGS__)                            \
    default: ::deepflow::dtype_unsupported(where, dt);                 \
  }
#define DF_DISPATCH_ALL_AND_STRING(dt, where, ...)                     \
  switch (dt) {                                                        \
    DF_DTYPE_CASE_(Float32, float, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Float64, double, __VA_ARGS__)                       \
    DF_DTYPE_CASE_(Float16, ::deepflow::Half, __VA_ARGS__)             \
    DF_DTYPE_CASE_(BFloat16, ::deepflow::BFloat16, __VA_ARGS__)        \
    DF_DTYPE_CASE_(Int8, int8_t, __VA_ARGS__)                          \
    DF_DTYPE_CASE_(UInt8, uint8_t, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Int32, int32_t, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Int64, int64_t, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Bool, bool, __VA_ARGS__)                            \
    DF_DTYPE_CASE_(String, ::std::string, __VA_ARGS__)                 \
  }
#define DF_DISPATCH_INDEX(dt, where, ...)                              \
  switch (dt) {                                                        \
    DF_DTYPE_CASE_(Int32, int32_t, __VA_ARGS__)                        \
    DF_DTYPE_CASE_(Int64, int64_t, __VA_ARGS__)                        \
    default: ::deepflow::dtype_unsupported(where, dt);                 \
  }
