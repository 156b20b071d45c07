// world.h — the PCM world this process is in: its communicator, rank and size, what a process
// spawned into it still has to receive, and the job's parked processes. Definitions: world.cpp.
// The operations that change the world are Reshaper's (reshaper.h), the spawn is Spawner's
// (spawner.h).
#pragma once

#include <mpi.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "buffer.h"
#include "command.h"
#include "mpi_util.h"
#include "split_guard.h"

namespace pcm::lib {

// The job's processes parked by merges and migrations (retirement.h): the same on every rank,
// handed to spawned processes in the spawn context.
struct Parking {
  int parked = 0;   // parked now (not counting those on their way out)
  int largest = 0;  // the largest size the world has had since a reconfiguration built it
  // Whether a split's old world leaves the job at once (retirement.h); agreed at each split.
  bool split_leaves = false;

  // What rank 0 does with a command just received (PCM_MAX_PARKED, settings.h).
  enum class Verdict { kKeep, kRespawn, kRefuse };
  struct Decision {
    Verdict verdict = Verdict::kKeep;
    int would_park = 0;  // for kRespawn and kRefuse: the parked processes it would leave
    int cap = 0;
  };
  // Whether cmd, in a world of size, would park more processes than the cap allows (max_parked,
  // else the largest size for a job that uses PCM_Adapt, else none), and then whether it can be
  // carried out by respawning the whole world instead (a PCM_Adapt job, pcmd sent every host).
  Decision bound(const proto::Command& cmd, int size, int max_parked, bool adapts) const;
  // Rank 0, for a command just received: bound() carried out. A respawn pcmd asked for that this
  // job cannot do is dropped, a command over the cap marked a respawn (true), or refused (false,
  // and why in *refusal: the caller gives it up).
  bool admit(proto::Command& cmd, int size, int max_parked, bool adapts,
             std::string* refusal) const;
};

class World {
 public:
  MPI_Comm comm() const { return comm_.get(); }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Whether comm is this world (the communicator PCM_Init or a reconfiguration returned).
  bool is(MPI_Comm comm) const { return comm == comm_.get(); }

  // PCM_Init's world: dup, in which this process is rank of size.
  void begin(mpi::Comm dup, int rank, int size);
  // The world a reconfiguration built (errors returned, not fatal); the largest size grows.
  void adopt(mpi::Comm comm);
  // The communicator, handed to whoever keeps it now (a retiree's waker, a waker's retirees);
  // rank and size stay until the world is left or another adopted.
  mpi::Comm take() { return std::move(comm_); }
  // This process is in no world any more (retired, finalized).
  void leave();

  // A process spawned by a split, between PCM_Init and its PCM_Split (or PCM_Resume): the
  // intercommunicator to the old world, what the old world told it, and the guard that waits for
  // the old world's verdict (split_guard.h); with a spawn in the background (overlap.h), the
  // buffers its data will land in, faulted in while the old world iterated.
  struct Joining {
    mpi::Comm inter;
    nlohmann::json ctx;
    std::unique_ptr<NewSideGuard> verdict;
    Prefaulted prefaulted;
  };
  Joining joining;

  // A migrated process, until PCM_Resume has received the mover's registered state: the
  // communicator to the mover and the mover's rank in it. `owned` holds it unless it is the
  // communicator this process wakes the mover on (then the retirement owns it).
  struct Migrant {
    MPI_Comm comm = MPI_COMM_NULL;
    mpi::Comm owned;
    int src = -1;
    void clear() {
      owned.reset();
      comm = MPI_COMM_NULL;
    }
  };
  Migrant migrant;

  Parking parking;

 private:
  mpi::Comm comm_;
  int rank_ = -1;
  int size_ = 0;
};

}  // namespace pcm::lib
