// exchange.h — moving a distributed array's units between processes with one MPI_Alltoallw over
// indexed datatypes, straight from the old buffer into the new one.
#pragma once

#include <mpi.h>

#include <vector>

#include "distribution.h"
#include "mpi_util.h"

namespace pcm::lib {

// Moves the units of plan between the processes of comm (an intra- or an intercommunicator;
// npeers is the size of the group addressed). me_from / me_to: the caller's rank in the old / new
// map (-1: none). peer_of_new / peer_of_old: each new / old rank's index in the group addressed.
// Collective over comm; throws pcm::Error(PCM_ERR_MPI) and frees every datatype it made.
// With wait, the exchange is one MPI_Ialltoallw waited for by it (every process of comm must give
// one: a nonblocking collective never matches a blocking one); without, one MPI_Alltoallw.
void exchange(MPI_Comm comm, int npeers, const std::vector<Transfer>& plan, int me_from, int me_to,
              const Distribution& from, const Distribution& to, const std::vector<int>& peer_of_new,
              const std::vector<int>& peer_of_old, const char* oldbuf, char* newbuf, int type,
              const Waiter* wait = nullptr);

}  // namespace pcm::lib
