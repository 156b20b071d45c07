// checkpointer.h — PCM_Checkpoint's owner: the versions the ranks write (their shards, now or in
// the background: shard_writer.h; the partner level's exchange: partner_copy.h; the levels'
// count), the versions PCM_Adapt writes by itself (pcmd's requests, PCM_CHECKPOINT_MTBF's
// schedule), and a restarted job's reads of a version. Definitions: checkpointer.cpp (writing, the
// schedule, reading) and restart_levels.cpp (which level a restart reads each shard from).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "buffer.h"
#include "context.h"
#include "partner_copy.h"
#include "shard.h"
#include "shard_writer.h"

namespace pcm::lib {

// PCM_CHECKPOINT_MTBF's schedule: when the last version (anyone's) was written, its measured cost
// (-1: none yet) and Daly's interval for it. It goes on in a split's or migration's new processes
// (to_json/from_json: {"since_s", "cost_s", "interval_s"}, the time since the last version
// rather than the clock's value).
struct CheckpointSchedule {
  double last_end = -1;  // wtime(); -1: this process has not started counting
  double cost = -1;
  double interval = -1;
  // Whether the schedule's next version is due at time now (the first at once: it measures).
  bool scheduled(double now) {
    if (last_end < 0) last_end = now;
    return interval < 0 || now - last_end >= interval;
  }
};
void to_json(nlohmann::json& j, const CheckpointSchedule& s);
void from_json(const nlohmann::json& j, CheckpointSchedule& s);

class Checkpointer {
 public:
  explicit Checkpointer(const Context& ctx) : ctx_(ctx) {}

  // PCM_Checkpoint, its state checked (collective): a version of iteration, unless the restart's
  // version or PCM_Adapt's own of this same PCM_Status call (`call`) is that one.
  void checkpoint(int iteration, std::int64_t call);
  // Collective: waits for the version in flight (if any); every rank throws the same error if it
  // was not made. settle_quietly: the same, a failure logged by rank 0 (before a reconfiguration
  // or the end of the job, which go on either way).
  void settle();
  void settle_quietly(const char* before);
  bool in_flight() const { return shard_writer_.in_flight().has_value(); }
  // Waits for anything in flight and lets the writer's link to pcmd go (the process ends).
  void close() { shard_writer_.close(); }

  // PCM_Status: the partner level's exchange of the version in flight goes on behind the loop.
  void pump() {
    if (partner_copy_.active()) partner_copy_.pump();
  }
  // Rank 0 at an agreement: the checkpoint PCM_Adapt is to write at it (pcmd's request id, -1
  // for the schedule's, 0: none); every rank then learns it (set_due).
  std::int64_t wanted(bool resumed) {
    if (ctx_.link.checkpoint_wanted() > done_) return ctx_.link.checkpoint_wanted();
    if (ctx_.settings.checkpoint_mtbf_s > 0 && resumed && schedule_.scheduled(wtime())) return -1;
    return 0;
  }
  // at_once: written from the application's buffers, not staged (pcmd's request says the run
  // ends right after it).
  void set_due(std::int64_t due, bool at_once = false) {
    due_ = due;
    at_once_ = due != 0 && at_once;
  }
  bool due() const { return due_ != 0; }
  // PCM_Adapt, when a checkpoint is due: a version of the iteration this call (`call`: PCM_Status
  // calls so far) begins.
  void write_due(std::int64_t call);
  // PCM_Adapt, when the job is asked to end (PCM_STOP): the last version, of the iteration this
  // call begins, written at once from the application's buffers and made durable (fsynced), the
  // one in flight settled first. Returns the iteration of the newest version this run made (or
  // the restart's), none when nothing could be written (logged by rank 0). Collective.
  std::optional<std::int64_t> write_final(std::int64_t call, const std::string& why);

  // The schedule, for a process spawned by a reconfiguration (its header), and taken up there.
  nlohmann::json schedule() const { return schedule_; }
  void resume_schedule(const nlohmann::json& schedule);

  // A restarted process (PCM_Resume): reads its share of the restart's version from the ranks'
  // shards, or from the one before it where that one is damaged. false: the version was made
  // through pcmd (PCM_Store and PCM_Commit, format 1), which the caller reads.
  bool read_restart();

 private:
  // Every rank writes its shard (now, or staged and in the background), pcmd commits. t0: when
  // the application started waiting (the schedule's cost counts from there).
  void write_version(int iteration, double t0);
  // A version took `seconds` to write: the schedule's figures.
  void note(double seconds);
  // info: pcmd's checkpoint_manifest reply.
  void read_version(const nlohmann::json& info);
  // Checkpoint levels (restart_levels.cpp): per old rank, the verified copy of its shard on this
  // host's local level ("": read it from the version's directory, dir), a copy only some host
  // holds first copied into dir; throws PCM_ERR_CORRUPT when a shard is on no level these
  // processes can read. Collective; the same answer everywhere but for the paths.
  std::vector<std::string> locate_levels(const nlohmann::json& manifest, const std::string& dir,
                                         bool direct, const std::vector<ShardRecord>& shards);
  // Per old rank's shard, which processes read it (by their rank), from the maps in rank 0's
  // shard (at path shard0): all read rank 0's; the others as the arrays' plans say.
  std::vector<std::vector<bool>> readers_of_shards(const std::string& shard0,
                                                   const std::vector<ShardRecord>& shards);

  Context ctx_;
  CheckpointSchedule schedule_;
  // The version due at this agreement (every rank: a request's id, -1 for the schedule's), the
  // last request rank 0 wrote, the version PCM_Adapt last wrote (label, and at which PCM_Status
  // call: the application's own PCM_Checkpoint of that iteration has it already).
  std::int64_t due_ = 0;
  bool at_once_ = false;
  bool unsynced_ = true;  // an at_once version's file is not fsynced (but write_final's)
  std::int64_t done_ = 0;
  std::int64_t label_ = -1;
  std::int64_t at_call_ = -1;
  // This process's shard of the version in flight, written in the background.
  ShardWriter shard_writer_;
  PartnerCopy partner_copy_;  // the partner level's exchange of the version in flight
  // Checkpoint levels: the versions rank 0 has written in this run (the first and every
  // PCM_CHECKPOINT_FLUSH_EVERY-th go to the shared level).
  long level_versions_ = 0;
};

}  // namespace pcm::lib
