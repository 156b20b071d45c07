// store.cpp — HDF5 reads and writes of stored rank data, with RAII for every hid_t.
#include "storage/store.h"

#include <hdf5.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>

#include "error.h"
#include "h5.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::daemon {

namespace fs = std::filesystem;

namespace {

using namespace h5;

void check_names(const std::string& job, int rank, const std::string& key) {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  if (!proto::valid_name(key)) fail(PCM_ERR_ARG, "invalid key '{}'", key);
  if (rank < 0) fail(PCM_ERR_ARG, "invalid rank {}", rank);
}

std::string rank_group(int rank) { return "rank_" + std::to_string(rank); }

}  // namespace

Store::Store(fs::path root) : root_(std::move(root)) {
  quiet_hdf5();
  std::error_code ec;
  fs::create_directories(root_ / "jobs", ec);
  if (ec)
    fail(PCM_ERR_INTERNAL, "cannot create data directory {}: {}", (root_ / "jobs").string(),
         ec.message());
}

fs::path Store::job_file(const std::string& job) const { return root_ / "jobs" / job / "store.h5"; }

namespace {

// Room HDF5 needs beyond the data (object headers, attributes, the links of a swap).
constexpr std::uint64_t kMetadataSlack = 64 * 1024;

std::string mib(std::uint64_t bytes) { return fmt::format("{:.1f} MiB", bytes / 1048576.0); }

H5Id open_or_create_group(hid_t loc, const std::string& name) {
  return link_exists(loc, name)
             ? H5Id(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), H5Gclose)
             : H5Id(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
}

}  // namespace

std::optional<std::string> Store::failed_store(const std::string& job) const {
  auto it = failed_.lower_bound({job, -1, ""});
  if (it == failed_.end() || std::get<0>(*it) != job) return std::nullopt;
  return fmt::format("rank {} key '{}'", std::get<1>(*it), std::get<2>(*it));
}

void Store::put(const std::string& job, int rank, const std::string& key, int type,
                const void* data, std::uint64_t count) {
  check_names(job, rank, key);
  hid_t mem_type = native_type(type);
  const std::uint64_t bytes = count * proto::type_size(type);
  fs::path file = job_file(job);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) fail(PCM_ERR_INTERNAL, "cannot create {}: {}", file.parent_path().string(), ec.message());
  const std::string gname = rank_group(rank), where = fmt::format("{}/{}", gname, key);
  const auto failed = std::make_tuple(job, rank, key);

  // A write that fails on a full disk is PCM_ERR_NOSPACE; the key keeps its previous data (only
  // the spare was being written), but a commit is refused until the key is stored again.
  auto write_failed = [&](int err, const char* what) {
    failed_.insert(failed);
    const std::uint64_t left = free_bytes(file);
    if (err == ENOSPC || err == EDQUOT || left < bytes + kMetadataSlack)
      fail(PCM_ERR_NOSPACE,
           "no space left to store {} of job '{}' ({} needed, {} free on the disk holding {}): "
           "{}; the data stored before under this key is kept",
           where, job, mib(bytes), mib(left), file.parent_path().string(), what);
    fail(PCM_ERR_INTERNAL, "cannot store {} in {}: {}{}", where, file.string(), what,
         err ? fmt::format(" ({})", std::strerror(err)) : "");
  };

  H5Id f;
  if (fs::exists(file)) {
    f = H5Id(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  } else {
    if (check_free_space_ && free_bytes(file) < kMetadataSlack) write_failed(ENOSPC, "new file");
    f = H5Id(H5Fcreate(file.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (f.valid()) write_string_attr(f.get(), "pcm_job", job);
  }
  if (!f.valid()) fail(PCM_ERR_INTERNAL, "cannot open store {}", file.string());

  H5Id g = open_or_create_group(f.get(), gname);
  H5Id spares = open_or_create_group(f.get(), "pcm_spare");
  H5Id sg = spares.valid() ? open_or_create_group(spares.get(), gname) : H5Id();
  if (!g.valid() || !sg.valid())
    fail(PCM_ERR_INTERNAL, "cannot open group {} in {}", gname, file.string());

  // The spare: the key's previous-but-one data, overwritten in place when of the same shape.
  H5Id d;
  if (link_exists(sg.get(), key)) {
    d = H5Id(H5Dopen2(sg.get(), key.c_str(), H5P_DEFAULT), H5Dclose);
    h5::Meta old = d.valid() ? dataset_meta(d.get()) : h5::Meta{};
    if (!d.valid() || old.type != type || old.count != count) {
      d.reset();
      if (H5Ldelete(sg.get(), key.c_str(), H5P_DEFAULT) < 0)
        fail(PCM_ERR_INTERNAL, "cannot replace the spare of {} in {}", where, file.string());
    }
  }
  if (!d.valid()) {
    if (check_free_space_ && free_bytes(file) < bytes + kMetadataSlack)
      write_failed(ENOSPC, "checked before writing");
    hsize_t dims[1] = {count};
    H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
    d = H5Id(H5Dcreate2(sg.get(), key.c_str(), mem_type, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                        H5P_DEFAULT),
             H5Dclose);
    if (!d.valid()) write_failed(errno, "cannot create the dataset");
    write_string_attr(d.get(), "pcm_type", proto::type_name(type));
  }
  errno = 0;
  if (count > 0 && H5Dwrite(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    const int err = errno;
    d.reset();
    H5Ldelete(sg.get(), key.c_str(), H5P_DEFAULT);  // a torn spare is of no use
    write_failed(err, "the write failed");
  }
  d.reset();
  errno = 0;
  if (H5Fflush(f.get(), H5F_SCOPE_GLOBAL) < 0) write_failed(errno, "the flush failed");

  // Complete on disk: swap the links, the previous data becoming the spare.
  const bool had = link_exists(g.get(), key);
  if (link_exists(sg.get(), "~previous")) H5Ldelete(sg.get(), "~previous", H5P_DEFAULT);
  if ((had && H5Lmove(g.get(), key.c_str(), sg.get(), "~previous", H5P_DEFAULT, H5P_DEFAULT) < 0) ||
      H5Lmove(sg.get(), key.c_str(), g.get(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0 ||
      (had && H5Lmove(sg.get(), "~previous", sg.get(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0))
    write_failed(errno, "the swap of the new data into place failed");
  g.reset();
  sg.reset();
  spares.reset();
  errno = 0;
  if (H5Fflush(f.get(), H5F_SCOPE_GLOBAL) < 0) write_failed(errno, "the flush failed");
  drop_direct(job, rank, key);  // the data stored now shadowed no more
  failed_.erase(failed);
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

std::optional<Store::Meta> Store::meta(const std::string& job, int rank,
                                       const std::string& key) const {
  check_names(job, rank, key);
  if (auto s = direct_record(job, rank, key))
    return Meta{s->datasets.at(0).type, s->datasets.at(0).count};
  fs::path file = job_file(job);
  if (!fs::exists(file)) return std::nullopt;
  H5Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) fail(PCM_ERR_INTERNAL, "cannot open store {}", file.string());
  std::string path = rank_group(rank) + "/" + key;
  if (!link_exists(f.get(), rank_group(rank)) || !link_exists(f.get(), path)) return std::nullopt;
  H5Id d(H5Dopen2(f.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) fail(PCM_ERR_INTERNAL, "cannot open {} in {}", path, file.string());
  auto hm = dataset_meta(d.get());
  return Meta{hm.type, hm.count};
}

Store::Meta Store::get(const std::string& job, int rank, const std::string& key,
                       std::vector<char>& out) const {
  check_names(job, rank, key);
  if (auto s = direct_record(job, rank, key)) {
    const ShardDataset& d = s->datasets.at(0);
    ShardReader reader((root_ / "jobs" / job / "stage" / d.file).string(), s->holding(d));
    out.resize(d.bytes());
    reader.read(d, 0, d.bytes(), out.data());
    return Meta{d.type, d.count};
  }
  fs::path file = job_file(job);
  if (!fs::exists(file)) fail(PCM_ERR_NOT_FOUND, "job '{}' has stored nothing", job);
  H5Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) fail(PCM_ERR_INTERNAL, "cannot open store {}", file.string());
  std::string path = rank_group(rank) + "/" + key;
  if (!link_exists(f.get(), rank_group(rank)) || !link_exists(f.get(), path))
    fail(PCM_ERR_NOT_FOUND, "nothing stored for job '{}' rank {} key '{}'", job, rank, key);
  H5Id d(H5Dopen2(f.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) fail(PCM_ERR_INTERNAL, "cannot open {} in {}", path, file.string());
  auto hm = dataset_meta(d.get());
  Meta m{hm.type, hm.count};
  if (m.type == 0)
    fail(PCM_ERR_INTERNAL, "{} in {} has a type PCM does not know", path, file.string());
  out.resize(m.count * proto::type_size(m.type));
  if (m.count > 0 &&
      H5Dread(d.get(), native_type(m.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    fail(PCM_ERR_INTERNAL, "cannot read {} in {}", path, file.string());
  return m;
}

}  // namespace pcm::daemon
