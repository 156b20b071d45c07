// ops.h — every request pcmd serves, typed once: its kind, its fields with their limits, its
// encoding, and the facts pcmd's dispatch and the fuzz corpus go by (docs/dev/adding-a-request.md).
//
// A request struct's from_json validates as it reads (proto::get_*: the same limits and messages
// as on the wire) and throws pcm::Error(PCM_ERR_ARG) naming the field; checks against pcmd's state
// (does the job exist, has it that rank) are the handler's. to_json writes the fields only ("op",
// "v" and "secret" are the envelope): ops::request(x) gives a header with "op" set.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "levels.h"
#include "protocol.h"

namespace pcm::ops {

using json = proto::json;

inline constexpr int kMaxRanks = 1 << 20;  // processes of a job, ranks named in a request

// Whose requests a kind is, for pcmd's fence (server.cpp): a job's own processes stamp the run they
// belong to (register's "incarnation") on every request's envelope; pcmd refuses a kRun request
// from any other run of the job, and a kLiveRun one (it writes the job's data) also from a run
// that has ended (failed or finished), so that a process of a failed run cannot write over the
// next run's versions. A request without the stamp (pcmctl, an older client) is not fenced.
enum class Fence { kNone, kRun, kLiveRun };

// The table of requests: X(Type, wire name, may come in pieces (and so carries a data frame),
// always changes the job table (pcmd marks it after the handler; other requests mark their own
// changes), its reply carries a data frame, its fence).
#define PCM_OPS(X)                                                               \
  X(Ping, "ping", false, false, false, Fence::kNone)                             \
  X(Register, "register", false, false, false, Fence::kNone)                     \
  X(Poll, "poll", false, false, false, Fence::kRun)                              \
  X(Reconfigured, "reconfigured", false, false, false, Fence::kRun)              \
  X(Finished, "finished", false, false, false, Fence::kRun)                      \
  X(JobEvent, "job_event", false, true, false, Fence::kNone)                     \
  X(JobMove, "job_move", false, true, false, Fence::kNone)                       \
  X(Status, "status", false, false, false, Fence::kNone)                         \
  X(Profile, "profile", false, false, false, Fence::kRun)                        \
  X(Store, "store", true, false, false, Fence::kLiveRun)                         \
  X(Load, "load", false, false, true, Fence::kNone)                              \
  X(Commit, "commit", false, false, false, Fence::kLiveRun)                      \
  X(Checkpoints, "checkpoints", false, false, false, Fence::kNone)               \
  X(Verify, "verify", false, false, false, Fence::kNone)                         \
  X(Prune, "prune", false, false, false, Fence::kNone)                           \
  X(CheckpointRequest, "checkpoint_request", false, true, false, Fence::kNone)   \
  X(CheckpointBegin, "checkpoint_begin", false, false, false, Fence::kLiveRun)   \
  X(CheckpointCommit, "checkpoint_commit", true, false, false, Fence::kLiveRun)  \
  X(CheckpointBad, "checkpoint_bad", false, false, false, Fence::kRun)           \
  X(CheckpointManifest, "checkpoint_manifest", false, false, true, Fence::kNone) \
  X(ShardPut, "shard_put", true, false, false, Fence::kLiveRun)                  \
  X(ShardDone, "shard_done", true, false, false, Fence::kLiveRun)                \
  X(DirectDir, "direct_dir", false, false, false, Fence::kLiveRun)               \
  X(StoreDirect, "store_direct", false, false, false, Fence::kLiveRun)           \
  X(StoresDone, "stores_done", false, false, false, Fence::kLiveRun)             \
  X(Migrate, "migrate", false, false, false, Fence::kNone)                       \
  X(Split, "split", false, false, false, Fence::kNone)                           \
  X(Merge, "merge", false, false, false, Fence::kNone)                           \
  X(Resize, "resize", false, false, false, Fence::kNone)                         \
  X(HostAdd, "host_add", false, true, false, Fence::kNone)                       \
  X(HostList, "host_list", false, false, false, Fence::kNone)                    \
  X(HostDrain, "host_drain", false, true, false, Fence::kNone)                   \
  X(HostRemove, "host_remove", false, true, false, Fence::kNone)                 \
  X(AgentReport, "agent_report", false, false, false, Fence::kNone)              \
  X(AgentLeave, "agent_leave", false, false, false, Fence::kNone)                \
  X(Topology, "topology", false, false, false, Fence::kNone)

enum class Op {
#define PCM_OP_ENUM(T, name, pieces, changes, replies_data, fence) k##T,
  PCM_OPS(PCM_OP_ENUM)
#undef PCM_OP_ENUM
};

struct OpTraits {
  Op op;
  const char* name;
  bool pieces;        // may come in pieces; carries a data frame
  bool changes;       // always changes the job table
  bool replies_data;  // the reply carries a data frame
  Fence fence;        // whose requests they are (above)
};

#define PCM_OP_COUNT(T, name, pieces, changes, replies_data, fence) +1
inline constexpr std::size_t kOpCount = 0 PCM_OPS(PCM_OP_COUNT);
#undef PCM_OP_COUNT

inline constexpr std::array<OpTraits, kOpCount> kOps = {{
#define PCM_OP_ROW(T, name, pieces, changes, replies_data, fence) \
  {Op::k##T, name, pieces, changes, replies_data, fence},
    PCM_OPS(PCM_OP_ROW)
#undef PCM_OP_ROW
}};

constexpr std::size_t index(Op op) { return static_cast<std::size_t>(op); }
constexpr const OpTraits& traits(Op op) { return kOps[index(op)]; }
constexpr const char* name(Op op) { return traits(op).name; }
std::optional<Op> from_name(std::string_view name);

// ---- the requests (reply fields besides "ok" in the comments) ---------------------------------

// Reply: pid, transfers (under way).
struct Ping {
  static constexpr Op kOp = Op::kPing;
  static Ping from_json(const json& j);
  json to_json() const;
};

// A job starts (or restarts from its newest verified version). Reply: job, incarnation, restart.
// A reshape mode (PCM_RESHAPE, Register's reshape): spawn, restart or auto.
bool valid_reshape(const std::string& mode);

struct Register {
  static constexpr Op kOp = Op::kRegister;
  int size = 0;
  std::vector<std::string> hosts;  // by rank: size of them
  std::optional<std::string> nonce;
  std::optional<std::string> job;  // absent or empty: pcmd names it
  bool restart = false;
  std::optional<std::string> executable;
  std::optional<long> pid;  // rank 0's
  std::optional<std::string> placement;
  // How the job reshapes (PCM_RESHAPE; valid_reshape): "spawn" (live, MPI_Comm_spawn; the
  // default), "restart"
  // (the world cannot spawn: pcmctl run carries each command out by a version, a stop and a
  // relaunch at the new count) or "auto" (live, and by a restart where a spawn fails or hangs).
  std::optional<std::string> reshape;
  // This run is the relaunch of a restart reshape: the command it carries out (pcmctl run sets
  // PCM_RESHAPED_COMMAND).
  std::optional<std::int64_t> reshaped_command;
  // Started by pcmctl run (PCM_SUPERVISED=1): supervised from its registration on.
  bool supervised = false;
  // How pcmctl run launched it (PCM_LAUNCHER): "srun", or absent (mpiexec).
  std::optional<std::string> launcher;
  static Register from_json(const json& j);
  json to_json() const;
};

// Rank 0's poll. Reply: command (null or the pending one); with a checkpoint asked, checkpoint
// (its id), checkpoint_at_once, and for a stop stop and stop_why (why it was asked).
struct Poll {
  static constexpr Op kOp = Op::kPoll;
  std::string job;
  std::int64_t iteration = 0;
  std::optional<json> profile;  // validated by pcmd, which drops a bad one
  // With PCM_CHECKPOINT_MTBF: the measured cost of a checkpoint, the interval it gives and the
  // MTBF, in seconds (pcmctl status shows them).
  std::optional<double> checkpoint_cost_s, checkpoint_interval_s, checkpoint_mtbf_s;
  static Poll from_json(const json& j);
  json to_json() const;
};

// Rank 0 reports a command done (with the new world) or failed.
struct Reconfigured {
  static constexpr Op kOp = Op::kReconfigured;
  std::string job;
  std::int64_t command = 0;
  bool retry = false;
  bool success = true;
  int size = 0;                    // success only, as the next four
  std::vector<std::string> hosts;  // size of them
  std::optional<long> pid;
  bool respawned = false;
  std::optional<json> layout;        // not null
  std::optional<std::string> error;  // failure only
  std::optional<std::int64_t> iteration;
  static Reconfigured from_json(const json& j);
  json to_json() const;
};

struct Finished {
  static constexpr Op kOp = Op::kFinished;
  std::string job;
  std::optional<std::int64_t> iteration;
  // Set when the job ends after an MPI failure in one of its PCM calls (its world broke, e.g. a
  // peer's host died): pcmd records the job failed, with this text, rather than finished.
  std::optional<std::string> error;
  // Set when the job ended after the version a stop asked for (a signal, `pcmctl stop`): pcmd
  // records the job stopped, with this reason; a run with PCM_RESTART=1 resumes it.
  std::optional<std::string> stopped;
  // The version the stop wrote (its iteration); absent when none could be written.
  std::optional<std::int64_t> stopped_version;
  static Finished from_json(const json& j);
  json to_json() const;
};

// A line for a job's events from outside it (pcmctl run's recoveries).
struct JobEvent {
  static constexpr Op kOp = Op::kJobEvent;
  std::string job;
  std::string text;
  // Sent by a process's watchdog (libpcm/watchdog.h): the command whose reconfiguration hung.
  std::optional<std::int64_t> stuck_command;
  static JobEvent from_json(const json& j);
  json to_json() const;
};

// A whole job's move to another site (docs/ops/sites.md). "ask": an operator's (pcmctl move);
// refused unless the job runs under `pcmctl run`, the site is known and has a free host that is
// up. The rest are pcmctl run's: "supervise" (it runs this run of the job and can move it),
// "begin" (it took the asked move over), "done" and "failed" (with text). Reply: move (the job's
// move as status shows it), text.
struct JobMove {
  static constexpr Op kOp = Op::kJobMove;
  std::string job;
  // ask, supervise, begin, stop (the run under way to move writes a last version and ends: reply
  // id, text), done, failed; for a job that reshapes by restart: reshape_stop,
  // pcmctl run ends the run to carry its pending command out; reshape_failed, it could not
  // (text: why), and the job goes on as it was.
  std::string action = "ask";
  std::optional<std::string> site;  // ask: required
  std::optional<std::string> text;  // done, failed: what happened
  static JobMove from_json(const json& j);
  json to_json() const;
};

// Reply: jobs, inventory.
struct Status {
  static constexpr Op kOp = Op::kStatus;
  std::optional<std::string> job;  // absent: every job
  static Status from_json(const json& j);
  json to_json() const;
};

// Reply: job, profile, age_s.
struct Profile {
  static constexpr Op kOp = Op::kProfile;
  std::string job;
  static Profile from_json(const json& j);
  json to_json() const;
};

// count elements of type for (job, rank, key), as the data frame.
struct Store {
  static constexpr Op kOp = Op::kStore;
  std::string job;
  int rank = 0;
  std::string key;
  int type = 0;
  std::int64_t count = 0;
  static Store from_json(const json& j);
  json to_json() const;
};

// Reply: type, count, has_data (the data frame).
struct Load {
  static constexpr Op kOp = Op::kLoad;
  std::string job;
  int rank = 0;
  std::string key;
  bool meta_only = false;
  std::optional<std::int64_t> version;  // the version a restarted job reads
  static Load from_json(const json& j);
  json to_json() const;
};

// The working store becomes a checkpoint version. Reply: iteration, bytes, pruned.
// after_stores (PCM_STORE_ASYNC): the version is made once every rank of `size` has said that its
// stores are in (stores_done); the reply comes at once, with "deferred": true, unless they all
// have already (then it is the commit's).
struct Commit {
  static constexpr Op kOp = Op::kCommit;
  std::string job;
  std::int64_t iteration = 0;
  int size = 0;
  bool retry = false;
  bool after_stores = false;
  static Commit from_json(const json& j);
  json to_json() const;
};

// Reply: versions.
struct Checkpoints {
  static constexpr Op kOp = Op::kCheckpoints;
  std::string job;
  static Checkpoints from_json(const json& j);
  json to_json() const;
};

// Reply: versions.
struct Verify {
  static constexpr Op kOp = Op::kVerify;
  std::string job;
  std::optional<std::int64_t> iteration;  // absent: all
  static Verify from_json(const json& j);
  json to_json() const;
};

// Reply: pruned.
struct Prune {
  static constexpr Op kOp = Op::kPrune;
  std::string job;
  std::int64_t keep = 1;
  static Prune from_json(const json& j);
  json to_json() const;
};

// Asks the job for a checkpoint at its next agreement (PCM_Adapt writes it). Reply: id, text.
struct CheckpointRequest {
  static constexpr Op kOp = Op::kCheckpointRequest;
  std::string job;
  std::optional<std::string> why;
  // Written at once from the application's buffers, not staged to be written in the background:
  // the run ends right after it (a restart reshape, a move), so the copy aside would be waste.
  bool at_once = false;
  // And then the job ends, as after a signal (docs/user/preemption.md): PCM_Adapt writes the
  // version at once, returns PCM_RETIRED, and PCM_Exit returns PCM_STOPPED. Implies at_once.
  bool stop = false;
  static CheckpointRequest from_json(const json& j);
  json to_json() const;
};

// Reply: dir, token.
struct CheckpointBegin {
  static constexpr Op kOp = Op::kCheckpointBegin;
  std::string job;
  std::int64_t iteration = 0;
  static CheckpointBegin from_json(const json& j);
  json to_json() const;
};

// The shard table travels as the data frame. Reply: iteration, bytes, shards, pruned.
struct CheckpointCommit {
  static constexpr Op kOp = Op::kCheckpointCommit;
  std::string job;
  std::int64_t iteration = 0;
  int size = 0;
  std::optional<json> layout;  // absent: the job's
  bool retry = false;
  static CheckpointCommit from_json(const json& j);
  json to_json() const;
};

// Reply: restart (the next version).
struct CheckpointBad {
  static constexpr Op kOp = Op::kCheckpointBad;
  std::string job;
  std::int64_t iteration = 0;
  std::string why;
  // Not damaged but out of the readers' reach (a shard only on lost hosts): skipped until the
  // job's next restart rather than for good.
  bool unreachable = false;
  static CheckpointBad from_json(const json& j);
  json to_json() const;
};

// Reply: format, dir, has_data (the manifest).
struct CheckpointManifest {
  static constexpr Op kOp = Op::kCheckpointManifest;
  std::string job;
  std::int64_t iteration = 0;
  static CheckpointManifest from_json(const json& j);
  json to_json() const;
};

// A rank's shard file, as the data frame.
struct ShardPut {
  static constexpr Op kOp = Op::kShardPut;
  std::string job;
  std::int64_t iteration = 0;
  int rank = 0;
  static ShardPut from_json(const json& j);
  json to_json() const;
};

// One rank's shard of a version is written: its record (MessagePack) as the data frame, or the
// error that stopped it. pcmd commits the version when every rank of `size` has reported one
// (the reply to the last is the commit's: iteration, bytes, shards, pruned).
struct ShardDone {
  static constexpr Op kOp = Op::kShardDone;
  std::string job;
  std::int64_t iteration = 0;
  int rank = 0;
  int size = 0;
  std::optional<std::string> error;  // the rank's shard could not be written
  bool retry = false;
  // Where the shard's copies are (checkpoint levels); absent: in the version's directory only.
  std::optional<pcm::common::ShardLevels> levels;
  static ShardDone from_json(const json& j);
  json to_json() const;
};

// PCM_STORE_ASYNC: one rank's stores before a deferred commit of `iteration` are in (each
// recorded by its store_direct), or the error that stopped them. When every rank of `size` has
// said so and rank 0's commit (after_stores) has come, pcmd makes the version; the reply to the
// last of these requests is the commit's (iteration, bytes, pruned), or its error.
struct StoresDone {
  static constexpr Op kOp = Op::kStoresDone;
  std::string job;
  std::int64_t iteration = 0;
  int rank = 0;
  int size = 0;
  std::optional<std::string> error;  // this rank's stores could not all be written
  static StoresDone from_json(const json& j);
  json to_json() const;
};

// Where the job's ranks write the keys they store themselves. Reply: dir, token.
struct DirectDir {
  static constexpr Op kOp = Op::kDirectDir;
  std::string job;
  static DirectDir from_json(const json& j);
  json to_json() const;
};

// A store the rank wrote into the direct-store directory itself: its record (a ShardRecord whose
// one dataset has a file of its own), or why it could not (a commit is then refused until the key
// is stored again).
struct StoreDirect {
  static constexpr Op kOp = Op::kStoreDirect;
  std::string job;
  int rank = 0;
  std::string key;
  std::optional<json> record;
  std::optional<std::string> error;
  static StoreDirect from_json(const json& j);
  json to_json() const;
};

// Fields every command request has besides its own. Reply: command, host, hosts, size, text.
struct CommandFields {
  std::string job;
  std::optional<std::string> host;       // in the inventory
  std::optional<std::string> placement;  // "spread" or "concentrate"
  std::optional<std::string> why;        // cleaned (Command::clean_why); absent or null: none
  void read(const json& j);
  void write(json& j) const;
};

struct Migrate : CommandFields {
  static constexpr Op kOp = Op::kMigrate;
  int rank = -1;
  static Migrate from_json(const json& j);
  json to_json() const;
};

struct Split : CommandFields {
  static constexpr Op kOp = Op::kSplit;
  int rank = -1;
  int into = 0;
  static Split from_json(const json& j);
  json to_json() const;
};

struct Merge : CommandFields {
  static constexpr Op kOp = Op::kMerge;
  std::vector<int> ranks;
  static Merge from_json(const json& j);
  json to_json() const;
};

struct Resize : CommandFields {
  static constexpr Op kOp = Op::kResize;
  int size = -1;
  static Resize from_json(const json& j);
  json to_json() const;
};

// Reply: host, added.
struct HostAdd {
  static constexpr Op kOp = Op::kHostAdd;
  std::string host;
  int slots = 1;
  std::string site = "default";
  std::optional<double> latency;  // ms
  static HostAdd from_json(const json& j);
  json to_json() const;
};

// Reply: hosts, placement.
struct HostList {
  static constexpr Op kOp = Op::kHostList;
  static HostList from_json(const json& j);
  json to_json() const;
};

// Reply: host, draining.
struct HostDrain {
  static constexpr Op kOp = Op::kHostDrain;
  std::string host;
  static HostDrain from_json(const json& j);
  json to_json() const;
};

struct HostRemove {
  static constexpr Op kOp = Op::kHostRemove;
  std::string host;
  static HostRemove from_json(const json& j);
  json to_json() const;
};

// An agent's report on its host (agent.h). Reply: host, state, slots.
struct AgentReport {
  static constexpr Op kOp = Op::kAgentReport;
  std::string host;
  int cores = 1;
  double busy = 0, load1 = 0, runnable = 0;
  bool join = false;
  std::optional<int> slots;  // a host that joins: default its cores
  std::string site = "default";
  static AgentReport from_json(const json& j);
  json to_json() const;
};

// Reply: host, draining.
struct AgentLeave {
  static constexpr Op kOp = Op::kAgentLeave;
  std::string host;
  static AgentLeave from_json(const json& j);
  json to_json() const;
};

// Reply: sites (of each host, "" outside the inventory).
struct Topology {
  static constexpr Op kOp = Op::kTopology;
  std::vector<std::string> hosts;
  static Topology from_json(const json& j);
  json to_json() const;
};

// A request's header with "op" set: link.request(ops::request(ops::Load{...})).
template <class R>
json request(const R& r) {
  json j = r.to_json();
  j["op"] = name(R::kOp);
  return j;
}

}  // namespace pcm::ops
