// store.h — pcmd's HDF5 store of the data ranks send with PCM_Store, one file per job.
//
// Layout: <root>/jobs/<job>/store.h5, group /rank_<r>, one 1-D dataset per key in the element's
// native HDF5 type, with a "pcm_type" string attribute. Readable with h5dump/h5ls.
//
// Stores are atomic: a store writes its data into a spare dataset (/pcm_spare/rank_<r>/<key>),
// flushes it, and only then swaps the two datasets' links, so that a store that fails (a full
// disk) leaves the previous data under the key loadable. The spare keeps the previous data and is
// overwritten in place by the next store of the same shape, so the file holds each key twice and
// does not grow from store to store.
//
// Direct keys (store_direct.cpp): where a rank sees the data directory, PCM_Store writes the key
// itself, as a one-dataset shard file (shard.h) in <root>/jobs/<job>/stage/ named
// s<rank>.<key>.<tag>.h5, fsynced, and pcmd records it in r<rank>.<key>.json there (replaced by
// a rename, which is the store; not fsynced, as store.h5 is only flushed). A direct key shadows the
// same key in store.h5 until a store through pcmd replaces it (which removes the record). A commit
// links the direct files into the version (checkpoint_shards.cpp): a direct file is never written
// again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "protocol.h"
#include "shard.h"

namespace pcm::daemon {

class Store {
 public:
  struct Meta {
    int type = 0;             // a PCM_Datatype value
    std::uint64_t count = 0;  // elements
  };

  // Creates root/jobs if needed. Throws pcm::Error(PCM_ERR_INTERNAL) if it cannot.
  explicit Store(std::filesystem::path root);

  // Replaces (job, rank, key) with count elements of type, atomically (above). Names must satisfy
  // proto::valid_name (checked again here: they become paths). Throws pcm::Error:
  // PCM_ERR_NOSPACE when the disk is full (checked before writing, and found while writing), the
  // previous data under the key being kept.
  void put(const std::string& job, int rank, const std::string& key, int type, const void* data,
           std::uint64_t count);

  // A store of the job that failed and has not been made good by a later store of the same rank
  // and key, as "rank R key 'K'"; nullopt if none. A commit refuses such a job: its version would
  // mix that key's previous data with the others' new data.
  std::optional<std::string> failed_store(const std::string& job) const;

  // For tests: whether put checks the free space before writing (default true). Off, a full disk
  // is met in the middle of the write, as when another program fills it meanwhile.
  void check_free_space(bool on) { check_free_space_ = on; }

  // Type and count of (job, rank, key), or nullopt if nothing is stored there.
  std::optional<Meta> meta(const std::string& job, int rank, const std::string& key) const;

  // Reads (job, rank, key) into out (resized); returns its meta. Throws pcm::Error
  // (PCM_ERR_NOT_FOUND if absent).
  Meta get(const std::string& job, int rank, const std::string& key, std::vector<char>& out) const;

  std::filesystem::path job_file(const std::string& job) const;

  // Direct keys (above). The job's direct-store directory, made if needed, and its token (a file
  // .pcm-token holding it lets a rank tell that it sees this very directory).
  struct DirectDir {
    std::filesystem::path dir;
    std::string token;
  };
  DirectDir direct_dir(const std::string& job);
  // Records a key the rank wrote itself (rec: rank, no file of its own, one dataset with its
  // file in the direct-store directory), replacing what was stored under (rank, key); the previous
  // direct file goes. Throws pcm::Error(PCM_ERR_ARG) when the record does not describe such a
  // file as it is on disk.
  void put_direct(const std::string& job, int rank, const std::string& key, const ShardRecord& rec);
  // A store the rank failed to write itself: a commit is refused until the key is stored again.
  void failed_direct(const std::string& job, int rank, const std::string& key);
  // The direct record of (job, rank, key), or nullopt; and all of the job's, by rank.
  std::optional<ShardRecord> direct_record(const std::string& job, int rank,
                                           const std::string& key) const;
  std::map<int, std::vector<ShardRecord>> direct_of(const std::string& job) const;
  // The keys of rank in store.h5 (not the direct ones).
  std::vector<std::string> keys(const std::string& job, int rank) const;

  // PCM_STORE_ASYNC's deferred commit of the job (data_ops.cpp), kept beside its store so that a
  // pcmd that restarts goes on with it: <root>/jobs/<job>/deferred.log, one JSON object a line
  // per event (rank 0's commit asked, a rank's stores in), each appended with one write (a pcmd
  // killed meanwhile cuts at most its last line, which is not read back). kept_deferred: the
  // events, in order; drop_deferred: the commit is over (made, refused or replaced). Throws
  // pcm::Error(PCM_ERR_INTERNAL) when the event cannot be written.
  void keep_deferred(const std::string& job, const nlohmann::json& event);
  std::vector<nlohmann::json> kept_deferred(const std::string& job) const;
  void drop_deferred(const std::string& job);

  // Keeps the job's current data layout (a MessagePack distribution map, after a split or merge)
  // as the byte dataset /pcm_layout, with a "command" attribute; replaced each time.
  void put_layout(const std::string& job, const std::string& encoded, std::int64_t command);

 private:
  // Removes (job, rank, key)'s direct record and file, if any (a store through pcmd replaced it).
  void drop_direct(const std::string& job, int rank, const std::string& key);
  std::filesystem::path root_;
  bool check_free_space_ = true;
  std::set<std::tuple<std::string, int, std::string>> failed_;  // (job, rank, key)
};

}  // namespace pcm::daemon
