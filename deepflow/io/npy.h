// SPDX-License-Identifier: Apache-2.0
// NumPy's .npy files (format versions 1.0, 2.0 and 3.0): one array per file.
//
//   io::write_npy("/tmp/x.npy", constant({1.f, 2.f, 3.f}, {3}));   // np.load reads it
//   Tensor x = io::read_npy("/tmp/x.npy");                        // and np.save writes these
//
// dtypes: '<f4' float32, '<f8' float64, '<f2' float16, '|i1' int8, '|u1' uint8, '<i4'
// int32, '<i8' int64, '|b1' bool, and '|S<n>' (fixed-width bytes) for strings, whose
// trailing NUL bytes are dropped on reading as numpy does. Big-endian ('>') files and
// Fortran-order arrays are read too (converted to little-endian, row-major). Writing
// always produces a version 1.0, little-endian, C-order file; bfloat16 (no numpy dtype)
// is written as float32. Anything else (object arrays, pickles, '<U' unicode, '<c8'
// complex, structured dtypes) is a clear Error.
//
// The reader trusts nothing: the header length, the shape and the data size are checked
// against the file size before anything is allocated; errors name the file.
#pragma once

#include <string>
#include <string_view>

#include "deepflow/core/tensor.h"

namespace deepflow::io {

/// The array in a .npy file's bytes; `name` goes in error messages (a path).
Tensor parse_npy(std::string_view bytes, const std::string& name = "<npy bytes>");
/// Reads a .npy file; throws "[read_npy] <path>: ..." on any problem.
Tensor read_npy(const std::string& path);

/// The .npy bytes of a concrete tensor (format 1.0, header padded to 64 bytes).
std::string npy_bytes(const Tensor& t);
/// Writes a .npy file atomically (temporary, fsync, rename).
void write_npy(const std::string& path, const Tensor& t);

}  // namespace deepflow::io
