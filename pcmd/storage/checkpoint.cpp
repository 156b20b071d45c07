// checkpoint.cpp — crash-safe versioned checkpoints: shard directories committed by one rename
// (format 2); single files with CRC-32 manifests verified before any HDF5 open (format 1);
// fallback to the newest valid version, and pruning.
#include "storage/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "durable.h"
#include "error.h"
#include "h5.h"
#include "pcm_types.h"
#include "protocol.h"
#include "storage/checkpoint_files.h"

namespace pcm::daemon {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace h5;

std::string ckpt::random_token() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

void ckpt::remove_matching(const fs::path& dir, const std::regex& pattern) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) {
    std::error_code ec2;
    if (std::regex_match(it->path().filename().string(), pattern)) fs::remove_all(it->path(), ec2);
  }
}

using namespace ckpt;

namespace {

std::string version_name(std::int64_t iteration) {
  char b[40];
  std::snprintf(b, sizeof b, "v%020lld", static_cast<long long>(iteration));
  return b;
}

std::uint32_t crc_of(const void* data, std::size_t n, std::uint32_t crc = 0) {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {  // zlib takes uInt lengths
    uInt chunk = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    crc = static_cast<std::uint32_t>(::crc32(crc, p, chunk));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

// CRC-32 and size of a whole file, read with plain reads (never through HDF5).
std::uint32_t file_crc(const fs::path& p, std::uint64_t* size) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(PCM_ERR_NOT_FOUND, "cannot read {}", p.string());
  std::vector<char> buf(1 << 20);
  std::uint32_t crc = 0;
  std::uint64_t n = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    std::size_t got = static_cast<std::size_t>(in.gcount());
    crc = crc_of(buf.data(), got, crc);
    n += got;
  }
  *size = n;
  return crc;
}

// Removes every entry of dir whose name matches pattern (leftovers: temporary files and
// directories, pruned versions); what cannot be removed stays.

// Reads a whole 1-D dataset of a file that has already been verified.
Meta read_dataset(hid_t file, const std::string& path, std::vector<char>& out) {
  H5Id d(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) fail(PCM_ERR_NOT_FOUND, "no dataset {}", path);
  Meta m = dataset_meta(d.get());
  if (m.type == 0) fail(PCM_ERR_INTERNAL, "{} has a type PCM does not know", path);
  out.resize(m.count * proto::type_size(m.type));
  if (m.count > 0 &&
      H5Dread(d.get(), native_type(m.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    fail(PCM_ERR_INTERNAL, "cannot read {}", path);
  return m;
}

}  // namespace

json Manifest::to_json() const {
  if (format == 2) {
    json sh = json::array();
    for (const auto& r : shards) sh.push_back(r.to_json());
    json j{{"format", "pcm-checkpoint-2"},
           {"job", job},
           {"iteration", iteration},
           {"nprocs", nprocs},
           {"layout", layout},
           {"bytes", file_size},
           {"chunk", kShardChunk},
           {"checksum", "xxh3-64"},
           {"shards", sh}};
    if (!levels.empty()) {
      j["levels"] = json::array();
      for (const auto& l : levels) j["levels"].push_back(l.to_json());
    }
    return j;
  }
  json ds = json::array();
  for (const auto& d : datasets)
    ds.push_back({{"path", d.path}, {"type", d.type}, {"count", d.count}, {"crc32", d.crc}});
  return json{{"format", "pcm-checkpoint-1"},
              {"job", job},
              {"iteration", iteration},
              {"nprocs", nprocs},
              {"layout", layout},
              {"file_size", file_size},
              {"file_crc32", file_crc},
              {"datasets", ds}};
}

Manifest Manifest::from_json(const json& j) {
  try {
    if (j.at("format") == "pcm-checkpoint-2") {
      Manifest m;
      m.format = 2;
      m.job = j.at("job").get<std::string>();
      m.iteration = j.at("iteration").get<std::int64_t>();
      m.nprocs = j.at("nprocs").get<int>();
      m.layout = j.at("layout");
      m.file_size = j.at("bytes").get<std::uint64_t>();
      if (j.at("chunk").get<std::uint64_t>() != kShardChunk || j.at("checksum") != "xxh3-64")
        fail(PCM_ERR_ARG, "manifest's chunk size or checksum is not this PCM's");
      for (const auto& r : j.at("shards")) m.shards.push_back(ShardRecord::from_json(r));
      if (m.nprocs < 1 || m.iteration < 0 || m.shards.size() != static_cast<std::size_t>(m.nprocs))
        fail(PCM_ERR_ARG, "manifest values out of range");
      for (int r = 0; r < m.nprocs; ++r)
        if (m.shards[r].rank != r) fail(PCM_ERR_ARG, "manifest's shards are not ranks 0..n-1");
      if (j.contains("levels")) {
        for (const auto& l : j.at("levels")) m.levels.push_back(ShardLevels::from_json(l));
        if (m.levels.size() != m.shards.size()) fail(PCM_ERR_ARG, "manifest's levels are not n");
      }
      return m;
    }
    if (j.at("format") != "pcm-checkpoint-1") fail(PCM_ERR_ARG, "unknown manifest format");
    Manifest m;
    m.job = j.at("job").get<std::string>();
    m.iteration = j.at("iteration").get<std::int64_t>();
    m.nprocs = j.at("nprocs").get<int>();
    m.layout = j.at("layout");
    m.file_size = j.at("file_size").get<std::uint64_t>();
    m.file_crc = j.at("file_crc32").get<std::uint32_t>();
    for (const auto& d : j.at("datasets"))
      m.datasets.push_back({d.at("path").get<std::string>(), d.at("type").get<int>(),
                            d.at("count").get<std::uint64_t>(),
                            d.at("crc32").get<std::uint32_t>()});
    if (m.nprocs < 1 || m.iteration < 0) fail(PCM_ERR_ARG, "manifest values out of range");
    return m;
  } catch (const json::exception& e) {
    fail(PCM_ERR_ARG, "malformed manifest: {}", e.what());
  }
}

class Checkpoints::Remover {
 public:
  Remover() : thread_([this] { run(); }) {}
  ~Remover() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void add(fs::path p) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(p));
    }
    cv_.notify_one();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_, and nothing left
      fs::path p = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::error_code ec;
      fs::remove_all(p, ec);
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<fs::path> queue_;
  bool stop_ = false;
  std::thread thread_;
};

Checkpoints::Checkpoints(fs::path root) : root_(std::move(root)) { quiet_hdf5(); }

Checkpoints::~Checkpoints() {
  if (records_fd_ >= 0) ::close(records_fd_);
}

fs::path Checkpoints::version_file(const std::string& job, std::int64_t iteration) const {
  return root_ / "checkpoints" / job / (version_name(iteration) + ".h5");
}

fs::path Checkpoints::version_dir(const std::string& job, std::int64_t iteration) const {
  return root_ / "checkpoints" / job / version_name(iteration);
}

fs::path Checkpoints::manifest_file(const std::string& job, std::int64_t iteration) const {
  return root_ / "checkpoints" / job / (version_name(iteration) + ".manifest.json");
}

Manifest Checkpoints::commit(const Store& store, const std::string& job, std::int64_t iteration,
                             int nprocs, const json& layout) {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  if (iteration < 0) fail(PCM_ERR_ARG, "iteration {} is negative", iteration);
  if (nprocs < 1) fail(PCM_ERR_ARG, "a version needs at least one process");
  // Keys the ranks wrote themselves make a version of shards, their files linked, not copied.
  if (!store.direct_of(job).empty()) return commit_direct(store, job, iteration, nprocs, layout);
  fs::path src = store.job_file(job);
  if (!fs::exists(src)) fail(PCM_ERR_NOT_FOUND, "job '{}' has stored nothing", job);
  if (auto failed = store.failed_store(job))
    fail(PCM_ERR_REFUSED,
         "the last store of {} of job '{}' failed; store it again before committing (no version "
         "made: it would mix that key's earlier data with the new data of the others)",
         *failed, job);
  fs::path final_path = version_file(job, iteration);
  std::error_code ec;
  fs::create_directories(final_path.parent_path(), ec);
  if (ec)
    fail(PCM_ERR_INTERNAL, "cannot create {}: {}", final_path.parent_path().string(), ec.message());
  fs::path tmp = final_path.string() + ".tmp";
  fs::remove(tmp, ec);
  // A valid version is never overwritten (a crash in between would lose it); an invalid one
  // is no version and may be replaced.
  if (fs::exists(manifest_file(job, iteration))) {
    if (verify(job, iteration).valid)
      fail(PCM_ERR_REFUSED, "job '{}' already has a valid version for iteration {}", job,
           iteration);
    fs::remove(manifest_file(job, iteration), ec);
    fsync_path(final_path.parent_path(), true);
  }

  Manifest m;
  m.job = job;
  m.iteration = iteration;
  m.nprocs = nprocs;
  m.layout = layout;
  try {
    H5Id s(H5Fopen(src.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!s.valid()) fail(PCM_ERR_INTERNAL, "cannot open {}", src.string());
    H5Id d(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!d.valid()) fail(PCM_ERR_INTERNAL, "cannot create {}", tmp.string());
    // Each dataset is read (for its checksum) and written by us: HDF5 1.10's H5Ocopy crashes in
    // its error path when a write fails (a full disk), and reading once serves both.
    std::vector<char> data;
    for (int r = 0; r < nprocs; ++r) {
      std::string g = "rank_" + std::to_string(r);
      if (!link_exists(s.get(), g))
        fail(PCM_ERR_REFUSED, "rank {} of job '{}' has stored nothing; no version made", r, job);
      H5Id grp(H5Gopen2(s.get(), g.c_str(), H5P_DEFAULT), H5Gclose);
      H5Id out(H5Gcreate2(d.get(), g.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      if (!grp.valid() || !out.valid()) fail(PCM_ERR_INTERNAL, "cannot copy {} (disk full?)", g);
      for (const std::string& name : link_names(grp.get(), g)) {
        std::string path = "/" + g + "/" + name;
        Meta dm = read_dataset(s.get(), path, data);
        hsize_t dims[1] = {dm.count};
        H5Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
        H5Id ds(H5Dcreate2(out.get(), name.c_str(), native_type(dm.type), space.get(), H5P_DEFAULT,
                           H5P_DEFAULT, H5P_DEFAULT),
                H5Dclose);
        if (!ds.valid() || (dm.count > 0 && H5Dwrite(ds.get(), native_type(dm.type), H5S_ALL,
                                                     H5S_ALL, H5P_DEFAULT, data.data()) < 0))
          fail(PCM_ERR_INTERNAL, "cannot write {} into {} (disk full?)", path, tmp.string());
        write_string_attr(ds.get(), "pcm_type", proto::type_name(dm.type));
        m.datasets.push_back({path, dm.type, dm.count, crc_of(data.data(), data.size())});
      }
    }
    write_string_attr(d.get(), "pcm_job", job);
    write_int_attr(d.get(), "pcm_iteration", iteration);
    write_int_attr(d.get(), "pcm_nprocs", nprocs);
    // The layout can be large (an irregular map of many units): a dataset, not an attribute
    // (HDF5 attributes are limited to 64 KiB).
    std::string text = layout.is_null() ? "" : layout.dump();
    hsize_t ldims[1] = {text.size()};
    H5Id lspace(H5Screate_simple(1, ldims, nullptr), H5Sclose);
    H5Id lds(H5Dcreate2(d.get(), "pcm_layout", H5T_NATIVE_CHAR, lspace.get(), H5P_DEFAULT,
                        H5P_DEFAULT, H5P_DEFAULT),
             H5Dclose);
    if (!lds.valid() || (!text.empty() && H5Dwrite(lds.get(), H5T_NATIVE_CHAR, H5S_ALL, H5S_ALL,
                                                   H5P_DEFAULT, text.data()) < 0))
      fail(PCM_ERR_INTERNAL, "cannot write the layout into {} (disk full?)", tmp.string());
    lds.reset();
    if (H5Fflush(d.get(), H5F_SCOPE_GLOBAL) < 0)
      fail(PCM_ERR_INTERNAL, "cannot flush {} (disk full?)", tmp.string());
    if (H5Fclose(d.release()) < 0)
      fail(PCM_ERR_INTERNAL, "cannot close {} (disk full?)", tmp.string());
    fsync_path(tmp, false);
    m.file_crc = file_crc(tmp, &m.file_size);
    if (::rename(tmp.c_str(), final_path.c_str()) != 0)
      fail(PCM_ERR_INTERNAL, "cannot rename {}: {}", tmp.string(), std::strerror(errno));
    fsync_path(final_path.parent_path(), true);
    // The version exists from here on.
    write_atomically(manifest_file(job, iteration), m.to_json().dump(1) + "\n");
  } catch (const Error& e) {
    // Whether the disk was full, asked before the partial file is removed (which frees space).
    const std::uint64_t source = fs::file_size(src, ec);
    const bool full = e.code() == PCM_ERR_INTERNAL &&
                      free_bytes(final_path.parent_path().string()) < source + (1 << 20);
    fs::remove(tmp, ec);
    // A data file without a manifest is no version; remove it so it is not mistaken for one.
    if (!fs::exists(manifest_file(job, iteration))) fs::remove(final_path, ec);
    if (full)
      throw Error(PCM_ERR_NOSPACE, std::string(e.what()) +
                                       ": no space left on the disk holding the versions; the "
                                       "previous version stays valid");
    throw;
  } catch (...) {
    fs::remove(tmp, ec);
    if (!fs::exists(manifest_file(job, iteration))) fs::remove(final_path, ec);
    throw;
  }
  return m;
}

std::optional<Manifest> Checkpoints::load_manifest(const std::string& job, std::int64_t iteration,
                                                   std::string* why) const {
  const fs::path v2 = version_dir(job, iteration) / kManifestName;
  std::error_code ec;
  std::ifstream in(fs::exists(v2, ec) ? v2 : manifest_file(job, iteration));
  if (!in) {
    *why = "no manifest";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) {
    *why = "manifest is not valid JSON";
    return std::nullopt;
  }
  try {
    Manifest m = Manifest::from_json(j);
    if (m.iteration != iteration || m.job != job) {
      *why = "manifest names another version";
      return std::nullopt;
    }
    return m;
  } catch (const Error& e) {
    *why = e.what();
    return std::nullopt;
  }
}

VersionStatus Checkpoints::verify(const std::string& job, std::int64_t iteration) const {
  VersionStatus v;
  v.iteration = iteration;
  auto m = load_manifest(job, iteration, &v.why);
  if (!m) return v;
  v.nprocs = m->nprocs;
  if (m->format == 2) {
    // The data is verified by whoever reads it (chunk by chunk); here, what costs no reading.
    const fs::path dir = version_dir(job, iteration);
    std::error_code ec;
    v.bytes = m->file_size;
    for (const bool bad : {true, false})  // mark_bad's marks
      if (const fs::path mark = dir / (bad ? kBadName : kUnreachableName); fs::exists(mark, ec)) {
        std::ifstream b(mark);
        std::string reason;
        std::getline(b, reason);
        v.why = (bad ? "marked bad: " : "out of reach of the last restart: ") + reason;
        return v;
      }
    for (const auto& r : m->shards)
      for (const auto& [file, want] : r.files()) {
        if (!m->on_shared(static_cast<std::size_t>(r.rank))) break;  // on the hosts' levels
        auto size = fs::file_size(dir / file, ec);
        if (ec) {
          v.why = fmt::format("shard {} missing", file);
          return v;
        }
        if (size != want) {
          v.why = fmt::format("shard {} has {} bytes, manifest says {}", file, size, want);
          return v;
        }
      }
    v.valid = true;
    return v;
  }
  fs::path file = version_file(job, iteration);
  if (!fs::exists(file)) {
    v.why = "data file missing";
    return v;
  }
  std::uint64_t size = 0;
  std::uint32_t crc = file_crc(file, &size);
  v.bytes = size;
  if (size != m->file_size) {
    v.why = fmt::format("data file has {} bytes, manifest says {}", size, m->file_size);
    return v;
  }
  if (crc != m->file_crc) {
    v.why = "data file checksum differs from the manifest";
    return v;
  }
  // Only now, with the bytes known good, may HDF5 open the file.
  H5Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) {
    v.why = "HDF5 cannot open the data file";
    return v;
  }
  std::vector<char> data;
  for (const auto& d : m->datasets) {
    try {
      Meta dm = read_dataset(f.get(), d.path, data);
      if (dm.type != d.type || dm.count != d.count || crc_of(data.data(), data.size()) != d.crc) {
        v.why = fmt::format("dataset {} differs from the manifest", d.path);
        return v;
      }
    } catch (const Error& e) {
      v.why = e.what();
      return v;
    }
  }
  v.valid = true;
  return v;
}

std::vector<std::int64_t> Checkpoints::iterations(const std::string& job) const {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  std::set<std::int64_t, std::greater<>> found;
  fs::path dir = root_ / "checkpoints" / job;
  std::error_code ec;
  static const std::regex name(R"(v(\d{20})(\.h5|\.manifest\.json)?)");
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) {
    std::smatch m;
    std::string f = it->path().filename().string();
    if (!std::regex_match(f, m, name)) continue;
    // 20 digits can exceed a 64-bit integer: such a name is no version of ours.
    // (The digits are held in a string of their own: end points into them. Found by fuzzing:
    // m.str(1) was a temporary, freed before *end was read.)
    const std::string digits = m.str(1);
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(digits.c_str(), &end, 10);
    if (errno == 0 && *end == '\0') found.insert(v);
  }
  return {found.begin(), found.end()};
}

std::vector<VersionStatus> Checkpoints::list(const std::string& job) const {
  std::vector<VersionStatus> out;
  // A data file or directory without a manifest is no version (a commit that died before its
  // manifest): not listed, so that `pcmctl verify` does not fail on what a crash left.
  for (auto it : iterations(job))
    if (fs::exists(manifest_file(job, it)) || fs::exists(version_dir(job, it) / kManifestName))
      out.push_back(verify(job, it));
  return out;
}

bool Checkpoints::has_job(const std::string& job) const {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  std::error_code ec;
  return fs::is_directory(root_ / "checkpoints" / job, ec);
}

std::optional<std::int64_t> Checkpoints::newest_valid(const std::string& job,
                                                      std::optional<std::int64_t> known) const {
  // Newest first, stopping at the first that verifies: older versions are not read.
  for (auto it : iterations(job)) {
    if (known && it == *known) return it;
    if (verify(job, it).valid) return it;
  }
  return std::nullopt;
}

std::optional<Manifest> Checkpoints::latest_valid(const std::string& job) const {
  auto it = newest_valid(job, std::nullopt);
  if (!it) return std::nullopt;
  std::string why;
  return load_manifest(job, *it, &why);
}

std::vector<std::int64_t> Checkpoints::prune(const std::string& job, std::size_t keep,
                                             std::optional<std::int64_t> known_valid) {
  if (keep < 1) fail(PCM_ERR_ARG, "prune must keep at least one version");
  const std::int64_t newest = newest_valid(job, known_valid).value_or(-1);
  // With checkpoint levels, the newest version a lost host cannot take away stays too.
  const std::int64_t shared = newest_shared(job).value_or(-1);
  std::vector<std::int64_t> removed;
  std::error_code ec;
  // A data file without a manifest is no version (a commit that died between its two renames):
  // it takes no place among the `keep` newest and is removed.
  std::vector<std::int64_t> versions;
  for (auto it : iterations(job)) {
    if (fs::exists(manifest_file(job, it)) || fs::exists(version_dir(job, it) / kManifestName)) {
      versions.push_back(it);
    } else {
      fs::remove(version_file(job, it), ec);
      fs::remove_all(version_dir(job, it), ec);
    }
  }
  // Temporary files of commits that died are no versions either (pcmd serves one request at a
  // time, so no commit is in progress while this runs).
  static const std::regex tmp_name(R"(v\d{20}\.(h5|manifest\.json)\.tmp)");
  fs::path dir = root_ / "checkpoints" / job;
  remove_matching(dir, tmp_name);
  for (std::size_t i = keep; i < versions.size(); ++i) {
    if (versions[i] == newest || versions[i] == shared) continue;
    // Manifest first: without it the data is no version, even if pcmd dies right here.
    fs::remove(manifest_file(job, versions[i]), ec);
    const fs::path vdir = version_dir(job, versions[i]);
    if (fs::remove(vdir / kManifestName, ec)) fsync_path(vdir, true);
    fsync_path(dir, true);
    fs::remove(version_file(job, versions[i]), ec);
    // A version directory leaves at once under a name no version has; its files go later.
    if (fs::exists(vdir, ec)) {
      const fs::path trash = dir / (".trash." + version_name(versions[i]) + "." + random_token());
      if (::rename(vdir.c_str(), trash.c_str()) == 0) {
        if (!remover_) remover_ = std::make_unique<Remover>();
        remover_->add(trash);
      } else {
        fs::remove_all(vdir, ec);
      }
    }
    removed.push_back(versions[i]);
  }
  return removed;
}

Store::Meta Checkpoints::read(const Manifest& m, int rank, const std::string& key,
                              std::vector<char>& out) const {
  if (!proto::valid_name(key)) fail(PCM_ERR_ARG, "invalid key '{}'", key);
  if (m.format == 2) {
    if (rank < 0 || rank >= m.nprocs)
      fail(PCM_ERR_NOT_FOUND, "version {} of job '{}' has no rank {}", m.iteration, m.job, rank);
    const ShardRecord& r = m.shards[static_cast<std::size_t>(rank)];
    const ShardDataset* d = r.find(key);
    if (!d)
      fail(PCM_ERR_NOT_FOUND, "version {} of job '{}' has nothing for rank {} key '{}'",
           m.iteration, m.job, rank, key);
    const ShardRecord file = r.holding(*d);
    ShardReader reader((version_dir(m.job, m.iteration) / file.file).string(), file);
    out.resize(d->bytes());
    reader.read(*d, 0, d->bytes(), out.data());
    return Store::Meta{d->type, d->count};
  }
  std::string path = "/rank_" + std::to_string(rank) + "/" + key;
  auto it = std::find_if(m.datasets.begin(), m.datasets.end(),
                         [&](const DatasetInfo& d) { return d.path == path; });
  if (it == m.datasets.end())
    fail(PCM_ERR_NOT_FOUND, "version {} of job '{}' has no {}", m.iteration, m.job, path);
  // The whole file was verified when m was; the dataset's own checksum is checked below.
  fs::path file = version_file(m.job, m.iteration);
  H5Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) fail(PCM_ERR_INTERNAL, "cannot open {}", file.string());
  Meta dm = read_dataset(f.get(), path, out);
  if (crc_of(out.data(), out.size()) != it->crc)
    fail(PCM_ERR_INTERNAL, "{} of version {} fails its checksum", path, m.iteration);
  return Store::Meta{dm.type, dm.count};
}

void Checkpoints::sweep(const std::set<std::string>& running) {
  std::error_code ec;
  static const std::regex leftover(R"(v\d{20}\.tmp|\.trash\.v\d{20}\.[0-9a-f]+)");
  static const std::regex trash(R"(\.trash\.v\d{20}\.[0-9a-f]+)");
  for (auto j = fs::directory_iterator(root_ / "checkpoints", ec);
       !ec && j != fs::directory_iterator(); ++j)
    remove_matching(j->path(), running.count(j->path().filename().string()) ? trash : leftover);
}

}  // namespace pcm::daemon
