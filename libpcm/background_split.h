// background_split.h — BackgroundSplit: a split's spawn, or a merge's new buffers, made in the
// background while the loop goes on (PCM_OVERLAP=1; the helpers: overlap.h), from PCM_Adapt's
// start to the switch at an agreement window and the reshape that takes what they made; and, in a
// new process of such a split, its buffers faulted in before the split. Definitions:
// background_split.cpp.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "buffer.h"
#include "command.h"
#include "context.h"
#include "distribution.h"
#include "mpi_util.h"
#include "overlap.h"
#include "registry.h"
#include "spawner.h"
#include "watchdog.h"

namespace pcm::lib {

class BackgroundSplit {
 public:
  // The watchdog bounds the work from its start to the end of the reconfiguration and names the
  // helper's stage; the spawner checks the program, makes the spawn's arguments and gives a
  // command up.
  BackgroundSplit(const Context& ctx, Watchdog& watchdog, Spawner& spawner)
      : ctx_(ctx), watchdog_(watchdog), spawner_(spawner) {}

  // Whether this process may overlap (PCM_OVERLAP=1, MPI_THREAD_MULTIPLE, MPICH): MPI_PCM_Init.
  void allow(bool possible) { possible_ = possible; }
  // PCM_Adapt: whether a split or merge pending is to start in the background now.
  bool can_start() const { return possible_ && !switching_; }
  // Whether a spawn or a merge's buffers are in the making (PCM_Status's windows go on meanwhile)
  // and whether rank 0's helper has finished (asked at each agreement; no MPI call).
  bool pending() const { return spawn_.pending() || prefault_.pending(); }
  bool helper_done() const { return spawn_.pending() ? spawn_.done() : prefault_.done(); }
  // Switched: the reconfiguration goes on at this PCM_Adapt call.
  bool switching() const { return switching_; }

  // PCM_Adapt, at the call that adopted the command (iteration: PCM_Status calls so far). A split:
  // starts the spawn (collective); the command is given up, and the job goes on in the old world,
  // if it cannot start. A merge: this survivor's new buffers.
  void start_split(const proto::Command& cmd, std::int64_t iteration);
  void start_merge(const proto::Command& cmd, std::int64_t iteration);
  // PCM_Status, at the adoption of cmd in a job of the paper's calls (PCM_Status then PCM_Split or
  // PCM_Merge; nothing resumed): the same work started for the split or merge that `status`
  // (reconfig.h: status_of) says, where it can be (PCM_OVERLAP=1); PCM_Status says PCM_NONE until
  // the window after it is ready. A merge always starts (every rank must: those that remember no
  // map make nothing), a split's spawn without buffers where no map is remembered. Whether it
  // started.
  bool start_for_paper_calls(const proto::Command& cmd, int status, std::int64_t iteration);
  // PCM_Split, switched: the background spawn ran this program; a PCM_Split that names another
  // (on any rank: collective) sets those processes aside, and the split spawns that program
  // itself; they are withdrawn (withdraw_split: they end with MPI_Finalize) only after that
  // spawn, by give_up_set_aside (send_split; again at the end of PCM_Split, for a split that failed
  // before).
  void keep_spawn_of(const char* command);
  void give_up_set_aside();
  // PCM_Status, at an agreement after rank 0's helper has finished (every rank's does now): joins
  // it, and the reconfiguration goes on.
  void switch_now(const proto::Command& cmd, std::int64_t iteration);
  // The bound from the start to the end of the reconfiguration (PCM_Adapt ends it).
  std::optional<Watchdog::Scope>& bound() { return bound_; }
  // Ends the bound of work started in the background with the call that carries the
  // reconfiguration out (PCM_Adapt, PCM_Split, PCM_Merge), whichever way that call ends.
  struct EndBound {
    BackgroundSplit& b;
    ~EndBound() { b.bound_.reset(); }
  };

  // The split, once switched: the spawn's intercommunicator (the result agreed, the command given
  // up on failure), and the seconds of it the application saw (the start and the switch).
  mpi::Comm take_spawn(const proto::Command& cmd);
  double visible() const { return visible_; }
  // Before the split's context goes out: the new processes' word that their buffers are faulted
  // in (overlap.h: BackgroundSpawn::await_prefaulted); cancelled when the split is given up.
  void await_prefaulted(const Waiter* wait) { spawn_.await_prefaulted(wait); }
  void cancel_prefaulted() { spawn_.cancel_prefaulted(); }
  // At the merge: this survivor's buffers made in the background, into newbufs; and for each
  // array, which old ranks have one (every rank learns it; all zero without a background merge).
  std::vector<std::vector<int>> take_merge_buffers(const std::vector<ArrayRef>& arrays,
                                                   const std::vector<Distribution>& next, int me,
                                                   std::vector<char*>* newbufs);
  // PCM_Finalize with work in flight: the spawned processes are told that the split is given up,
  // the merge's buffers go; `current` (if any) is given up.
  void drop(const proto::Command* current);

  // A new process: the buffers of a split spawned in the background, faulted in (overlap.h), into
  // the world's joining state.
  void prefault_split(const nlohmann::json& plan, int me, MPI_Comm parent, const Waiter* wait);

  // The paper's calls (PCM_Split, PCM_Merge) name their array only when they are called, after
  // PCM_Status has reported the command: the maps and types this process's last split or merge
  // left it are what the work in the background makes the next one's buffers for (a job with
  // registered arrays: those). A guess: a buffer made for another map or type is not taken (the
  // reshape makes its own, as without), so a wrong one costs only the work behind the loop.
  void remember(const std::vector<ArrayRef>& arrays);

 private:
  void bound_background(const proto::Command& cmd);
  // The maps and types the split will give the new processes, or null (nothing to fault in).
  nlohmann::json prefault_plan(const proto::Command& cmd) const;
  // The maps and types to make buffers for: the registered arrays', or else remember()'s; false
  // if a registered array has no map.
  bool known_maps(std::vector<Distribution>* maps, std::vector<int>* types) const;

  Context ctx_;
  Watchdog& watchdog_;
  Spawner& spawner_;
  bool possible_ = false;
  BackgroundSpawn spawn_;
  BackgroundPrefault prefault_;  // a merge's
  Prefaulted merge_buffers_;     // what it made, from the switch to the merge
  std::optional<Watchdog::Scope> bound_;
  bool switching_ = false;          // joined: the reconfiguration goes on at this PCM_Adapt call
  int result_ = 0;                  // this rank's helper's (PCM_SUCCESS or PCM_ERR_SPAWN)
  mpi::Comm inter_;                 // the helper's intercommunicator
  std::int64_t started_at_ = 0;     // PCM_Status calls at the start
  double visible_ = 0;              // seconds the starting call and the switch took
  mpi::Comm set_aside_;             // keep_spawn_of's, until give_up_set_aside
  bool set_aside_spawned_ = false;  // its spawn succeeded: its new processes wait for a verdict
  std::vector<Distribution> last_maps_;  // remember()'s
  std::vector<int> last_types_;
};

}  // namespace pcm::lib
