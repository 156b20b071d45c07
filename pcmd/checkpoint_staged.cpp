// checkpoint_staged.cpp — PCM_Commit of keys the ranks stored themselves (store.h): a version of
// shards (format 2) whose files are the staged ones, hard-linked into it, plus a shard pcmd
// writes per rank for the keys stored through it; committed by commit_shards' one rename.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "checkpoint.h"
#include "durable.h"
#include "error.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::detail {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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
                                              const std::set<std::string>& staged,
                                              const fs::path& dir) {
  std::vector<std::vector<char>> data;
  std::vector<ShardItem> items;
  for (const std::string& key : store.keys(job, rank)) {
    if (staged.count(key)) continue;
    data.emplace_back();
    const Store::Meta m = store.get(job, rank, key, data.back());
    items.push_back(ShardItem{key, m.type, m.count, {{data.back().data(), data.back().size()}}});
  }
  if (items.empty()) return std::nullopt;
  return write_shard(dir.string(), ShardHeader{job, iteration, rank, nprocs}, items);
}

}  // namespace

Manifest Checkpoints::commit_staged(const Store& store, const std::string& job,
                                    std::int64_t iteration, int nprocs, const json& layout) {
  if (auto failed = store.failed_store(job))
    fail(PCM_ERR_REFUSED,
         "the last store of {} of job '{}' failed; store it again before committing (no version "
         "made: it would mix that key's earlier data with the new data of the others)",
         *failed, job);
  const auto staged = store.staged_of(job);
  const ShardDir d = begin_shards(job, iteration);  // refuses when a valid version exists
  const fs::path stage = store.job_file(job).parent_path() / "stage";
  try {
    std::vector<ShardRecord> shards;
    for (int r = 0; r < nprocs; ++r) {
      ShardRecord rec{r, "", 0, {}};
      std::set<std::string> keys;
      if (auto it = staged.find(r); it != staged.end())
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
    // The staged files were fsynced by their writers, pcmd's shards by write_shard; the links
    // are made durable with the directory, before the rename.
    return commit_shards(job, iteration, nprocs, layout, std::move(shards));
  } catch (...) {
    std::error_code ec;
    fs::remove_all(d.dir, ec);  // links and pcmd's shards only: the staged files stay
    throw;
  }
}

}  // namespace pcm::detail
