// retirement.h — processes that leave a reconfiguration park until the job ends, without CPU use;
// the process that becomes their waker sends each one message when the job finalizes.
#pragma once

#include <mpi.h>

#include <vector>

#include "mpi_util.h"

namespace pcm::detail {

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

  // This process retires: waker_rank of waker_comm wakes it at the end.
  void retire_to(mpi::Comm waker_comm, int waker_rank);
  // Parks until woken, then wakes its own retirees and frees its waker's communicator.
  void park();

 private:
  std::vector<Retiree> retirees_;
  std::vector<mpi::Comm> comms_;  // several retirees may share one communicator
  mpi::Comm waker_comm_;          // kept: the waker sends on it when the job finalizes
  int waker_rank_ = -1;
};

}  // namespace pcm::detail
