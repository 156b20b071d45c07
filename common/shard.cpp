// shard.cpp — a rank's checkpoint shard: written from memory with per-chunk XXH3-64 checksums,
// fsynced; read back in verified ranges.
#include "shard.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "error.h"
#include "h5.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::common {

using nlohmann::json;
using namespace h5;

namespace {

constexpr const char* kShardFormat = "pcm-shard-1";
// Datasets of at least this many bytes start on a kAlign boundary in the file.
constexpr hsize_t kAlignThreshold = 64 * 1024;
constexpr hsize_t kAlign = 1 << 20;

std::uint64_t chunks_of(std::uint64_t bytes) { return (bytes + kShardChunk - 1) / kShardChunk; }

void check_items(const std::vector<ShardItem>& items) {
  for (const auto& it : items) {
    if (!proto::valid_name(it.key)) fail(PCM_ERR_ARG, "invalid key '{}'", it.key);
    const std::size_t elem = proto::type_size(it.type);
    if (elem == 0) fail(PCM_ERR_ARG, "'{}': unknown type {}", it.key, it.type);
    std::uint64_t total = 0;
    for (const auto& p : it.pieces) {
      if (p.bytes > 0 && !p.data) fail(PCM_ERR_ARG, "'{}': a NULL piece", it.key);
      total += p.bytes;
    }
    if (total != it.count * elem)
      fail(PCM_ERR_INTERNAL, "'{}': {} bytes given for {} elements", it.key, total, it.count);
  }
}

// Lays the shard out in an HDF5 file made with fapl: attributes, and one contiguous dataset per
// item with its storage allocated but not written (no fill). Returns the datasets' records with
// their offsets; the data goes in afterwards with plain writes (copy_in), which is as fast as the
// disk where HDF5's own write path was 5 times slower here. keep_open: leave the file open (an
// in-memory image), else close it.
std::vector<ShardDataset> lay_out(const std::string& name, hid_t fapl, const ShardHeader& h,
                                  const std::vector<ShardItem>& items, hid_t* keep_open) {
  quiet_hdf5();
  check_items(items);
  H5Pset_alignment(fapl, kAlignThreshold, kAlign);
  errno = 0;
  H5Id file(H5Fcreate(name.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl), H5Fclose);
  if (!file.valid())
    fail(PCM_ERR_INTERNAL, "cannot create {}: {}", name,
         errno ? std::strerror(errno) : "HDF5 refused");
  write_string_attr(file.get(), "pcm_format", kShardFormat);
  write_string_attr(file.get(), "job", h.job);
  write_int_attr(file.get(), "iteration", h.iteration);
  write_int_attr(file.get(), "rank", h.rank);
  write_int_attr(file.get(), "nprocs", h.nprocs);
  H5Id group(H5Gcreate2(file.get(), "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!group.valid()) fail(PCM_ERR_INTERNAL, "cannot create /data in {}", name);
  H5Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS);
  H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY);
  H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);
  std::vector<ShardDataset> out;
  for (const auto& it : items) {
    hsize_t dims[1] = {static_cast<hsize_t>(it.count)};
    H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
    H5Id d(H5Dcreate2(group.get(), it.key.c_str(), native_type(it.type), space.get(), H5P_DEFAULT,
                      dcpl.get(), H5P_DEFAULT),
           H5Dclose);
    if (!d.valid()) fail(PCM_ERR_INTERNAL, "cannot create dataset {} in {}", it.key, name);
    write_string_attr(d.get(), "pcm_type", proto::type_name(it.type));
    ShardDataset rec;
    rec.key = it.key;
    rec.type = it.type;
    rec.count = it.count;
    if (it.count > 0) {
      haddr_t off = H5Dget_offset(d.get());
      if (off == HADDR_UNDEF)
        fail(PCM_ERR_INTERNAL, "HDF5 gives no offset for {} in {}", it.key, name);
      rec.offset = off;
    }
    out.push_back(std::move(rec));
  }
  group.reset();
  if (keep_open) {
    if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) fail(PCM_ERR_INTERNAL, "cannot flush {}", name);
    *keep_open = file.release();
  } else if (H5Fclose(file.release()) < 0) {
    fail(PCM_ERR_INTERNAL, "cannot close {} (is the disk full?)", name);
  }
  return out;
}

// Copies each item's pieces to its dataset's place through put(bytes, n, file offset), computing
// the chunk checksums from memory on the way, one chunk at a time while it is in the cache.
template <typename Put>
void copy_in(const std::vector<ShardItem>& items, std::vector<ShardDataset>& datasets, Put put) {
  XXH3_state_t* st = XXH3_createState();
  if (!st) fail(PCM_ERR_INTERNAL, "out of memory for a checksum state");
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> own(st, XXH3_freeState);
  for (std::size_t k = 0; k < items.size(); ++k) {
    ShardDataset& d = datasets[k];
    d.xxh3.clear();
    d.xxh3.reserve(chunks_of(d.bytes()));
    std::uint64_t at = d.offset, in_chunk = 0;
    XXH3_64bits_reset(st);
    for (const auto& p : items[k].pieces) {
      const char* src = static_cast<const char*>(p.data);
      std::uint64_t left = p.bytes;
      while (left > 0) {
        const std::uint64_t take = std::min(left, kShardChunk - in_chunk);
        XXH3_64bits_update(st, src, take);
        put(src, take, at);
        src += take;
        at += take;
        left -= take;
        in_chunk += take;
        if (in_chunk == kShardChunk) {
          d.xxh3.push_back(XXH3_64bits_digest(st));
          XXH3_64bits_reset(st);
          in_chunk = 0;
        }
      }
    }
    if (in_chunk > 0) d.xxh3.push_back(XXH3_64bits_digest(st));
  }
}

// Fails (PCM_ERR_INTERNAL with the system's reason) when the shard cannot fit: less room free on
// the file system, or a smaller file size limit (RLIMIT_FSIZE). HDF5 1.10 must never meet such a
// failure itself: a file it could not close stays in its tables, and the process then crashes in
// HDF5 when it exits. Checked, not reserved (no I/O): a disk filled meanwhile is still met later.
void check_room(const std::string& dir, const std::vector<ShardItem>& items) {
  std::uint64_t bytes = 2 * kAlign;  // HDF5's metadata, before and after the data
  for (const auto& it : items) {
    std::uint64_t n = 0;
    for (const auto& p : it.pieces) n += p.bytes;
    bytes += (n + kAlign - 1) / kAlign * kAlign + kAlign;
  }
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && bytes > lim.rlim_cur)
    fail(PCM_ERR_INTERNAL, "cannot write a shard of {:.1f} MiB into {}: {} (limit {:.1f} MiB)",
         bytes / 1048576.0, dir, std::strerror(EFBIG), lim.rlim_cur / 1048576.0);
  if (const std::uint64_t left = free_bytes(dir); left < bytes)
    fail(PCM_ERR_INTERNAL, "cannot write a shard of {:.1f} MiB into {}: {} ({:.1f} MiB free)",
         bytes / 1048576.0, dir, std::strerror(ENOSPC), static_cast<double>(left) / 1048576.0);
}

bool full_pread(int fd, char* out, std::uint64_t n, std::uint64_t at) {
  while (n > 0) {
    ssize_t r = ::pread(fd, out, std::min<std::uint64_t>(n, 1u << 30), static_cast<off_t>(at));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    out += r;
    at += static_cast<std::uint64_t>(r);
    n -= static_cast<std::uint64_t>(r);
  }
  return true;
}

}  // namespace

std::vector<std::uint64_t> chunk_hashes(const void* data, std::uint64_t bytes) {
  std::vector<std::uint64_t> out;
  out.reserve(chunks_of(bytes));
  const char* p = static_cast<const char*>(data);
  for (std::uint64_t at = 0; at < bytes; at += kShardChunk)
    out.push_back(XXH3_64bits(p + at, std::min(kShardChunk, bytes - at)));
  return out;
}

std::uint64_t ShardDataset::bytes() const { return count * proto::type_size(type); }

const ShardDataset* ShardRecord::find(const std::string& key) const {
  for (const auto& d : datasets)
    if (d.key == key) return &d;
  return nullptr;
}

ShardRecord ShardRecord::holding(const ShardDataset& d) const {
  if (d.file.empty()) return *this;
  return ShardRecord{rank, d.file, d.file_size, {d}};
}

std::vector<std::pair<std::string, std::uint64_t>> ShardRecord::files() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  if (!file.empty()) out.emplace_back(file, size);
  for (const auto& d : datasets)
    if (!d.file.empty()) out.emplace_back(d.file, d.file_size);
  return out;
}

std::string shard_file_name(int rank) { return fmt::format("r{}.h5", rank); }

std::uint64_t free_bytes(const std::string& path) {
  std::filesystem::path p = path;
  std::error_code ec;
  while (!p.empty() && !std::filesystem::exists(p, ec)) p = p.parent_path();
  struct statvfs sv {};
  if (::statvfs(p.empty() ? "." : p.c_str(), &sv) != 0) return UINT64_MAX;
  return static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize;
}

bool holds_token(const std::string& dir, const std::string& token) {
  std::ifstream in(dir + "/.pcm-token");
  std::string got;
  return in && std::getline(in, got) && got == token;
}

std::string staged_file_name(int rank, const std::string& key, const std::string& tag) {
  return fmt::format("s{}.{}.{}.h5", rank, key, tag);
}

bool is_staged_file_name(const std::string& name, int rank, const std::string& key) {
  const std::string head = fmt::format("s{}.{}.", rank, key);
  constexpr std::size_t kTag = 16;
  if (name.size() != head.size() + kTag + 3 || name.compare(0, head.size(), head) != 0 ||
      name.compare(name.size() - 3, 3, ".h5") != 0)
    return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(head.size()), name.end() - 3,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

json ShardRecord::to_json() const {
  json ds = json::array();
  for (const auto& d : datasets) {
    ds.push_back({{"key", d.key},
                  {"type", d.type},
                  {"count", d.count},
                  {"offset", d.offset},
                  {"xxh3", d.xxh3}});
    if (!d.file.empty()) {
      ds.back()["file"] = d.file;
      ds.back()["file_size"] = d.file_size;
    }
  }
  return json{{"rank", rank}, {"file", file}, {"size", size}, {"datasets", ds}};
}

ShardRecord ShardRecord::from_json(const json& j) {
  try {
    ShardRecord r;
    r.rank = j.at("rank").get<int>();
    r.file = j.at("file").get<std::string>();
    r.size = j.at("size").get<std::uint64_t>();
    if (r.rank < 0 || (r.file != shard_file_name(r.rank) && !r.file.empty()) ||
        (r.file.empty() && r.size != 0))
      fail(PCM_ERR_ARG, "shard of rank {} named '{}'", r.rank, r.file);
    for (const auto& d : j.at("datasets")) {
      ShardDataset s;
      s.key = d.at("key").get<std::string>();
      s.type = d.at("type").get<int>();
      s.count = d.at("count").get<std::uint64_t>();
      s.offset = d.at("offset").get<std::uint64_t>();
      s.xxh3 = d.at("xxh3").get<std::vector<std::uint64_t>>();
      if (!proto::valid_name(s.key) || proto::type_size(s.type) == 0)
        fail(PCM_ERR_ARG, "shard {}: bad dataset '{}'", r.file, s.key);
      // A dataset in a file of its own (a key PCM_Store wrote itself): only a name of that form.
      std::uint64_t size = r.size;
      if (d.contains("file")) {
        s.file = d.at("file").get<std::string>();
        s.file_size = size = d.at("file_size").get<std::uint64_t>();
        if (!is_staged_file_name(s.file, r.rank, s.key))
          fail(PCM_ERR_ARG, "rank {}: dataset '{}' in a file named '{}'", r.rank, s.key, s.file);
      } else if (r.file.empty()) {
        fail(PCM_ERR_ARG, "rank {}: dataset '{}' is in no file", r.rank, s.key);
      }
      if (s.count > (UINT64_MAX / 16) || s.xxh3.size() != chunks_of(s.bytes()) ||
          (s.count > 0 && (s.offset > size || s.bytes() > size - s.offset)))
        fail(PCM_ERR_ARG, "shard {}: dataset '{}' does not fit its file", r.file, s.key);
      if (r.find(s.key)) fail(PCM_ERR_ARG, "shard {}: dataset '{}' twice", r.file, s.key);
      r.datasets.push_back(std::move(s));
    }
    return r;
  } catch (const json::exception& e) {
    fail(PCM_ERR_ARG, "malformed shard record: {}", e.what());
  }
}

namespace {

// Writes all n bytes at p to fd at offset at; throws with the system's reason.
void write_all(int fd, const char* p, std::uint64_t n, std::uint64_t at, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, std::min<std::uint64_t>(n, 1u << 30), static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      fail(PCM_ERR_INTERNAL, "cannot write {}: {}", path, std::strerror(w < 0 ? errno : ENOSPC));
    p += w;
    at += static_cast<std::uint64_t>(w);
    n -= static_cast<std::uint64_t>(w);
  }
}

// ShardIo::kBuffered's writes of a shard that is to be fsynced: plain writes, and every kKick
// bytes of a contiguous run the kernel is told to start writing them back
// (sync_file_range(SYNC_FILE_RANGE_WRITE), which does not wait), so the disk works while the
// next bytes are copied into the page cache and the final fsync has little left to do. Measured
// here (256 MiB, write + fsync): 0.14-0.16 s kicked, 0.20-0.22 s not, dd conv=fsync 0.20 s.
// Where the call is refused (ENOSYS, a file system without it) it is not tried again.
class KickedWrites {
 public:
  static constexpr std::uint64_t kKick = 8 << 20;

  KickedWrites(const std::string& path, int fd) : path_(path), fd_(fd) {}
  void put(const char* p, std::uint64_t n, std::uint64_t at) {
    write_all(fd_, p, n, at, path_);
    if (off_) return;
    if (at != start_ + run_) {  // a new run: the rest of the old one first
      kick();
      start_ = at;
    }
    run_ += n;
    if (run_ >= kKick) kick();
  }

 private:
  void kick() {
    if (run_ > 0 && ::sync_file_range(fd_, static_cast<off_t>(start_), static_cast<off_t>(run_),
                                      SYNC_FILE_RANGE_WRITE) != 0)
      off_ = true;  // only a hint: the fsync that follows makes the data durable either way
    start_ += run_;
    run_ = 0;
  }
  std::string path_;
  int fd_;
  std::uint64_t start_ = 0, run_ = 0;
  bool off_ = false;
};

// ShardIo::kDirect's writes: runs of contiguous bytes gathered into an aligned bounce buffer and
// written with O_DIRECT in whole blocks; a run's unaligned head and tail go through the plain
// descriptor (other pages: the two never share one). Where the file system refuses O_DIRECT (at
// the open or at the first write), everything goes through the plain descriptor.
class DirectWrites {
 public:
  static constexpr std::uint64_t kBlock = 4096;
  static constexpr std::uint64_t kBounce = 8 << 20;

  DirectWrites(const std::string& path, int plain) : path_(path), plain_(plain) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT);
    void* b = nullptr;
    if (fd_ >= 0 && posix_memalign(&b, kBlock, kBounce) == 0) buf_.reset(static_cast<char*>(b));
  }
  ~DirectWrites() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirectWrites(const DirectWrites&) = delete;
  DirectWrites& operator=(const DirectWrites&) = delete;

  void put(const char* p, std::uint64_t n, std::uint64_t at) {
    if (!buf_ || refused_) return write_all(plain_, p, n, at, path_);
    if (fill_ > 0 && at != start_ + fill_) flush();
    if (fill_ == 0 && at % kBlock != 0) {  // the head, up to the next block
      const std::uint64_t head = std::min(n, kBlock - at % kBlock);
      write_all(plain_, p, head, at, path_);
      p += head, at += head, n -= head;
    }
    while (n > 0) {
      if (fill_ == 0) start_ = at;
      const std::uint64_t take = std::min(n, kBounce - fill_);
      std::memcpy(buf_.get() + fill_, p, take);
      fill_ += take, p += take, at += take, n -= take;
      if (fill_ == kBounce) flush();
    }
  }
  // The rest: whole blocks with O_DIRECT, the tail through the plain descriptor.
  void flush() {
    const std::uint64_t whole = fill_ / kBlock * kBlock;
    std::uint64_t done = 0;
    while (!refused_ && done < whole) {
      ssize_t w = ::pwrite(fd_, buf_.get() + done, whole - done, static_cast<off_t>(start_ + done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno == EINVAL && !wrote_) {
        refused_ = true;  // the file system takes the open, not the writes: plain from now on
        break;
      }
      if (w <= 0 || static_cast<std::uint64_t>(w) % kBlock != 0)
        fail(PCM_ERR_INTERNAL, "cannot write {}: {}", path_, std::strerror(w < 0 ? errno : ENOSPC));
      done += static_cast<std::uint64_t>(w);
      wrote_ = true;
    }
    if (done < fill_) write_all(plain_, buf_.get() + done, fill_ - done, start_ + done, path_);
    fill_ = 0;
  }

 private:
  std::string path_;
  int plain_;
  int fd_ = -1;
  std::unique_ptr<char, decltype(&std::free)> buf_{nullptr, &std::free};
  std::uint64_t start_ = 0, fill_ = 0;
  bool wrote_ = false, refused_ = false;
};

}  // namespace

ShardRecord write_shard(const std::string& dir, const ShardHeader& header,
                        const std::vector<ShardItem>& items, const std::string& file, bool sync,
                        ShardIo io) {
  ShardRecord rec;
  rec.rank = header.rank;
  rec.file = file.empty() ? shard_file_name(header.rank) : file;
  const std::string path = dir + "/" + rec.file;
  check_room(dir, items);
  int fd = -1;
  try {
    {
      H5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
      H5Pset_fapl_sec2(fapl.get());
      rec.datasets = lay_out(path, fapl.get(), header, items, nullptr);
    }
    // The file is pcmd's, private like the rest of its data directory (HDF5 created it by the
    // process's umask); the data goes in with plain writes; HDF5 never fsyncs.
    fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail(PCM_ERR_INTERNAL, "cannot reopen {}: {}", path, std::strerror(errno));
    if (::fchmod(fd, 0600) != 0)
      fail(PCM_ERR_INTERNAL, "cannot make {} private: {}", path, std::strerror(errno));
    if (io == ShardIo::kDirect) {
      DirectWrites direct(path, fd);
      copy_in(items, rec.datasets,
              [&](const char* p, std::uint64_t n, std::uint64_t at) { direct.put(p, n, at); });
      direct.flush();
    } else if (sync) {
      KickedWrites kicked(path, fd);
      copy_in(items, rec.datasets,
              [&](const char* p, std::uint64_t n, std::uint64_t at) { kicked.put(p, n, at); });
    } else {
      copy_in(items, rec.datasets, [&](const char* p, std::uint64_t n, std::uint64_t at) {
        write_all(fd, p, n, at, path);
      });
    }
    struct stat st {};
    if ((sync && ::fsync(fd) != 0) || ::fstat(fd, &st) != 0)
      fail(PCM_ERR_INTERNAL, "cannot sync {}: {}", path, std::strerror(errno));
    int rc = ::close(fd);
    fd = -1;
    if (rc != 0) fail(PCM_ERR_INTERNAL, "cannot close {}: {}", path, std::strerror(errno));
    rec.size = static_cast<std::uint64_t>(st.st_size);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(path.c_str());
    throw;
  }
  return rec;
}

ShardRecord image_shard(const ShardHeader& header, const std::vector<ShardItem>& items,
                        std::vector<char>& image) {
  ShardRecord rec;
  rec.rank = header.rank;
  rec.file = shard_file_name(header.rank);
  // The in-memory file grows by one increment at a time, each a realloc that may copy it: one
  // increment of the data's size (plus room for the metadata) makes it one allocation.
  std::uint64_t bytes = 0;
  for (const ShardItem& it : items)
    for (const auto& p : it.pieces) bytes += p.bytes;
  H5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_core(fapl.get(), static_cast<std::size_t>(bytes + (std::uint64_t{4} << 20)), 0);
  hid_t raw = H5I_INVALID_HID;
  rec.datasets = lay_out(rec.file, fapl.get(), header, items, &raw);
  H5Id file(raw, H5Fclose);
  ssize_t n = H5Fget_file_image(file.get(), nullptr, 0);
  if (n < 0) fail(PCM_ERR_INTERNAL, "cannot size the shard's image");
  // Every byte is written below (by HDF5, then the data): no need to clear the memory, which is
  // kept from one version to the next by the levels' writer.
  image.resize(static_cast<std::size_t>(n));
  if (H5Fget_file_image(file.get(), image.data(), image.size()) != n)
    fail(PCM_ERR_INTERNAL, "cannot copy the shard's image");
  copy_in(items, rec.datasets, [&](const char* p, std::uint64_t len, std::uint64_t at) {
    if (at > image.size() || len > image.size() - at)
      fail(PCM_ERR_INTERNAL, "HDF5 placed data beyond the shard's image");
    std::memcpy(image.data() + at, p, len);
  });
  rec.size = static_cast<std::uint64_t>(n);
  return rec;
}

ShardReader::ShardReader(const std::string& path, const ShardRecord& record)
    : path_(path), record_(record) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(PCM_ERR_NOT_FOUND, "cannot open shard {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || static_cast<std::uint64_t>(st.st_size) != record.size) {
    std::uint64_t got = static_cast<std::uint64_t>(st.st_size);
    ::close(fd_);
    fd_ = -1;
    fail(PCM_ERR_CORRUPT, "shard {} has {} bytes, its manifest says {}", path, got, record.size);
  }
}

ShardReader::~ShardReader() {
  if (fd_ >= 0) ::close(fd_);
}

void ShardReader::read_chunks(const ShardDataset& d, std::uint64_t chunk, std::uint64_t nchunks,
                              char* out) {
  const std::uint64_t total = d.bytes();
  const std::uint64_t lo = chunk * kShardChunk;
  const std::uint64_t hi = std::min(total, (chunk + nchunks) * kShardChunk);
  if (!full_pread(fd_, out, hi - lo, d.offset + lo))
    fail(PCM_ERR_CORRUPT, "shard {}: cannot read {} of dataset '{}': {}", path_, hi - lo, d.key,
         errno ? std::strerror(errno) : "file ends early");
  for (std::uint64_t c = chunk; c < chunk + nchunks; ++c) {
    const std::uint64_t a = c * kShardChunk - lo;
    const std::uint64_t n = std::min(kShardChunk, total - c * kShardChunk);
    if (XXH3_64bits(out + a, n) != d.xxh3.at(c))
      fail(PCM_ERR_CORRUPT, "shard {}: dataset '{}' chunk {} (bytes {}..{}) fails its checksum",
           path_, d.key, c, c * kShardChunk, c * kShardChunk + n);
  }
}

void ShardReader::read(const ShardDataset& d, std::uint64_t first, std::uint64_t n, void* out) {
  const std::uint64_t total = d.bytes();
  if (first > total || n > total - first)
    fail(PCM_ERR_ARG, "shard {}: bytes {}+{} of dataset '{}' ({} bytes)", path_, first, n, d.key,
         total);
  char* o = static_cast<char*>(out);
  std::uint64_t at = first, end = first + n;
  while (at < end) {
    const std::uint64_t c = at / kShardChunk;
    const std::uint64_t c_lo = c * kShardChunk, c_hi = std::min(total, c_lo + kShardChunk);
    if (at == c_lo && end >= c_hi) {
      // Whole chunks straight into out: as many as the range holds entirely.
      std::uint64_t whole = (std::min(end, total) - c_lo) / kShardChunk;
      if (end == total && (total - c_lo) % kShardChunk) ++whole;  // the short last chunk
      whole = std::max<std::uint64_t>(whole, 1);
      read_chunks(d, c, whole, o);
      const std::uint64_t got = std::min(total, (c + whole) * kShardChunk) - c_lo;
      o += got;
      at += got;
      continue;
    }
    // Part of a chunk: through the cache.
    if (cached_key_ != d.key || cached_chunk_ != c) {
      cached_.resize(c_hi - c_lo);
      cached_chunk_ = UINT64_MAX;
      read_chunks(d, c, 1, cached_.data());
      cached_key_ = d.key;
      cached_chunk_ = c;
    }
    const std::uint64_t take = std::min(end, c_hi) - at;
    std::memcpy(o, cached_.data() + (at - c_lo), take);
    o += take;
    at += take;
  }
}

}  // namespace pcm::common
