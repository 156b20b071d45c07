// runtime.h — the per-process state of libpcm behind the C API (one instance per process): a
// façade over its parts (settings, daemon link, status windows, retirement) whose member
// functions live in one file per job:
//   runtime.cpp  lifecycle (MPI_PCM_Init, PCM_Init, PCM_Finalize, PCM_Exit), PCM_Status
//   world.cpp    spawning, adopting a new world, joining as a spawned child, retiring
//   migrate.cpp  migration (PCM_Reconfigure)
//   reshape.cpp  split and merge (PCM_Split, PCM_Merge, PCM_Merge_datacnts)
//   restart.cpp  store and load through pcmd, commit, restart reads
//   shards.cpp   PCM_Checkpoint: shards the ranks write; restarts that read them
//   adapt.cpp    the register-once layer (PCM_Resume, PCM_Adapt, PCM_Checkpoint)
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "config.h"
#include "daemon_link.h"
#include "distribution.h"
#include "mpi_util.h"
#include "pcm.h"
#include "registry.h"
#include "retirement.h"
#include "settings.h"
#include "status_window.h"

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
  void reconfig_times(double* spawn, double* data, double* rebuild) const;
  int reconfig_last(int* kind, int* size_before, double* started) const;
  int reconfig_reason(char* reason, int len) const;
  int commit(MPI_Comm comm, int iteration);
  int restart_info(int* iteration, int* nprocs) const;
  int load_redistribute(const char* key, int type, const Distribution& from, const Distribution& to,
                        int rank, void* buf);
  int exit_retired();
  // Whether this process has retired and not yet ended (PCM_Exit not called).
  bool retired_unfinished() const {
    return process_status_ == PCM_RETIRED && phase_ != Phase::kFinalized;
  }
  int finalize(MPI_Comm comm);

  // The register-once layer (adapt.cpp).
  Registry& registry() { return registry_; }
  int resume(MPI_Comm* comm);
  int adapt(MPI_Comm* comm);
  int checkpoint(MPI_Comm comm, int iteration);
  bool resumed() const { return resumed_; }

  // pcmd's inventory site of each host, "" where it has none or cannot be asked (no pcmd, not
  // in a world yet, an older pcmd). Rank 0 of a PCM_Topology call (topology.cpp).
  std::vector<std::string> sites_of(const std::vector<std::string>& hosts);

 private:
  Runtime() = default;
  // Lifecycle (runtime.cpp).
  void require_world(MPI_Comm comm) const;
  void shut_down();

  // Worlds (world.cpp).
  void join_as_child(MPI_Comm parent);
  void agree_spawnable(const std::string& exe, const Command& cmd);
  mpi::Comm spawn(const std::string& exe, const std::vector<std::string>& hosts);
  void adopt_world(mpi::Comm world);
  void finish_reconfigure(mpi::Comm merged, int waker_in_merged, int mover_in_merged,
                          bool i_am_mover, const Command& cmd);
  void retire(mpi::Comm waker_comm, int waker_rank, const Command& cmd);
  void abandon(const Command& cmd, const std::string& why);
  void report_reconfigured(const Command& cmd, bool success, const std::string& error,
                           const nlohmann::json& layout = nullptr);
  void note_reconfig(const Command& cmd);

  // Migration (migrate.cpp); in the mover, send(merged, child) runs once the new world is built.
  using MigrationSender = std::function<void(MPI_Comm merged, int child)>;
  void migrate(const char* command, const MigrationSender& send);

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

  // PCM_Checkpoint's data path (shards.cpp): every rank writes its shard, pcmd commits; a
  // restarted process reads its share from the shards (info: pcmd's checkpoint_manifest reply).
  void write_version(int iteration);
  void read_version(const nlohmann::json& info);

  // Lifecycle.
  Phase phase_ = Phase::kUninit;
  int process_status_ = PCM_STARTED;  // how this process came to be (PCM_RETIRED once retired)
  std::string init_error_;            // why MPI_PCM_Init failed (then only PCM_Finalize is allowed)

  // Job and world.
  Settings settings_;
  std::string job_;
  std::int64_t incarnation_ = 0;  // pcmd's number for this run of the job (watch hellos)
  mpi::Comm world_;
  int rank_ = -1;
  int size_ = 0;
  std::int64_t iteration_ = 0;  // PCM_Status calls over the job's life
  std::vector<std::string> args_;
  std::string cwd_;
  std::string self_exe_;

  DaemonLink link_;
  std::optional<Command> received_;  // rank 0: from pcmd, not yet broadcast
  std::int64_t last_done_command_ = 0;
  std::optional<Command> current_;  // broadcast, not yet carried out
  StatusWindow window_;
  // A spawned process resumes at the iteration whose PCM_Status the others have already made.
  bool skip_next_status_ = false;

  // A process spawned by a split, between PCM_Init and its PCM_Split: the intercommunicator to
  // the old world and what the old world told it.
  mpi::Comm join_inter_;
  nlohmann::json join_ctx_;

  // Set in a restarted job: the version it resumes from.
  std::int64_t restart_iteration_ = -1;
  int restart_nprocs_ = 0;
  bool reading_version_ = false;  // until the first PCM_Status of a restarted process

  // A split's old ranks: the token that proves to the new processes that they read this process.
  std::uint64_t cma_token_ = 0;

  // The reconfiguration pending or last carried out (kind, size_before, started); null if none.
  nlohmann::json last_reconfig_;

  // Seconds spent in the phases of this process's last split or merge.
  double t_spawn_ = 0, t_data_ = 0, t_rebuild_ = 0;

  // A migrated process, until PCM_Resume has received the mover's registered state: the
  // communicator to the mover and the mover's rank in it. migrant_owned_ holds it unless it
  // is the communicator this process wakes the mover on (then retirement_ owns it).
  MPI_Comm migrant_comm_ = MPI_COMM_NULL;
  mpi::Comm migrant_owned_;
  int migrant_src_ = -1;

  // The register-once layer.
  Registry registry_;
  bool resumed_ = false;

  Retirement retirement_;
  // Whether a split's old world leaves the job at once (retirement.h); agreed at each split.
  bool split_leaves_ = false;
  // The job's processes parked now (not counting those on their way out) and the largest size its
  // world has had: the same on every rank, handed to spawned processes in the spawn context.
  int parked_ = 0;
  int largest_ = 0;
  // Rank 0, for a command just received: whether it would park more processes than the cap
  // allows, and then either marks it a respawn or refuses it (false: refused, already reported).
  bool keep_parking_bounded(Command& cmd);
};

}  // namespace pcm::detail
