// data_ops.h — the requests that touch the disk: the working store (store, load), checkpoint
// versions (commit, checkpoints, verify, prune) and the shards ranks write themselves
// (checkpoint_begin, shard_put, shard_done, checkpoint_commit, checkpoint_bad,
// checkpoint_manifest). Each checks what it can against the job table on the request loop and
// hands its disk part to DiskWork (disk_work.h); what follows the disk work on the request loop
// notes it in the job's history.
#pragma once

#include <spdlog/spdlog.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jobs.h"
#include "ops.h"
#include "protocol.h"
#include "storage/checkpoint.h"
#include "storage/disk_work.h"
#include "storage/store.h"

namespace pcm::daemon {

// A request's data frame (null, 0: none).
struct Payload {
  const void* data = nullptr;
  std::size_t size = 0;
};

class DataOps {
 public:
  // keep_versions: committed versions kept per job.
  DataOps(DiskWork& disk, Store& store, Checkpoints& checkpoints, JobTable& jobs,
          std::size_t keep_versions, std::shared_ptr<spdlog::logger> log);

  proto::json store(const ops::Store& r, Payload data, std::vector<char>& reply_data);
  proto::json load(const ops::Load& r, std::vector<char>& reply_data);
  proto::json commit(const ops::Commit& r, std::vector<char>& reply_data);
  proto::json checkpoints(const ops::Checkpoints& r, std::vector<char>& reply_data);
  proto::json verify(const ops::Verify& r, std::vector<char>& reply_data);
  proto::json prune(const ops::Prune& r, std::vector<char>& reply_data);
  proto::json begin(const ops::CheckpointBegin& r, std::vector<char>& reply_data);
  proto::json shard_put(const ops::ShardPut& r, Payload data, std::vector<char>& reply_data);
  proto::json commit_shards(const ops::CheckpointCommit& r, Payload data,
                            std::vector<char>& reply_data);
  proto::json shard_done(const ops::ShardDone& r, Payload data, std::vector<char>& reply_data);
  proto::json bad(const ops::CheckpointBad& r, std::vector<char>& reply_data);
  proto::json manifest(const ops::CheckpointManifest& r, std::vector<char>& reply_data);
  // Keys the ranks store themselves (store.h's direct keys).
  proto::json direct_dir(const ops::DirectDir& r, std::vector<char>& reply_data);
  proto::json store_direct(const ops::StoreDirect& r, std::vector<char>& reply_data);
  // PCM_STORE_ASYNC: a rank's stores before a deferred commit are in.
  proto::json stores_done(const ops::StoresDone& r, std::vector<char>& reply_data);
  // A job's deferred commit, and the events kept beside its store, go once its run has ended
  // (finished, stopped or failed; a later run is another incarnation): its ranks settled the
  // commit before rank 0 said the run finished (libpcm's Storage::settle is collective). Also
  // the events an earlier pcmd left for a job that has ended since. Called every second.
  void forget_ended_commits();

  // A restart's registration: the newest version of name that verifies is found on the disk,
  // then then(version) makes the reply on the request loop.
  proto::json find_restart(const std::string& name,
                           std::function<proto::json(std::optional<Manifest>)> then,
                           std::vector<char>& reply_data);
  // Keeps a job's data layout where a restart will look for it, behind the disk work queued.
  void keep_layout(const std::string& job, std::string bytes, std::int64_t command);

 private:
  // checkpoints, verify (one: a single version), prune (keep > 0).
  proto::json versions(const std::string& name, std::optional<std::int64_t> one, std::size_t keep,
                       std::vector<char>& reply_data);
  std::optional<proto::json> committed_before(const std::string& job, std::int64_t iteration);
  // Commits a version of format 2 from its shards' records (checkpoint_commit, the last
  // shard_done), on the disk thread, then prunes.
  proto::json commit_version(const Job& job, std::int64_t iteration, int size, proto::json layout,
                             std::vector<ShardRecord> shards, bool retry,
                             std::vector<char>& reply_data, std::vector<ShardLevels> levels = {});
  // The disk part of a commit of the working store (commit; a deferred one's last report).
  proto::json commit_store(const Job& job, std::int64_t iteration, int size, bool retry,
                           std::vector<char>& reply_data);
  // Notes a commit in the job's history, if the job is still the same run.
  std::function<void(proto::json&)> note_commit(const Job& job, bool shards);

  DiskWork& disk_;
  Store& store_;
  Checkpoints& checkpoints_;
  JobTable& jobs_;
  std::size_t keep_versions_;
  std::shared_ptr<spdlog::logger> log_;
  // Per job, the version begun whose shards are being reported (shard_done): which ranks have
  // reported, with their records, and the first error one reported. Each record is also kept
  // beside the shards (Checkpoints::keep_record): a pcmd that restarts takes the version up.
  struct PendingVersion {
    std::int64_t iteration = 0;
    long long incarnation = 0;
    int reported = 0;
    std::vector<std::optional<ShardRecord>> shards;
    std::string failed;
    std::vector<std::optional<ShardLevels>> levels;  // by rank, as reported (checkpoint levels)
  };
  std::map<std::string, PendingVersion> pending_;
  // Per job, the commit made behind the application (commit with after_stores, stores_done): the
  // newest only (libpcm settles one before it asks for the next). Each event is also kept beside
  // the job's store (Store::keep_deferred) before its reply: a pcmd that restarts takes the commit
  // up from there (kept_deferred) when the next report or a request sent again comes, and the
  // reply to the last is still the commit's.
  struct DeferredCommit {
    std::int64_t iteration = 0;
    long long incarnation = 0;
    bool asked = false;      // rank 0's commit has come
    std::vector<bool> done;  // by rank: its stores are in
    int reported = 0;
    std::string failed;    // the first rank's error
    bool rebuilt = false;  // taken up from the events an earlier pcmd kept
    bool over = false;     // made or refused (then kept until the next one begins)
    // An event: rank 0's commit asked (rank -1) or rank's stores in (with its error, if any).
    // False if it had come already (a request sent again, an event kept twice).
    bool take(int rank, const std::optional<std::string>& error);
  };
  std::map<std::string, DeferredCommit> deferred_;
  // Jobs that may have a deferred commit here or its events on disk: each that began one, and at
  // the first forget_ended_commits every job of the table an earlier pcmd left.
  std::set<std::string> kept_events_;
  bool took_table_ = false;
  // The job's deferred commit of iteration (a new one replaces an older, unfinished one).
  DeferredCommit& deferred_for(const Job& job, std::int64_t iteration, int size);
  // The job's deferred commit as an earlier pcmd left it (its events), if of this run.
  std::optional<DeferredCommit> kept_deferred(const Job& job);
  // Keeps an event of job's deferred commit d (rank -1: rank 0's commit asked).
  void keep_deferred(const Job& job, const DeferredCommit& d, int rank,
                     const std::optional<std::string>& error);
  // Once asked and every rank reported: the commit, its reply this request's (again for a request
  // sent again).
  proto::json deferred_reply(const Job& job, std::vector<char>& reply_data);
};

}  // namespace pcm::daemon
