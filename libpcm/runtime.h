// runtime.h — the per-process state of libpcm behind the C API (one instance per process): the
// lifecycle and the context (settings, the link to pcmd, the job, this program) holding the named
// parts (the world, the reconfiguration in flight, the restart's state, the status windows, the
// registrations, the retirement), each in a header of its own (world.h, reconfig.h,
// restart_state.h, program.h, settings.h, daemon_link.h, status_window.h, registry.h,
// retirement.h), and the owners of the mechanisms, which work in that context (context.h) and
// never reach back: checkpoints (checkpointer.h), stores and loads (storage.h), a reconfiguration's
// bound (bounds.h) and spawn (spawner.h), the background split (background_split.h). Runtime's own
// member functions live in one file per job:
//   runtime.cpp  lifecycle (MPI_PCM_Init, PCM_Init, PCM_Finalize, PCM_Exit), PCM_Status, PCM_Commit
//   world.cpp    adopting a new world, joining as a spawned child, retiring, reports to pcmd
//   migrate.cpp  migration (PCM_Reconfigure)
//   reshape.cpp  split and merge (PCM_Split, PCM_Merge, PCM_Merge_datacnts)
//   adapt.cpp    the register-once layer (PCM_Resume, PCM_Adapt, PCM_Checkpoint's state checks)
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "background_split.h"
#include "bounds.h"
#include "checkpointer.h"
#include "command.h"
#include "config.h"
#include "context.h"
#include "daemon_link.h"
#include "distribution.h"
#include "mpi_util.h"
#include "pcm.h"
#include "program.h"
#include "reconfig.h"
#include "registered_data.h"
#include "registry.h"
#include "restart_state.h"
#include "retirement.h"
#include "settings.h"
#include "spawner.h"
#include "status_window.h"
#include "storage.h"
#include "world.h"

namespace pcm::detail {

using proto::Command;

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
  // PCM_Store, PCM_Load, PCM_Load_count, PCM_Load_redistribute (storage.h): in_world, once the
  // process is in one (PCM_Init; PCM_Load_redistribute checks that it is a restart's).
  Storage& storage(bool in_world = true) {
    if (in_world && phase_ != Phase::kActive) fail(PCM_ERR_STATE, "call PCM_Init first");
    return storage_;
  }
  int reconfigure(MPI_Comm* comm, const char* command);
  int split(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
            MPI_Comm* comm, const char* command);
  int merge(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
            MPI_Comm* comm);
  int merge_datacnts(const Distribution* dist, long* count, int* merge_rank, MPI_Comm comm);
  int commit(MPI_Comm comm, int iteration);
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

  // Worlds (world.cpp).
  void join_as_child(MPI_Comm parent);
  void adopt_world(mpi::Comm world);
  // key: this process's rank in the old world (a migrated process: the mover's).
  void finish_reconfigure(mpi::Comm merged, int waker_in_merged, int mover_in_merged,
                          bool i_am_mover, int key, const Command& cmd);
  void retire(mpi::Comm waker_comm, int waker_rank, const Command& cmd);
  void abandon(const Command& cmd, const std::string& why);
  void report_reconfigured(const Command& cmd, bool success, const std::string& error,
                           const nlohmann::json& layout = nullptr);

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

  // What the owners below work in (context.h): references to the members above.
  Context ctx_{settings_, link_, job_, world_, registry_, restart_};
  // PCM_Checkpoint, the versions PCM_Adapt writes by itself (those pcmd asks for: pcmctl
  // checkpoint, its policy before a time limit; those PCM_CHECKPOINT_MTBF schedules) and a
  // restart's reads (checkpointer.h).
  Checkpointer checkpointer_{ctx_};
  Storage storage_{ctx_};  // PCM_Store, PCM_Load and PCM_Commit; format 1's restart

  Retirement retirement_;
  // The watchdog, after everything it could report on: its thread is stopped before they go.
  Bounds bounds_{ctx_};
  Spawner spawner_{ctx_, program_, bounds_.watchdog(),
                   [this](const Command& cmd, const std::string& why) { abandon(cmd, why); }};
  // A split's spawn or a merge's buffers made in the background (background_split.h), after the
  // watchdog, which bounds it and names its helper's stage.
  BackgroundSplit background_{ctx_, bounds_.watchdog(), spawner_};
  // The registrations across the processes; a migrated process's state (registered_data.h).
  RegisteredData registered_{ctx_, bounds_};
};

}  // namespace pcm::detail
