// direct_store.h — PCM_Store's direct path: where this process sees pcmd's data directory, a
// store writes the key itself into the job's direct-store directory (an HDF5 file of one dataset,
// checksummed from memory as it is written, fsynced; shard.h) and sends pcmd only its record;
// a load of such a key reads the file itself. pcmd's side: pcmd/storage/store.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon_link.h"
#include "settings.h"
#include "shard.h"

namespace pcm::lib {

class DirectStore {
 public:
  // Smaller stores go through pcmd: a file and an fsync of their own cost more than they save.
  static constexpr std::uint64_t kMinBytes = 64 * 1024;

  // Stores (rank, key) itself and has pcmd record it: true. False: nothing done, the caller sends
  // the data through pcmd (PCM_CHECKPOINT_DIRECT=0, a small store, the directory not seen from
  // here). Throws pcm::Error when the write fails (pcmd then refuses commits until the key is
  // stored again; PCM_ERR_NOSPACE on a full disk) or pcmd refuses the record.
  bool store(DaemonLink& link, const Settings& s, const std::string& job, int rank,
             const std::string& key, const void* buf, int type, std::uint64_t count);
  // The record of (rank, key) when the rank wrote it itself and this process sees it; nullopt:
  // ask pcmd.
  std::optional<ShardRecord> find(DaemonLink& link, const Settings& s, const std::string& job,
                                  int rank, const std::string& key);
  // Reads a found key's data (its bytes) into out, verified; false if its file has gone meanwhile
  // (a newer store replaced it: ask pcmd). Throws pcm::Error(PCM_ERR_CORRUPT) on damage.
  bool read(const ShardRecord& rec, void* out) const;
  // In a restarted process: (rank, key) of the version it resumes from, as the file that holds it
  // and its dataset, when the version is made of shards and this process sees its directory
  // (asked once); nullopt: ask pcmd. Throws pcm::Error(PCM_ERR_NOT_FOUND) when the version has
  // no such key.
  std::optional<std::pair<std::string, ShardRecord>> in_version(DaemonLink& link, const Settings& s,
                                                                const std::string& job,
                                                                std::int64_t iteration, int rank,
                                                                const std::string& key);

 private:
  // Whether this process sees the direct-store directory pcmd names (asked once per pcmd).
  bool sees(DaemonLink& link, const Settings& s, const std::string& job);
  // The restart's version, once asked: its directory when read here, its shards by rank.
  std::optional<std::int64_t> version_;
  std::string version_dir_;
  std::vector<ShardRecord> version_shards_;
  std::optional<long> pid_;  // the pcmd asked (a new one may have another data directory)
  bool seen_ = false;
  std::string dir_;
};

}  // namespace pcm::lib
