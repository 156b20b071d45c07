// retirement.cpp — parking retired processes and waking them (see retirement.h).
#include "retirement.h"

#include <time.h>

namespace pcm::lib {

namespace {
constexpr int kTagWake = 7701;
}  // namespace

void disconnect(mpi::Comm& c) {
  MPI_Comm h = c.release();
  if (h != MPI_COMM_NULL) mpi_check(MPI_Comm_disconnect(&h), "MPI_Comm_disconnect");
}

bool Retirement::mpi_lets_spawners_leave() {
  // Measured with MPICH 4.0.2 (ch3) and Open MPI 4.1.4; others keep their retirees parked.
  return mpi::is_mpich() || mpi::is_open_mpi();
}

void Retirement::watch(mpi::Comm comm, const std::vector<int>& ranks) {
  for (int r : ranks) retirees_.push_back({comm.get(), r});
  comms_.push_back(std::move(comm));
}

void Retirement::wake_all() {
  for (const Retiree& w : retirees_) {
    int token = 1;
    int rc = MPI_Send(&token, 1, MPI_INT, w.rank, kTagWake, w.comm);
    if (rc != MPI_SUCCESS) plog()->warn("could not wake a retired process (MPI error {})", rc);
  }
  retirees_.clear();
  comms_.clear();
}

void Retirement::retire_to(mpi::Comm waker_comm, int waker_rank) {
  waker_comm_ = std::move(waker_comm);
  waker_rank_ = waker_rank;
}

void Retirement::park() {
  // MPICH's MPI_Finalize would busy-wait for the others, and a blocking MPI_Recv busy-polls too;
  // so test for the wake-up message and sleep in between.
  if (waker_rank_ < 0) {  // it leaves: nobody wakes it
    wake_all();
    waker_comm_.reset();
    return;
  }
  int token = 0, done = 0;
  MPI_Request req;
  mpi_check(MPI_Irecv(&token, 1, MPI_INT, waker_rank_, kTagWake, waker_comm_.get(), &req),
            "MPI_Irecv");
  const timespec pause{0, 20 * 1000 * 1000};
  while (!done) {
    mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done) nanosleep(&pause, nullptr);
  }
  wake_all();  // those that retired while this process was their world's rank 0
  waker_comm_.reset();
}

}  // namespace pcm::lib
