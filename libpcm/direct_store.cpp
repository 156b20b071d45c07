// direct_store.cpp — PCM_Store and PCM_Load of keys this process writes and reads itself in the
// job's direct-store directory (direct_store.h).
#include "direct_store.h"

#include <sys/statvfs.h>

#include <fstream>
#include <random>
#include <sstream>

#include "error.h"
#include "mpi_util.h"
#include "ops.h"
#include "protocol.h"

namespace pcm::lib {

using proto::json;

namespace {

// Larger records would outgrow a request header (one checksum per MiB).
constexpr std::uint64_t kMaxBytes = std::uint64_t{64} << 30;

std::string new_tag() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

}  // namespace

bool DirectStore::sees(DaemonLink& link, const Settings& s, const std::string& job) {
  if (!s.checkpoint_direct) return false;
  if (pid_ == link.pcmd_pid()) return seen_;
  auto r = link.request(ops::request(ops::DirectDir{job}), nullptr, 0, s.data_timeout_ms);
  dir_ = r.header.at("dir").get<std::string>();
  seen_ = holds_token(dir_, r.header.at("token").get<std::string>());
  pid_ = link.pcmd_pid();
  plog()->debug("stores of job {} {} in {}", job, seen_ ? "are written here" : "go through pcmd",
                dir_);
  return seen_;
}

bool DirectStore::store(DaemonLink& link, const Settings& s, const std::string& job, int rank,
                        const std::string& key, const void* buf, int type, std::uint64_t count) {
  const std::uint64_t bytes = count * proto::type_size(type);
  if (bytes < kMinBytes || bytes > kMaxBytes || !sees(link, s, job)) return false;
  const std::string file = staged_file_name(rank, key, new_tag());
  ShardRecord written;
  try {
    written = write_shard(dir_, ShardHeader{job, -1, rank, 0},
                          {ShardItem{key, type, count, {{buf, bytes}}}}, file, true,
                          s.write_direct ? ShardIo::kDirect : ShardIo::kBuffered);
  } catch (const Error& e) {
    // pcmd learns of it: no commit may mix this key's previous data with the others' new data.
    std::string why = e.what();
    const std::uint64_t left = free_bytes(dir_);
    const bool full = left < bytes + (1 << 20);
    if (full)
      why = fmt::format(
          "no space left to store rank {} key '{}' ({:.1f} MiB needed, {:.1f} MiB "
          "free in {}): {}; the data stored before under this key is kept",
          rank, key, bytes / 1048576.0, left / 1048576.0, dir_, e.what());
    link.request(ops::request(ops::StoreDirect{job, rank, key, std::nullopt, why}), nullptr, 0,
                 s.data_timeout_ms);
    fail(full ? PCM_ERR_NOSPACE : e.code(), "{}", why);
  }
  ShardDataset d = written.datasets.at(0);
  d.file = written.file;
  d.file_size = written.size;
  const ShardRecord rec{rank, "", 0, {d}};
  try {
    link.request(ops::request(ops::StoreDirect{job, rank, key, rec.to_json(), std::nullopt}),
                 nullptr, 0, s.data_timeout_ms);
  } catch (...) {
    std::remove((dir_ + "/" + file).c_str());  // pcmd never took it: the previous data stands
    throw;
  }
  return true;
}

std::optional<ShardRecord> DirectStore::find(DaemonLink& link, const Settings& s,
                                             const std::string& job, int rank,
                                             const std::string& key) {
  if (!sees(link, s, job)) return std::nullopt;
  // pcmd's record, as it wrote it (atomically) before it answered the store.
  std::ifstream in(fmt::format("{}/r{}.{}.json", dir_, rank, key));
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  try {
    ShardRecord rec = ShardRecord::from_json(j);
    if (rec.rank != rank || rec.datasets.size() != 1 || rec.datasets[0].key != key)
      return std::nullopt;
    return rec;
  } catch (const Error&) {
    return std::nullopt;
  }
}

bool DirectStore::read(const ShardRecord& rec, void* out) const {
  const ShardDataset& d = rec.datasets.at(0);
  try {
    ShardReader reader(dir_ + "/" + d.file, rec.holding(d));
    reader.read(d, 0, d.bytes(), out);
  } catch (const Error& e) {
    if (e.code() == PCM_ERR_NOT_FOUND) return false;
    throw;
  }
  return true;
}

std::optional<std::pair<std::string, ShardRecord>> DirectStore::in_version(
    DaemonLink& link, const Settings& s, const std::string& job, std::int64_t iteration, int rank,
    const std::string& key) {
  if (!s.checkpoint_direct) return std::nullopt;
  if (version_ != iteration) {
    version_ = iteration;
    version_dir_.clear();
    version_shards_.clear();
    auto r = link.request(ops::request(ops::CheckpointManifest{job, iteration}), nullptr, 0,
                          s.data_timeout_ms);
    if (proto::get_int(r.header, "format", 1, 2) != 2) return std::nullopt;
    const json m = proto::decode_large(r.data.data(), r.data.size(), r.data.size());
    // Read here only when this process sees the very manifest pcmd holds (as checkpointer.cpp).
    const std::string dir = r.header.at("dir").get<std::string>();
    std::ifstream in(dir + "/manifest.json");
    std::stringstream text;
    text << in.rdbuf();
    if (!in || json::parse(text.str(), nullptr, false) != m) return std::nullopt;
    for (const auto& rec : m.at("shards")) version_shards_.push_back(ShardRecord::from_json(rec));
    version_dir_ = dir;
  }
  if (version_dir_.empty()) return std::nullopt;
  if (rank < 0 || static_cast<std::size_t>(rank) >= version_shards_.size())
    fail(PCM_ERR_NOT_FOUND, "version {} has no rank {}", iteration, rank);
  const ShardRecord& r = version_shards_[static_cast<std::size_t>(rank)];
  const ShardDataset* d = r.find(key);
  if (!d)
    fail(PCM_ERR_NOT_FOUND, "version {} of job '{}' has nothing for rank {} key '{}'", iteration,
         job, rank, key);
  ShardRecord file = r.holding(*d);
  file.datasets = {*d};
  return std::make_pair(version_dir_ + "/" + file.file, std::move(file));
}

}  // namespace pcm::lib
