// checkpoint.h — pcmd's durable, versioned global checkpoints, verified before use.
//
// Two formats live side by side under <root>/checkpoints/<job>/, named by the iteration
// (20 digits):
//  - format 2, shards (PCM_Checkpoint): a directory v<iteration>/ holding one file per rank,
//    r<rank>.h5, written by the rank itself (shard.h), and manifest.json with every shard's size,
//    dataset offsets and per-chunk XXH3-64 checksums. Made as v<iteration>.tmp/ (begin_shards),
//    filled by the ranks (or through pcmd: put_shard), then commit_shards writes and fsyncs the
//    manifest, fsyncs the directory, renames it into v<iteration>/ and fsyncs the parent: before
//    the rename nothing counts, after it the version is whole. pcmd never reads the data to commit
//    it; readers verify the chunks they touch, and a version found damaged is marked bad
//    (v<iteration>/BAD) and never used again.
//  - format 1, one file (PCM_Store + PCM_Commit, data through pcmd): v<iteration>.h5 and
//    v<iteration>.manifest.json, each written as temporary file, close, fsync, rename, fsync of
//    the directory. A file is opened with HDF5 only after its whole-file CRC-32 matched the
//    manifest, so a corrupt file never reaches HDF5 (which can hang on some corrupt files).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "levels.h"
#include "shard.h"
#include "storage/store.h"

namespace pcm::daemon {

struct DatasetInfo {
  std::string path;  // /rank_R/key
  int type = 0;      // PCM_Datatype
  std::uint64_t count = 0;
  std::uint32_t crc = 0;  // CRC-32 of the data
};

struct Manifest {
  int format = 1;  // 1: one file through pcmd; 2: shards written by the ranks
  std::string job;
  std::int64_t iteration = 0;
  int nprocs = 0;
  nlohmann::json layout;  // the distribution map, or null
  std::uint64_t file_size = 0;
  std::uint32_t file_crc = 0;
  std::vector<DatasetInfo> datasets;  // format 1
  std::vector<ShardRecord> shards;    // format 2, by rank (file_size: their sum)
  // Format 2 with checkpoint levels: where each rank's shard has copies (empty: every shard is in
  // the version's directory, as without levels). A shard not on the shared level is not there.
  std::vector<ShardLevels> levels;
  bool on_shared(std::size_t rank) const { return levels.empty() || levels.at(rank).shared; }

  nlohmann::json to_json() const;
  static Manifest from_json(const nlohmann::json& j);  // throws pcm::Error(PCM_ERR_ARG)
};

struct VersionStatus {
  std::int64_t iteration = 0;
  bool valid = false;
  std::string why;  // when not valid
  std::uint64_t bytes = 0;
  int nprocs = 0;
};

class Checkpoints {
 public:
  explicit Checkpoints(std::filesystem::path root);
  ~Checkpoints();  // waits for the removal of pruned versions
  Checkpoints(const Checkpoints&) = delete;
  Checkpoints& operator=(const Checkpoints&) = delete;

  // Makes version `iteration` of job from the rank groups 0..nprocs-1 of store's file for the
  // job (every rank must have stored something). Throws pcm::Error; on failure (a full disk,
  // a crash) no version appears and earlier versions are untouched.
  // When ranks stored keys themselves (store.h), the version is one of shards (format 2): each
  // direct file hard-linked into it (never copied), the keys stored through pcmd written by pcmd
  // into the rank's shard r<rank>.h5, and the whole committed as commit_shards does.
  Manifest commit(const Store& store, const std::string& job, std::int64_t iteration, int nprocs,
                  const nlohmann::json& layout);

  // Format 2. Starts the version: an empty temporary directory, with a token file that lets a
  // rank tell whether it sees this directory (and not one of the same name on another host).
  // Refused when a valid version of the iteration exists.
  struct ShardDir {
    std::filesystem::path dir;
    std::string token;
  };
  ShardDir begin_shards(const std::string& job, std::int64_t iteration);
  // A shard that its rank could not write itself: its file's bytes, written and fsynced here.
  void put_shard(const std::string& job, std::int64_t iteration, int rank, const void* data,
                 std::size_t size);
  // The record of a shard its rank reported (shard_done), kept beside it in the version's
  // temporary directory (not synced: it only has to outlive pcmd, not the machine), so that a
  // pcmd that restarts before the last report can still commit the version: appended to one
  // log (kRecordsName: length, MessagePack; one write each, on a descriptor kept open), not a
  // file per rank (16,384 files made and removed cost more than the rest of a commit).
  // kept_records: those kept so far (and the r<rank>.record files of an earlier pcmd); nullopt
  // when the version is not being made (no temporary directory). Request loop only.
  // levels: where the shard's copies are, when the rank said (checkpoint levels).
  using KeptRecord = std::pair<ShardRecord, std::optional<ShardLevels>>;
  void keep_record(const std::string& job, std::int64_t iteration, const ShardRecord& record,
                   const std::optional<ShardLevels>& levels = std::nullopt);
  std::optional<std::vector<KeptRecord>> kept_records(const std::string& job,
                                                      std::int64_t iteration) const;
  // Makes the version from the shards the ranks wrote (one per rank 0..nprocs-1, each present
  // with its recorded size); the bytes are not read. Throws pcm::Error; on failure nothing counts.
  // levels: per rank, where its shard's copies are (empty: all in the version's directory); only
  // the shards on the shared level must be in the directory.
  Manifest commit_shards(const std::string& job, std::int64_t iteration, int nprocs,
                         const nlohmann::json& layout, std::vector<ShardRecord> shards,
                         std::vector<ShardLevels> levels = {});
  // A reader found the version's data damaged: it is never used again (format 2 only; a
  // format-1 version is verified whole before use). unreachable: the readers could not reach
  // some of its shards (checkpoint levels: a shard only on lost hosts), so it is skipped only
  // until forget_unreachable.
  void mark_bad(const std::string& job, std::int64_t iteration, const std::string& why,
                bool unreachable = false);
  // A new restart of the job: its versions out of reach get another look (their hosts may be
  // back).
  void forget_unreachable(const std::string& job);
  // Removes temporary directories of commits that never finished, and pruned versions whose
  // removal did not finish (pcmd's start). The jobs in `running` keep their temporary
  // directories: a job that outlived its pcmd may be writing shards into one.
  void sweep(const std::set<std::string>& running = {});
  std::filesystem::path version_dir(const std::string& job, std::int64_t iteration) const;

  // Every version found, newest first, each verified (format 1: manifest, size, checksums;
  // format 2: manifest, no BAD mark, every shard present with its size).
  // A data file without its manifest (a commit that died) is no version and is not listed.
  std::vector<VersionStatus> list(const std::string& job) const;
  // Whether the job has ever begun a checkpoint here (its directory exists).
  bool has_job(const std::string& job) const;
  VersionStatus verify(const std::string& job, std::int64_t iteration) const;
  // The newest version that verifies.
  std::optional<Manifest> latest_valid(const std::string& job) const;
  // The manifest of one version as its directory has it (why: when none), unverified.
  std::optional<Manifest> manifest_of(const std::string& job, std::int64_t iteration,
                                      std::string* why) const {
    return load_manifest(job, iteration, why);
  }

  // Removes all but the `keep` newest versions (keep >= 1), never the newest valid one nor the
  // newest valid one whose shards are all on the shared level (checkpoint levels); returns
  // the iterations removed. Manifests go first, so a crash while pruning leaves no half version
  // that could be mistaken for a whole one.
  // known_valid: a version the caller knows is valid (the one it just committed), which is
  // then not read again.
  std::vector<std::int64_t> prune(const std::string& job, std::size_t keep,
                                  std::optional<std::int64_t> known_valid = std::nullopt);

  // Reads one dataset of a version that verified (the whole file is not checked again; the
  // dataset's checksum is). Throws pcm::Error (PCM_ERR_NOT_FOUND).
  Store::Meta read(const Manifest& m, int rank, const std::string& key,
                   std::vector<char>& out) const;

  std::filesystem::path version_file(const std::string& job, std::int64_t iteration) const;
  std::filesystem::path manifest_file(const std::string& job, std::int64_t iteration) const;

 private:
  // Iterations with a data file or a manifest, newest first; nothing is read.
  std::vector<std::int64_t> iterations(const std::string& job) const;
  // The newest version that verifies, verifying newest first and stopping there.
  std::optional<std::int64_t> newest_valid(const std::string& job,
                                           std::optional<std::int64_t> known) const;
  // The newest valid version whose shards are all on the shared level (checkpoint_shards.cpp).
  std::optional<std::int64_t> newest_shared(const std::string& job) const;
  Manifest commit_direct(const Store& store, const std::string& job, std::int64_t iteration,
                         int nprocs, const nlohmann::json& layout);
  std::optional<Manifest> load_manifest(const std::string& job, std::int64_t iteration,
                                        std::string* why) const;
  std::filesystem::path root_;
  // The records log keep_record appends to (the request loop's), and its path.
  int records_fd_ = -1;
  std::filesystem::path records_path_;
  // Removes pruned version directories in a thread of its own: a removal takes time (50 ms for
  // 256 MiB here) that no commit should wait for.
  class Remover;
  std::unique_ptr<Remover> remover_;
};

}  // namespace pcm::daemon
