// SPDX-License-Identifier: Apache-2.0
// Helpers for the data tests: read a dataset into vectors, print bytes and float bits.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "deepflow/data/dataset.h"
#include "test_util.h"

namespace deepflow::data {

/// Lower-case hex of each byte: how the TFRecord cross-checks print bytes features.
inline std::string hex_string(const std::string& s) {
  std::string out;
  char b[3];
  for (unsigned char c : s) {
    std::snprintf(b, sizeof b, "%02x", c);
    out += b;
  }
  return out;
}

/// The 8 hex digits of a float32's bits (exact, and -0.0 differs from 0.0).
inline std::string float_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  char b[9];
  std::snprintf(b, sizeof b, "%08x", u);
  return b;
}

/// Every element of one pass.
inline std::vector<Element> collect(const Dataset& ds) {
  std::vector<Element> out;
  Iterator it = ds.iter();
  while (std::optional<Element> e = it.next()) out.push_back(std::move(*e));
  return out;
}

/// The first component of every element of one pass, as int64 scalars.
inline std::vector<int64_t> values(const Dataset& ds) {
  std::vector<int64_t> out;
  for (const Element& e : collect(ds)) out.push_back(int64_t(e[0].flat(0)));
  return out;
}

/// The next n elements' first components, as int64 scalars.
inline std::vector<int64_t> take_values(Iterator& it, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) {
    std::optional<Element> e = it.next();
    if (!e) break;
    out.push_back(int64_t(e->tensors()[0].flat(0)));
  }
  return out;
}

/// The rest of a pass's first components.
inline std::vector<int64_t> rest_values(Iterator& it) { return take_values(it, 1 << 30); }

}  // namespace deepflow::data
