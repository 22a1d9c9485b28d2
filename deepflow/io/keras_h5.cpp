// SPDX-License-Identifier: Apache-2.0
// The HDF5 wrapper of keras_h5.h.
#include "deepflow/io/keras_h5.h"

#include <hdf5_hl.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "deepflow/core/error.h"

namespace deepflow::io::h5 {
namespace {

std::recursive_mutex& h5_mutex() {
  static auto* mu = new std::recursive_mutex;  // never destroyed: handles may close at exit
  return *mu;
}

// Holds the library lock; the first one switches off HDF5's printing of error stacks
// (we report them in our own errors instead).
struct Lock {
  std::lock_guard<std::recursive_mutex> guard{h5_mutex()};
  Lock() {
    static const bool quiet = [] {
      H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
      return true;
    }();
    (void)quiet;
  }
};

herr_t innermost_error(unsigned n, const H5E_error2_t* e, void* out) {
  if (n == 0 && e && e->desc) *static_cast<std::string*>(out) = e->desc;
  return 0;
}

[[noreturn]] void h5_fail(const FileState& st, const std::string& what) {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, innermost_error, &detail);
  H5Eclear2(H5E_DEFAULT);
  fail(st.ctx.who, st.ctx.file, ": ", what, detail.empty() ? "" : " (HDF5: " + detail + ")");
}

// IEEE half precision, which HDF5 1.10 has no predefined type for (h5py builds the same).
Handle half_type() {
  Handle t(H5Tcopy(H5T_IEEE_F32LE));
  H5Tset_fields(t.get(), 15, 10, 5, 0, 10);
  H5Tset_size(t.get(), 2);
  H5Tset_ebias(t.get(), 15);
  return t;
}

// The in-memory type a tensor of `dt` is read into or written from.
Handle memory_type(DType dt) {
  switch (dt) {
    case DType::Float32: return Handle(H5Tcopy(H5T_NATIVE_FLOAT));
    case DType::Float64: return Handle(H5Tcopy(H5T_NATIVE_DOUBLE));
    case DType::Float16: return half_type();
    case DType::Int8: return Handle(H5Tcopy(H5T_NATIVE_INT8));
    case DType::UInt8: return Handle(H5Tcopy(H5T_NATIVE_UINT8));
    case DType::Int32: return Handle(H5Tcopy(H5T_NATIVE_INT32));
    case DType::Int64: return Handle(H5Tcopy(H5T_NATIVE_INT64));
    default: return Handle();
  }
}

std::string join(const std::string& base, const std::string& name) {
  return base.empty() || base == "/" ? "/" + name : base + "/" + name;
}

}  // namespace

Handle::Handle(const Handle& o) : id_(o.id_) {
  if (id_ < 0) return;
  Lock lock;
  H5Iinc_ref(id_);
}

Handle& Handle::operator=(const Handle& o) {
  if (this != &o) *this = Handle(o);
  return *this;
}

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    Handle dead(id_);  // closes the old id
    id_ = o.id_;
    o.id_ = -1;
  }
  return *this;
}

Handle::~Handle() {
  if (id_ < 0) return;
  Lock lock;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: H5Fclose(id_); break;
    case H5I_GROUP: H5Gclose(id_); break;
    case H5I_DATASET: H5Dclose(id_); break;
    case H5I_ATTR: H5Aclose(id_); break;
    case H5I_DATASPACE: H5Sclose(id_); break;
    case H5I_DATATYPE: H5Tclose(id_); break;
    case H5I_GENPROP_LST: H5Pclose(id_); break;
    default: break;
  }
  H5Eclear2(H5E_DEFAULT);
}

bool is_hdf5(std::string_view bytes) {
  static constexpr char kSignature[] = "\211HDF\r\n\032\n";
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kSignature, 8) == 0;
}

// --- Dataset ---

Dataset::Dataset(std::shared_ptr<const FileState> st, Handle h, std::string path)
    : st_(std::move(st)), h_(std::move(h)), path_(std::move(path)) {}

Shape Dataset::shape() const {
  Lock lock;
  Handle space(H5Dget_space(h_.get()));
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0 || rank > 32) h5_fail(*st_, "dataset '" + path_ + "' has no readable shape");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
    h5_fail(*st_, "dataset '" + path_ + "' has no readable shape");
  std::vector<int64_t> out;
  for (hsize_t d : dims) {
    if (d > (hsize_t(1) << 40)) h5_fail(*st_, "dataset '" + path_ + "' has an absurd dimension " + std::to_string(d));
    out.push_back(int64_t(d));
  }
  return Shape(out);
}

DType Dataset::dtype() const {
  Lock lock;
  Handle type(H5Dget_type(h_.get()));
  if (!type.valid()) h5_fail(*st_, "dataset '" + path_ + "' has no readable type");
  const H5T_class_t cls = H5Tget_class(type.get());
  const size_t size = H5Tget_size(type.get());
  if (cls == H5T_FLOAT) {
    if (size == 2) return DType::Float16;
    if (size == 4) return DType::Float32;
    if (size == 8) return DType::Float64;
  } else if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
    if (size == 1) return is_signed ? DType::Int8 : DType::UInt8;
    if (size == 4 && is_signed) return DType::Int32;
    if (size == 8 && is_signed) return DType::Int64;
  } else if (cls == H5T_ENUM && size == 1) {
    return DType::Bool;  // h5py's bool: an enum {FALSE, TRUE} over int8
  }
  fail(st_->ctx.who, st_->ctx.file, ": dataset '", path_, "' has an element type deepflow does not hold (HDF5 class ",
       int(cls), ", ", size, " bytes)");
}

Tensor Dataset::read() const {
  const Shape s = shape();
  const DType dt = dtype();
  Lock lock;
  Tensor out(s, dt);
  if (out.size() == 0) return out;
  Handle mem;
  if (dt == DType::Bool) {
    Handle type(H5Dget_type(h_.get()));
    mem = Handle(H5Tget_native_type(type.get(), H5T_DIR_ASCEND));
  } else {
    mem = memory_type(dt);
  }
  if (!mem.valid() || H5Dread(h_.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.raw_data()) < 0)
    h5_fail(*st_, "cannot read dataset '" + path_ + "'");
  return out;
}

// --- Group ---

Group::Group(std::shared_ptr<const FileState> st, Handle h, std::string path)
    : st_(std::move(st)), h_(std::move(h)), path_(std::move(path)) {}

namespace {
// Opens each component of a relative path in turn (H5Lexists fails on a missing middle).
Handle open_path(hid_t base, const std::string& name) {
  Handle cur;
  hid_t at = base;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    const std::string part = name.substr(start, end - start);
    start = end + 1;
    if (part.empty()) continue;
    if (H5Lexists(at, part.c_str(), H5P_DEFAULT) <= 0) return Handle();
    Handle next(H5Oopen(at, part.c_str(), H5P_DEFAULT));
    if (!next.valid()) return Handle();
    cur = std::move(next);
    at = cur.get();
  }
  return cur;
}
}  // namespace

bool Group::has(const std::string& name) const {
  Lock lock;
  const bool found = open_path(h_.get(), name).valid();
  H5Eclear2(H5E_DEFAULT);
  return found;
}

bool Group::has_group(const std::string& name) const {
  Lock lock;
  Handle h = open_path(h_.get(), name);
  H5Eclear2(H5E_DEFAULT);
  return h.valid() && H5Iget_type(h.get()) == H5I_GROUP;
}

Group Group::group(const std::string& name) const {
  Lock lock;
  Handle h = open_path(h_.get(), name);
  if (!h.valid() || H5Iget_type(h.get()) != H5I_GROUP) h5_fail(*st_, "no group '" + join(path_, name) + "'");
  return Group(st_, std::move(h), join(path_, name));
}

Dataset Group::dataset(const std::string& name) const {
  Lock lock;
  Handle h = open_path(h_.get(), name);
  if (!h.valid() || H5Iget_type(h.get()) != H5I_DATASET) h5_fail(*st_, "no dataset '" + join(path_, name) + "'");
  return Dataset(st_, std::move(h), join(path_, name));
}

namespace {
herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> Group::members() const {
  Lock lock;
  std::vector<std::string> names;
  hsize_t index = 0;
  if (H5Literate(h_.get(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_name, &names) < 0)
    h5_fail(*st_, "cannot list group '" + path_ + "'");
  return names;
}

std::optional<std::vector<std::string>> Group::read_attr(const std::string& name) const {
  Lock lock;
  const htri_t exists = H5Aexists(h_.get(), name.c_str());
  if (exists < 0) h5_fail(*st_, "cannot look up attribute '" + name + "' of '" + path_ + "'");
  if (exists == 0) return std::nullopt;
  const std::string what = "attribute '" + name + "' of '" + path_ + "'";
  Handle attr(H5Aopen(h_.get(), name.c_str(), H5P_DEFAULT));
  Handle space(attr.valid() ? H5Aget_space(attr.get()) : -1);
  Handle type(attr.valid() ? H5Aget_type(attr.get()) : -1);
  if (!space.valid() || !type.valid()) h5_fail(*st_, "cannot open " + what);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0 || H5Sget_simple_extent_ndims(space.get()) > 1) h5_fail(*st_, what + " is not a string or a list");
  std::vector<std::string> out;
  if (n == 0) return out;  // Keras writes an empty list as a float64 array
  if (H5Tget_class(type.get()) != H5T_STRING) fail(st_->ctx.who, st_->ctx.file, ": ", what, " is not a string");
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    std::vector<char*> buf(size_t(n), nullptr);
    if (H5Aread(attr.get(), mem.get(), buf.data()) < 0) h5_fail(*st_, "cannot read " + what);
    for (char* s : buf) out.emplace_back(s ? s : "");
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, buf.data());
    return out;
  }
  const size_t size = H5Tget_size(type.get());
  if (size == 0 || size > (size_t(1) << 30) / size_t(n)) fail(st_->ctx.who, st_->ctx.file, ": ", what, " is too large");
  std::string buf(size * size_t(n), '\0');
  if (H5Aread(attr.get(), type.get(), buf.data()) < 0) h5_fail(*st_, "cannot read " + what);
  for (hssize_t i = 0; i < n; ++i) {
    std::string s = buf.substr(size_t(i) * size, size);
    out.push_back(s.substr(0, s.find('\0')));
  }
  return out;
}

std::optional<std::vector<std::string>> Group::string_attr(const std::string& name) const {
  if (auto whole = read_attr(name)) return whole;
  // Attributes over HDF5's 64 KiB header limit: Keras writes name0, name1, ...
  std::optional<std::vector<std::string>> joined;
  for (int i = 0;; ++i) {
    auto part = read_attr(name + std::to_string(i));
    if (!part) break;
    if (!joined) joined.emplace();
    joined->insert(joined->end(), part->begin(), part->end());
  }
  return joined;
}

std::optional<std::string> Group::string_attr1(const std::string& name) const {
  auto v = read_attr(name);
  if (!v) return std::nullopt;
  if (v->size() != 1)
    fail(st_->ctx.who, st_->ctx.file, ": attribute '", name, "' of '", path_, "' holds ", v->size(),
         " strings, expected one");
  return (*v)[0];
}

Group Group::create_group(const std::string& name) const {
  Lock lock;
  // No modification times in the object headers: the same model gives the same bytes.
  Handle gcpl(H5Pcreate(H5P_GROUP_CREATE));
  H5Pset_obj_track_times(gcpl.get(), 0);
  Handle h(H5Gcreate2(h_.get(), name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT));
  if (!h.valid()) h5_fail(*st_, "cannot create group '" + join(path_, name) + "'");
  return Group(st_, std::move(h), join(path_, name));
}

void Group::write_dataset(const std::string& name, const Tensor& value) const {
  Lock lock;
  const std::string what = "dataset '" + join(path_, name) + "'";
  Handle mem = memory_type(value.dtype());
  if (!mem.valid())
    fail(st_->ctx.who, st_->ctx.file, ": ", what, ": Keras files cannot hold ", dtype_name(value.dtype()), " tensors");
  std::vector<hsize_t> dims;
  for (int i = 0; i < value.rank(); ++i) dims.push_back(hsize_t(value.dim(i)));
  Handle space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(int(dims.size()), dims.data(), nullptr));
  // The file type is the memory type in little-endian order: what numpy writes here.
  Handle file_type(H5Tcopy(mem.get()));
  H5Tset_order(file_type.get(), H5T_ORDER_LE);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_obj_track_times(dcpl.get(), 0);
  Handle d(H5Dcreate2(h_.get(), name.c_str(), file_type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  if (!d.valid()) h5_fail(*st_, "cannot create " + what);
  const Tensor dense = value.clone();  // contiguous, and safe from a concurrent assign
  if (dense.size() > 0 && H5Dwrite(d.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, dense.raw_data()) < 0)
    h5_fail(*st_, "cannot write " + what);
}

void Group::write_string_attr(const std::string& name, const std::string& value) const {
  Lock lock;
  Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Handle space(H5Screate(H5S_SCALAR));
  Handle attr(H5Acreate2(h_.get(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
  const char* p = value.c_str();
  if (!attr.valid() || H5Awrite(attr.get(), type.get(), &p) < 0)
    h5_fail(*st_, "cannot write attribute '" + name + "' of '" + path_ + "'");
}

// --- File ---

File File::open_image(std::string_view bytes, Context ctx) {
  File f;
  f.st_ = std::make_shared<FileState>(FileState{std::move(ctx)});
  if (!is_hdf5(bytes))
    fail(f.st_->ctx.who, f.st_->ctx.file, ": not an HDF5 file (", bytes.size(), " bytes, no HDF5 signature)");
  Lock lock;
  // Flags 0: HDF5 copies the image (so `bytes` may go away). With DONT_COPY | DONT_RELEASE,
  // which would read it in place, libhdf5 1.10 leaks its callback state on every open
  // (LeakSanitizer, the sanitized CI suite).
  f.h_ = Handle(H5LTopen_file_image(const_cast<char*>(bytes.data()), bytes.size(), 0));
  if (!f.h_.valid()) h5_fail(*f.st_, "not a readable HDF5 file");
  return f;
}

File File::create_in_memory(Context ctx) {
  File f;
  f.st_ = std::make_shared<FileState>(FileState{std::move(ctx)});
  Lock lock;
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  H5Pset_fapl_core(fapl.get(), 1 << 16, 0);  // no backing store: nothing touches the disk
  // HDF5 refuses to create a file under the name of one it has open.
  static std::atomic<uint64_t> counter{0};
  const std::string name = "deepflow-in-memory-" + std::to_string(counter++) + ".h5";
  f.h_ = Handle(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
  if (!f.h_.valid()) h5_fail(*f.st_, "cannot create an in-memory HDF5 file");
  return f;
}

Group File::root() const {
  Lock lock;
  Handle h(H5Gopen2(h_.get(), "/", H5P_DEFAULT));
  if (!h.valid()) h5_fail(*st_, "cannot open the root group");
  return Group(st_, std::move(h), "/");
}

std::string File::image() const {
  Lock lock;
  if (H5Fflush(h_.get(), H5F_SCOPE_GLOBAL) < 0) h5_fail(*st_, "cannot flush the HDF5 file");
  const ssize_t n = H5Fget_file_image(h_.get(), nullptr, 0);
  if (n < 0) h5_fail(*st_, "cannot take the HDF5 file image");
  std::string out(size_t(n), '\0');
  if (H5Fget_file_image(h_.get(), out.data(), size_t(n)) != n) h5_fail(*st_, "cannot take the HDF5 file image");
  return out;
}

}  // namespace deepflow::io::h5
