// SPDX-License-Identifier: Apache-2.0
#include "deepflow/core/tensor.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <ostream>
#include <sstream>

#include "deepflow/core/allocator.h"

namespace deepflow {

std::string Device::to_string() const {
  return detail::cat("/", type == DeviceType::Cpu ? "cpu" : "gpu", ":", index);
}

Storage::Storage(size_t nbytes) : data_(cpu_allocate(nbytes)), nbytes_(nbytes) {}
Storage::Storage(void* data, size_t nbytes, void (*release)(void*, void*), void* ctx)
    : data_(data), nbytes_(nbytes), release_(release), ctx_(ctx) {}
Storage::~Storage() {
  if (release_) release_(ctx_, data_);
  else cpu_free(data_, nbytes_);
}

namespace {

// A string tensor's buffer holds live std::string objects: built when the storage is
// made, destroyed when it dies. The element count rides in the release context.
void release_strings(void* ctx, void* data) {
  const size_t n = reinterpret_cast<uintptr_t>(ctx);
  auto* p = static_cast<std::string*>(data);
  for (size_t i = 0; i < n; ++i) p[i].~basic_string();
  cpu_free(data, n * sizeof(std::string));
}

std::shared_ptr<Storage> make_string_storage(size_t n) {
  void* data = cpu_allocate(n * sizeof(std::string));
  auto* p = static_cast<std::string*>(data);
  for (size_t i = 0; i < n; ++i) new (p + i) std::string();  // noexcept: nothing to unwind
  try {
    return std::make_shared<Storage>(data, n * sizeof(std::string), release_strings,
                                     reinterpret_cast<void*>(uintptr_t(n)));
  } catch (...) {
    release_strings(reinterpret_cast<void*>(uintptr_t(n)), data);
    throw;
  }
}

}  // namespace

uint64_t TensorImpl::next_id() {
  static std::atomic<uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

Tensor::Tensor(const Shape& shape, DType dtype) {
  DF_CHECK(shape.is_fully_defined(), "[tensor] cannot allocate a tensor of unknown shape ", shape);
  impl_ = std::make_shared<TensorImpl>();
  impl_->shape = shape;
  impl_->dtype = dtype;
  impl_->id = TensorImpl::next_id();
  const size_t n = size_t(shape.num_elements());
  const size_t item = dtype == DType::String ? sizeof(std::string) : dtype_size(dtype);
  DF_CHECK(n <= SIZE_MAX / item, "[tensor] ", dtype_name(dtype), shape, " is too large to allocate");
  if (dtype == DType::String) impl_->storage = make_string_storage(n);
  else impl_->storage = std::make_shared<Storage>(n * item);
}

void* Tensor::raw_data() const {
  DF_CHECK(impl_ && impl_->storage, "[tensor] the tensor is ", impl_ ? "symbolic" : "undefined",
           " and has no data");
  return static_cast<char*>(impl_->storage->data()) + impl_->offset;
}

void Tensor::check_dtype(DType t) const {
  DF_CHECK(impl_, "[tensor] the tensor is undefined");
  DF_CHECK(impl_->dtype == t, "[tensor] data<", dtype_name(t), "> on a tensor of dtype ",
           dtype_name(impl_->dtype));
}

template <class T> T Tensor::item() const {
  DF_CHECK(size() == 1, "[item] tensor of shape ", shape(), " has ", size(), " elements, not 1");
  if constexpr (std::is_same_v<T, std::string>) {
    DF_CHECK(dtype() == DType::String, "[item] item<string> on a tensor of dtype ", dtype_name(dtype()));
    return *static_cast<const std::string*>(raw_data());
  } else {
    DF_CHECK(dtype() != DType::String, "[item] a string tensor has no numeric value");
    T out{};
    DF_DISPATCH_ALL(dtype(), "item", [&] { out = convert<T>(*static_cast<const scalar_t*>(raw_data())); });
    return out;
  }
}

template <class T> std::vector<T> Tensor::to_vector() const {
  if constexpr (std::is_same_v<T, std::string>) {
    DF_CHECK(dtype() == DType::String, "[to_vector] to_vector<string> on a tensor of dtype ", dtype_name(dtype()));
    const std::string* p = static_cast<const std::string*>(raw_data());
    return std::vector<std::string>(p, p + size());
  } else {
    DF_CHECK(dtype() != DType::String, "[to_vector] a string tensor has no numeric value");
    std::vector<T> out(static_cast<size_t>(size()));
    DF_DISPATCH_ALL(dtype(), "to_vector", [&] {
      const scalar_t* p = static_cast<const scalar_t*>(raw_data());
      for (size_t i = 0; i < out.size(); ++i) out[i] = convert<T>(p[i]);
    });
    return out;
  }
}

double Tensor::flat(int64_t i) const {
  DF_CHECK(dtype() != DType::String, "[flat] a string tensor has no numeric value");
  double out = 0;
  DF_DISPATCH_ALL(dtype(), "flat", [&] { out = convert<double>(static_cast<const scalar_t*>(raw_data())[i]); });
  return out;
}

#define DF_INSTANTIATE_(T) \
  template T Tensor::item<T>() const; \
  template std::vector<T> Tensor::to_vector<T>() const;
DF_INSTANTIATE_(float)
DF_INSTANTIATE_(double)
DF_INSTANTIATE_(int32_t)
DF_INSTANTIATE_(int64_t)
DF_INSTANTIATE_(uint8_t)
DF_INSTANTIATE_(int8_t)
DF_INSTANTIATE_(bool)
DF_INSTANTIATE_(Half)
DF_INSTANTIATE_(BFloat16)
DF_INSTANTIATE_(std::string)
#undef DF_INSTANTIATE_

Tensor Tensor::view(const Shape& shape) const {
  DF_CHECK(shape.num_elements() == size(), "[view] cannot view ", this->shape(), " as ", shape);
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->shape = shape;
  impl->flags = 0;
  impl->id = TensorImpl::next_id();
  return Tensor(std::move(impl));
}

Tensor Tensor::slice0(int64_t begin, int64_t end) const {
  DF_CHECK(rank() > 0 && begin >= 0 && begin <= end && end <= dim(0), "[slice0] rows [", begin, ",",
           end, ") out of range for shape ", shape());
  Shape s = shape();
  s[0] = end - begin;
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->shape = s;
  impl->flags = 0;
  impl->id = TensorImpl::next_id();
  int64_t row = 1;
  for (int i = 1; i < rank(); ++i) row *= shape()[i];
  impl->offset += size_t(begin * row) * dtype_size(dtype());
  return Tensor(std::move(impl));
}

Tensor Tensor::clone() const {
  Tensor out(shape(), dtype());
  if (dtype() == DType::String) std::copy_n(data<std::string>(), size(), out.data<std::string>());
  else std::memcpy(out.raw_data(), raw_data(), nbytes());
  return out;
}

// --- printing ---

namespace {

// numpy's default float format: the shortest digits that round-trip, at most 8
// after the point, decimal points aligned across the array ("maxprec" mode), and
// scientific notation when magnitudes are very large or very small.
struct FloatFormat {
  bool scientific = false;
  int sci_digits = 0;  ///< mantissa digits after the point, the most any element needs (max 8)
  int int_width = 0, frac_width = 0;
};

std::string shortest(double v, bool single) {
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    double back = std::strtod(buf, nullptr);
    if (single ? float(back) == float(v) : back == v) break;
  }
  return buf;
}

// Python's repr of a bytes object: b'...' (b"..." when only that avoids escaping a quote),
// with \\, \t, \n, \r and \xhh for other bytes outside printable ASCII.
std::string bytes_repr(const std::string& s) {
  const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out = "b";
  out += q;
  for (unsigned char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  out += q;
  return out;
}

std::string fixed_digits(double v, bool single) {
  // Fractional digits the shortest form needs, capped at 8.
  std::string s = shortest(v, single);
  int frac = 0;
  if (auto e = s.find('e'); e != std::string::npos) {
    int exp = std::atoi(s.c_str() + e + 1);
    auto dot = s.find('.');
    int mant_frac = dot == std::string::npos || dot > e ? 0 : int(e - dot - 1);
    frac = std::max(0, mant_frac - exp);
  } else if (auto dot = s.find('.'); dot != std::string::npos) {
    frac = int(s.size() - dot - 1);
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::min(frac, 8), v);
  std::string out = buf;
  if (out.find('.') == std::string::npos) out += '.';
  while (out.back() == '0' && out[out.size() - 2] != '.') out.pop_back();
  if (out.size() > 2 && out.back() == '0' && out[out.size() - 2] == '.') out.pop_back();
  return out;
}

std::string format_element(const Tensor& t, int64_t i, const FloatFormat& f = {}) {
  if (t.dtype() == DType::String) return bytes_repr(t.data<std::string>()[i]);
  double v = t.flat(i);
  if (t.dtype() == DType::Bool) return v != 0 ? "True" : "False";
  if (is_integer(t.dtype())) return std::to_string(int64_t(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  bool single = t.dtype() != DType::Float64;
  if (f.scientific) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*e", f.sci_digits, v);
    std::string m = buf;
    if (f.sci_digits == 0) m.insert(m.find('e'), ".");  // numpy writes "1.e-05"
    return m;
  }
  return fixed_digits(v, single);
}

// Pads a fixed-notation number so decimal points line up.
std::string align(const std::string& s, const FloatFormat& f) {
  auto dot = s.find('.');
  if (dot == std::string::npos) return std::string(std::max(0, f.int_width + f.frac_width + 1 - int(s.size())), ' ') + s;
  int ip = int(dot), fp = int(s.size() - dot - 1);
  return std::string(std::max(0, f.int_width - ip), ' ') + s + std::string(std::max(0, f.frac_width - fp), ' ');
}

void print_rec(std::ostream& os, const Tensor& t, int axis, int64_t offset, const std::vector<int64_t>& strides,
               int width, const FloatFormat& ff, bool summarize) {
  const int64_t n = t.shape()[axis];
  constexpr int64_t kEdge = 3;
  os << '[';
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdge && i == kEdge) {
      os << (axis + 1 == t.rank() ? " ..." : "\n" + std::string(axis + 1, ' ') + "...");
      i = n - kEdge - 1;
      continue;
    }
    if (i > 0) {
      if (axis + 1 == t.rank()) os << ' ';
      else os << std::string(t.rank() - axis - 1, '\n') << std::string(axis + 1, ' ');
    }
    if (axis + 1 == t.rank()) {
      std::string s = format_element(t, offset + i * strides[axis], ff);
      if (is_floating(t.dtype()) && !ff.scientific) s = align(s, ff);
      os << std::string(std::max(0, width - int(s.size())), ' ') << s;
    } else {
      print_rec(os, t, axis + 1, offset + i * strides[axis], strides, width, ff, summarize);
    }
  }
  os << ']';
}

}  // namespace

std::string array_string(const Tensor& t) {
  if (t.is_symbolic()) return "<symbolic>";
  if (t.rank() == 0) return format_element(t, 0);
  bool summarize = t.size() > 1000;
  FloatFormat ff;
  if (is_floating(t.dtype())) {
    double max_abs = 0, min_abs = INFINITY;
    for (int64_t i = 0; i < t.size(); ++i) {
      double a = std::fabs(t.flat(i));
      if (!std::isfinite(a)) continue;
      max_abs = std::max(max_abs, a);
      if (a > 0) min_abs = std::min(min_abs, a);
    }
    ff.scientific = max_abs >= 1e8 || min_abs < 1e-4 || (std::isfinite(min_abs) && max_abs / min_abs > 1e3);
    for (int64_t i = 0; i < t.size() && ff.scientific; ++i) {
      double v = t.flat(i);
      if (!std::isfinite(v)) continue;
      char buf[64];
      int p = 0;  // the fewest mantissa digits that round-trip this element
      for (; p < 8; ++p) {
        std::snprintf(buf, sizeof buf, "%.*e", p, v);
        double back = std::strtod(buf, nullptr);
        if (t.dtype() == DType::Float64 ? back == v : float(back) == float(v)) break;
      }
      ff.sci_digits = std::max(ff.sci_digits, p);
    }
    for (int64_t i = 0; i < t.size() && !ff.scientific; ++i) {
      std::string s = format_element(t, i, ff);
      auto dot = s.find('.');
      if (dot == std::string::npos) continue;
      ff.int_width = std::max(ff.int_width, int(dot));
      ff.frac_width = std::max(ff.frac_width, int(s.size() - dot - 1));
    }
  }
  int width = 0;  // numpy pads numbers to one width, but not strings
  for (int64_t i = 0; i < t.size() && t.dtype() != DType::String; ++i) {
    std::string s = format_element(t, i, ff);
    if (is_floating(t.dtype()) && !ff.scientific) s = align(s, ff);
    width = std::max(width, int(s.size()));
  }
  std::ostringstream os;
  print_rec(os, t, 0, 0, contiguous_strides(t.shape()), width, ff, summarize);
  return os.str();
}

std::string Tensor::to_string() const {
  if (!defined()) return "tf.Tensor(<undefined>)";
  std::ostringstream os;
  std::string arr = array_string(*this);
  os << "tf.Tensor(" << (arr.find('\n') != std::string::npos ? "\n" : "") << arr << ", shape=(";
  for (int i = 0; i < rank(); ++i) {
    if (shape()[i] < 0) os << "None";
    else os << shape()[i];
    os << (rank() == 1 ? "," : i + 1 < rank() ? ", " : "");
  }
  os << "), dtype=" << dtype_name(dtype()) << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

// --- creation ---

Tensor fill(const Shape& shape, double value, DType dtype) {
  Tensor t(shape, dtype);
  DF_DISPATCH_ALL(dtype, "fill", [&] {
    scalar_t v = convert<scalar_t>(value);
    scalar_t* p = t.data<scalar_t>();
    for (int64_t i = 0, n = t.size(); i < n; ++i) p[i] = v;
  });
  return t;
}
Tensor zeros(const Shape& shape, DType dtype) {
  Tensor t(shape, dtype);
  if (dtype == DType::String) return t;  // tf.zeros(..., tf.string) is all b''
  std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}
Tensor ones(const Shape& shape, DType dtype) { return fill(shape, 1.0, dtype); }
Tensor scalar(double value, DType dtype) { return fill(Shape{}, value, dtype); }
Tensor string_scalar(std::string value) {
  Tensor t(Shape{}, DType::String);
  *t.data<std::string>() = std::move(value);
  return t;
}

Tensor arange(double start, double limit, double delta, DType dtype) {
  DF_CHECK(delta != 0, "[range] delta must not be 0");
  DF_CHECK((limit - start) * delta >= 0, "[range] start ", start, " does not reach limit ", limit,
           " with delta ", delta);
  int64_t n = int64_t(std::ceil((limit - start) / delta));
  Tensor t(Shape{n}, dtype);
  DF_DISPATCH_NUMERIC(dtype, "range", [&] {
    scalar_t* p = t.data<scalar_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = convert<scalar_t>(start + double(i) * delta);
  });
  return t;
}

Tensor linspace(double start, double stop, int64_t num, DType dtype) {
  DF_CHECK(num >= 1, "[linspace] num must be at least 1, got ", num);
  Tensor t(Shape{num}, dtype);
  DF_DISPATCH_FLOAT(dtype, "linspace", [&] {
    scalar_t* p = t.data<scalar_t>();
    double step = num > 1 ? (stop - start) / double(num - 1) : 0;
    for (int64_t i = 0; i < num; ++i) p[i] = convert<scalar_t>(i + 1 == num ? stop : start + double(i) * step);
  });
  return t;
}

Tensor eye(int64_t n, int64_t m, DType dtype) {
  if (m < 0) m = n;
  DF_CHECK(n >= 0, "[eye] num_rows must be non-negative, got ", n);
  Tensor t = zeros({n, m}, dtype);
  DF_DISPATCH_ALL(dtype, "eye", [&] {
    scalar_t* p = t.data<scalar_t>();
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = convert<scalar_t>(1.0);
  });
  return t;
}

template <class T> Tensor constant(const std::vector<T>& values, const Shape& shape) {
  DF_CHECK(shape.num_elements() == int64_t(values.size()), "[constant] ", values.size(),
           " values do not fill shape ", shape);
  Tensor t(shape, dtype_v<T>);
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}
template Tensor constant(const std::vector<float>&, const Shape&);
template Tensor constant(const std::vector<double>&, const Shape&);
template Tensor constant(const std::vector<int32_t>&, const Shape&);
template Tensor constant(const std::vector<int64_t>&, const Shape&);
template Tensor constant(const std::vector<uint8_t>&, const Shape&);
template Tensor constant(const std::vector<int8_t>&, const Shape&);
template Tensor constant(const std::vector<Half>&, const Shape&);
template Tensor constant(const std::vector<BFloat16>&, const Shape&);
template Tensor constant(const std::vector<std::string>&, const Shape&);  // copy-assigns into built strings

template <> Tensor constant(const std::vector<bool>& values, const Shape& shape) {
  DF_CHECK(shape.num_elements() == int64_t(values.size()), "[constant] ", values.size(),
           " values do not fill shape ", shape);
  Tensor t(shape, DType::Bool);
  bool* p = t.data<bool>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

Tensor constant(std::initializer_list<float> values, const Shape& shape) {
  return constant(std::vector<float>(values), shape);
}
Tensor constant(std::initializer_list<float> values) { return constant(std::vector<float>(values)); }

Tensor constant(const std::vector<double>& values, const Shape& shape, DType dtype) {
  DF_CHECK(shape.num_elements() == int64_t(values.size()), "[constant] ", values.size(),
           " values do not fill shape ", shape);
  Tensor t(shape, dtype);
  DF_DISPATCH_ALL(dtype, "constant", [&] {
    scalar_t* p = t.data<scalar_t>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = convert<scalar_t>(values[i]);
  });
  return t;
}

}  // namespace deepflow
