// SPDX-License-Identifier: Apache-2.0
// IDX files and the MNIST loader (tf.keras.datasets.mnist, from the original files).
//
// The parser trusts nothing in the file: the header is checked before any dim is read,
// the byte count the dims need is computed with overflow checks and compared with what
// the file holds before anything is allocated, so a malformed file is an Error naming
// it, never a crash or a huge allocation (fuzz/idx_fuzz.cpp runs it).
#include "deepflow/keras/datasets/mnist.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#ifndef DEEPFLOW_DATA_DIR
#define DEEPFLOW_DATA_DIR "data"
#endif

namespace deepflow::keras::datasets {
namespace {

struct IdxType {
  uint8_t code;
  const char* name;
  size_t size;  // bytes per element in the file
  DType dtype;  // int16 has no deepflow dtype: it widens to int32
};

constexpr IdxType kIdxTypes[] = {
    {0x08, "uint8", 1, DType::UInt8},  {0x09, "int8", 1, DType::Int8},       {0x0B, "int16", 2, DType::Int32},
    {0x0C, "int32", 4, DType::Int32},  {0x0D, "float32", 4, DType::Float32}, {0x0E, "float64", 8, DType::Float64},
};

uint64_t read_be(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

std::string dims_text(const std::vector<uint32_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

Tensor parse(const std::string& bytes, const std::string& what, const char* who) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t size = bytes.size();
  DF_CHECK(size >= 4, "[", who, "] ", what, ": truncated header: ", size, " bytes, an IDX file starts with 4");
  const uint32_t magic = uint32_t(read_be(p, 4));
  const IdxType* type = nullptr;
  for (const IdxType& t : kIdxTypes) {
    if (t.code == p[2]) type = &t;
  }
  char magic_hex[16];
  std::snprintf(magic_hex, sizeof magic_hex, "0x%08X", unsigned(magic));
  DF_CHECK(p[0] == 0 && p[1] == 0 && type != nullptr, "[", who, "] ", what, ": bad magic ", magic_hex,
           "; an IDX file starts with 0x0000 then a type code (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, "
           "0x0D float32, 0x0E float64) and the rank");
  const int rank = p[3];
  DF_CHECK(rank <= kMaxRank, "[", who, "] ", what, ": rank ", rank, " exceeds the most a tensor has (", kMaxRank,
           ")");
  const size_t header = 4 + 4 * size_t(rank);
  DF_CHECK(size >= header, "[", who, "] ", what, ": truncated header: rank ", rank, " needs ", header,
           " bytes, the file has ", size);
  std::vector<uint32_t> dims(static_cast<size_t>(rank));
  uint64_t count = 1;
  bool overflow = false;
  for (int i = 0; i < rank; ++i) {
    dims[i] = uint32_t(read_be(p + 4 + 4 * i, 4));
    overflow = overflow || __builtin_mul_overflow(count, uint64_t(dims[i]), &count);
  }
  uint64_t need = 0;
  overflow = overflow || __builtin_mul_overflow(count, uint64_t(type->size), &need) ||
             __builtin_add_overflow(need, uint64_t(header), &need);
  DF_CHECK(!overflow, "[", who, "] ", what, ": dims ", dims_text(dims), " of ", type->name,
           " overflow a 64-bit byte count, the file has ", size, " bytes");
  DF_CHECK(need <= size, "[", who, "] ", what, ": truncated: dims ", dims_text(dims), " need ", need,
           " bytes, the file has ", size);
  DF_CHECK(need == size, "[", who, "] ", what, ": ", size - need, " trailing bytes after the ", type->name,
           " data of dims ", dims_text(dims), " (", need, " bytes)");

  Shape shape;
  for (uint32_t d : dims) shape.push_back(int64_t(d));
  Tensor t(shape, type->dtype);
  const unsigned char* src = p + header;
  const int64_t n = int64_t(count);
  if (n == 0) return t;
  switch (type->code) {
    case 0x08:
    case 0x09: std::memcpy(t.raw_data(), src, size_t(n)); break;
    case 0x0B: {
      auto* dst = t.data<int32_t>();
      for (int64_t i = 0; i < n; ++i) dst[i] = int16_t(uint16_t(read_be(src + 2 * i, 2)));
      break;
    }
    case 0x0C:
    case 0x0D: {
      // Big-endian in the file: assemble each word, then reinterpret its bits.
      auto* dst = static_cast<uint32_t*>(t.raw_data());
      for (int64_t i = 0; i < n; ++i) dst[i] = uint32_t(read_be(src + 4 * i, 4));
      break;
    }
    default: {
      auto* dst = static_cast<uint64_t*>(t.raw_data());
      for (int64_t i = 0; i < n; ++i) dst[i] = read_be(src + 8 * i, 8);
    }
  }
  return t;
}

std::string join(const std::string& dir, const std::string& file) {
  return dir.empty() || dir.back() == '/' ? dir + file : dir + "/" + file;
}

bool file_exists(const std::string& path) { return std::ifstream(path, std::ios::binary).good(); }

}  // namespace

Tensor parse_idx(const std::string& bytes, const std::string& what) { return parse(bytes, what, "parse_idx"); }

Tensor read_idx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DF_CHECK(in, "[read_idx] ", path, ": cannot open: ", std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  DF_CHECK(!in.bad(), "[read_idx] ", path, ": read error: ", std::strerror(errno));
  return parse(buf.str(), path, "read_idx");
}

namespace mnist {

std::string default_dir() {
  const char* env = std::getenv("DEEPFLOW_DATA");
  return join(env != nullptr && *env != '\0' ? std::string(env) : std::string(DEEPFLOW_DATA_DIR), "mnist");
}

std::pair<Split, Split> load_data(const std::string& dir) {
  auto load = [&](const char* images_file, const char* labels_file) {
    Split s;
    const std::string images = join(dir, images_file), labels = join(dir, labels_file);
    for (const std::string& path : {images, labels}) {
      DF_CHECK(file_exists(path), "[mnist.load_data] ", path,
               " not found; get MNIST with scripts/fetch-data.sh (`make deps` runs it), or point $DEEPFLOW_DATA at "
               "a directory holding mnist/");
    }
    s.x = read_idx(images);
    s.y = read_idx(labels);
    DF_CHECK(s.x.dtype() == DType::UInt8 && s.x.rank() == 3 && s.x.dim(1) == 28 && s.x.dim(2) == 28,
             "[mnist.load_data] ", images, ": expected uint8 images [n,28,28], got ", dtype_name(s.x.dtype()), " ",
             s.x.shape());
    DF_CHECK(s.y.dtype() == DType::UInt8 && s.y.rank() == 1 && s.y.dim(0) == s.x.dim(0), "[mnist.load_data] ",
             labels, ": expected uint8 labels [", s.x.dim(0), "] to match ", images, ", got ",
             dtype_name(s.y.dtype()), " ", s.y.shape());
    return s;
  };
  Split train = load("train-images-idx3-ubyte", "train-labels-idx1-ubyte");
  Split test = load("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");
  return {std::move(train), std::move(test)};
}

}  // namespace mnist
}  // namespace deepflow::keras::datasets
