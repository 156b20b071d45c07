// runtime.h — the per-process state of libpcm behind the C API (one instance per process): the
// lifecycle (lifecycle.h) and the context (settings, the link to pcmd, the job, this program)
// holding the named parts (the world, the reconfiguration in flight, the restart's state, the
// status windows, the registrations, the retirement), each in a header of its own (world.h,
// reconfig.h, restart_state.h, program.h, settings.h, daemon_link.h, status_window.h, registry.h,
// retirement.h), and the owners of the mechanisms, which work in that context (context.h) and
// never reach back: checkpoints (checkpointer.h), stores and loads (storage.h), a
// reconfiguration's bound (bounds.h) and spawn (spawner.h), the background split
// (background_split.h), the registered data (registered_data.h), and the reconfigurations that
// change the world with the worlds they build (reshaper.h: reshaper.cpp, split_merge.cpp).
// Runtime's own member functions are the C API's entry points, in two files:
//   runtime.cpp  lifecycle (MPI_PCM_Init, PCM_Init, PCM_Finalize, PCM_Exit), PCM_Status,
//                PCM_Commit, and the reconfiguration calls' state checks (PCM_Reconfigure,
//                PCM_Split, PCM_Merge, PCM_Merge_datacnts), which hand the work to the Reshaper
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
#include "lifecycle.h"
#include "mpi_util.h"
#include "ops.h"
#include "pcm.h"
#include "program.h"
#include "reconfig.h"
#include "registered_data.h"
#include "registry.h"
#include "reshaper.h"
#include "restart_state.h"
#include "retirement.h"
#include "settings.h"
#include "spawner.h"
#include "status_window.h"
#include "storage.h"
#include "world.h"

namespace pcm::lib {

using proto::Command;

class Runtime {
 public:
  using Phase = Lifecycle::Phase;

  static Runtime& instance();
  // An atexit handler (registered when a process retires): PCM_Exit for a retired process that
  // did not call it.
  static void exit_if_retired();

  int mpi_pcm_init(int* argc, char*** argv);
  int init(MPI_Comm* comm);
  int process_status() const;
  int comm_rank(MPI_Comm comm, int* rank) const;
  int status(MPI_Comm comm);
  // PCM_Status_if_local: status() would return PCM_NONE inside an agreement window.
  bool status_is_local(MPI_Comm comm) const;
  // PCM_Store, PCM_Load, PCM_Load_count, PCM_Load_redistribute (storage.h): in_world, once the
  // process is in one (PCM_Init; PCM_Load_redistribute checks that it is a restart's).
  Storage& storage(bool in_world = true) {
    if (in_world && life_.phase != Phase::kActive) fail(PCM_ERR_STATE, "call PCM_Init first");
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
    return life_.process_status == PCM_RETIRED && life_.phase != Phase::kFinalized;
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
  // PCM_Adapt_if_local: adapt() would return PCM_NONE inside an agreement window (adapt.cpp).
  bool adapt_is_local(MPI_Comm comm) const;
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
  // The end of the job in this world (PCM_Finalize, a stop): rank 0 tells pcmd, the processes
  // parked earlier are woken, this process leaves the world.
  void end_world(ops::Finished done);
  // A stop signal was received: pcmd is asked for the stop (once), which rank 0's poll brings to
  // the next agreement; the signal (rank 0 puts it in the agreement at once). Where pcmd refuses
  // (pcmctl run ends the run itself) or cannot be reached, the signal's default action.
  int tell_stop();
  bool stop_told_ = false;
  // The stop agreed on (life_.stop), as pcmd's events say it.
  std::string stop_reason() const;
  // PCM_Adapt after PCM_STOP: the last version, pcmd told, every process out (adapt.cpp).
  int stop_job(MPI_Comm* comm);

  // PCM_Split's and PCM_Merge's state checks: a reconfiguration of this kind is pending.
  void check_pending(MPI_Comm comm, bool want_split) const;

  // Lifecycle: the phase, how this process came to be, the job, PCM_Status's calls.
  Lifecycle life_;
  std::string init_error_;  // why MPI_PCM_Init failed (then only PCM_Finalize is allowed)

  // The context every part works in: the settings, pcmd, this program.
  Settings settings_;
  DaemonLink link_;
  Program program_;

  World world_;
  Reconfig reconfig_;
  RestartState restart_;

  // PCM_Status's agreement windows.
  StatusWindow window_;

  // The register-once layer.
  Registry registry_;
  bool resumed_ = false;
  // This run is the relaunch of a restart reshape (PCM_RESHAPED_COMMAND): the first PCM_Adapt
  // after PCM_Resume returns PCM_RESHAPED, as after a live reshape.
  bool reshaped_by_restart_ = false;

  // What the owners below work in (context.h): references to the members above.
  Context ctx_{settings_, link_, life_.job, world_, registry_, restart_};
  // PCM_Checkpoint, the versions PCM_Adapt writes by itself (those pcmd asks for: pcmctl
  // checkpoint, its policy before a time limit; those PCM_CHECKPOINT_MTBF schedules) and a
  // restart's reads (checkpointer.h).
  Checkpointer checkpointer_{ctx_};
  Storage storage_{ctx_};  // PCM_Store, PCM_Load and PCM_Commit; format 1's restart

  Retirement retirement_;
  // The watchdog, after everything it could report on: its thread is stopped before they go.
  Bounds bounds_{ctx_};
  Spawner spawner_{
      ctx_, program_, bounds_.watchdog(),
      [this](const Command& cmd, const std::string& why) { reshaper_.abandon(cmd, why); }};
  // A split's spawn or a merge's buffers made in the background (background_split.h), after the
  // watchdog, which bounds it and names its helper's stage.
  BackgroundSplit background_{ctx_, bounds_.watchdog(), spawner_};
  // The registrations across the processes; a migrated process's state (registered_data.h).
  RegisteredData registered_{ctx_, bounds_};
  // Migrations, splits and merges, and the worlds they build (reshaper.h).
  Reshaper reshaper_{ctx_,
                     life_,
                     {reconfig_, retirement_, checkpointer_, bounds_, spawner_, background_},
                     &Runtime::exit_if_retired};
};

}  // namespace pcm::lib
