// SPDX-License-Identifier: Apache-2.0
// Internal: lexical helpers shared by the graph text printer (text.cpp) and parser
// (text_parse.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "deepflow/core/tensor.h"

namespace deepflow::text_detail {

/// Characters a bare name may hold: letters, digits and `_ . / -`; others are quoted.
bool is_name_char(char c);
/// "..." with \" \\ \n \t \r and \xHH escapes.
void write_quoted(std::string& out, const std::string& s);
/// A bare name when it can be one, quoted otherwise.
void write_name(std::string& out, const std::string& s);
/// "nan(0x7fc00001)": a NaN by its bits (hex_digits of them).
void write_nan_bits(std::string& out, uint64_t bits, int hex_digits);
/// Shortest exact digits; inf, -inf, nan, -nan, nan(0x...) for other NaNs; ".0" appended
/// when mark_float and it looks like an int.
template <class T> void write_float(std::string& out, T v, bool mark_float);
/// f32[2,?]
void write_type(std::string& out, const TensorType& t);

}  // namespace deepflow::text_detail
