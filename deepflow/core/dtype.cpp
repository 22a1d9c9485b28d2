// SPDX-License-Identifier: Apache-2.0
#include "deepflow/core/dtype.h"

#include <ostream>

#include "deepflow/core/error.h"

namespace deepflow {
namespace {
struct DTypeInfo {
  DType t;
  size_t size;
  const char* name;
  const char* short_name;
};
constexpr DTypeInfo kInfo[kNumDTypes] = {
    {DType::Float32, 4, "float32", "f32"}, {DType::Float64, 8, "float64", "f64"},
    {DType::Float16, 2, "float16", "f16"}, {DType::BFloat16, 2, "bfloat16", "bf16"},
    {DType::Int8, 1, "int8", "i8"},        {DType::UInt8, 1, "uint8", "u8"},
    {DType::Int32, 4, "int32", "i32"},     {DType::Int64, 8, "int64", "i64"},
    {DType::Bool, 1, "bool", "bool"},      {DType::String, sizeof(std::string), "string", "str"},
};
}  // namespace

size_t dtype_size(DType t) { return kInfo[int(t)].size; }
const char* dtype_name(DType t) { return kInfo[int(t)].name; }
const char* dtype_short_name(DType t) { return kInfo[int(t)].short_name; }

DType dtype_from_name(const std::string& name) {
  for (const auto& i : kInfo)
    if (name == i.name || name == i.short_name) return i.t;
  fail("[dtype] unknown dtype '", name, "'");
}

bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}
bool is_integer(DType t) {
  return t == DType::Int8 || t == DType::UInt8 || t == DType::Int32 || t == DType::Int64;
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

void dtype_unsupported(const char* where, DType t) {
  fail("[", where, "] unsupported dtype ", dtype_name(t));
}

}  // namespace deepflow
