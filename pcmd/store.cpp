// store.cpp — HDF5 reads and writes of stored rank data, with RAII for every hid_t.
#include "store.h"

#include <hdf5.h>

#include <system_error>

#include "error.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::detail {

namespace fs = std::filesystem;

namespace {

// Owns one HDF5 identifier; closes it with the matching H5?close.
class H5Id {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Id() = default;
  H5Id(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  H5Id(H5Id&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = H5I_INVALID_HID; }
  H5Id& operator=(H5Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  ~H5Id() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

hid_t native_type(int type) {
  switch (type) {
    case PCM_CHAR: return H5T_NATIVE_CHAR;
    case PCM_INT: return H5T_NATIVE_INT;
    case PCM_LONG: return H5T_NATIVE_LONG;
    case PCM_FLOAT: return H5T_NATIVE_FLOAT;
    case PCM_DOUBLE: return H5T_NATIVE_DOUBLE;
    case PCM_LONG_LONG: return H5T_NATIVE_LLONG;
    case PCM_BYTE: return H5T_NATIVE_UCHAR;
    default: fail(PCM_ERR_ARG, "unknown element type {}", type);
  }
}

// HDF5 prints a stack of errors on every failure unless told not to; pcmd reports its own.
void quiet_hdf5() {
  static bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

void check_names(const std::string& job, int rank, const std::string& key) {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  if (!proto::valid_name(key)) fail(PCM_ERR_ARG, "invalid key '{}'", key);
  if (rank < 0) fail(PCM_ERR_ARG, "invalid rank {}", rank);
}

std::string rank_group(int rank) { return "rank_" + std::to_string(rank); }

bool link_exists(hid_t loc, const std::string& name) {
  return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0;
}

void write_string_attr(hid_t obj, const char* name, const std::string& value) {
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  H5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), value.size() + 1);
  H5Tset_strpad(type.get(), H5T_STR_NULLTERM);
  H5Id space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Id attr(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), type.get(), value.c_str()) < 0)
    fail(PCM_ERR_INTERNAL, "cannot write attribute {}", name);
}

// Type and count of an open dataset; type 0 when it is none of ours.
Store::Meta dataset_meta(hid_t dset) {
  Store::Meta m;
  H5Id type(H5Dget_type(dset), H5Tclose);
  for (int t = PCM_CHAR; t <= PCM_BYTE; ++t) {
    if (H5Tequal(type.get(), native_type(t)) > 0) {
      m.type = t;
      break;
    }
  }
  // char and byte, int and long etc. can share a native type; the attribute disambiguates.
  if (H5Aexists(dset, "pcm_type") > 0) {
    H5Id attr(H5Aopen(dset, "pcm_type", H5P_DEFAULT), H5Aclose);
    H5Id atype(H5Aget_type(attr.get()), H5Tclose);
    std::size_t n = H5Tget_size(atype.get());
    std::string s(n, '\0');
    H5Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), n);
    if (H5Aread(attr.get(), mem.get(), s.data()) >= 0) {
      s.resize(std::char_traits<char>::length(s.c_str()));
      for (int t = PCM_CHAR; t <= PCM_BYTE; ++t)
        if (s == proto::type_name(t)) m.type = t;
    }
  }
  H5Id space(H5Dget_space(dset), H5Sclose);
  hsize_t dims[1] = {0};
  if (H5Sget_simple_extent_ndims(space.get()) == 1) H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  m.count = dims[0];
  return m;
}

}  // namespace

Store::Store(fs::path root) : root_(std::move(root)) {
  quiet_hdf5();
  std::error_code ec;
  fs::create_directories(root_ / "jobs", ec);
  if (ec) fail(PCM_ERR_INTERNAL, "cannot create data directory {}: {}", (root_ / "jobs").string(), ec.message());
}

fs::path Store::job_file(const std::string& job) const { return root_ / "jobs" / job / "store.h5"; }

void Store::put(const std::string& job, int rank, const std::string& key, int type, const void* data,
                std::uint64_t count) {
  check_names(job, rank, key);
  hid_t mem_type = native_type(type);
  fs::path file = job_file(job);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) fail(PCM_ERR_INTERNAL, "cannot create {}: {}", file.parent_path().string(), ec.message());

  H5Id f;
  if (fs::exists(file)) {
    f = H5Id(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  } else {
    f = H5Id(H5Fcreate(file.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (f.valid()) write_string_attr(f.get(), "pcm_job", job);
  }
  if (!f.valid()) fail(PCM_ERR_INTERNAL, "cannot open store {}", file.string());

  std::string gname = rank_group(rank);
  H5Id g = link_exists(f.get(), gname)
               ? H5Id(H5Gopen2(f.get(), gname.c_str(), H5P_DEFAULT), H5Gclose)
               : H5Id(H5Gcreate2(f.get(), gname.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      H5Gclose);
  if (!g.valid()) fail(PCM_ERR_INTERNAL, "cannot open group {} in {}", gname, file.string());

  H5Id d;
  if (link_exists(g.get(), key)) {
    d = H5Id(H5Dopen2(g.get(), key.c_str(), H5P_DEFAULT), H5Dclose);
    Meta old = d.valid() ? dataset_meta(d.get()) : Meta{};
    // Same shape: overwrite in place, so repeated stores do not grow the file.
    if (!d.valid() || old.type != type || old.count != count) {
      d.reset();
      if (H5Ldelete(g.get(), key.c_str(), H5P_DEFAULT) < 0)
        fail(PCM_ERR_INTERNAL, "cannot replace {}/{} in {}", gname, key, file.string());
    }
  }
  if (!d.valid()) {
    hsize_t dims[1] = {count};
    H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
    d = H5Id(H5Dcreate2(g.get(), key.c_str(), mem_type, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                        H5P_DEFAULT),
             H5Dclose);
    if (!d.valid()) fail(PCM_ERR_INTERNAL, "cannot create dataset {}/{} in {}", gname, key, file.string());
    write_string_attr(d.get(), "pcm_type", proto::type_name(type));
  }
  if (count > 0 && H5Dwrite(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    fail(PCM_ERR_INTERNAL, "cannot write {}/{} in {}", gname, key, file.string());
  d.reset();
  g.reset();
  if (H5Fflush(f.get(), H5F_SCOPE_GLOBAL) < 0)
    fail(PCM_ERR_INTERNAL, "cannot flush {}", file.string());
}

void Store::put_layout(const std::string& job, const std::string& encoded, std::int64_t command) {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  fs::path file = job_file(job);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  H5Id f = fs::exists(file)
               ? H5Id(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose)
               : H5Id(H5Fcreate(file.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) fail(PCM_ERR_INTERNAL, "cannot open store {}", file.string());
  // At the root, beside the rank groups, so no application key can collide with it.
  if (link_exists(f.get(), "pcm_layout")) H5Ldelete(f.get(), "pcm_layout", H5P_DEFAULT);
  hsize_t dims[1] = {encoded.size()};
  H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  H5Id d(H5Dcreate2(f.get(), "pcm_layout", H5T_NATIVE_UCHAR, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                    H5P_DEFAULT),
         H5Dclose);
  if (!d.valid() ||
      H5Dwrite(d.get(), H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, encoded.data()) < 0)
    fail(PCM_ERR_INTERNAL, "cannot write the layout of job '{}'", job);
  write_string_attr(d.get(), "pcm_type", "msgpack distribution map");
  write_string_attr(d.get(), "command", std::to_string(command));
  d.reset();
  H5Fflush(f.get(), H5F_SCOPE_GLOBAL);
}

std::optional<Store::Meta> Store::meta(const std::string& job, int rank, const std::string& key) const {
  check_names(job, rank, key);
  fs::path file = job_file(job);
  if (!fs::exists(file)) return std::nullopt;
  H5Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) fail(PCM_ERR_INTERNAL, "cannot open store {}", file.string());
  std::string path = rank_group(rank) + "/" + key;
  if (!link_exists(f.get(), rank_group(rank)) || !link_exists(f.get(), path)) return std::nullopt;
  H5Id d(H5Dopen2(f.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) fail(PCM_ERR_INTERNAL, "cannot open {} in {}", path, file.string());
  return dataset_meta(d.get());
}

Store::Meta Store::get(const std::string& job, int rank, const std::string& key,
                       std::vector<char>& out) const {
  check_names(job, rank, key);
  fs::path file = job_file(job);
  if (!fs::exists(file)) fail(PCM_ERR_NOT_FOUND, "job '{}' has stored nothing", job);
  H5Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) fail(PCM_ERR_INTERNAL, "cannot open store {}", file.string());
  std::string path = rank_group(rank) + "/" + key;
  if (!link_exists(f.get(), rank_group(rank)) || !link_exists(f.get(), path))
    fail(PCM_ERR_NOT_FOUND, "nothing stored for job '{}' rank {} key '{}'", job, rank, key);
  H5Id d(H5Dopen2(f.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) fail(PCM_ERR_INTERNAL, "cannot open {} in {}", path, file.string());
  Meta m = dataset_meta(d.get());
  if (m.type == 0) fail(PCM_ERR_INTERNAL, "{} in {} has a type PCM does not know", path, file.string());
  out.resize(m.count * proto::type_size(m.type));
  if (m.count > 0 &&
      H5Dread(d.get(), native_type(m.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    fail(PCM_ERR_INTERNAL, "cannot read {} in {}", path, file.string());
  return m;
}

}  // namespace pcm::detail
