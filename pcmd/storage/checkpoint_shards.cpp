// checkpoint_shards.cpp — checkpoint versions of format 2, whose shards the ranks write
// themselves: the version's directory made, shards put through pcmd, the shards committed by one
// rename, damaged versions marked (checkpoint.h); and PCM_Commit of keys the ranks stored
// themselves (store.h), a version of shards whose files are the direct ones, hard-linked into it,
// plus a shard pcmd writes per rank for the keys stored through it, committed by commit_shards'
// one rename.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>

#include "durable.h"
#include "error.h"
#include "pcm_types.h"
#include "protocol.h"
#include "storage/checkpoint.h"
#include "storage/checkpoint_files.h"

namespace pcm::daemon {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ckpt;

namespace {

fs::path tmp_dir_of(const fs::path& version_dir) { return version_dir.string() + ".tmp"; }

// A second name for a file that is never written again; a copy (fsynced) only where the two
// directories are on different file systems.
void link_or_copy(const fs::path& from, const fs::path& to) {
  if (::link(from.c_str(), to.c_str()) == 0) return;
  if (errno != EXDEV && errno != EPERM && errno != EMLINK)
    fail(PCM_ERR_INTERNAL, "cannot link {} into {}: {}", from.string(), to.parent_path().string(),
         std::strerror(errno));
  std::error_code ec;
  fs::copy_file(from, to, ec);
  if (ec) fail(PCM_ERR_INTERNAL, "cannot copy {}: {}", from.string(), ec.message());
  fsync_path(to, false);
}

// The keys rank stored through pcmd (and not since by itself), as the rank's own shard written
// into dir; nullopt when there are none.
std::optional<ShardRecord> write_through_keys(const Store& store, const std::string& job,
                                              std::int64_t iteration, int rank, int nprocs,
                                              const std::set<std::string>& direct,
                                              const fs::path& dir) {
  std::vector<std::vector<char>> data;
  std::vector<ShardItem> items;
  for (const std::string& key : store.keys(job, rank)) {
    if (direct.count(key)) continue;
    data.emplace_back();
    const Store::Meta m = store.get(job, rank, key, data.back());
    items.push_back(ShardItem{key, m.type, m.count, {{data.back().data(), data.back().size()}}});
  }
  if (items.empty()) return std::nullopt;
  return write_shard(dir.string(), ShardHeader{job, iteration, rank, nprocs}, items);
}

}  // namespace

Checkpoints::ShardDir Checkpoints::begin_shards(const std::string& job, std::int64_t iteration) {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  if (iteration < 0) fail(PCM_ERR_ARG, "iteration {} is negative", iteration);
  const fs::path vdir = version_dir(job, iteration), tmp = tmp_dir_of(vdir);
  std::error_code ec;
  fs::create_directories(vdir.parent_path(), ec);
  if (ec) fail(PCM_ERR_INTERNAL, "cannot create {}: {}", vdir.parent_path().string(), ec.message());
  if ((fs::exists(vdir / kManifestName, ec) || fs::exists(manifest_file(job, iteration), ec)) &&
      verify(job, iteration).valid)
    fail(PCM_ERR_REFUSED, "job '{}' already has a valid version for iteration {}", job, iteration);
  // What earlier attempts left (a commit that failed or died, of this iteration or another)
  // goes: a job's checkpoints are collective, one at a time.
  static const std::regex tmp_name(R"(v\d{20}\.tmp)");
  remove_matching(vdir.parent_path(), tmp_name);
  if (::mkdir(tmp.c_str(), 0700) != 0)
    fail(PCM_ERR_INTERNAL, "cannot create {}: {}", tmp.string(), std::strerror(errno));
  ShardDir out{fs::absolute(tmp, ec), random_token()};
  // Only read while the version is made, then removed: no fsync.
  std::ofstream(tmp / kTokenName) << out.token;
  return out;
}

void Checkpoints::put_shard(const std::string& job, std::int64_t iteration, int rank,
                            const void* data, std::size_t size) {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  if (rank < 0) fail(PCM_ERR_ARG, "rank {} is negative", rank);
  const fs::path tmp = tmp_dir_of(version_dir(job, iteration));
  std::error_code ec;
  if (!fs::is_directory(tmp, ec))
    fail(PCM_ERR_REFUSED, "no checkpoint of iteration {} is being made for job '{}'", iteration,
         job);
  const fs::path file = tmp / shard_file_name(rank);
  write_synced(file.string() + ".part", data, size);
  if (::rename((file.string() + ".part").c_str(), file.c_str()) != 0)
    fail(PCM_ERR_INTERNAL, "cannot rename {}: {}", file.string(), std::strerror(errno));
}

namespace {
const std::regex& record_name() {
  static const std::regex name(R"(r(\d{1,7})\.record)");
  return name;
}
}  // namespace

void Checkpoints::keep_record(const std::string& job, std::int64_t iteration,
                              const ShardRecord& record, const std::optional<ShardLevels>& levels) {
  const fs::path file = tmp_dir_of(version_dir(job, iteration)) / kRecordsName;
  // The descriptor kept open is the log's only while its file is (the version directory may have
  // been removed, and made again at the same iteration, since): a removed file is opened anew.
  struct stat st {};
  if (records_fd_ >= 0 && file == records_path_ &&
      (::fstat(records_fd_, &st) != 0 || st.st_nlink == 0)) {
    ::close(records_fd_);
    records_fd_ = -1;
  }
  if (file != records_path_ || records_fd_ < 0) {
    if (records_fd_ >= 0) ::close(records_fd_);
    records_path_ = file;
    records_fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (records_fd_ < 0)
      fail(PCM_ERR_INTERNAL, "cannot keep the record of rank {} in {}: {}", record.rank,
           file.string(), std::strerror(errno));
  }
  json j = record.to_json();
  if (levels) j["pcm_levels"] = levels->to_json();
  const std::string bytes = proto::encode(j);
  const auto n = static_cast<std::uint32_t>(bytes.size());
  std::string entry;
  entry.reserve(4 + bytes.size());
  for (int i = 0; i < 4; ++i) entry.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  entry += bytes;
  // One write: a pcmd killed meanwhile leaves at most its last entry cut short (not counted).
  if (::write(records_fd_, entry.data(), entry.size()) != static_cast<ssize_t>(entry.size())) {
    const int err = errno;
    ::close(records_fd_);
    records_fd_ = -1;
    fail(PCM_ERR_INTERNAL, "cannot keep the record of rank {} in {}: {}", record.rank,
         file.string(), std::strerror(err));
  }
}

namespace {
Checkpoints::KeptRecord parse_kept(const char* data, std::size_t size) {
  const json j = proto::decode_large(data, size, size);
  std::optional<ShardLevels> levels;
  if (j.contains("pcm_levels")) levels = ShardLevels::from_json(j.at("pcm_levels"));
  return {ShardRecord::from_json(j), std::move(levels)};
}
}  // namespace

std::optional<std::vector<Checkpoints::KeptRecord>> Checkpoints::kept_records(
    const std::string& job, std::int64_t iteration) const {
  const fs::path tmp = tmp_dir_of(version_dir(job, iteration));
  std::error_code ec;
  if (!fs::is_directory(tmp, ec)) return std::nullopt;
  std::vector<KeptRecord> out;
  std::ifstream log(tmp / kRecordsName, std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  for (std::size_t at = 0; at + 4 <= all.size();) {
    std::uint32_t n = 0;
    for (int i = 0; i < 4; ++i)
      n |= static_cast<std::uint32_t>(
               static_cast<unsigned char>(all[at + static_cast<std::size_t>(i)]))
           << (8 * i);
    if (n > all.size() - at - 4) break;  // the last entry, cut short: not counted
    try {
      out.push_back(parse_kept(all.data() + at + 4, n));
    } catch (const std::exception&) {
      // A record that does not parse: that rank's report is not counted.
    }
    at += 4 + n;
  }
  // An earlier pcmd kept a file per rank.
  for (auto it = fs::directory_iterator(tmp, ec); !ec && it != fs::directory_iterator(); ++it) {
    if (!std::regex_match(it->path().filename().string(), record_name())) continue;
    std::ifstream in(it->path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      out.push_back(parse_kept(bytes.data(), bytes.size()));
    } catch (const std::exception&) {
      // A record cut short: that rank's report is not counted (the version is not made).
    }
  }
  return out;
}

Manifest Checkpoints::commit_shards(const std::string& job, std::int64_t iteration, int nprocs,
                                    const json& layout, std::vector<ShardRecord> shards,
                                    std::vector<ShardLevels> levels) {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  if (nprocs < 1) fail(PCM_ERR_ARG, "a version needs at least one process");
  const fs::path vdir = version_dir(job, iteration), tmp = tmp_dir_of(vdir);
  std::error_code ec;
  if (!fs::is_directory(tmp, ec))
    fail(PCM_ERR_REFUSED, "no checkpoint of iteration {} is being made for job '{}'", iteration,
         job);
  std::sort(shards.begin(), shards.end(),
            [](const ShardRecord& a, const ShardRecord& b) { return a.rank < b.rank; });
  if (shards.size() != static_cast<std::size_t>(nprocs))
    fail(PCM_ERR_REFUSED, "{} shards for {} processes; no version made", shards.size(), nprocs);
  if (!levels.empty() && levels.size() != static_cast<std::size_t>(nprocs))
    fail(PCM_ERR_REFUSED, "levels of {} shards for {} processes; no version made", levels.size(),
         nprocs);
  Manifest m;
  m.format = 2;
  m.levels = std::move(levels);
  m.job = job;
  m.iteration = iteration;
  m.nprocs = nprocs;
  m.layout = layout;
  for (int r = 0; r < nprocs; ++r) {
    const ShardRecord& sh = shards[static_cast<std::size_t>(r)];
    if (sh.rank != r) fail(PCM_ERR_REFUSED, "no shard for rank {}; no version made", r);
    for (const auto& [file, want] : sh.files()) {
      if (!m.on_shared(static_cast<std::size_t>(r))) {
        m.file_size += want;  // on the hosts' levels: not here
        continue;
      }
      auto size = fs::file_size(tmp / file, ec);
      if (ec) fail(PCM_ERR_REFUSED, "shard {} of rank {} is missing; no version made", file, r);
      if (size != want)
        fail(PCM_ERR_REFUSED, "shard {} has {} bytes, its rank wrote {}; no version made", file,
             size, want);
      m.file_size += size;
    }
  }
  m.shards = std::move(shards);
  fs::remove(tmp / kRecordsName, ec);   // kept only until the commit
  remove_matching(tmp, record_name());  // an earlier pcmd's
  const std::string text = m.to_json().dump() + "\n";
  write_synced(tmp / kManifestName, text.data(), text.size());
  fs::remove(tmp / kTokenName, ec);
  fsync_path(tmp, true);
  if (const char* crash = std::getenv("PCMD_TEST_CRASH_BEFORE_RENAME"); crash && *crash == '1')
    ::_exit(86);  // a crash between the manifest and the rename, for the tests
  // An invalid version of this iteration (valid ones were refused at the start) is replaced.
  if (fs::exists(vdir, ec)) {
    fs::remove(vdir / kManifestName, ec);
    fs::remove_all(vdir, ec);
  }
  if (fs::exists(manifest_file(job, iteration), ec)) {
    fs::remove(manifest_file(job, iteration), ec);
    fs::remove(version_file(job, iteration), ec);
  }
  if (::rename(tmp.c_str(), vdir.c_str()) != 0)
    fail(PCM_ERR_INTERNAL, "cannot rename {}: {}", tmp.string(), std::strerror(errno));
  fsync_path(vdir.parent_path(), true);
  return m;
}

std::optional<std::int64_t> Checkpoints::newest_shared(const std::string& job) const {
  for (auto it : iterations(job)) {
    std::string why;
    auto m = load_manifest(job, it, &why);
    if (!m) continue;
    bool all = true;
    for (std::size_t r = 0; r < m->shards.size() && all; ++r) all = m->on_shared(r);
    if (all && verify(job, it).valid) return it;
  }
  return std::nullopt;
}

void Checkpoints::mark_bad(const std::string& job, std::int64_t iteration, const std::string& why,
                           bool unreachable) {
  const fs::path vdir = version_dir(job, iteration);
  std::error_code ec;
  if (!fs::exists(vdir / kManifestName, ec)) return;  // format 1, or gone
  const std::string text = why.substr(0, 1000) + "\n";
  const fs::path mark = vdir / (unreachable ? kUnreachableName : kBadName);
  fs::remove(mark, ec);  // marked before by a restart that failed as this one did
  write_synced(mark, text.data(), text.size());
  fsync_path(vdir, true);
}

void Checkpoints::forget_unreachable(const std::string& job) {
  std::error_code ec;
  for (auto it : iterations(job))
    if (fs::remove(version_dir(job, it) / kUnreachableName, ec))
      fsync_path(version_dir(job, it), true);
}

// ---- PCM_Commit of keys the ranks stored themselves ------------------------------------------

Manifest Checkpoints::commit_direct(const Store& store, const std::string& job,
                                    std::int64_t iteration, int nprocs, const json& layout) {
  if (auto failed = store.failed_store(job))
    fail(PCM_ERR_REFUSED,
         "the last store of {} of job '{}' failed; store it again before committing (no version "
         "made: it would mix that key's earlier data with the new data of the others)",
         *failed, job);
  const auto direct = store.direct_of(job);
  const ShardDir d = begin_shards(job, iteration);  // refuses when a valid version exists
  const fs::path stage = store.job_file(job).parent_path() / "stage";
  try {
    std::vector<ShardRecord> shards;
    for (int r = 0; r < nprocs; ++r) {
      ShardRecord rec{r, "", 0, {}};
      std::set<std::string> keys;
      if (auto it = direct.find(r); it != direct.end())
        for (const ShardRecord& s : it->second) {
          const ShardDataset& ds = s.datasets.at(0);
          link_or_copy(stage / ds.file, d.dir / ds.file);
          rec.datasets.push_back(ds);
          keys.insert(ds.key);
        }
      if (auto own = write_through_keys(store, job, iteration, r, nprocs, keys, d.dir)) {
        rec.file = own->file;
        rec.size = own->size;
        rec.datasets.insert(rec.datasets.begin(), own->datasets.begin(), own->datasets.end());
      }
      if (rec.datasets.empty())
        fail(PCM_ERR_REFUSED, "rank {} of job '{}' has stored nothing; no version made", r, job);
      shards.push_back(std::move(rec));
    }
    // The direct files were fsynced by their writers, pcmd's shards by write_shard; the links
    // are made durable with the directory, before the rename.
    return commit_shards(job, iteration, nprocs, layout, std::move(shards));
  } catch (...) {
    std::error_code ec;
    fs::remove_all(d.dir, ec);  // links and pcmd's shards only: the direct files stay
    throw;
  }
}

}  // namespace pcm::daemon
