// retirement.h — processes that leave a reconfiguration park without CPU use until the job ends
// (the process that becomes their waker sends each one message then), or, after a split where
// the MPI allows it, leave the job at once.
//
// What the MPIs allow (bench/retire_probe.c, bench/retire.sh): a group of processes that
// disconnects from the job can finalize and exit while the job goes on if every process of its
// MPI_COMM_WORLD finalizes with it and the processes that stay were spawned by it, not the other
// way round. MPICH 4.0.2 ch3 and Open MPI 4.1.4 both allow that. One process of a group cannot
// finalize while the rest of its group runs (hydra: it busy-waits in MPI_Finalize; Open MPI: it
// waits in a fence), and with MPICH spawned processes cannot disconnect from a spawner that stays
// (MPI_Comm_disconnect waits until the spawner finalizes). So a split (the whole old world retires
// and the new world is its spawned child group) lets the old world leave, together with every
// process parked before (their groups leave whole); merges and migrations park their retirees
// until the next split or the end of the job. Their number is capped (PCM_MAX_PARKED, settings.h):
// over the cap, a PCM_Adapt job's merge or migration is carried out as a respawn of the whole
// world (Command::respawn, Parking::admit), which lets them all leave. Where pcmd asks for a
// respawn (a node that goes back to Slurm), PCM_Merge does the same for the paper's calls: the
// whole old world retires, as a group, and leaves.
#pragma once

#include <mpi.h>

#include <vector>

#include "mpi_util.h"

namespace pcm::lib {

// MPI_Comm_disconnect of c (collective over c, with both groups of an intercommunicator).
void disconnect(mpi::Comm& c);

// A retired process this one must wake at the end (by an MPI message on comm).
struct Retiree {
  MPI_Comm comm;
  int rank;
};

class Retirement {
 public:
  // This process wakes `ranks` of comm at the end; it owns comm from now on.
  void watch(mpi::Comm comm, const std::vector<int>& ranks);
  // Sends every wake-up and frees the communicators (collective with the parked retirees).
  void wake_all();

  // This process retires: waker_rank of waker_comm wakes it at the end (-1: nobody, it leaves).
  void retire_to(mpi::Comm waker_comm, int waker_rank);
  // Parks until woken (not at all if it leaves), then wakes its own retirees and frees its
  // waker's communicator.
  void park();

  // Whether this MPI lets a spawning group disconnect, finalize and exit while the group it
  // spawned goes on (the header comment; by MPI_Get_library_version: MPICH and Open MPI).
  static bool mpi_lets_spawners_leave();

 private:
  std::vector<Retiree> retirees_;
  std::vector<mpi::Comm> comms_;  // several retirees may share one communicator
  mpi::Comm waker_comm_;          // kept: the waker sends on it when the job finalizes
  int waker_rank_ = -1;
};

}  // namespace pcm::lib
