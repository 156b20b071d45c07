// overlap.h — a split's spawn in the background (PCM_OVERLAP=1): a helper thread of every old rank
// calls MPI_Comm_spawn_multiple on a duplicate of the world while the application keeps
// iterating; PCM_Adapt switches at the first agreement window after rank 0's helper has finished.
// Needs MPI_THREAD_MULTIPLE (MPI_PCM_Init asks for it when PCM_OVERLAP=1); elsewhere the spawn
// blocks as before.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mpi_util.h"

namespace pcm::detail {

class Watchdog;

// The arguments of one MPI_Comm_spawn_multiple, owned (the pointers MPI takes point into it):
// one command per run of consecutive equal hosts (world.cpp: Runtime::spawn says why).
struct SpawnPlan {
  std::string exe;
  std::vector<std::string> args;
  std::vector<char*> argv;  // into args, null-terminated
  std::vector<char*> cmds;
  std::vector<char**> argvs;
  std::vector<int> counts;
  std::vector<mpi::Info> owned;
  std::vector<MPI_Info> infos;
  std::size_t procs = 0;

  // Never moved or copied once built: argv points into args.
  static std::unique_ptr<SpawnPlan> make(const std::string& exe,
                                         const std::vector<std::string>& args,
                                         const std::vector<std::string>& hosts,
                                         const std::string& cwd);
  // Collective over comm (root 0): the spawn. Returns PCM_SUCCESS or PCM_ERR_SPAWN (the call or
  // any process failed); *inter is the intercommunicator where the call returned one.
  int run(MPI_Comm comm, mpi::Comm* inter) const;
};

// One split's spawn in a helper thread. Every old rank starts one for the same command, so that
// the helpers take part in the same collective; they all finish it together.
class BackgroundSpawn {
 public:
  BackgroundSpawn() = default;
  ~BackgroundSpawn();  // joins a helper still running (it cannot be stopped)
  BackgroundSpawn(const BackgroundSpawn&) = delete;
  BackgroundSpawn& operator=(const BackgroundSpawn&) = delete;

  // Collective over world: duplicates it (the helper's communicator, so that the spawn never
  // matches the application's own collectives) and starts the helper on plan. stage: the
  // watchdog, for the "MPI_Comm_spawn" stage a stuck process names.
  void start(MPI_Comm world, std::unique_ptr<SpawnPlan> plan, Watchdog* stage);
  // Whether a spawn was started and not yet finished().
  bool pending() const { return started_; }
  // Whether this rank's helper is done (rank 0 asks it at each agreement; no MPI call).
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Joins the helper; returns this rank's result (PCM_SUCCESS or PCM_ERR_SPAWN) and the
  // intercommunicator in *inter. Seconds the helper ran: seconds().
  int finish(mpi::Comm* inter);
  double seconds() const { return seconds_; }

 private:
  std::unique_ptr<SpawnPlan> plan_;
  mpi::Comm comm_;
  mpi::Comm inter_;
  int result_ = 0;
  double seconds_ = 0;
  bool started_ = false;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace pcm::detail
