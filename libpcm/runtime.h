// runtime.h — the per-process state of libpcm behind the C API (one instance per process): the
// context (settings, the link to pcmd, the job, this program) holding the named parts (the world,
// the reconfiguration in flight, the restart's state, the status windows, the registrations, the
// retirement), each in a header of its own (world.h, reconfig.h, restart_state.h, program.h,
// settings.h, daemon_link.h, status_window.h, registry.h, retirement.h). Its member functions,
// which work on those parts, live in one file per job:
//   runtime.cpp  lifecycle (MPI_PCM_Init, PCM_Init, PCM_Finalize, PCM_Exit), PCM_Status
//   world.cpp    spawning, adopting a new world, joining as a spawned child, retiring
//   overlap.cpp  a split's spawn in the background (PCM_OVERLAP=1) and the switch to it
//   migrate.cpp  migration (PCM_Reconfigure)
//   reshape.cpp  split and merge (PCM_Split, PCM_Merge, PCM_Merge_datacnts)
//   restart.cpp  store and load through pcmd, commit, restart reads
//   shards.cpp   PCM_Checkpoint: shards the ranks write (shard_writer.h: now or in the
//                background; partner_copy.h: the partner level's exchange); restarts that
//                read them
//   adapt.cpp    the register-once layer (PCM_Resume, PCM_Adapt, PCM_Checkpoint)
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "config.h"
#include "daemon_link.h"
#include "direct_store.h"
#include "distribution.h"
#include "mpi_util.h"
#include "overlap.h"
#include "pcm.h"
#include "program.h"
#include "reconfig.h"
#include "registry.h"
#include "restart_state.h"
#include "retirement.h"
#include "settings.h"
#include "shard_writer.h"
#include "status_window.h"
#include "watchdog.h"
#include "world.h"

// What a PCM_Dist handle points to.
struct PCM_Dist_s {
  pcm::detail::Distribution d;
};

namespace pcm::detail {
// Replaces a registered array's buffer and map with new ones (the library frees what it
// replaces; adapt.cpp).
void hand_over(const Item& item, char* buf, Distribution map);
// The map a restarted process lays a registered array out by: the one the application set for
// this world's size, else the saved map `from` resized to it. Fails with `damage` when `from` does
// not describe the version's saved_nprocs processes, PCM_ERR_ARG when the two maps disagree.
Distribution restart_map(const Item& item, const Distribution& from, int saved_nprocs, int size,
                         int damage);
}  // namespace pcm::detail

namespace pcm::detail {

using proto::Command;

// One distributed array that a split or merge moves: the application's buffer and map variables
// (replaced by the reshape).
struct ArrayRef {
  void** buf;
  int type;
  PCM_Dist* dist;
};

class Runtime {
 public:
  // Where the process is in its life. The calls allowed in each are checked by the calls.
  enum class Phase {
    kUninit,     // before MPI_PCM_Init
    kMpiReady,   // MPI_PCM_Init done (perhaps failed: init_error_), PCM_Init not yet
    kActive,     // in a world (after PCM_Init, or joined as a spawned process)
    kRetired,    // left the world in a reconfiguration; only PCM_Exit/PCM_Finalize remain
    kFinalized,  // MPI_Finalize called
  };

  static Runtime& instance();
  // An atexit handler (registered when a process retires): PCM_Exit for a retired process that
  // did not call it.
  static void exit_if_retired();

  int mpi_pcm_init(int* argc, char*** argv);
  int init(MPI_Comm* comm);
  int process_status() const;
  int comm_rank(MPI_Comm comm, int* rank) const;
  int status(MPI_Comm comm);
  int store(int rank, const char* key, const void* buf, int type, long count);
  int load(int rank, const char* key, void* buf, int type, long count);
  int load_count(int rank, const char* key, int* type, long* count);
  int reconfigure(MPI_Comm* comm, const char* command);
  int split(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
            MPI_Comm* comm, const char* command);
  int merge(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
            MPI_Comm* comm);
  int merge_datacnts(const Distribution* dist, long* count, int* merge_rank, MPI_Comm comm);
  int commit(MPI_Comm comm, int iteration);
  int load_redistribute(const char* key, int type, const Distribution& from, const Distribution& to,
                        int rank, void* buf);
  int exit_retired();
  // Whether this process has retired and not yet ended (PCM_Exit not called).
  bool retired_unfinished() const {
    return process_status_ == PCM_RETIRED && phase_ != Phase::kFinalized;
  }
  int finalize(MPI_Comm comm);

  // The last reconfiguration (PCM_Reconfig_*) and the version a restart resumes from
  // (PCM_Restart_info).
  const Reconfig& reconfig() const { return reconfig_; }
  const RestartState& restart() const { return restart_; }

  // The register-once layer (adapt.cpp).
  Registry& registry() { return registry_; }
  int resume(MPI_Comm* comm);
  int adapt(MPI_Comm* comm);
  int checkpoint(MPI_Comm comm, int iteration);
  int checkpoint_wait(MPI_Comm comm);
  bool resumed() const { return resumed_; }

  // pcmd's inventory site of each host, "" where it has none or cannot be asked (no pcmd, not
  // in a world yet, an older pcmd). Rank 0 of a PCM_Topology call (topology.cpp).
  std::vector<std::string> sites_of(const std::vector<std::string>& hosts);

 private:
  Runtime() = default;
  // Lifecycle (runtime.cpp).
  void require_world(MPI_Comm comm) const;
  void shut_down();
  // Rank 0, for a command just received: whether it would park more processes than the cap
  // allows, and then either marks it a respawn or refuses it (false: refused, already reported).
  bool keep_parking_bounded(Command& cmd);

  // Worlds (world.cpp).
  void join_as_child(MPI_Comm parent);
  // A new process of a split that its old world gave up: leaves pcmd ("bye") and ends, exit 0.
  [[noreturn]] void leave_given_up_split(const std::string& why);
  // Collective over the world: spawns command (or this program) on hosts for cmd; the
  // reconfiguration is given up (abandon) on every rank if the program is missing or the spawn
  // fails.
  mpi::Comm spawn_for(const Command& cmd, const char* command,
                      const std::vector<std::string>& hosts);
  mpi::Comm spawn(const std::string& exe, const std::vector<std::string>& hosts);
  std::unique_ptr<SpawnPlan> spawn_plan(const std::string& exe,
                                        const std::vector<std::string>& hosts) const;
  void adopt_world(mpi::Comm world);
  // key: this process's rank in the old world (a migrated process: the mover's).
  void finish_reconfigure(mpi::Comm merged, int waker_in_merged, int mover_in_merged,
                          bool i_am_mover, int key, const Command& cmd);
  void retire(mpi::Comm waker_comm, int waker_rank, const Command& cmd);
  void abandon(const Command& cmd, const std::string& why);
  void report_reconfigured(const Command& cmd, bool success, const std::string& error,
                           const nlohmann::json& layout = nullptr);
  // The blocking part of a reconfiguration in this process ends within PCM_RECONFIG_TIMEOUT_S
  // while the returned scope lives, or the process ends (watchdog.h); only a reconfiguration
  // touches it. `tell`: this process tells pcmd (the lowest rank involved); by cmd: world rank 0.
  Watchdog::Scope bounded(std::string what, int rank, bool tell);
  Watchdog::Scope bounded(const Command& cmd);
  // A split's old world: when its guard gives up waiting (split_guard.h), shortly before the
  // watchdog's deadline (nullopt: no bound); and what rank 0 asks pcmd meanwhile (null elsewhere).
  std::optional<std::chrono::steady_clock::time_point> split_deadline() const;
  // Whether a split's waits are guarded at all (split_guard.h): the same on every process.
  bool split_can_go_back() const;
  std::function<std::string()> lost_probe();

  // Migration (migrate.cpp); in the mover, send(merged, child) runs once the new world is built.
  using MigrationSender = std::function<void(MPI_Comm merged, int child)>;
  void migrate(const char* command, const MigrationSender& send);

  // A split's spawn in the background (overlap.cpp). PCM_Adapt, at the call that adopted a split:
  // starts the spawn (collective); the job goes on in the old world if it cannot start.
  void start_background_split();
  void bound_background(const Command& cmd);
  // A merge's new buffers faulted in the background (overlap.h), and the switch to it.
  void start_background_merge();
  void switch_to_merge();
  // At the merge: this survivor's buffers made in the background, into newbufs; and for each
  // array, which old ranks have one (every rank learns it; all zero without a background merge).
  std::vector<std::vector<int>> take_merge_buffers(const std::vector<ArrayRef>& arrays,
                                                   const std::vector<Distribution>& next, int me,
                                                   std::vector<char*>* newbufs);
  nlohmann::json prefault_plan(const Command& cmd) const;
  // A new process: the buffers of a split spawned in the background, faulted in (overlap.h).
  void prefault_split(const nlohmann::json& plan, int me, MPI_Comm parent, const Waiter* wait);
  // PCM_Status, at an agreement while the spawn is in flight: rank 0's helper has finished
  // (every rank's does now): joins it, and the split can go on.
  void switch_to_split();
  // The split's intercommunicator: the background spawn's where there was one (the result
  // agreed, the command given up on failure), else a spawn now (spawn_for).
  mpi::Comm spawned_for(const Command& cmd, const char* command);
  // PCM_Finalize with a spawn in flight: the spawned processes are told that the split is given up.
  void drop_background_split();

  // Split and merge (reshape.cpp).
  void check_pending(MPI_Comm comm, bool want_split) const;
  void agree_reshape_args(const std::vector<ArrayRef>& arrays);
  // Split: the old world sends arrays (and `extra`, any header) to a newly spawned world and
  // retires; a process of the new world receives them (replacing *buf and *dist) and `extra`.
  void send_split(const std::vector<ArrayRef>& arrays, const nlohmann::json& extra,
                  const char* command);
  void receive_split(const std::vector<ArrayRef>& arrays, nlohmann::json* extra);
  void merge_arrays(const std::vector<ArrayRef>& arrays);

  // The header every spawned process receives first (world.cpp; join_as_child reads it).
  nlohmann::json spawn_context(const char* kind, const Command& cmd) const;

  // The register-once layer's parts (adapt.cpp).
  void check_registrations();
  void resume_migrated();
  void resume_restarted();        // shards.cpp: the version's format decides
  void resume_restarted_whole();  // a version made through pcmd (format 1)
  void send_migration(MPI_Comm merged, int child, int rank);
  // PCM_Adapt, when a checkpoint is due (checkpoint_.due): a version of the iteration this call
  // begins. note_checkpoint: a version took `seconds` to write (the schedule's figures; called
  // by write_version).
  void write_due_checkpoint();
  void note_checkpoint(double seconds);

  // PCM_Checkpoint's data path (shards.cpp): every rank writes its shard (now, or staged and in
  // the background), pcmd commits; a restarted process reads its share from the shards (info:
  // pcmd's checkpoint_manifest reply). t0: when the application started waiting (the schedule's
  // cost counts from there).
  void write_version(int iteration, double t0);
  // Collective: waits for the version in flight (if any); every rank throws the same error if it
  // was not made. settle_quietly: the same, a failure logged by rank 0 (before a reconfiguration
  // or the end of the job, which go on either way).
  void settle_checkpoint();
  void settle_quietly(const char* before);
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

  // Lifecycle.
  Phase phase_ = Phase::kUninit;
  int process_status_ = PCM_STARTED;  // how this process came to be (PCM_RETIRED once retired)
  std::string init_error_;            // why MPI_PCM_Init failed (then only PCM_Finalize is allowed)

  // The context every part works in: the settings, pcmd and the job, this program.
  Settings settings_;
  DaemonLink link_;
  std::string job_;
  std::int64_t incarnation_ = 0;  // pcmd's number for this run of the job (watch hellos)
  Program program_;

  World world_;
  Reconfig reconfig_;
  RestartState restart_;

  // PCM_Status: its calls over the job's life, and the agreement windows.
  std::int64_t iteration_ = 0;
  StatusWindow window_;
  // A spawned process resumes at the iteration whose PCM_Status the others have already made.
  bool skip_next_status_ = false;

  // The register-once layer.
  Registry registry_;
  bool resumed_ = false;
  // Checkpoints PCM_Adapt writes by itself: those pcmd asks for (pcmctl checkpoint, its policy
  // before a time limit) and those PCM_CHECKPOINT_MTBF schedules. The one due at this agreement
  // (every rank: a request's id, -1 for the schedule's), the last request rank 0 wrote, the
  // version PCM_Adapt last wrote (label, and at which PCM_Status call: the application's own
  // PCM_Checkpoint of that iteration has it already), and the schedule: when the last version
  // (anyone's) was written, its measured cost (-1: none yet) and Daly's interval for it.
  struct AutoCheckpoints {
    std::int64_t due = 0;
    std::int64_t done = 0;
    std::int64_t label = -1;
    std::int64_t at_call = -1;
    double last_end = -1;  // wtime(); -1: this process has not started counting
    double cost = -1;
    double interval = -1;
    // Whether the schedule's next version is due at time now (the first at once: it measures).
    bool scheduled(double now) {
      if (last_end < 0) last_end = now;
      return interval < 0 || now - last_end >= interval;
    }
  } checkpoint_;

  // This process's shard of the version in flight, written in the background.
  ShardWriter shard_writer_;
  PartnerCopy partner_copy_;  // the partner level's exchange of the version in flight
  // Checkpoint levels: the versions rank 0 has written in this run (the first and every
  // PCM_CHECKPOINT_FLUSH_EVERY-th go to the shared level).
  long level_versions_ = 0;

  Retirement retirement_;
  DirectStore direct_store_;  // PCM_Store's keys written here (restart.cpp)
  // After everything it could report on: its thread is stopped before they go.
  Watchdog watchdog_{end_stuck_process};

  // A split's spawn in the background (overlap.h), after the watchdog, which its bound and its
  // helper's stage use: whether this process may overlap (PCM_OVERLAP=1, MPI_THREAD_MULTIPLE,
  // MPICH), the spawn in flight, the bound on it from its start to the end of the split, and what
  // the switch found.
  struct Overlap {
    bool possible = false;
    BackgroundSpawn spawn;
    BackgroundPrefault prefault;  // a merge's
    Prefaulted merge_buffers;     // what it made, from the switch to the merge
    std::optional<Watchdog::Scope> bound;
    bool switching = false;       // joined: the split goes on at this PCM_Adapt call
    int result = PCM_SUCCESS;     // this rank's helper's
    mpi::Comm inter;              // the helper's intercommunicator
    std::int64_t started_at = 0;  // iteration_ at the start
    double visible = 0;           // seconds the starting call and the switch took
  } overlap_;
};

}  // namespace pcm::detail
