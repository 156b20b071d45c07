// overlap.h — a split's spawn in the background (PCM_OVERLAP=1): a helper thread of every old rank
// calls MPI_Comm_spawn_multiple on a duplicate of the world while the application keeps
// iterating; PCM_Adapt switches at the first agreement window after rank 0's helper has finished.
// Needs MPI_THREAD_MULTIPLE (MPI_PCM_Init asks for it when PCM_OVERLAP=1); elsewhere the spawn
// blocks as before.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "buffer.h"
#include "distribution.h"
#include "mpi_util.h"

namespace pcm::lib {

class Watchdog;

// The arguments of one MPI_Comm_spawn_multiple, owned (the pointers MPI takes point into it):
// one command per run of consecutive equal hosts (spawner.cpp: Spawner::spawn says why).
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

// The new processes of a split spawned in the background get, before the split's context, the
// maps and types of the buffers the split will give them ({"prefault": [{"to", "type"}, ...]}):
// they allocate and fault those in while the old world still iterates (memory touched for the
// first time costs 0.2-1.8 GB/s on this project's VMs against 10-16 GB/s between touched
// buffers), and the new rank 0 then sends the old rank 0 one int with this tag.
constexpr int kPrefaultedTag = 7301;

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
  // prefault: the maps and types of the new processes' buffers (or null); after the spawn the
  // helpers send them, and rank rank 0's helper is done only once the new processes have faulted
  // them in (or after kPrefaultWaitS, or stop_waiting(); the switch then waits for the rest:
  // await_prefaulted).
  // guarded: the new processes receive with nonblocking broadcasts (split_can_go_back()).
  void start(MPI_Comm world, std::unique_ptr<SpawnPlan> plan, Watchdog* stage,
             nlohmann::json prefault, int rank, bool guarded);
  // Whether a spawn was started and not yet finished().
  bool pending() const { return started_; }
  // Whether this rank's helper is done (rank 0 asks it at each agreement; no MPI call).
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Joins the helper; returns this rank's result (PCM_SUCCESS or PCM_ERR_SPAWN) and the
  // intercommunicator in *inter. Seconds the helper ran: seconds().
  int finish(mpi::Comm* inter);
  double seconds() const { return seconds_; }
  // At the switch, before the split's context goes out: waits (through wait, or MPI_Wait) for
  // the new processes' word that their buffers are faulted in, if the helper stopped waiting
  // for it. Cancels it instead when the split is dropped (cancel).
  void await_prefaulted(const Waiter* wait);
  void cancel_prefaulted();
  // Makes the helper stop waiting for that word (the job ends before the switch).
  void stop_waiting() { stop_.store(true, std::memory_order_release); }

  static constexpr double kPrefaultWaitS = 10;

 private:
  // In the helper, after a successful spawn: sends prefault_ and (rank 0) waits for the word.
  void announce_prefault();

  std::unique_ptr<SpawnPlan> plan_;
  mpi::Comm comm_;
  mpi::Comm inter_;
  int result_ = 0;
  double seconds_ = 0;
  bool started_ = false;
  nlohmann::json prefault_;
  int rank_ = 0;
  bool guarded_ = false;
  int prefaulted_word_ = 0;
  MPI_Request prefaulted_ = MPI_REQUEST_NULL;  // rank 0: the word, while not yet received
  std::atomic<bool> done_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A merge's new buffers, made and faulted in by a helper thread of each survivor while the loop
// goes on (PCM_OVERLAP=1; the thread makes no MPI call): the merge then moves every unit into
// memory already touched, the survivor's own units too, instead of growing its buffer into new
// pages. PCM_Adapt switches at the first agreement window after rank 0's helper is done.
class BackgroundPrefault {
 public:
  struct Want {
    Distribution map;
    int rank = 0;  // in map
    std::size_t elem = 0;
    nlohmann::json made_for;  // Prefaulted's {"to", "type"}
    bool needed = true;       // false: nothing is made (the buffer stays NULL)
  };
  BackgroundPrefault() = default;
  ~BackgroundPrefault();  // joins a helper still running
  BackgroundPrefault(const BackgroundPrefault&) = delete;
  BackgroundPrefault& operator=(const BackgroundPrefault&) = delete;

  void start(std::vector<Want> wants);
  bool pending() const { return started_; }
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Joins the helper and hands over the buffers (NULL where memory ran out).
  void finish(Prefaulted* out);
  double seconds() const { return seconds_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  std::vector<Want> wants_;
  std::vector<char*> bufs_;
  std::uint64_t bytes_ = 0;
  double seconds_ = 0;
  bool started_ = false;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace pcm::lib
