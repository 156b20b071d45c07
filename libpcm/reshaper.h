// reshaper.h — Reshaper: the reconfigurations that change the world (a migration, a split, a
// merge) and what builds the new one: a spawned process's join, the adoption of the world a
// reconfiguration built, the retirement of the processes that leave, and the report to pcmd. It
// works in the context (context.h) and moves the process's lifecycle on (lifecycle.h), with the
// owners it is handed (the reconfiguration in flight, the retirement, the checkpoints' schedule,
// the bounds, the spawner, the background split); it never reaches back into Runtime.
// Definitions: reshaper.cpp (worlds, migration), split_merge.cpp (split and merge).
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "background_split.h"
#include "bounds.h"
#include "checkpointer.h"
#include "command.h"
#include "context.h"
#include "lifecycle.h"
#include "mpi_util.h"
#include "reconfig.h"
#include "registry.h"
#include "retirement.h"
#include "spawner.h"

namespace pcm::lib {

class Reshaper {
 public:
  // The parts a reconfiguration works with, all held by Runtime, which outlives this.
  struct Parts {
    Reconfig& reconfig;
    Retirement& retirement;
    Checkpointer& checkpointer;
    Bounds& bounds;
    Spawner& spawner;
    BackgroundSplit& background;
  };
  // at_exit: registered with std::atexit the first time this process retires (a retired process
  // that returns from main without PCM_Exit parks and finalizes there).
  Reshaper(const Context& ctx, Lifecycle& life, const Parts& parts, void (*at_exit)())
      : ctx_(ctx),
        life_(life),
        reconfig_(parts.reconfig),
        retirement_(parts.retirement),
        checkpointer_(parts.checkpointer),
        bounds_(parts.bounds),
        spawner_(parts.spawner),
        background_(parts.background),
        at_exit_(at_exit) {}

  // A spawned process (MPI_PCM_Init): joins the world its parents are building, a migration's
  // (then it is in it) or a split's (its data comes at PCM_Split or PCM_Resume).
  void join_as_child(MPI_Comm parent);

  // Migration (PCM_Reconfigure, PCM_Adapt): command (null: this program) replaces the mover; in
  // the mover, send(merged, child) runs once the new world is built.
  using MigrationSender = std::function<void(MPI_Comm merged, int child)>;
  void migrate(const char* command, const MigrationSender& send);

  // Split: the old world sends arrays (and `extra`, any header) to a newly spawned world and
  // retires; a process of the new world receives them (replacing *buf and *dist) and `extra`.
  void send_split(const std::vector<ArrayRef>& arrays, const nlohmann::json& extra,
                  const char* command);
  void receive_split(const std::vector<ArrayRef>& arrays, nlohmann::json* extra);
  // Merge in place: the survivors receive the leavers' data, the leavers retire.
  void merge_arrays(const std::vector<ArrayRef>& arrays);

  // A reconfiguration given up before anything changed: pcmd hears why, and the command is done.
  void abandon(const proto::Command& cmd, const std::string& why);

 private:
  // How long a given-up split waits for what it left running to end (leftovers.h): the new
  // processes end at its verdict, in well under a second.
  static constexpr std::chrono::milliseconds kGivenUpDrain{3000};
  // How long a new process of a withdrawn split may take to finalize before it just ends.
  static constexpr std::chrono::milliseconds kWithdrawnFinalizeBound{10000};
  // A given-up split: what it left running is drained (split_merge.cpp), pcmd hears why.
  void settle_given_up(mpi::Comm inter, const proto::Command& cmd, const std::string& why);
  void agree_reshape_args(const std::vector<ArrayRef>& arrays);
  void adopt_world(mpi::Comm world);
  // key: this process's rank in the old world (a migrated process: the mover's).
  void finish_reconfigure(mpi::Comm merged, int waker_in_merged, int mover_in_merged,
                          bool i_am_mover, int key, const proto::Command& cmd);
  void retire(mpi::Comm waker_comm, int waker_rank, const proto::Command& cmd);
  void report_reconfigured(const proto::Command& cmd, bool success, const std::string& error,
                           const nlohmann::json& layout = nullptr);
  // The header every spawned process receives first (join_as_child reads it).
  nlohmann::json spawn_context(const char* kind, const proto::Command& cmd) const;

  Context ctx_;
  Lifecycle& life_;
  Reconfig& reconfig_;
  Retirement& retirement_;
  Checkpointer& checkpointer_;
  Bounds& bounds_;
  Spawner& spawner_;
  BackgroundSplit& background_;
  void (*at_exit_)();
};

}  // namespace pcm::lib
